package guard_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/guard"
)

// workload runs writers (Inserts and Removes of a small key space, so
// that writes of one key overlap), readers (lookups of rows that exist
// for the whole lookup, and of keys never inserted) and a rebuilder
// against guards over one table, and counts what the guarantees forbid.
type workload struct {
	db      table
	guards  []*guard.Guard[string] // goroutine i uses guards[i % len]
	keys    int                    // the key space of the writers
	writers int
	readers int
	writes  int // per writer, at least
	// rebuild, if set, is called rebuilds times in a row while the writers
	// run, each time with the next round number.
	rebuild  func(ctx context.Context, round int) error
	rebuilds int
	seed     uint64
	// minChecked: the writers go on past writes until the readers have
	// checked this many lookups of rows that existed throughout (or for 2
	// minutes at most), so that how much the lookups overlap the writes
	// does not depend on how busy the machine is.
	minChecked int64

	mu      sync.Mutex
	present []int8 // 1 the row exists, 0 it does not, -1 not known yet
	busy    []int  // writes of the key running
	seq     []uint64

	checked       atomic.Int64 // lookups of rows that existed throughout
	falseNotFound atomic.Int64
	absentGets    atomic.Int64 // lookups of keys never inserted
	absentLoads   atomic.Int64 // their calls of load
	writeErrors   atomic.Int64 // writes that failed (conflicts, injected faults)
	staleErrors   atomic.Int64 // writes that returned ErrStale
	rebuildErrs   []error
}

func rowKey(i int) []byte { return fmt.Appendf(nil, "row:%06d", i) }

// loader is the Loader the workload's guards must use: the table's, with
// the loads of never-inserted keys counted.
func (w *workload) loader() guard.Loader[string] {
	return func(ctx context.Context, key []byte) (string, error) {
		if strings.HasPrefix(string(key), "absent:") {
			w.absentLoads.Add(1)
		}
		return w.db.load(ctx, key)
	}
}

func (w *workload) run(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	w.present = make([]int8, w.keys)
	w.busy = make([]int, w.keys)
	w.seq = make([]uint64, w.keys)
	for k := range w.keys {
		ok, err := w.db.exists(ctx, rowKey(k))
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			w.present[k] = 1
		}
	}

	var writersDone, rebuildsDone atomic.Bool
	stop := func() bool { return writersDone.Load() && (w.rebuild == nil || rebuildsDone.Load()) }
	var wg, writers sync.WaitGroup
	var written atomic.Int64
	deadline := time.Now().Add(2 * time.Minute)
	more := func(n int) bool {
		return n < w.writes || w.rebuild != nil && !rebuildsDone.Load() ||
			w.checked.Load() < w.minChecked && time.Now().Before(deadline)
	}
	for i := range w.writers {
		writers.Add(1)
		go func() {
			defer writers.Done()
			rng := rand.New(rand.NewPCG(w.seed, uint64(i)))
			g := w.guards[i%len(w.guards)]
			for n := 0; more(n); n++ {
				w.write(t, g, rng)
				written.Add(1)
			}
		}()
	}
	go func() { writers.Wait(); writersDone.Store(true) }()
	if w.rebuild != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer rebuildsDone.Store(true)
			for r := range w.rebuilds {
				if err := w.rebuild(ctx, r); err != nil {
					w.mu.Lock()
					w.rebuildErrs = append(w.rebuildErrs, err)
					w.mu.Unlock()
				}
			}
		}()
	}
	for i := range w.readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(w.seed, uint64(1000+i)))
			g := w.guards[(w.writers+i)%len(w.guards)]
			for n := 0; !stop(); n++ {
				w.readPresent(t, g, rng)
				w.absentGets.Add(1)
				if _, err := g.Get(ctx, fmt.Appendf(nil, "absent:%d:%d", i, n)); !errors.Is(err, guard.ErrNotFound) {
					t.Errorf("Get of a key never inserted: %v, want ErrNotFound", err)
				}
			}
		}()
	}
	writers.Wait()
	wg.Wait()
	t.Logf("%d writes (%d failed, %d stale), %d lookups of rows that existed throughout, %d of absent keys of which %d loaded, %d rebuilds (%d failed)",
		written.Load(), w.writeErrors.Load(), w.staleErrors.Load(), w.checked.Load(), w.absentGets.Load(), w.absentLoads.Load(),
		w.rebuilds, len(w.rebuildErrs))
}

// write runs one Insert or Remove of a random key and brings the
// bookkeeping up to date.
func (w *workload) write(t *testing.T, g *guard.Guard[string], rng *rand.Rand) {
	ctx := context.Background()
	k := rng.IntN(w.keys)
	key := rowKey(k)
	w.mu.Lock()
	w.busy[k]++
	w.seq[k]++
	insert := w.present[k] != 1
	if w.present[k] == -1 || rng.IntN(8) == 0 {
		insert = rng.IntN(2) == 0 // sometimes the write that fails: a duplicate insert, a remove of nothing
	}
	w.mu.Unlock()

	var err error
	if insert {
		err = g.Insert(ctx, key, func(ctx context.Context) error { return w.db.insert(ctx, key) })
	} else {
		err = g.Remove(ctx, key, func(ctx context.Context) error { return w.db.remove(ctx, key) })
	}
	if errors.Is(err, guard.ErrStale) {
		w.staleErrors.Add(1)
	} else if err != nil {
		w.writeErrors.Add(1)
	}

	w.mu.Lock()
	w.busy[k]--
	w.seq[k]++
	w.present[k] = -1 // until the table says
	if w.busy[k] > 0 {
		w.mu.Unlock()
		return
	}
	s := w.seq[k]
	w.mu.Unlock()
	// No write of the key runs: ask the table what is committed.
	ok, err := w.db.exists(ctx, key)
	if err != nil {
		t.Errorf("exists: %v", err)
		return
	}
	w.mu.Lock()
	if w.seq[k] == s {
		w.present[k] = 0
		if ok {
			w.present[k] = 1
		}
	}
	w.mu.Unlock()
}

// readPresent looks up a random key whose row exists and no write of
// which runs, and counts a "not found" if none began meanwhile.
func (w *workload) readPresent(t *testing.T, g *guard.Guard[string], rng *rand.Rand) {
	k := rng.IntN(w.keys)
	w.mu.Lock()
	ok := w.present[k] == 1 && w.busy[k] == 0
	s := w.seq[k]
	w.mu.Unlock()
	if !ok {
		return
	}
	_, err := g.Get(context.Background(), rowKey(k))
	w.mu.Lock()
	stable := w.seq[k] == s
	w.mu.Unlock()
	if !stable {
		return
	}
	w.checked.Add(1)
	if err != nil {
		w.falseNotFound.Add(1)
		t.Errorf("Get(%s) of a row that existed for the whole lookup: %v", rowKey(k), err)
	}
}

// checkRate fails t unless the measured rate at which lookups of absent
// keys reached the loader is within 5 standard deviations of p.
func (w *workload) checkRate(t *testing.T, p float64) {
	t.Helper()
	n, loads := w.absentGets.Load(), w.absentLoads.Load()
	if n == 0 {
		t.Fatal("no lookups of absent keys")
	}
	bound := p + 5*math.Sqrt(p*(1-p)/float64(n))
	rate := float64(loads) / float64(n)
	t.Logf("absent keys: %d of %d lookups loaded: %.4f (bound %.4f for a filter of rate %g)", loads, n, rate, bound, p)
	if rate > bound {
		t.Errorf("absent keys reached the loader at %.4f, above %.4f (filter rate %g)", rate, bound, p)
	}
}
