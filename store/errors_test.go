package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"syscall"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/store"
)

// TestDiskFull: with the disk full, writes fail with ENOSPC and change
// nothing; what was acknowledged stays readable, and survives once there
// is room again, under every policy.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	for _, p := range []store.SyncPolicy{store.SyncAlways, store.SyncNever, store.SyncEverySecond} {
		t.Run("sync="+p.String(), func(t *testing.T) {
			fs := store.NewMemFS()
			opts := []store.Option{store.WithFS(fs), store.WithSync(p), store.WithBufferSize(4 << 10)}
			s, err := store.Open("db", opts...)
			if err != nil {
				t.Fatal(err)
			}
			fs.SetSpace(20 << 10)
			acked := map[string]string{}
			var failed error
			for i := 0; i < 10000 && failed == nil; i++ {
				k, v := fmt.Sprintf("k%d", i%300), fmt.Sprintf("v%d", i)
				if failed = s.Put([]byte(k), []byte(v)); failed == nil {
					acked[k] = v
				} else if got, err := s.Get([]byte(k)); acked[k] == "" && !errors.Is(err, store.ErrNotFound) || acked[k] != "" && string(got) != acked[k] {
					t.Fatalf("failed Put changed %s: %q %v", k, got, err)
				}
			}
			if !errors.Is(failed, syscall.ENOSPC) {
				t.Fatalf("Put on a full disk: %v", failed)
			}
			if _, err := s.Delete([]byte("k1")); acked["k1"] != "" && !errors.Is(err, syscall.ENOSPC) && p == store.SyncAlways {
				t.Fatalf("Delete on a full disk: %v", err)
			}
			for k, v := range acked {
				if got, err := s.Get([]byte(k)); err != nil || string(got) != v {
					t.Fatalf("acknowledged %s: %q %v", k, got, err)
				}
			}
			if err := s.Compact(); err == nil && p == store.SyncAlways {
				t.Log("compaction fitted in the space left")
			}
			fs.SetSpace(-1)
			if err := s.Put([]byte("room"), []byte("again")); err != nil {
				t.Fatalf("Put after room is made: %v", err)
			}
			acked["room"] = "again"
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = store.Open("db", opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for k, v := range acked {
				if got, err := s.Get([]byte(k)); err != nil || string(got) != v {
					t.Fatalf("after reopen, acknowledged %s: %q %v", k, got, err)
				}
			}
		})
	}
}

// TestFailedSync: a failed sync makes writes fail from then on with
// ErrFailed; reads go on.
func TestFailedSync(t *testing.T) {
	t.Parallel()
	fs := store.NewMemFS()
	s, err := store.Open("db", store.WithFS(fs), store.WithSync(store.SyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	s.Put([]byte("a"), []byte("1"))
	fs.FailSyncs(syscall.EIO)
	if err := s.Put([]byte("b"), []byte("2")); !errors.Is(err, store.ErrFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Put with a failing sync: %v", err)
	}
	fs.FailSyncs(nil)
	if err := s.Put([]byte("c"), []byte("3")); !errors.Is(err, store.ErrFailed) {
		t.Fatalf("Put after a failed sync: %v", err)
	}
	if v, err := s.Get([]byte("a")); err != nil || string(v) != "1" {
		t.Fatalf("Get after a failed sync: %q %v", v, err)
	}
	s.Close()
	s, err = store.Open("db", store.WithFS(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.Get([]byte("a")); err != nil || string(v) != "1" {
		t.Fatalf("reopened: %q %v", v, err)
	}
}

// TestClosed: every method after Close returns ErrClosed.
func TestClosed(t *testing.T) {
	t.Parallel()
	s, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	k := []byte("k")
	_, e1 := s.Get(k)
	_, e2 := s.Has(k)
	e3 := s.Put(k, k)
	_, e4 := s.PutIfAbsent(k, k)
	_, e5 := s.Delete(k)
	e6 := s.Sync()
	e7 := s.Compact()
	e8 := s.Range(func(k, v []byte) bool { return true })
	e9 := s.Verify()
	for i, err := range []error{e1, e2, e3, e4, e5, e6, e7, e8, e9} {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("call %d after Close: %v", i+1, err)
		}
	}
}

// TestLocked: a second Open of a directory fails until the first Store
// is closed.
func TestLocked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Open(dir); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second Open: %v", err)
	}
	s.Close()
	s, err = store.Open(dir)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s.Close()
}

// TestTooLarge: keys and values past the limits are refused, and those at
// the limits taken.
func TestTooLarge(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	s, err := store.Open(t.TempDir(), store.WithSync(store.SyncNever))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := make([]byte, store.MaxKeySize+1)
	if err := s.Put(big, nil); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("key of %d bytes: %v", len(big), err)
	}
	if err := s.Put([]byte("k"), make([]byte, store.MaxValueSize+1)); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("value of MaxValueSize+1: %v", err)
	}
	key := bytes.Repeat([]byte{7}, store.MaxKeySize)
	val := bytes.Repeat([]byte{9}, store.MaxValueSize)
	if err := s.Put(key, val); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(key); err != nil || !bytes.Equal(v, val) {
		t.Fatalf("largest key and value: %d bytes, %v", len(v), err)
	}
	if s.Len() != 1 {
		t.Fatalf("Len %d", s.Len())
	}
}

