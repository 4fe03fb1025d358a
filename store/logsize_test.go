package store_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/store"
)

// Log files longer than the log file size an Open is given, read on the
// operating system's file system (the log files mapped): WithLogFileSize
// may change between Opens, and a compaction writes its buffer whole.
// Both panicked in the previous version, which mapped a log file only as
// far as the Open's log file size and a record allow (about 65 MiB past
// it), and read past the mapping.

// TestReopenWithSmallerLogFileSize: a store whose log file holds 66 MiB,
// written at the default log file size, opens with a log file size of 4
// KiB (with its checkpoint, and without: the log read whole), has both
// values, verifies, and takes writes, the first of which starts a new log
// file.
func TestReopenWithSmallerLogFileSize(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "db")
	s, err := store.Open(dir, store.WithSync(store.SyncNever))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"a": bytes.Repeat([]byte("a"), 33<<20), "b": bytes.Repeat([]byte("b"), 33<<20)}
	for _, k := range []string{"a", "b"} {
		if err := s.Put([]byte(k), want[k]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, checkpoint := range []bool{true, false} {
		what := fmt.Sprintf("reopened with 4 KiB log files, checkpoint %v", checkpoint)
		if !checkpoint {
			os.Remove(filepath.Join(dir, "INDEX"))
		}
		s, err := store.Open(dir, store.WithLogFileSize(4<<10))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for k, v := range want {
			if got, err := s.Get([]byte(k)); err != nil || !bytes.Equal(got, v) {
				t.Fatalf("%s: Get(%q): %d bytes, %v", what, k, len(got), err)
			}
		}
		if err := s.Verify(); err != nil {
			t.Fatalf("%s: Verify: %v", what, err)
		}
		k := fmt.Sprintf("written %v", checkpoint)
		want[k] = []byte("a write")
		if err := s.Put([]byte(k), want[k]); err != nil {
			t.Fatalf("%s: Put: %v", what, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	s, err = store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The long log file, and the one the first write started.
	if st := s.Stats(); st.Keys != uint64(len(want)) || st.LogFiles != 2 {
		t.Fatalf("%d keys in %d log files, want %d keys in 2", st.Keys, st.LogFiles, len(want))
	}
}

// TestCompactLargeRecordPastLogFileSize: a compaction whose buffer holds
// nearly 1 MiB of records and then a record of 64 MiB writes them to one
// log file, past a log file size of 4 KiB by more than a record: the
// compaction completes, and the store reads the record and opens again.
func TestCompactLargeRecordPastLogFileSize(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "db")
	opts := []store.Option{store.WithSync(store.SyncNever), store.WithLogFileSize(4 << 10), store.WithAutoCompact(0, 0)}
	s, err := store.Open(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 15 { // 15 × 69,000 bytes: the compaction's buffer just under 1 MiB
		if err := s.Put(fmt.Appendf(nil, "small %d", i), bytes.Repeat([]byte("s"), 69000)); err != nil {
			t.Fatal(err)
		}
	}
	key, value := bytes.Repeat([]byte("k"), 64<<10), bytes.Repeat([]byte("v"), store.MaxValueSize)
	if err := s.Put(key, value); err != nil {
		t.Fatal(err)
	}
	if err := s.Put([]byte("dead"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete([]byte("dead")); err != nil { // garbage for the compaction
		t.Fatal(err)
	}
	if err := s.Compact(); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	check := func(s *store.Store, what string) {
		t.Helper()
		if got, err := s.Get(key); err != nil || !bytes.Equal(got, value) {
			t.Fatalf("%s: Get of the large record: %d bytes, %v", what, len(got), err)
		}
		if got, err := s.Get([]byte("small 14")); err != nil || len(got) != 69000 {
			t.Fatalf("%s: Get(small 14): %d bytes, %v", what, len(got), err)
		}
		if err := s.Verify(); err != nil {
			t.Fatalf("%s: Verify: %v", what, err)
		}
	}
	check(s, "compacted")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "INDEX"))
	if s, err = store.Open(dir, opts...); err != nil {
		t.Fatalf("reopened: %v", err)
	}
	defer s.Close()
	check(s, "reopened without the checkpoint")
}
