package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// FuzzLogFileName: isLogFileName accepts exactly the names of the
// pattern the log files' names follow, the name logFileName gives any id
// among them.
func FuzzLogFileName(f *testing.F) {
	pattern := regexp.MustCompile(`^[0-9a-f]{16}\.log$`)
	for _, name := range []string{logFileName(0), logFileName(1<<64 - 1), logFileName(0xabcdef), "0123456789ABCDEF.log",
		"0123456789abcdeg.log", "0123456789abcde.log", "0123456789abcdef0.log", "0123456789abcdef.log.tmp",
		"0123456789abcdef.lo", ".log", "", "MANIFEST", "0123456789abcdef/log", "0123456789abcdef\nlog"} {
		f.Add(name)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := isLogFileName(name), pattern.MatchString(name); got != want {
			t.Fatalf("isLogFileName(%q) = %v, the pattern says %v", name, got, want)
		}
		var id uint64
		for _, c := range []byte(name) {
			id = id*131 + uint64(c)
		}
		if !isLogFileName(logFileName(id)) {
			t.Fatalf("logFileName(%d) = %q is not a log file's name", id, logFileName(id))
		}
	})
}

// FuzzRecord: the record decoder never panics, never accepts more bytes
// than it was given, and a record it accepts re-encodes to the same
// bytes.
func FuzzRecord(f *testing.F) {
	f.Add(appendRecord(nil, kindPut, 1, []byte("key"), []byte("value")))
	f.Add(appendRecord(nil, kindPutOver, 300, []byte(""), []byte("v")))
	f.Add(appendRecord(nil, kindDelete, 0, []byte("gone"), nil))
	f.Add([]byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b)
		if err != nil {
			if !errors.Is(err, errShort) && !errors.Is(err, errBad) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if r.size > len(b) {
			t.Fatalf("record of %d bytes from %d", r.size, len(b))
		}
		again := appendRecord(nil, r.kind, r.seq, r.key, r.value)
		if !bytes.Equal(again, b[:r.size]) {
			// Varints may be written non-minimally by someone else; ours
			// are minimal, and only then must the bytes match.
			if len(again) == r.size {
				t.Fatalf("re-encoding differs:\n%x\n%x", again, b[:r.size])
			}
		}
		// Its head, and its head written before a value it does not
		// copy, are the same bytes; the head decodes to the same record,
		// partial before its end.
		if head := appendRecordHead(nil, r.kind, r.seq, r.key, r.value); len(again) == r.size &&
			!bytes.Equal(append(head, r.value...), again) {
			t.Fatalf("record written from its head and value differs:\n%x\n%x", append(head, r.value...), again)
		}
		at := int(r.valueAt)
		for _, n := range []int{at, (at + r.size) / 2, r.size - 1, r.size} {
			if n < at {
				continue
			}
			h, err := parseRecordHead(b[:n])
			if err != nil || h.kind != r.kind || h.seq != r.seq || !bytes.Equal(h.key, r.key) || h.size != r.size ||
				h.valueAt != r.valueAt || h.partial != (n < r.size) || !h.partial && !bytes.Equal(h.value, r.value) {
				t.Fatalf("head of %d bytes of a record of %d: %+v, %v; the record %+v", n, r.size, h, err, r)
			}
		}
	})
}

