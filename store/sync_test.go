package store_test

import (
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

// TestEverySecond: with SyncEverySecond, a write more than a second old
// survives a crash.
func TestEverySecond(t *testing.T) {
	fs := store.NewMemFS()
	s, err := store.Open("db", store.WithFS(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	s2, err := store.Open("db", store.WithFS(fs.Crash(testseed.Rand(t))))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s2.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("a write of 1.5 s ago, after a crash: %q %v", v, err)
	}
}
