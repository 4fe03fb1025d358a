package store_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/testseed"
	"github.com/dedupkit/cuckoo/store"
)

// TestGroupCommit: concurrent SyncAlways writers share syncs: 8 writers
// of 50 Puts each, with syncs of 2 ms, take far fewer than 400 syncs, and
// every Put that returned survives a crash.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	fs := store.NewMemFS()
	s, err := store.Open("db", store.WithFS(fs), store.WithSync(store.SyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	fs.SetSyncDelay(2 * time.Millisecond)
	before := fs.Syncs()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if err := s.Put([]byte(fmt.Sprint(w, "-", i)), []byte("v")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	syncs := fs.Syncs() - before
	t.Logf("400 Puts from 8 writers took %d syncs", syncs)
	if syncs > 200 {
		t.Fatalf("400 Puts from 8 writers took %d syncs: no group commit", syncs)
	}
	crashed := fs.Crash(testseed.Rand(t))
	s2, err := store.Open("db", store.WithFS(crashed))
	if err != nil {
		t.Fatal(err)
	}
	if s2.Len() != 400 {
		t.Fatalf("after a crash: %d keys, want 400", s2.Len())
	}
}

// TestEverySecond: with SyncEverySecond, a write is synced by the
// store's once-a-second loop, with no call from the user, and then
// survives a crash. The test polls until the write survives the worst
// crash MemFS models (synced bytes only), with a deadline far beyond any
// scheduling delay: a loaded CI machine (packages tested in parallel,
// -race) may run the loop's goroutine well after its tick. It logs how
// long that took: about a second.
func TestEverySecond(t *testing.T) {
	t.Parallel()
	fs := store.NewMemFS()
	s, err := store.Open("db", store.WithFS(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		s2, err := store.Open("db", store.WithFS(fs.CrashLosingUnsynced()))
		if err != nil {
			t.Fatal(err)
		}
		v, err := s2.Get([]byte("k"))
		s2.Close()
		if err == nil && string(v) == "v" {
			break
		}
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("after a crash: %q %v", v, err)
		}
		if time.Since(start) > 30*time.Second {
			t.Fatal("a write was not synced in 30 s without a call to Sync")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the write survives any crash %v after Put", time.Since(start).Round(time.Millisecond))
	s2, err := store.Open("db", store.WithFS(fs.Crash(testseed.Rand(t))))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s2.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("a synced write, after a crash: %q %v", v, err)
	}
}
