package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/store"
)

// TestConcurrent runs readers during writes that grow the index, during
// deletes and overwrites, and during compactions (run with -race). Keys
// written before the readers start and never changed must always read
// back; changing keys must read as one of their values or absent.
// Every write under SyncAlways waits for an fsync: it writes 50 keys (200
// with CUCKOO_LONG=1), SyncNever 30,000.
func TestConcurrent(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	for _, p := range []store.SyncPolicy{store.SyncNever, store.SyncAlways} {
		t.Run("sync="+p.String(), func(t *testing.T) {
			t.Parallel()
			// The stable keys go in without a sync each (2,000 fsyncs
			// would be most of the test's time), then the store opens
			// again under p and loads them.
			dir := t.TempDir()
			opts := []store.Option{store.WithLogFileSize(256 << 10), store.WithAutoCompact(0.3, 256<<10)}
			s, err := store.Open(dir, append(opts, store.WithSync(store.SyncNever))...)
			if err != nil {
				t.Fatal(err)
			}
			const stable = 2000
			for i := range stable {
				if err := s.Put([]byte(fmt.Sprint("stable", i)), []byte(fmt.Sprint("value", i))); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = store.Open(dir, append(opts, store.WithSync(p))...); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			n := 30000
			if p == store.SyncAlways {
				n = 50
				if testlong.Enabled() {
					n = 200
				}
			}
			var stop atomic.Bool
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for r := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := r; !stop.Load(); i += 3 {
						k := i % stable
						v, err := s.Get([]byte(fmt.Sprint("stable", k)))
						if err != nil || string(v) != fmt.Sprint("value", k) {
							errs <- fmt.Errorf("stable key %d: %q %v", k, v, err)
							return
						}
						v, err = s.Get([]byte(fmt.Sprint("churn", i%500)))
						if err != nil && !errors.Is(err, store.ErrNotFound) || err == nil && !bytes.HasPrefix(v, []byte("c")) {
							errs <- fmt.Errorf("churning key: %q %v", v, err)
							return
						}
					}
				}()
			}
			wg.Add(1)
			go func() { // a second writer, and compactions
				defer wg.Done()
				for i := 0; !stop.Load(); i++ {
					if i%5000 == 0 {
						if err := s.Compact(); err != nil {
							errs <- err
							return
						}
					}
					s.Delete([]byte(fmt.Sprint("churn", i%500)))
				}
			}()
			for i := range n {
				if err := s.Put([]byte(fmt.Sprint("grow", i)), []byte("g")); err != nil {
					t.Fatal(err)
				}
				if err := s.Put([]byte(fmt.Sprint("churn", i%500)), []byte(fmt.Sprint("c", i))); err != nil {
					t.Fatal(err)
				}
			}
			stop.Store(true)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			for i := range n {
				if ok, err := s.Has([]byte(fmt.Sprint("grow", i))); !ok || err != nil {
					t.Fatalf("grow%d lost: %v", i, err)
				}
			}
			if err := s.CheckIndex(); err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v", s.Stats())
		})
	}
}

// TestAbsentKeysReadNoLog counts the log reads of lookups of absent keys
// (near misses of present ones): at most 0.1 %, at 10^5 keys, and at
// 10^6 too with CUCKOO_LONG=1.
//
// The seed is fixed: the last check, that a present key takes exactly one
// log read, fails when another entry in the key's buckets has the same tag
// and is read first, which with a random seed happened for about 1 present
// key in 10^4 (measured: 28 of 300,000), so about once in 10^4 runs. With
// seed 1 the index, and so every count here, is the same on every run.
func TestAbsentKeysReadNoLog(t *testing.T) {
	testlong.SkipQuickRun(t)
	var reads atomic.Int64
	store.SetLogReadHook(func() { reads.Add(1) })
	defer store.SetLogReadHook(nil)
	s, err := store.Open(t.TempDir(), store.WithSync(store.SyncNever), store.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sizes := []int{100_000}
	if testlong.Enabled() {
		sizes = append(sizes, 1_000_000)
	}
	i := 0
	for _, n := range sizes {
		for ; i < n; i++ {
			if err := s.Put(fmt.Appendf(nil, "https://example.com/page/%d", i), nil); err != nil {
				t.Fatal(err)
			}
		}
		const probes = 1_000_000
		reads.Store(0)
		for j := range probes {
			if _, err := s.Get(fmt.Appendf(nil, "https://example.com/page/%d.", j)); !errors.Is(err, store.ErrNotFound) {
				t.Fatal(err)
			}
		}
		rate := float64(reads.Load()) / probes
		st := s.Stats()
		t.Logf("%d keys: %.4f %% of absent lookups read the log; index %.2f bytes per key", n, 100*rate, float64(st.IndexBytes)/float64(st.Keys))
		if rate > 0.001 {
			t.Errorf("%d keys: %.4f %% of absent lookups read the log, more than 0.1 %%", n, 100*rate)
		}
		reads.Store(0)
		if _, err := s.Get(fmt.Appendf(nil, "https://example.com/page/%d", n/2)); err != nil || reads.Load() != 1 {
			t.Errorf("a present key took %d log reads (%v)", reads.Load(), err)
		}
	}
}
