package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/dedupkit/cuckoo/store"
)

// Records of fillFixed are recSize bytes: prefix 8, kind 1, key length 1,
// seq 1, key 6, value 19.
const (
	logHeader = 40
	recSize   = 8 + 1 + 1 + 1 + 6 + 19
)

// fillFixed writes n records of recSize bytes into a new store in fs.
func fillFixed(t *testing.T, fs *store.MemFS, n int) {
	t.Helper()
	s, err := store.Open("db", store.WithFS(fs), store.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := s.Put([]byte(fmt.Sprintf("key%03d", i)), []byte(fmt.Sprintf("value %13d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func logFilePath(fs *store.MemFS) string {
	for _, n := range fs.Names() {
		if filepath.Ext(n) == ".log" {
			return n
		}
	}
	return ""
}

// TestTornTailEveryOffset cuts the log at every offset inside its last
// record, written after the last checkpoint (as a crash may): Open keeps
// every other record, cuts the torn one, and takes writes. With the
// checkpoint of the Close that covered the record, the same cut is
// damage.
func TestTornTailEveryOffset(t *testing.T) {
	t.Parallel()
	const n = 20
	base := store.NewMemFS()
	fillFixed(t, base, n)
	file := logFilePath(base)
	full := base.ReadFileBytes(file)
	if len(full) != logHeader+n*recSize {
		t.Fatalf("log of %d bytes, want %d", len(full), logHeader+n*recSize)
	}
	last := logHeader + (n-1)*recSize
	for cut := last; cut < len(full); cut++ {
		fs := base.Clone()
		fs.WriteFileBytes(file, full[:cut])
		var ce *store.CorruptError
		if _, err := store.Open("db", store.WithFS(fs)); !errors.As(err, &ce) || ce.File != file || ce.Offset != int64(cut) {
			t.Fatalf("cut at %d, below the length the checkpoint recorded: %v", cut, err)
		}
		fs.Remove("db/INDEX") // as after a crash before any checkpoint
		s, err := store.Open("db", store.WithFS(fs))
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if s.Len() != n-1 {
			t.Fatalf("cut at %d: %d keys, want %d", cut, s.Len(), n-1)
		}
		if _, err := s.Get([]byte(fmt.Sprintf("key%03d", n-1))); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("cut at %d: torn key: %v", cut, err)
		}
		if v, err := s.Get([]byte(fmt.Sprintf("key%03d", n-2))); err != nil || string(v) != fmt.Sprintf("value %13d", n-2) {
			t.Fatalf("cut at %d: last intact key: %q %v", cut, v, err)
		}
		if err := s.Put([]byte("new"), []byte("record")); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if got := len(fs.ReadFileBytes(file)); got != last+8+1+1+1+3+6 {
			t.Fatalf("cut at %d: log of %d bytes after a write, want the torn record cut", cut, got)
		}
		s, err = store.Open("db", store.WithFS(fs))
		if err != nil || s.Len() != n {
			t.Fatalf("cut at %d: reopen: %d keys, %v", cut, s.Len(), err)
		}
		s.Close()
	}
}

// TestFlippedByte flips one byte in the middle of the log. Without an
// index checkpoint (after a crash), Open refuses, naming the file and the
// offset of the damaged record; with one (after a clean Close), Open
// reads only what follows the checkpoint, and Verify and a Get of the
// damaged record report the same.
func TestFlippedByte(t *testing.T) {
	t.Parallel()
	for _, at := range []int{0, 7, 9, 15, recSize - 1} {
		for _, checkpoint := range []bool{false, true} {
			fs := store.NewMemFS()
			fillFixed(t, fs, 50)
			if !checkpoint {
				fs.Remove("db/INDEX")
			}
			file := logFilePath(fs)
			b := fs.ReadFileBytes(file)
			rec := logHeader + 17*recSize
			b[rec+at] ^= 0x20
			fs.WriteFileBytes(file, b)
			s, err := store.Open("db", store.WithFS(fs))
			if checkpoint {
				if err != nil {
					t.Fatalf("byte %d flipped, with a checkpoint: Open: %v", at, err)
				}
				err = s.Verify()
				// A flip in the key (bytes 11 to 16) changes its hash:
				// the record is then no candidate, and key017 absent.
				inKey := at >= 11 && at < 17
				if _, gerr := s.Get([]byte("key017")); !errors.Is(gerr, store.ErrCorrupt) && !(inKey && errors.Is(gerr, store.ErrNotFound)) {
					t.Fatalf("byte %d flipped: Get: %v", at, gerr)
				}
				s.Close()
			}
			var ce *store.CorruptError
			if !errors.Is(err, store.ErrCorrupt) || !errors.As(err, &ce) {
				t.Fatalf("byte %d of record 17 flipped (checkpoint %v): %v", at, checkpoint, err)
			}
			if ce.File != file || ce.Offset != int64(rec) {
				t.Fatalf("byte %d flipped: error names %s at %d, want %s at %d (%v)", at, ce.File, ce.Offset, file, rec, err)
			}
		}
	}
	// A sealed log file: small log files, damage in the first.
	fs := store.NewMemFS()
	s, err := store.Open("db", store.WithFS(fs), store.WithLogFileSize(4<<10))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		s.Put([]byte(fmt.Sprintf("key%03d", i%1000)), []byte(fmt.Sprintf("value %13d", i)))
	}
	s.Close()
	first := logFilePath(fs)
	b := fs.ReadFileBytes(first)
	b[len(b)-3] ^= 1 // the last record of a sealed log file is not a tail
	fs.WriteFileBytes(first, b)
	fs.Remove("db/INDEX")
	if _, err := store.Open("db", store.WithFS(fs)); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("damaged sealed log file: Open: %v", err)
	}
}

// TestForeignFiles: files a store does not write are left alone; a
// directory of other files is not taken for a store; a log file or a
// manifest replaced by something else is reported.
func TestForeignFiles(t *testing.T) {
	t.Parallel()
	fs := store.NewMemFS()
	fillFixed(t, fs, 10)
	fs.WriteFileBytes("db/notes.txt", []byte("mine"))
	s, err := store.Open("db", store.WithFS(fs))
	if err != nil || s.Len() != 10 {
		t.Fatalf("with a foreign file: %v", err)
	}
	s.Close()
	if string(fs.ReadFileBytes("db/notes.txt")) != "mine" {
		t.Fatal("foreign file changed")
	}

	other := store.NewMemFS()
	other.WriteFileBytes("photos/cat.jpg", []byte("jpeg"))
	if _, err := store.Open("photos", store.WithFS(other)); !errors.Is(err, store.ErrNotStore) {
		t.Fatalf("directory of other files: %v", err)
	}

	file := logFilePath(fs)
	good := fs.ReadFileBytes(file)
	fs.WriteFileBytes(file, []byte("#!/bin/sh\necho this is not a log file at all, it is a script\n"))
	var ce *store.CorruptError
	if _, err := store.Open("db", store.WithFS(fs)); !errors.As(err, &ce) || ce.File != file {
		t.Fatalf("foreign log file: %v", err)
	}
	fs.WriteFileBytes(file, good)
	fs.WriteFileBytes("db/MANIFEST", []byte("not a manifest"))
	if _, err := store.Open("db", store.WithFS(fs)); !errors.As(err, &ce) || ce.File != "db/MANIFEST" {
		t.Fatalf("foreign manifest: %v", err)
	}
}

// TestRefusedOpenRemovesNothing: an Open that refuses a store changes no
// file, the log files no manifest lists included: a compaction's output
// restored beside an older manifest (a copy of the directory taken while
// the compaction switched) may be the only copy of its records. Open
// removes them, as a crash's leftovers, only once the store opens. The
// previous version removed them before it read the log files the
// manifest lists, and then refused the store.
func TestRefusedOpenRemovesNothing(t *testing.T) {
	t.Parallel()
	cs := crashedStore(t, "put", false)
	full := cs.fs.ReadFileBytes(cs.file)
	leftovers := map[string][]byte{
		"db/00000000000000ff.log": full, // an unlisted log file, with records
		"db/INDEX.tmp":            []byte("a checkpoint never renamed"),
		"db/MANIFEST.tmp":         []byte("a manifest never renamed"),
	}
	flipped := bytes.Clone(full)
	flipped[len(flipped)-1] ^= 1
	for _, c := range []struct {
		what string
		log  []byte // the listed log file, or nil: missing
	}{{"a flipped bit in the last record", flipped}, {"the listed log file missing", nil}} {
		fs := cs.fs.Clone()
		if c.log == nil {
			fs.Remove(cs.file)
		} else {
			fs.WriteFileBytes(cs.file, c.log)
		}
		for name, b := range leftovers {
			fs.WriteFileBytes(name, b)
		}
		before := files(fs)
		if _, err := store.Open("db", store.WithFS(fs)); !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("%s: Open: %v, want ErrCorrupt", c.what, err)
		}
		unchanged(t, fs, before, c.what+", Open refused")
	}

	// Once the store opens, the leftovers go.
	fs := cs.fs.Clone()
	for name, b := range leftovers {
		fs.WriteFileBytes(name, b)
	}
	s, err := store.Open("db", store.WithFS(fs))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for name := range leftovers {
		if _, ok := fileIn(fs, name); ok {
			t.Fatalf("%s left after the store opened", name)
		}
	}
}