// FuzzRecover writes records (synced, so acknowledged), then damages
// the log as a crash may, or as one flipped bit does, and reopens.
//
// With flip 0, it cuts the log at an offset and may add garbage: with
// the checkpoint of Close, a log left shorter is ErrCorrupt; without it
// (a crash before any checkpoint), Open succeeds with every record that
// ended before the cut, and, with garbage after the cut, succeeds or
// refuses the store (ErrCorrupt) at a record from the cut on, changing
// nothing; then a cut at the offset the error names opens it.
//
// With flip n > 0, it flips bit n-1 (modulo the record's bits) of the
// last record, in a log of full length: with the checkpoint of Close
// (which covers the record) Open succeeds and Verify reports the damage;
// without it, Open refuses the store (ErrCorrupt at the record) and
// changes nothing, and a cut there opens it with every record before.
func FuzzRecover(f *testing.F) {
	f.Add([]byte("abcdefgh"), uint16(100), []byte{}, uint16(0))
	f.Add([]byte("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), uint16(333), []byte{1, 2, 3}, uint16(0))
	f.Add([]byte{0, 1, 2, 3, 250, 251, 252, 253}, uint16(0), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, uint16(0))
	f.Add([]byte("abcdefgh"), uint16(0), []byte{}, uint16(1))
	f.Add([]byte("abcdefgh"), uint16(0), []byte{}, uint16(8*4+3))   // the size field
	f.Add([]byte("abcdefgh"), uint16(0), []byte{}, uint16(8*7+8))   // its highest bit
	f.Add([]byte{0, 1, 2, 3, 240}, uint16(0), []byte{}, uint16(60)) // a tombstone
	f.Fuzz(func(t *testing.T, ops []byte, cut uint16, garbage []byte, flip uint16) {
		if len(ops) > 200 {
			ops = ops[:200]
		}
		fs := NewMemFS()
		s, err := Open("db", WithFS(fs), WithSync(SyncAlways), WithSeed(7), WithAutoCompact(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		// states[i] is the store after the records ending at ends[i].
		type state map[string]string
		cur := state{}
		var ends []int64
		var states []state
		file := s.log.active().path
		for _, op := range ops {
			k := fmt.Sprint(op % 16)
			if op >= 224 {
				if ok, _ := s.Delete([]byte(k)); !ok {
					continue
				}
				delete(cur, k)
			} else {
				v := bytes.Repeat([]byte{op}, int(op)%40)
				if err := s.Put([]byte(k), v); err != nil {
					t.Fatal(err)
				}
				cur[k] = string(v)
			}
			snap := state{}
			for a, b := range cur {
				snap[a] = b
			}
			ends = append(ends, s.log.active().size)
			states = append(states, snap)
		}
		s.Close()
		log := fs.ReadFileBytes(file)
		// stateAt is the store the records ending at or before c give, and
		// where the last of them ends.
		stateAt := func(c int64) (state, int64) {
			want, end := state{}, int64(logHeaderSize)
			for i, e := range ends {
				if e <= c {
					want, end = states[i], e
				}
			}
			return want, end
		}
		// checkState opens the store and compares it with want.
		checkState := func(want state, what string) {
			t.Helper()
			s, err := Open("db", WithFS(fs))
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			defer s.Close()
			for k, v := range want {
				got, err := s.Get([]byte(k))
				if err != nil || string(got) != v {
					t.Fatalf("%s: key %s: %q %v, want %q", what, k, got, err, v)
				}
			}
			if s.Len() != uint64(len(want)) {
				t.Fatalf("%s: %d keys, want %d", what, s.Len(), len(want))
			}
			if err := s.Put([]byte("after"), []byte("recovery")); err != nil {
				t.Fatal(err)
			}
		}
		// refusal checks that err is a refusal at a record from at on that
		// changed nothing, and returns its offset.
		refusal := func(err error, at int64, damaged []byte, what string) int64 {
			t.Helper()
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || ce.File != file || ce.Offset < at || ce.Offset >= int64(len(damaged)) {
				t.Fatalf("%s: Open: %v; want ErrCorrupt in %s at offset %d or later", what, err, file, at)
			}
			if !bytes.Equal(fs.ReadFileBytes(file), damaged) {
				t.Fatalf("%s: Open refused the store but changed the log file", what)
			}
			return ce.Offset
		}

		if flip > 0 && len(ends) > 0 {
			start := int64(logHeaderSize)
			if len(ends) > 1 {
				start = ends[len(ends)-2]
			}
			if ends[len(ends)-1] != int64(len(log)) {
				t.Fatalf("records end at %d, the log file at %d", ends[len(ends)-1], len(log))
			}
			bit := int64(flip-1) % (8 * (int64(len(log)) - start))
			damaged := bytes.Clone(log)
			damaged[start+bit/8] ^= 1 << (bit % 8)
			what := fmt.Sprintf("bit %d of the last record (%d bytes at %d) flipped", bit, int64(len(log))-start, start)
			fs.WriteFileBytes(file, damaged)
			// With the checkpoint of Close, which covers the record, Open
			// does not read it; Verify does.
			s, err := Open("db", WithFS(fs.Clone()))
			if err != nil {
				t.Fatalf("%s, with the checkpoint: %v", what, err)
			}
			if err := s.Verify(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s, with the checkpoint: Verify: %v", what, err)
			}
			s.Close()
			// Without it, as after a crash before any checkpoint.
			fs.Remove("db/" + idxName)
			s, err = Open("db", WithFS(fs))
			if err == nil {
				s.Close()
			}
			if off := refusal(err, start, damaged, what); off != start {
				t.Fatalf("%s: refused at %d, want %d", what, off, start)
			}
			fs.WriteFileBytes(file, damaged[:start])
			want, _ := stateAt(start)
			checkState(want, what+", then cut at the record")
			return
		}

		c := logHeaderSize + int64(cut)%(int64(len(log))-logHeaderSize+1)
		damaged := append(log[:c:c], garbage...)
		fs.WriteFileBytes(file, damaged)
		// With the checkpoint of Close, which recorded the log's length,
		// a log left shorter is damage.
		if s, err := Open("db", WithFS(fs.Clone())); c+int64(len(garbage)) < int64(len(log)) && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut at %d (of %d), with the checkpoint: %v", c, len(log), err)
		} else if err == nil {
			s.Close()
		}
		// Without it, as after a crash before any checkpoint, the cut
		// is a torn tail.
		fs.Remove("db/" + idxName)
		want, boundary := stateAt(c)
		what := fmt.Sprintf("cut at %d (of %d) + %d bytes of garbage", c, len(log), len(garbage))
		s, err = Open("db", WithFS(fs))
		if err != nil && len(garbage) > 0 {
			// Garbage after the cut may be no provable torn write.
			off := refusal(err, boundary, damaged, what)
			fs.WriteFileBytes(file, damaged[:off])
			if off == boundary {
				checkState(want, what+", then cut where refused")
			} else if s, err := Open("db", WithFS(fs)); err != nil {
				t.Fatalf("%s, then cut where refused: %v", what, err)
			} else {
				s.Close()
			}
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		defer s.Close()
		if s.Len() < uint64(len(want)) && len(garbage) == 0 {
			t.Fatalf("cut at %d: %d keys, want %d", c, s.Len(), len(want))
		}
		if len(garbage) == 0 {
			for k, v := range want {
				got, err := s.Get([]byte(k))
				if err != nil || string(got) != v {
					t.Fatalf("cut at %d: key %s: %q %v, want %q", c, k, got, err, v)
				}
			}
			if s.Len() != uint64(len(want)) {
				t.Fatalf("cut at %d: %d keys, want %d", c, s.Len(), len(want))
			}
		}
		if err := s.Put([]byte("after"), []byte("recovery")); err != nil {
			t.Fatal(err)
		}
	})
}

// goldenFile reads a file of a golden store, for fuzz seeds.
func goldenFile(f *testing.F, version, name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", "golden", version, name))
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzManifest: the manifest decoder never panics; a version 2 manifest
// it accepts re-encodes to the same bytes, and a version 1 one to a
// version 2 manifest of the same log files.
func FuzzManifest(f *testing.F) {
	f.Add(goldenFile(f, "v1", manifestName))
	f.Add(goldenFile(f, "v2", manifestName))
	one := manifest{seed: 1, nextID: 1, files: []manifestFile{{id: 0}}}
	f.Add(one.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeManifest(b)
		if err != nil {
			return
		}
		if m.version == manVersion1 {
			// Open records the sealed log files' lengths before it writes
			// version 2.
			for i := range m.files[:len(m.files)-1] {
				m.files[i].size = logHeaderSize
			}
		}
		enc := m.encode()
		if m.version == manVersion && !bytes.Equal(enc, b) {
			t.Fatalf("re-encoding differs:\n%x\n%x", enc, b)
		}
		again, err := decodeManifest(enc)
		if err != nil || len(again.files) != len(m.files) || again.seed != m.seed || again.nextID != m.nextID {
			t.Fatalf("the re-encoding does not decode to the same manifest: %v", err)
		}
		for i := range m.files {
			if again.files[i].id != m.files[i].id {
				t.Fatalf("log file %d: id %d, was %d", i, again.files[i].id, m.files[i].id)
			}
		}
	})
}

// FuzzCheckpoint: the checkpoint decoder never panics and allocates no
// more than the input's length calls for; a version 2 checkpoint it
// accepts re-encodes to the same bytes.
func FuzzCheckpoint(f *testing.F) {
	f.Add(goldenFile(f, "v1", idxName))
	f.Add(goldenFile(f, "v2", idxName))
	f.Fuzz(func(t *testing.T, b []byte) {
		seed := uint64(0)
		if len(b) >= 24 {
			seed = binary.LittleEndian.Uint64(b[16:])
		}
		ck, ix, err := decodeIndex(bytes.NewReader(b), int64(len(b)), seed)
		if err != nil {
			return
		}
		if ix.bytes() > uint64(len(b))+uint64(len(ix.disp))*8+maxStash*16 {
			t.Fatalf("an index of %d bytes from %d", ix.bytes(), len(b))
		}
		if ck.version != idxVersion {
			return
		}
		var buf bytes.Buffer
		if err := encodeIndex(&buf, ck, ix); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), b) {
			t.Fatal("re-encoding differs")
		}
	})
}
