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
	})
}

// FuzzRecover writes records (synced, so acknowledged), cuts the log at
// an offset and may add garbage, then reopens: Open succeeds, and every
// record that ended before the cut is there, with the state it gave.
func FuzzRecover(f *testing.F) {
	f.Add([]byte("abcdefgh"), uint16(100), []byte{})
	f.Add([]byte("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), uint16(333), []byte{1, 2, 3})
	f.Add([]byte{0, 1, 2, 3, 250, 251, 252, 253}, uint16(0), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, ops []byte, cut uint16, garbage []byte) {
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
		for i, op := range ops {
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
			_ = i
			snap := state{}
			for a, b := range cur {
				snap[a] = b
			}
			ends = append(ends, s.log.active().size)
			states = append(states, snap)
		}
		s.Close()
		log := fs.ReadFileBytes(file)
		c := logHeaderSize + int64(cut)%(int64(len(log))-logHeaderSize+1)
		fs.WriteFileBytes(file, append(log[:c:c], garbage...))
		// With the checkpoint of Close, which recorded the log's length,
		// a log left shorter is damage.
		if _, err := Open("db", WithFS(fs.Clone())); c+int64(len(garbage)) < int64(len(log)) && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut at %d (of %d), with the checkpoint: %v", c, len(log), err)
		}
		// Without it, as after a crash before any checkpoint, the cut
		// is a torn tail.
		fs.Remove("db/" + idxName)
		s, err = Open("db", WithFS(fs))
		if err != nil {
			t.Fatalf("cut at %d (of %d) + %d bytes of garbage: %v", c, len(log), len(garbage), err)
		}
		defer s.Close()
		want := state{}
		for i, e := range ends {
			if e <= c {
				want = states[i]
			}
		}
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
