package store

import (
	"bytes"
	"errors"
	"testing"

	"github.com/dedupkit/cuckoo/internal/hash"
)

// TestCheckpointLocationPastLog: an index checkpoint that passes its
// checksum (written by hand, or by a bug) but points a key past the end
// of its log file makes Get, and Open's replay of a record of that key,
// return ErrCorrupt. The previous version sliced the write buffer past
// its end and panicked.
func TestCheckpointLocationPastLog(t *testing.T) {
	t.Parallel()
	fs := NewMemFS()
	s, err := Open("db", WithFS(fs), WithSeed(7))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if err := s.Put([]byte(k), []byte("value of "+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	raw := fs.ReadFileBytes("db/INDEX")
	ck, ix, err := decodeIndex(bytes.NewReader(raw), int64(len(raw)), 7)
	if err != nil {
		t.Fatal(err)
	}
	var c [maxCandidates]slotRef
	if n := ix.candidates(hash.Sum64([]byte("b"), 7), &c); n != 1 {
		t.Fatalf("%d candidates for b", n)
	}
	f := ck.files[0]
	ix.setLoc(c[0], location(f.slot, f.size+100))
	var hostile bytes.Buffer
	if err := encodeIndex(&hostile, ck, ix); err != nil {
		t.Fatal(err)
	}
	fs.WriteFileBytes("db/INDEX", hostile.Bytes())

	s, err = Open("db", WithFS(fs))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get([]byte("a")); err != nil || string(v) != "value of a" {
		t.Fatalf("Get(a): %q, %v", v, err)
	}
	if _, err := s.Get([]byte("b")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get(b), its entry past the end of the log file: %v, want ErrCorrupt", err)
	}
	s.Close()
	// A record of b after the checkpoint: Open replays it, and looks b up.
	fs.WriteFileBytes("db/INDEX", hostile.Bytes())
	log := fs.ReadFileBytes("db/0000000000000000.log")
	fs.WriteFileBytes("db/0000000000000000.log", appendRecord(log[:f.size], kindDelete, 0, []byte("b"), nil))
	if _, err := Open("db", WithFS(fs)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open replaying a delete of b: %v, want ErrCorrupt", err)
	}
}
