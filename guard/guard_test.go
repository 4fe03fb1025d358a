package guard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/guard"
)

func newFilter(t testing.TB, capacity uint64) *cuckoo.Concurrent {
	t.Helper()
	f, err := cuckoo.NewConcurrent(capacity, cuckoo.WithFalsePositiveRate(0.01), cuckoo.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// faultySet is a Filter whose operations fail on demand.
type faultySet struct {
	guard.Filter
	failContains, failAdd, failDelete atomic.Pointer[error]
	adds, deletes                     atomic.Int64
}

var errSetDown = errors.New("set down")

func (s *faultySet) Contains(ctx context.Context, key []byte) (bool, error) {
	if e := s.failContains.Load(); e != nil {
		return false, *e
	}
	return s.Filter.Contains(ctx, key)
}

func (s *faultySet) Add(ctx context.Context, key []byte) error {
	if e := s.failAdd.Load(); e != nil {
		return *e
	}
	s.adds.Add(1)
	return s.Filter.Add(ctx, key)
}

func (s *faultySet) Delete(ctx context.Context, key []byte) (bool, error) {
	if e := s.failDelete.Load(); e != nil {
		return false, *e
	}
	s.deletes.Add(1)
	return s.Filter.Delete(ctx, key)
}

func fail(p *atomic.Pointer[error], err error) {
	if err == nil {
		p.Store(nil)
		return
	}
	p.Store(&err)
}

// fillTable puts rows 0..n-1 in db and returns a Local set holding them.
func fillTable(t testing.TB, db *memTable, n int, capacity uint64) (*cuckoo.Concurrent, guard.Filter) {
	t.Helper()
	for i := range n {
		db.rows[string(rowKey(i))] = "row " + string(rowKey(i))
	}
	f := newFilter(t, capacity)
	set := guard.Local(f)
	if added, err := guard.Fill(context.Background(), set, db.scan); err != nil || added != int64(n) {
		t.Fatalf("Fill: %d, %v; want %d", added, err, n)
	}
	return f, set
}

func TestGetBlocksAbsentKeys(t *testing.T) {
	ctx := context.Background()
	db := newMemTable(1)
	_, set := fillTable(t, db, 1000, 2000)
	g := newGuard(t, set, db.load)
	for i := range 1000 {
		v, err := g.Get(ctx, rowKey(i))
		if err != nil || v != "row "+string(rowKey(i)) {
			t.Fatalf("Get(%s) = %q, %v", rowKey(i), v, err)
		}
	}
	const absent = 20000
	for i := range absent {
		if _, err := g.Get(ctx, fmt.Appendf(nil, "nope:%d", i)); !errors.Is(err, guard.ErrNotFound) {
			t.Fatalf("Get of an absent key: %v", err)
		}
	}
	s := g.Stats()
	if s.Lookups != 1000+absent || s.Loads != uint64(db.loads()) || s.Loads != 1000+s.Missing || s.Blocked+s.Missing != absent {
		t.Errorf("stats %+v with %d loads of the table", s, db.loads())
	}
	// The filter was built for 1 % at 2000 keys and holds 1000.
	if r := s.FalsePositiveRate(); r > 0.01 {
		t.Errorf("measured rate %.4f, above the filter's 0.01", r)
	}
	t.Logf("%+v, rate %.4f", s, s.FalsePositiveRate())
}

func TestInsertAddsBeforeTheWrite(t *testing.T) {
	ctx := context.Background()
	db := newMemTable(1)
	f, set := fillTable(t, db, 0, 100)
	g := newGuard(t, set, db.load)
	key := []byte("k")
	err := g.Insert(ctx, key, func(ctx context.Context) error {
		if !f.Contains(key) {
			t.Error("the write runs before the filter holds the key")
		}
		return db.insert(ctx, key)
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := g.Get(ctx, key); err != nil || v != "row k" {
		t.Fatalf("Get after Insert: %q, %v", v, err)
	}
}

func TestInsertFilterFailureSkipsTheWrite(t *testing.T) {
	ctx := context.Background()
	db := newMemTable(1)
	fs := &faultySet{Filter: guard.Local(newFilter(t, 100))}
	g := newGuard(t, guard.Filter(fs), db.load)
	fail(&fs.failAdd, errSetDown)
	ran := false
	err := g.Insert(ctx, []byte("k"), func(context.Context) error { ran = true; return nil })
	if !errors.Is(err, errSetDown) || ran {
		t.Fatalf("Insert with the filter down: %v, write ran %v; want errSetDown and no write", err, ran)
	}
	// A full filter is the same: the set's error, no write.
	tiny, err := cuckoo.NewConcurrent(4, cuckoo.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	g2 := newGuard(t, guard.Local(tiny), db.load)
	for i := 0; ; i++ {
		ran = false
		err = g2.Insert(ctx, fmt.Appendf(nil, "%d", i), func(context.Context) error { ran = true; return nil })
		if err != nil {
			break
		}
	}
	if !errors.Is(err, cuckoo.ErrFull) || ran {
		t.Fatalf("Insert into a full filter: %v, write ran %v", err, ran)
	}
	if s := g.Stats(); s.Errors != 1 {
		t.Errorf("Errors = %d, want 1", s.Errors)
	}
}

func TestFailedWriteLeavesAnExtraFingerprint(t *testing.T) {
	ctx := context.Background()
	db := newMemTable(1)
	f, set := fillTable(t, db, 0, 100)
	g := newGuard(t, set, db.load)
	key := []byte("k")
	// The write fails; it may or may not have committed: the fingerprint
	// stays, so a committed row is never missed.
	db.failAfter = 1
	if err := g.Insert(ctx, key, func(ctx context.Context) error { return db.insert(ctx, key) }); !errors.Is(err, errInjected) {
		t.Fatal(err)
	}
	db.failAfter = 0
	if f.Count(key) != 1 {
		t.Fatalf("Count after a failed Insert = %d, want 1", f.Count(key))
	}
	if _, err := g.Get(ctx, key); err != nil {
		t.Fatalf("the row committed by a failed write is not found: %v", err)
	}
	// A write that fails before committing: the extra copy costs a load.
	db.failBefore = 1
	key2 := []byte("k2")
	if err := g.Insert(ctx, key2, func(ctx context.Context) error { return db.insert(ctx, key2) }); !errors.Is(err, errInjected) {
		t.Fatal(err)
	}
	if _, err := g.Get(ctx, key2); !errors.Is(err, guard.ErrNotFound) {
		t.Fatalf("Get of a row never written: %v", err)
	}
	if s := g.Stats(); s.Missing != 1 || s.Blocked != 0 {
		t.Errorf("the extra copy should cost one load: %+v", s)
	}
}

func TestRemoveDeletesOnlyAfterTheWrite(t *testing.T) {
	ctx := context.Background()
	db := newMemTable(1)
	f, set := fillTable(t, db, 10, 100)
	g := newGuard(t, set, db.load)
	key := rowKey(3)

	// The write fails: the filter keeps the key, and the row is found.
	err := g.Remove(ctx, key, func(context.Context) error {
		if f.Count(key) != 1 {
			t.Error("the filter lost the key before the delete committed")
		}
		return errInjected
	})
	if !errors.Is(err, errInjected) || f.Count(key) != 1 {
		t.Fatalf("Remove whose write failed: %v, count %d; want the write's error and count 1", err, f.Count(key))
	}
	// The write deleted nothing: the filter is not touched (the delete
	// could hit another key's fingerprint).
	before := f.Len()
	err = g.Remove(ctx, []byte("never"), func(ctx context.Context) error { return db.remove(ctx, []byte("never")) })
	if !errors.Is(err, guard.ErrNotFound) || f.Len() != before {
		t.Fatalf("Remove of no row: %v, len %d → %d", err, before, f.Len())
	}
	// The write succeeds: one copy goes.
	if err := g.Remove(ctx, key, func(ctx context.Context) error { return db.remove(ctx, key) }); err != nil {
		t.Fatal(err)
	}
	if f.Count(key) != 0 {
		t.Fatalf("Count after Remove = %d", f.Count(key))
	}
	if _, err := g.Get(ctx, key); !errors.Is(err, guard.ErrNotFound) {
		t.Fatalf("Get after Remove: %v", err)
	}
}

func TestRemoveFilterFailureIsStale(t *testing.T) {
	ctx := context.Background()
	db := newMemTable(1)
	_, inner := fillTable(t, db, 10, 100)
	fs := &faultySet{Filter: inner}
	g := newGuard(t, guard.Filter(fs), db.load)
	fail(&fs.failDelete, errSetDown)
	key := rowKey(1)
	err := g.Remove(ctx, key, func(ctx context.Context) error { return db.remove(ctx, key) })
	if !errors.Is(err, guard.ErrStale) || !errors.Is(err, errSetDown) {
		t.Fatalf("Remove whose filter delete failed: %v; want ErrStale wrapping the set's error", err)
	}
	if ok, _ := db.exists(ctx, key); ok {
		t.Fatal("the row was not deleted")
	}
	// The fingerprint stays: a lookup costs a load and finds nothing.
	fail(&fs.failDelete, nil)
	if _, err := g.Get(ctx, key); !errors.Is(err, guard.ErrNotFound) {
		t.Fatalf("Get: %v", err)
	}
	if s := g.Stats(); s.Missing != 1 {
		t.Errorf("Missing = %d, want 1", s.Missing)
	}
}

func TestFailOpenAndClosed(t *testing.T) {
	ctx := context.Background()
	db := newMemTable(1)
	_, inner := fillTable(t, db, 10, 100)
	fs := &faultySet{Filter: inner}
	open := newGuard(t, guard.Filter(fs), db.load)
	closed := newGuard(t, guard.Filter(fs), db.load, guard.WithFailClosed())
	fail(&fs.failContains, errSetDown)

	if v, err := open.Get(ctx, rowKey(2)); err != nil || v == "" {
		t.Fatalf("fail open: Get of a row = %q, %v", v, err)
	}
	if _, err := open.Get(ctx, []byte("absent")); !errors.Is(err, guard.ErrNotFound) {
		t.Fatalf("fail open: Get of an absent key = %v", err)
	}
	if s := open.Stats(); s.FailedOpen != 2 || s.Errors != 2 || s.Loads != 2 {
		t.Errorf("fail open: %+v", s)
	}
	if _, err := closed.Get(ctx, rowKey(2)); !errors.Is(err, errSetDown) || errors.Is(err, guard.ErrNotFound) {
		t.Fatalf("fail closed: Get = %v, want the set's error", err)
	}
	if s := closed.Stats(); s.FailedClosed != 1 || s.Loads != 0 || s.Lookups != 1 {
		t.Errorf("fail closed: %+v", s)
	}
}

func TestRebuildFromNoSet(t *testing.T) {
	ctx := context.Background()
	db := newMemTable(1)
	for i := range 100 {
		db.rows[string(rowKey(i))] = "x"
	}
	g := newGuard[string](t, nil, db.load)
	if _, err := g.Get(ctx, []byte("absent")); !errors.Is(err, guard.ErrNotFound) {
		t.Fatal(err)
	}
	if s := g.Stats(); s.Unguarded != 1 || s.Loads != 1 {
		t.Fatalf("before the first Rebuild: %+v", s)
	}
	// Writes without a set just run.
	if err := g.Insert(ctx, []byte("new"), func(ctx context.Context) error { return db.insert(ctx, []byte("new")) }); err != nil {
		t.Fatal(err)
	}
	if err := g.Rebuild(ctx, guard.Local(newFilter(t, 1000)), db.scan); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if _, err := g.Get(ctx, rowKey(i)); err != nil {
			t.Fatalf("after Rebuild: %v", err)
		}
	}
	if _, err := g.Get(ctx, []byte("new")); err != nil {
		t.Fatalf("after Rebuild: %v", err)
	}
	loads := db.loads()
	for i := range 1000 {
		g.Get(ctx, fmt.Appendf(nil, "absent:%d", i))
	}
	if n := db.loads() - loads; n > 40 {
		t.Errorf("%d of 1000 absent keys loaded after Rebuild", n)
	}
	if s := g.Stats(); s.Rebuilds != 1 {
		t.Errorf("Rebuilds = %d", s.Rebuilds)
	}
}

// TestRebuildWaitsForEarlierWrites: a write that took the old view before
// the Rebuild began must commit before the scan, or the fresh set would
// lack its row.
func TestRebuildWaitsForEarlierWrites(t *testing.T) {
	ctx := context.Background()
	db := newMemTable(1)
	_, set := fillTable(t, db, 0, 100)
	g := newGuard(t, set, db.load)
	key := []byte("slow")
	inWrite, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- g.Insert(ctx, key, func(ctx context.Context) error {
			close(inWrite)
			<-release
			return db.insert(ctx, key)
		})
	}()
	<-inWrite
	fresh := newFilter(t, 100)
	rebuilt := make(chan error)
	go func() { rebuilt <- g.Rebuild(ctx, guard.Local(fresh), db.scan) }()
	select {
	case err := <-rebuilt:
		t.Fatalf("Rebuild finished while a write that began before it ran: %v", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-rebuilt; err != nil {
		t.Fatal(err)
	}
	if !fresh.Contains(key) {
		t.Fatal("the fresh filter lacks the row of a write that began before the Rebuild")
	}
	if _, err := g.Get(ctx, key); err != nil {
		t.Fatal(err)
	}
}

// TestRebuildWaitsForWritesOfOlderViews: a write that began during one
// Rebuild (so it reaches that Rebuild's sets, not the next one's) and is
// still running when the next Rebuild begins must commit before the next
// scan.
func TestRebuildWaitsForWritesOfOlderViews(t *testing.T) {
	ctx := context.Background()
	db := newMemTable(1)
	_, set := fillTable(t, db, 0, 100)
	g := newGuard(t, set, db.load)
	key := []byte("slow")
	inWrite, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	scan1 := func(ctx context.Context, yield func([]byte) error) error {
		go func() {
			done <- g.Insert(ctx, key, func(ctx context.Context) error {
				close(inWrite)
				<-release
				return db.insert(ctx, key)
			})
		}()
		<-inWrite
		return db.scan(ctx, yield)
	}
	if err := g.Rebuild(ctx, guard.Local(newFilter(t, 100)), scan1); err != nil {
		t.Fatal(err)
	}
	fresh := newFilter(t, 100)
	rebuilt := make(chan error)
	go func() { rebuilt <- g.Rebuild(ctx, guard.Local(fresh), db.scan) }()
	select {
	case err := <-rebuilt:
		t.Fatalf("the second Rebuild finished while a write of the first one's ran: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-rebuilt; err != nil {
		t.Fatal(err)
	}
	if _, err := g.Get(ctx, key); err != nil {
		t.Fatalf("the row of a write that overlapped two Rebuilds: %v", err)
	}
}

// TestRebuildReachesBothSets: writes during a rebuild reach the fresh
// set, Removes only the current one.
func TestRebuildReachesBothSets(t *testing.T) {
	ctx := context.Background()
	db := newMemTable(1)
	cur, set := fillTable(t, db, 10, 100)
	g := newGuard(t, set, db.load)
	fresh := newFilter(t, 100)
	var checked bool
	scan := func(ctx context.Context, yield func([]byte) error) error {
		// Writes while the scan runs.
		k := []byte("during")
		if err := g.Insert(ctx, k, func(ctx context.Context) error { return db.insert(ctx, k) }); err != nil {
			return err
		}
		if !cur.Contains(k) || !fresh.Contains(k) {
			t.Error("an Insert during the Rebuild did not reach both sets")
		}
		if err := g.Remove(ctx, rowKey(1), func(ctx context.Context) error { return db.remove(ctx, rowKey(1)) }); err != nil {
			return err
		}
		if cur.Contains(rowKey(1)) {
			t.Error("a Remove during the Rebuild left the current set")
		}
		checked = true
		return db.scan(ctx, yield)
	}
	if err := g.Rebuild(ctx, guard.Local(fresh), scan); err != nil {
		t.Fatal(err)
	}
	if !checked {
		t.Fatal("scan not called")
	}
	for i := range 10 {
		_, err := g.Get(ctx, rowKey(i))
		if i == 1 {
			if !errors.Is(err, guard.ErrNotFound) {
				t.Errorf("removed row: %v", err)
			}
		} else if err != nil {
			t.Errorf("row %d: %v", i, err)
		}
	}
	if _, err := g.Get(ctx, []byte("during")); err != nil {
		t.Errorf("row inserted during the Rebuild: %v", err)
	}
}

func TestRebuildAbandonedWhenFreshFails(t *testing.T) {
	ctx := context.Background()
	db := newMemTable(1)
	cur, set := fillTable(t, db, 10, 100)
	g := newGuard(t, set, db.load)
	fresh := &faultySet{Filter: guard.Local(newFilter(t, 100))}
	scan := func(ctx context.Context, yield func([]byte) error) error {
		if err := db.scan(ctx, yield); err != nil {
			return err
		}
		// The fresh set fails an Insert's add: the Insert goes on, the
		// Rebuild is given up.
		fail(&fresh.failAdd, errSetDown)
		k := []byte("k")
		if err := g.Insert(ctx, k, func(ctx context.Context) error { return db.insert(ctx, k) }); err != nil {
			t.Errorf("Insert while the fresh set fails: %v", err)
		}
		return nil
	}
	err := g.Rebuild(ctx, guard.Filter(fresh), scan)
	if !errors.Is(err, guard.ErrAbandoned) || !errors.Is(err, errSetDown) {
		t.Fatalf("Rebuild: %v, want ErrAbandoned wrapping the fresh set's error", err)
	}
	// The current set stays and has the row.
	if !cur.Contains([]byte("k")) {
		t.Fatal("the current set lacks the row inserted during the given-up Rebuild")
	}
	if _, err := g.Get(ctx, []byte("k")); err != nil {
		t.Fatal(err)
	}
	// Writes no longer reach the given-up set.
	adds := fresh.adds.Load()
	fail(&fresh.failAdd, nil)
	k2 := []byte("k2")
	if err := g.Insert(ctx, k2, func(ctx context.Context) error { return db.insert(ctx, k2) }); err != nil {
		t.Fatal(err)
	}
	if fresh.adds.Load() != adds {
		t.Error("an Insert after the Rebuild was given up still reached its set")
	}
}

func TestRebuildErrors(t *testing.T) {
	ctx := context.Background()
	db := newMemTable(1)
	_, set := fillTable(t, db, 10, 100)
	g := newGuard(t, set, db.load)
	if err := g.Rebuild(ctx, nil, db.scan); !errors.Is(err, guard.ErrInvalidParameter) {
		t.Errorf("Rebuild(nil): %v", err)
	}
	scanErr := errors.New("scan broke")
	fresh := newFilter(t, 100)
	err := g.Rebuild(ctx, guard.Local(fresh), func(ctx context.Context, yield func([]byte) error) error {
		yield([]byte("x"))
		return scanErr
	})
	if !errors.Is(err, scanErr) {
		t.Errorf("Rebuild with a failing scan: %v", err)
	}
	// Nothing changed: the current set answers, writes reach it alone.
	if _, err := g.Get(ctx, rowKey(3)); err != nil {
		t.Fatal(err)
	}
	if err := g.Insert(ctx, []byte("y"), func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if fresh.Contains([]byte("y")) {
		t.Error("a write after a failed Rebuild reached its fresh set")
	}
	// A full fresh set fails the Rebuild.
	tiny, _ := cuckoo.NewConcurrent(2, cuckoo.WithSeed(1))
	if err := g.Rebuild(ctx, guard.Local(tiny), db.scan); !errors.Is(err, cuckoo.ErrFull) {
		t.Errorf("Rebuild into a set too small: %v", err)
	}
	// A canceled context.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := g.Rebuild(cctx, guard.Local(newFilter(t, 100)), db.scan); !errors.Is(err, context.Canceled) {
		t.Errorf("Rebuild with a canceled context: %v", err)
	}
	if _, err := g.Get(ctx, rowKey(3)); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentLocal runs writers, readers and back-to-back Rebuilds
// over a table whose writes fail before and after committing, and
// checks that no row that existed for a whole lookup is reported
// missing, and that absent keys reach the loader at the filter's rate.
func TestConcurrentLocal(t *testing.T) {
	t.Parallel()
	for _, live := range []bool{false, true} {
		t.Run(fmt.Sprintf("liveScan=%v", live), func(t *testing.T) {
			db := newMemTable(7)
			db.failBefore, db.failAfter, db.liveScan = 0.05, 0.05, live
			_, set := fillTable(t, db, 200, 1000)
			w := &workload{db: db, keys: 400, writers: 8, readers: 4, writes: 1500, rebuilds: 30, seed: 7, minChecked: 1000}
			if testing.Short() {
				w.writes, w.rebuilds = 500, 10
			}
			g := newGuard(t, set, w.loader())
			w.guards = []*guard.Guard[string]{g}
			w.rebuild = func(ctx context.Context, round int) error {
				return g.Rebuild(ctx, guard.Local(newFilter(t, 1000)), db.scan)
			}
			w.run(t)
			if w.checked.Load() < 1000 {
				t.Errorf("only %d lookups checked", w.checked.Load())
			}
			for _, err := range w.rebuildErrs {
				t.Errorf("Rebuild: %v", err)
			}
			w.checkRate(t, 0.01)
			if s := g.Stats(); s.Rebuilds != uint64(w.rebuilds) {
				t.Errorf("Stats.Rebuilds = %d, want %d", s.Rebuilds, w.rebuilds)
			}
		})
	}
}

// TestConcurrentInsertRemoveOneKey: Inserts and Removes of one key from
// many goroutines; the filter holds at least as many copies of the key as
// there are rows, after every write.
func TestConcurrentInsertRemoveOneKey(t *testing.T) {
	ctx := context.Background()
	db := newMemTable(3)
	db.writeDelay = 100e3
	f, set := fillTable(t, db, 0, 100)
	g := newGuard(t, set, db.load)
	key := []byte("hot")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 200 {
				if (i+n)%2 == 0 {
					g.Insert(ctx, key, func(ctx context.Context) error { return db.insert(ctx, key) })
				} else {
					g.Remove(ctx, key, func(ctx context.Context) error { return db.remove(ctx, key) })
				}
				db.mu.Lock()
				_, row := db.rows["hot"]
				c := f.Count(key)
				db.mu.Unlock()
				if row && c == 0 {
					t.Error("the row exists and the filter has no copy of its key")
					return
				}
			}
		}()
	}
	wg.Wait()
	// Every copy beyond the row's is an extra fingerprint from an Insert
	// whose write failed (the row existed): at most one per such Insert.
	t.Logf("copies at the end: %d", f.Count(key))
}

// TestGetAllocatesNothing: a lookup the filter answers allocates nothing.
func TestGetAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	db := newMemTable(1)
	_, set := fillTable(t, db, 100, 1000)
	g := newGuard(t, set, db.load)
	key := []byte("absent")
	if _, err := g.Get(ctx, key); !errors.Is(err, guard.ErrNotFound) {
		t.Skip("the probe key is a false positive")
	}
	if n := testing.AllocsPerRun(1000, func() { g.Get(ctx, key) }); n != 0 {
		t.Errorf("Get of an absent key allocates %v times", n)
	}
}

// blockingSet is a Filter whose Add of one key waits for a signal and then
// fails.
type blockingSet struct {
	guard.Filter
	key     string
	entered chan struct{}
	release chan error
}

func (s *blockingSet) Add(ctx context.Context, key []byte) error {
	if string(key) == s.key {
		close(s.entered)
		return <-s.release
	}
	return s.Filter.Add(ctx, key)
}

// TestInsertFreshAddFailsAfterSwap: an Insert whose add to the fresh set
// fails after the Rebuild swapped that set in must not run its write: the
// current set would lack the row.
func TestInsertFreshAddFailsAfterSwap(t *testing.T) {
	ctx := context.Background()
	db := newMemTable(1)
	_, set := fillTable(t, db, 10, 100)
	g := newGuard(t, set, db.load)
	fresh := &blockingSet{Filter: guard.Local(newFilter(t, 100)), key: "k", entered: make(chan struct{}), release: make(chan error)}
	inserted := make(chan error)
	ran := false
	scan := func(ctx context.Context, yield func([]byte) error) error {
		go func() {
			inserted <- g.Insert(ctx, []byte("k"), func(ctx context.Context) error {
				ran = true
				return db.insert(ctx, []byte("k"))
			})
		}()
		<-fresh.entered // the Insert is adding to the fresh set
		return db.scan(ctx, yield)
	}
	if err := g.Rebuild(ctx, guard.Filter(fresh), scan); err != nil {
		t.Fatal(err)
	}
	fresh.release <- errSetDown
	if err := <-inserted; !errors.Is(err, errSetDown) || ran {
		t.Fatalf("Insert whose add to the swapped-in set failed: %v, write ran %v", err, ran)
	}
}

// stalledSet is a Filter whose lookups never answer: they wait for their
// context to end, recording its deadline.
type stalledSet struct {
	guard.Filter
	mu        sync.Mutex
	deadlines []time.Time
}

func (s *stalledSet) Contains(ctx context.Context, key []byte) (bool, error) {
	d, ok := ctx.Deadline()
	if !ok {
		return false, errors.New("a lookup without a deadline")
	}
	s.mu.Lock()
	s.deadlines = append(s.deadlines, d)
	s.mu.Unlock()
	<-ctx.Done()
	return false, ctx.Err()
}

// TestReadTimeoutBoundsLookups: Get gives the set's lookup the read
// timeout as its context's deadline, and GetMany one read timeout per
// 8,192 keys; a set that does not answer by then fails over, and the
// error says why. The deadlines are checked against the moments before
// and after the call, plus the timeout: exact whatever the machine's
// speed.
func TestReadTimeoutBoundsLookups(t *testing.T) {
	ctx := context.Background()
	db := newMemTable(1)
	db.rows["a"] = "row a"
	set := &stalledSet{}
	const d = 20 * time.Millisecond
	open := newGuard(t, guard.Filter(set), db.load, guard.WithReadTimeout(d))
	closed := newGuard(t, guard.Filter(set), db.load, guard.WithReadTimeout(d), guard.WithFailClosed())
	within := func(before, after time.Time, timeout time.Duration) {
		t.Helper()
		set.mu.Lock()
		got := set.deadlines[len(set.deadlines)-1]
		set.mu.Unlock()
		if got.Before(before.Add(timeout)) || got.After(after.Add(timeout)) {
			t.Fatalf("the set's deadline is %v after the call began, want %v", got.Sub(before), timeout)
		}
	}

	before := time.Now()
	if v, err := open.Get(ctx, []byte("a")); err != nil || v != "row a" {
		t.Fatalf("fail open: %q, %v", v, err)
	}
	within(before, time.Now(), d)
	before = time.Now()
	_, err := closed.Get(ctx, []byte("a"))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "read timeout") {
		t.Fatalf("fail closed: %v, want the read timeout's error", err)
	}
	within(before, time.Now(), d)

	keys := make([][]byte, 8193)
	for i := range keys {
		keys[i] = []byte("a")
	}
	vals, errs := make([]string, len(keys)), make([]error, len(keys))
	before = time.Now()
	if err := open.GetMany(ctx, keys, vals, errs); err != nil || errs[0] != nil || vals[8192] != "row a" {
		t.Fatalf("GetMany, fail open: %v, %v, %q", err, errs[0], vals[8192])
	}
	within(before, time.Now(), 2*d)
	if s := open.Stats(); s.FailedOpen != 1+8193 || s.Errors != 2 {
		t.Errorf("fail open: %+v", s)
	}
}

// TestNewRefusesBadOptions: an option given a bad value, or a nil loader,
// is an error wrapping ErrInvalidParameter naming it, and no guard.
func TestNewRefusesBadOptions(t *testing.T) {
	load := func(context.Context, []byte) (string, error) { return "", guard.ErrNotFound }
	for _, c := range []struct {
		name string
		opt  guard.Option
	}{
		{"WithReadTimeout", guard.WithReadTimeout(0)},
		{"WithReadTimeout", guard.WithReadTimeout(-time.Second)},
		{"WithGrace", guard.WithGrace(0)},
		{"WithRebuildConcurrency", guard.WithRebuildConcurrency(0)},
		{"WithRebuildConcurrency", guard.WithRebuildConcurrency(-3)},
	} {
		g, err := guard.New(nil, load, guard.WithFailClosed(), c.opt)
		if !errors.Is(err, guard.ErrInvalidParameter) || !strings.Contains(err.Error(), c.name) || g != nil {
			t.Errorf("New with a bad %s = %v, %v: want no guard and an error wrapping ErrInvalidParameter naming the option", c.name, g, err)
		}
	}
	if g, err := guard.New[string](nil, nil); !errors.Is(err, guard.ErrInvalidParameter) || g != nil {
		t.Errorf("New with a nil loader = %v, %v: want no guard and ErrInvalidParameter", g, err)
	}
	if _, err := guard.New(nil, load, guard.WithReadTimeout(time.Millisecond), guard.WithGrace(time.Second), guard.WithRebuildConcurrency(1), nil); err != nil {
		t.Errorf("New with good options (and a nil one): %v", err)
	}
}