// TestOpenRefusesBadOptions: an option given a value out of its range
// makes Open fail with ErrInvalidParameter before it creates anything;
// the values at the ends of each range are taken.
func TestOpenRefusesBadOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opt  store.Option
	}{
		{"sync=-1", store.WithSync(-1)},
		{"sync=3", store.WithSync(store.SyncNever + 1)},
		{"logfilesize=4KiB-1", store.WithLogFileSize(4<<10 - 1)},
		{"logfilesize=3GiB+1", store.WithLogFileSize(3<<30 + 1)},
		{"logfilesize=-1", store.WithLogFileSize(-1)},
		{"autocompact=ratio1", store.WithAutoCompact(1, 0)},
		{"autocompact=ratio-0.1", store.WithAutoCompact(-0.1, 0)},
		{"autocompact=ratioNaN", store.WithAutoCompact(math.NaN(), 0)},
		{"autocompact=min-1", store.WithAutoCompact(0.5, -1)},
		{"checkpoints=ratio-1", store.WithCheckpoints(-1, 1)},
		{"checkpoints=ratioNaN", store.WithCheckpoints(math.NaN(), 1)},
		{"checkpoints=ratioInf", store.WithCheckpoints(math.Inf(1), 1)},
		{"checkpoints=min-1", store.WithCheckpoints(0.1, -1)},
	} {
		fs := store.NewMemFS()
		s, err := store.Open("db", store.WithFS(fs), tc.opt)
		if !errors.Is(err, store.ErrInvalidParameter) {
			if s != nil {
				s.Close()
			}
			t.Errorf("%s: Open: %v, want ErrInvalidParameter", tc.name, err)
			continue
		}
		if isDir, _ := fs.IsDir("db"); isDir {
			t.Errorf("%s: Open failed but created the directory", tc.name)
		}
	}
	for _, tc := range []struct {
		name string
		opt  store.Option
	}{
		{"logfilesize=4KiB", store.WithLogFileSize(4 << 10)},
		{"logfilesize=3GiB", store.WithLogFileSize(3 << 30)},
		{"autocompact=off", store.WithAutoCompact(0, 0)},
		{"autocompact=ratio0.99", store.WithAutoCompact(0.99, 0)},
		{"checkpoints=off", store.WithCheckpoints(0, 0)},
		{"checkpoints=ratio4", store.WithCheckpoints(4, 0)},
	} {
		s, err := store.Open("db", store.WithFS(store.NewMemFS()), tc.opt)
		if err != nil {
			t.Errorf("%s: Open: %v", tc.name, err)
			continue
		}
		if err := s.Close(); err != nil {
			t.Errorf("%s: Close: %v", tc.name, err)
		}
	}
}
