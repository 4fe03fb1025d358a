package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/store"
)

// crashState is a store left by a crash after acknowledged SyncAlways
// writes: its files as another process finds them while the writer still
// has the store open.
type crashState struct {
	fs     *store.MemFS
	file   string            // the active log file
	start  int               // where its last record starts
	before map[string]string // the store before the last record
	after  map[string]string // and after it
}

// lastOps are the last writes a crashState may end with: a Put of a new
// key whose value ends in zero bytes (so that zeros at the end of the
// file are no proof of a torn write), and a delete.
var lastOps = []string{"put", "delete"}

// crashedStore writes 12 keys with SyncAlways, then the last write
// lastOp; with checkpoint, an index checkpoint covers the first 6. The
// writer is left open, as a crash leaves it.
func crashedStore(t *testing.T, lastOp string, checkpoint bool) crashState {
	t.Helper()
	fs := store.NewMemFS()
	s, err := store.Open("db", store.WithFS(fs), store.WithSync(store.SyncAlways), store.WithSeed(5), store.WithAutoCompact(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	want := map[string]string{}
	for i := range 12 {
		k, v := fmt.Sprintf("key-%02d", i), fmt.Sprintf("value %d %s", i, strings.Repeat("ab", i))
		if i == 7 {
			v = "\x00\x00\x00\x00 zeros in a value \x00"
		}
		if err := s.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		want[k] = v
		if checkpoint && i == 5 {
			if err := s.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := maps(want)
	switch lastOp {
	case "put":
		v := "the last value, acknowledged\x00\x00\x00\x00\x00\x00"
		if err := s.Put([]byte("last key"), []byte(v)); err != nil {
			t.Fatal(err)
		}
		want["last key"] = v
	case "delete":
		if ok, err := s.Delete([]byte("key-03")); !ok || err != nil {
			t.Fatalf("delete: %v %v", ok, err)
		}
		delete(want, "key-03")
	}
	crashed := fs.ProcessCrash()
	file := logFilePath(crashed)
	full := crashed.ReadFileBytes(file)
	ends := store.RecordEnds(full)
	if len(ends) != 13 || ends[12] != int64(len(full)) {
		t.Fatalf("%d records ending at %v in a log file of %d bytes", len(ends), ends, len(full))
	}
	_, hasIndex := fileIn(crashed, "db/INDEX")
	if hasIndex != checkpoint {
		t.Fatalf("INDEX present: %v; a checkpoint was written: %v", hasIndex, checkpoint)
	}
	return crashState{fs: crashed, file: file, start: int(ends[11]), before: before, after: want}
}

func maps(m map[string]string) map[string]string {
	c := map[string]string{}
	for k, v := range m {
		c[k] = v
	}
	return c
}

func fileIn(fs *store.MemFS, name string) ([]byte, bool) {
	for _, n := range fs.Names() {
		if n == name {
			return fs.ReadFileBytes(n), true
		}
	}
	return nil, false
}

// expectState opens the store in fs and checks that it holds exactly
// want.
func expectState(t *testing.T, fs *store.MemFS, want map[string]string, what string) {
	t.Helper()
	s, err := store.Open("db", store.WithFS(fs), store.WithAutoCompact(0, 0))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	defer s.Close()
	checkAcked(t, s, want, what, false)
}

// refused checks that err is Open's refusal of the record at start of
// file.
func refused(t *testing.T, err error, file string, start int, what string) {
	t.Helper()
	var ce *store.CorruptError
	if !errors.Is(err, store.ErrCorrupt) || !errors.As(err, &ce) {
		t.Fatalf("%s: Open: %v, want ErrCorrupt (an acknowledged write dropped silently)", what, err)
	}
	if ce.File != file || ce.Offset != int64(start) {
		t.Fatalf("%s: the error names %s at %d, want %s at %d: %v", what, ce.File, ce.Offset, file, start, err)
	}
}

// TestFlippedLastRecord flips each bit of each byte of the last record
// of a store left by a crash after acknowledged SyncAlways writes, one
// at a time, with the index checkpoint the writer left (which does not
// cover the record) and without one. Open must refuse it (ErrCorrupt at
// the record) and leave the log file as it was: the record was written
// whole, so its damage is no torn write. The repair docs/store.md gives,
// cutting the log file at the offset the error names, then opens with
// every record before it.
//
// Every bit runs in the quick run: 1,680 flips and 210 repairs, opens of
// a small store in memory, under a second.
func TestFlippedLastRecord(t *testing.T) {
	t.Parallel()
	flips := 0
	eachLastRecordFlip(t, func(cs crashState, fs *store.MemFS, b []byte, at, bit int, what string) {
		s, err := store.Open("db", store.WithFS(fs))
		if err == nil {
			s.Close()
		}
		refused(t, err, cs.file, cs.start, what)
		if got := fs.ReadFileBytes(cs.file); !bytes.Equal(got, b) {
			t.Fatalf("%s: Open refused the store but changed the log file (%d bytes, was %d)", what, len(got), len(b))
		}
		flips++
		if bit == at%8 {
			// The repair (one bit of each byte): cut at the offset the
			// error names.
			fs.WriteFileBytes(cs.file, b[:cs.start])
			expectState(t, fs, cs.before, what+", then cut at the record")
		}
	})
	t.Logf("%d flips of the last record, all refused", flips)
}

// eachLastRecordFlip calls fn for each bit of each byte of the last
// record of the crashStates of lastOps, with the writer's checkpoint
// (which does not cover the record), with it removed, and with none: fs
// is a copy of the crash state whose log file holds b, the log file with
// the bit flipped.
func eachLastRecordFlip(t *testing.T, fn func(cs crashState, fs *store.MemFS, b []byte, at, bit int, what string)) {
	t.Helper()
	for _, lastOp := range lastOps {
		for _, checkpoint := range []bool{true, false} {
			for _, dropIndex := range []bool{false, true} {
				if dropIndex && !checkpoint {
					continue
				}
				cs := crashedStore(t, lastOp, checkpoint)
				if dropIndex {
					cs.fs.Remove("db/INDEX")
				}
				full := cs.fs.ReadFileBytes(cs.file)
				for at := cs.start; at < len(full); at++ {
					for bit := range 8 {
						what := fmt.Sprintf("last record a %s, checkpoint %v, INDEX removed %v, byte %d (of the record's %d) bit %d flipped",
							lastOp, checkpoint, dropIndex, at-cs.start, len(full)-cs.start, bit)
						fs := cs.fs.Clone()
						b := bytes.Clone(full)
						b[at] ^= 1 << bit
						fs.WriteFileBytes(cs.file, b)
						fn(cs, fs, b, at, bit, what)
					}
				}
			}
		}
	}
}

// TestFlippedLastRecordOS flips each bit of the last record in a copy of
// a real store directory taken while its writer has it open (the log
// files mapped, as Open reads them on a real file system): Open refuses
// each, and leaves the file as it was.
func TestFlippedLastRecordOS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := store.Open(filepath.Join(dir, "db"), store.WithSync(store.SyncAlways), store.WithSeed(5))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 8 {
		if err := s.Put([]byte(fmt.Sprint("key ", i)), []byte(fmt.Sprint("value ", i, "\x00"))); err != nil {
			t.Fatal(err)
		}
	}
	// The copy, while the writer has the store open.
	cp := filepath.Join(dir, "copy")
	if err := os.Mkdir(cp, 0o755); err != nil {
		t.Fatal(err)
	}
	names, err := os.ReadDir(filepath.Join(dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	var file string
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, "db", n.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cp, n.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if filepath.Ext(n.Name()) == ".log" {
			file = filepath.Join(cp, n.Name())
		}
	}
	full, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ends := store.RecordEnds(full)
	if len(ends) != 8 {
		t.Fatalf("%d records", len(ends))
	}
	start := int(ends[6])
	flips := 0
	for at := start; at < len(full); at++ {
		for bit := range 8 {
			what := fmt.Sprintf("byte %d of the last record, bit %d flipped", at-start, bit)
			b := bytes.Clone(full)
			b[at] ^= 1 << bit
			if err := os.WriteFile(file, b, 0o644); err != nil {
				t.Fatal(err)
			}
			s2, err := store.Open(cp)
			if err == nil {
				s2.Close()
			}
			refused(t, err, file, start, what)
			if got, err := os.ReadFile(file); err != nil || !bytes.Equal(got, b) {
				t.Fatalf("%s: Open refused the store but changed the log file (%d bytes, was %d)", what, len(got), len(b))
			}
			flips++
		}
	}
	if err := os.WriteFile(file, full, 0o644); err != nil {
		t.Fatal(err)
	}
	s2, err := store.Open(cp)
	if err != nil || s2.Len() != 8 {
		t.Fatalf("the copy undamaged: %v", err)
	}
	s2.Close()
	t.Logf("%d flips of the last record, all refused", flips)
}

// TestTornLastRecord: a crash that cut the last write short, at every
// offset inside its record, leaves a store that opens with every record
// before it, and the cut record cut off the file. So does a file whose
// length the file system extended with zeros that the write never
// reached: zeros from the record's start, or from past its checksum and
// size, to the end of the file. Zeros from its last byte that is not
// zero are a torn write too, unless that byte had one bit set: then the
// record verifies with one bit flipped back, damage, and is refused.
func TestTornLastRecord(t *testing.T) {
	t.Parallel()
	for _, lastOp := range lastOps {
		for _, checkpoint := range []bool{true, false} {
			cs := crashedStore(t, lastOp, checkpoint)
			full := cs.fs.ReadFileBytes(cs.file)
			tail := func(what string, b []byte) {
				t.Helper()
				what = fmt.Sprintf("last record a %s, checkpoint %v: %s", lastOp, checkpoint, what)
				fs := cs.fs.Clone()
				fs.WriteFileBytes(cs.file, b)
				expectState(t, fs, cs.before, what)
				if got := len(fs.ReadFileBytes(cs.file)); got != cs.start {
					t.Fatalf("%s: the log file is %d bytes after Open, want %d (the torn record cut)", what, got, cs.start)
				}
				s, err := store.Open("db", store.WithFS(fs))
				if err != nil {
					t.Fatalf("%s: reopened: %v", what, err)
				}
				if err := s.Put([]byte("after"), []byte("the cut")); err != nil {
					t.Fatal(err)
				}
				s.Close()
				want := maps(cs.before)
				want["after"] = "the cut"
				expectState(t, fs, want, what+", then a write")
			}
			for cut := cs.start + 1; cut < len(full); cut++ {
				tail(fmt.Sprintf("cut at %d of the record's %d bytes", cut-cs.start, len(full)-cs.start), full[:cut])
			}
			zeros := bytes.Clone(full)
			clear(zeros[cs.start:])
			tail("zeros from the record's start", zeros)
			tail("zeros from the record's start, past its end", append(zeros, make([]byte, 4096)...))
			tail("5 zero bytes past the whole records", append(full[:cs.start:cs.start], make([]byte, 5)...))
			tail("64 zero bytes past the whole records", append(full[:cs.start:cs.start], make([]byte, 64)...))

			past := bytes.Clone(full)
			clear(past[cs.start+recPrefixOf:])
			tail("zeros from past its checksum and size", past)

			lastSet := len(full) - cs.start - 1 // the record's last byte that is not zero
			for full[cs.start+lastSet] == 0 {
				lastSet--
			}
			zeroed := bytes.Clone(full)
			clear(zeroed[cs.start+lastSet:])
			if bits.OnesCount8(full[cs.start+lastSet]) != 1 {
				tail(fmt.Sprintf("zeros from its byte %d, the last not zero", lastSet), zeroed)
			}
			for _, from := range []int{lastSet} {
				if bits.OnesCount8(full[cs.start+lastSet]) != 1 {
					break
				}
				// One bit flipped: refused, the file left as it was.
				b := zeroed
				fs := cs.fs.Clone()
				fs.WriteFileBytes(cs.file, b)
				s, err := store.Open("db", store.WithFS(fs))
				if err == nil {
					s.Close()
				}
				refused(t, err, cs.file, cs.start, fmt.Sprintf("last record a %s, zeros from its byte %d", lastOp, from))
				if !bytes.Equal(fs.ReadFileBytes(cs.file), b) {
					t.Fatalf("zeros from byte %d of the last record: Open refused the store but changed the log file", from)
				}
			}
			expectState(t, cs.fs.Clone(), cs.after, "the crash state itself")

			// Two faults together: a torn last record after a record
			// whose size field was damaged to run past the end of the
			// file. The damaged record verifies with the bit flipped
			// back: refused there, not cut with the torn one.
			ends := store.RecordEnds(full)
			b := bytes.Clone(full[:cs.start+10])
			b[ends[10]+5] ^= 0x40 // the size of the record before the last, 16 KiB more
			fs := cs.fs.Clone()
			fs.WriteFileBytes(cs.file, b)
			fs.Remove("db/INDEX")
			s, err := store.Open("db", store.WithFS(fs))
			if err == nil {
				s.Close()
			}
			refused(t, err, cs.file, int(ends[10]), "a damaged size field and a torn record after it")
		}
	}
}

// recPrefixOf is a record's prefix: its checksum and size.
const recPrefixOf = 8
