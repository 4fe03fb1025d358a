package guard_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/guard"
)

var seed = flag.Uint64("seed", 1, "seed of the random tests")

// TestModel applies random Inserts, Removes, lookups and Rebuilds, some
// of whose writes fail before or after committing, to a guard over a
// table in memory, and checks after each step that the filter holds at
// least one copy of every row's key and that every row is found.
func TestModel(t *testing.T) {
	t.Parallel()
	t.Logf("-seed %d", *seed)
	rng := rand.New(rand.NewPCG(*seed, 2))
	ctx := context.Background()
	db := newMemTable(*seed)
	db.failBefore, db.failAfter = 0.1, 0.1
	cur := newFilter(t, 2000)
	g := newGuard(t, guard.Local(cur), db.load)
	steps := 20000
	if testing.Short() {
		steps = 5000
	}
	for step := range steps {
		k := rowKey(rng.IntN(300))
		switch op := rng.IntN(20); {
		case op < 8:
			g.Insert(ctx, k, func(ctx context.Context) error { return db.insert(ctx, k) })
		case op < 14:
			g.Remove(ctx, k, func(ctx context.Context) error { return db.remove(ctx, k) })
		case op < 19:
			_, err := g.Get(ctx, k)
			ok, _ := db.exists(ctx, k)
			if ok != (err == nil) || !ok && !errors.Is(err, guard.ErrNotFound) {
				t.Fatalf("step %d: Get(%s) = %v with the row there: %v", step, k, err, ok)
			}
		default:
			fresh := newFilter(t, 2000)
			if err := g.Rebuild(ctx, guard.Local(fresh), db.scan); err != nil {
				t.Fatalf("step %d: Rebuild: %v", step, err)
			}
			cur = fresh
		}
		db.mu.Lock()
		for id := range db.rows {
			if cur.CountString(id) == 0 {
				t.Fatalf("step %d: the row %s exists and the filter has no copy of its key", step, id)
			}
		}
		// Every copy beyond the rows' is an extra fingerprint: from a
		// failed write or a duplicate insert; Rebuilds clear them.
		if extra := int64(cur.Len()) - int64(len(db.rows)); extra < 0 {
			t.Fatalf("step %d: %d copies for %d rows", step, cur.Len(), len(db.rows))
		}
		db.mu.Unlock()
	}
	t.Logf("%+v", g.Stats())
}

// TestRateMatchesFilter: lookups of absent keys reach the loader at the
// filter's false-positive rate, and Stats measures that rate.
func TestRateMatchesFilter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, p := range []float64{0.01, 0.001} {
		t.Run(fmt.Sprintf("rate=%g", p), func(t *testing.T) {
			const n = 100_000
			f, err := cuckoo.NewConcurrent(n, cuckoo.WithFalsePositiveRate(p), cuckoo.WithSeed(3))
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if err := f.Add(rowKey(i)); err != nil {
					t.Fatal(err)
				}
			}
			loads := 0
			g := newGuard(t, guard.Local(f), func(context.Context, []byte) (int, error) {
				loads++
				return 0, guard.ErrNotFound
			})
			probes := int(200 / p)
			for i := range probes {
				g.Get(ctx, fmt.Appendf(nil, "absent:%d", i))
			}
			want := f.FalsePositiveRate()
			sigma := math.Sqrt(want * (1 - want) / float64(probes))
			got := g.Stats().FalsePositiveRate()
			t.Logf("%d probes: %d loads, measured %.5f, filter %.5f ± %.5f", probes, loads, got, want, 5*sigma)
			if float64(loads)/float64(probes) != got {
				t.Errorf("Stats says %.5f, the loader saw %.5f", got, float64(loads)/float64(probes))
			}
			if math.Abs(got-want) > 5*sigma {
				t.Errorf("measured rate %.5f, the filter's is %.5f (5σ = %.5f)", got, want, 5*sigma)
			}
			if want > p {
				t.Errorf("the filter at capacity is at %.5f, above the %g asked", want, p)
			}
		})
	}
}

// lostReplySet is a Filter whose Delete deletes and then reports a timeout,
// as a call whose reply was lost would.
type lostReplySet struct {
	guard.Filter
	calls int
}

var errTimeout = errors.New("i/o timeout")

func (s *lostReplySet) Delete(ctx context.Context, key []byte) (bool, error) {
	s.calls++
	s.Filter.Delete(ctx, key)
	return false, errTimeout
}

// TestRemoveDeletesOnce: a filter delete whose outcome is unknown is not
// tried again: a second try could delete the copy of another key (or of
// the same key, inserted twice) that still has its row.
func TestRemoveDeletesOnce(t *testing.T) {
	ctx := context.Background()
	db := newMemTable(1)
	f, inner := fillTable(t, db, 10, 100)
	set := &lostReplySet{Filter: inner}
	g := newGuard(t, guard.Filter(set), db.load)
	k := rowKey(4)
	f.Add(k) // a second copy, as a second Insert of the key would leave
	err := g.Remove(ctx, k, func(ctx context.Context) error { return db.remove(ctx, k) })
	if !errors.Is(err, guard.ErrStale) || !errors.Is(err, errTimeout) {
		t.Fatalf("Remove: %v", err)
	}
	if set.calls != 1 || f.Count(k) != 1 {
		t.Fatalf("%d deletes, %d copies left; want 1 delete and 1 copy", set.calls, f.Count(k))
	}
}
