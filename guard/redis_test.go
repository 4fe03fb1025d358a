package guard_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/guard"
	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testparallel"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// fleet is a Redis server and a client per process of a simulated
// fleet: each process has its own connection pool, as separate processes
// would, and generous timeouts (redistest.ClientTimeout).
type fleet struct {
	srv     *redistest.Server
	clients []redis.UniversalClient
}

func newFleet(t *testing.T, processes int) *fleet {
	t.Helper()
	f := &fleet{srv: redistest.NewServer(t, redistest.Config{})}
	for range processes {
		c := redis.NewClient(&redis.Options{Addr: f.srv.Addr, DialTimeout: redistest.ClientTimeout,
			ReadTimeout: redistest.ClientTimeout, WriteTimeout: redistest.ClientTimeout})
		t.Cleanup(func() { c.Close() })
		f.clients = append(f.clients, c)
	}
	return f
}

// newGeneration creates an empty redisfilter filter for a Shared set.
func newGeneration(t testing.TB, rdb redis.UniversalClient, name string, capacity uint64) *redisfilter.Filter {
	t.Helper()
	f, err := redisfilter.New(context.Background(), rdb, name, capacity, redisfilter.WithFalsePositiveRate(0.01))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// sharedTable returns a table of rows 0 to rows-1 and the first
// generation of a Shared set called name, filled with their keys.
func sharedTable(t testing.TB, rdb redis.UniversalClient, name string, rows int, capacity uint64) (*memTable, *redisfilter.Filter) {
	t.Helper()
	db := newMemTable(1)
	for i := range rows {
		db.rows[string(rowKey(i))] = "row " + string(rowKey(i))
	}
	first := newGeneration(t, rdb, name, capacity)
	if n, err := guard.Fill(context.Background(), guard.Shared(first), db.scan); err != nil || n != int64(rows) {
		t.Fatalf("Fill: %d, %v", n, err)
	}
	return db, first
}

func openShared(t testing.TB, rdb redis.UniversalClient, name string) guard.Filter {
	t.Helper()
	s, err := guard.OpenShared(context.Background(), rdb, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testGrace is the grace period of the tests' Shared sets: far above
// their writes (a millisecond or two, more on a busy machine), short
// enough for quick Rebuilds.
const testGrace = 300 * time.Millisecond

// TestRedisSharedRebuild: two processes share a set; a Rebuild from one
// is seen by the other, writes of the other during the Rebuild reach the
// fresh generation, the old generation is dropped, and a process that
// starts afterwards opens the new one.
func TestRedisSharedRebuild(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	ctx := context.Background()
	fl := newFleet(t, 3)
	a, b := fl.clients[0], fl.clients[1]
	db := newMemTable(1)
	for i := range 500 {
		db.rows[string(rowKey(i))] = "x"
	}
	first := newGeneration(t, a, "users", 2000)
	if n, err := guard.Fill(ctx, guard.Shared(first), db.scan); err != nil || n != 500 {
		t.Fatalf("Fill: %d, %v", n, err)
	}
	setA, setB := openShared(t, a, "users"), openShared(t, b, "users")
	gA := newGuard(t, setA, db.load, guard.WithGrace(testGrace))
	gB := newGuard(t, setB, db.load, guard.WithGrace(testGrace))

	// B inserts while A rebuilds; a row B inserts is found by A at once.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 500; i < 1200; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := rowKey(i)
			if err := gB.Insert(ctx, k, func(ctx context.Context) error { return db.insert(ctx, k) }); err != nil {
				t.Errorf("Insert through B: %v", err)
				return
			}
			if _, err := gA.Get(ctx, k); err != nil {
				t.Errorf("A does not find the row B inserted: %v", err)
				return
			}
			if i%10 == 0 {
				// A Remove through B.
				k := rowKey(i - 5)
				if err := gB.Remove(ctx, k, func(ctx context.Context) error { return db.remove(ctx, k) }); err != nil {
					t.Errorf("Remove through B: %v", err)
					return
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	fresh := newGeneration(t, a, "users@2", 4000)
	start := time.Now()
	if err := gA.Rebuild(ctx, guard.Shared(fresh), db.scan); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	close(stop)
	wg.Wait()
	if took < 2*testGrace {
		t.Errorf("Rebuild took %v, less than its two grace periods", took)
	}

	// Both processes now read the fresh generation; the first is gone.
	for _, s := range []guard.Filter{setA, setB} {
		s.Contains(ctx, []byte("x")) // refreshes B's view if due
	}
	time.Sleep(testGrace / 4)
	if _, err := setB.Contains(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if cur, next, retired := guard.Generations(setB); cur != "users@2" || next != "" || len(retired) != 0 {
		t.Errorf("B sees cur %q next %q retired %q, want users@2 alone", cur, next, retired)
	}
	if _, err := redisfilter.Open(ctx, a, "users"); !errors.Is(err, redisfilter.ErrNotFound) {
		t.Errorf("the old generation is still there: %v", err)
	}
	setC := openShared(t, fl.clients[2], "users")
	if cur, _, _ := guard.Generations(setC); cur != "users@2" {
		t.Errorf("a process started after the Rebuild opens %q", cur)
	}
	gC := newGuard(t, setC, db.load)
	db.mu.Lock()
	var rows [][]byte
	for k := range db.rows {
		rows = append(rows, []byte(k))
	}
	db.mu.Unlock()
	for _, k := range rows {
		for _, g := range []*guard.Guard[string]{gA, gB, gC} {
			if _, err := g.Get(ctx, k); err != nil {
				t.Fatalf("after the Rebuild, %s: %v", k, err)
			}
		}
	}
	// A Remove through B reaches the fresh generation.
	k := rowKey(1)
	before, _ := fresh.Count(ctx, k)
	if err := gB.Remove(ctx, k, func(ctx context.Context) error { return db.remove(ctx, k) }); err != nil {
		t.Fatal(err)
	}
	if after, _ := fresh.Count(ctx, k); before == 0 || after != before-1 {
		t.Errorf("a Remove after the Rebuild: copies in the fresh generation %d → %d", before, after)
	}
	t.Logf("rebuild of %d rows took %v; A %+v", len(rows), took, gA.Stats())
}

// TestRedisSharedFollowsThePointer: Shared(f) of the first generation,
// in a process that holds it, follows the set's pointer too.
func TestRedisSharedFollowsThePointer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fl := newFleet(t, 2)
	a, b := fl.clients[0], fl.clients[1]
	db := newMemTable(1)
	name := "s-shared"
	first := newGeneration(t, a, name, 1000)
	fB, err := redisfilter.Open(ctx, b, name)
	if err != nil {
		t.Fatal(err)
	}
	gA := newGuard(t, guard.Shared(first), db.load, guard.WithGrace(testGrace))
	gB := newGuard(t, guard.Shared(fB), db.load, guard.WithGrace(testGrace))
	if err := gA.Rebuild(ctx, guard.Shared(newGeneration(t, a, name+"@2", 1000)), db.scan); err != nil {
		t.Fatal(err)
	}
	k := []byte("after")
	if err := gA.Insert(ctx, k, func(ctx context.Context) error { return db.insert(ctx, k) }); err != nil {
		t.Fatal(err)
	}
	if _, err := gB.Get(ctx, k); err != nil {
		t.Fatalf("B, holding the dropped first generation, misses a row: %v", err)
	}
}

// TestRedisConcurrent runs the workload on two processes sharing one set,
// with Rebuilds from both, over a table whose writes fail before and
// after committing.
func TestRedisConcurrent(t *testing.T) {
	t.Parallel()
	rebuilds, writes := 1, 300
	if testlong.Enabled() {
		rebuilds, writes = 8, 3000
	}
	ctx := context.Background()
	fl := newFleet(t, 2)
	db := newMemTable(11)
	db.failBefore, db.failAfter, db.writeDelay = 0.05, 0.05, time.Millisecond
	for i := range 200 {
		db.rows[string(rowKey(i))] = "x"
	}
	first := newGeneration(t, fl.clients[0], "c", 2000)
	if _, err := guard.Fill(ctx, guard.Shared(first), db.scan); err != nil {
		t.Fatal(err)
	}
	w := &workload{db: db, keys: 400, writers: 6, readers: 4, writes: writes, rebuilds: rebuilds, seed: 11, minChecked: 100}
	for _, c := range fl.clients {
		w.guards = append(w.guards, newGuard(t, openShared(t, c, "c"), w.loader(), guard.WithGrace(testGrace)))
	}
	w.rebuild = func(ctx context.Context, round int) error {
		c := fl.clients[round%2]
		fresh := newGeneration(t, c, fmt.Sprintf("c@%d", round+1), 2000)
		return w.guards[round%2].Rebuild(ctx, guard.Shared(fresh), db.scan)
	}
	w.run(t)
	for _, err := range w.rebuildErrs {
		t.Errorf("Rebuild: %v", err)
	}
	if w.checked.Load() < 100 {
		t.Errorf("only %d lookups checked", w.checked.Load())
	}
	w.checkRate(t, 0.01)
	for i, g := range w.guards {
		t.Logf("process %d: %+v", i, g.Stats())
	}
}

// TestRedisRebuildAbandoned: a process whose write cannot reach the fresh
// generation gives the Rebuild up rather than fail the write; the
// Rebuild returns ErrAbandoned, the set stays on its generation, and the
// fresh one is dropped. The Rebuild's scan waits for B's inserts: a
// Rebuild that swapped the fresh generation in first (B slower than the
// grace period, on a busy machine) would make it the current one, which
// a write that cannot reach must fail, and the test would check nothing.
func TestRedisRebuildAbandoned(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // a failed test's scan, still waiting
	fl := newFleet(t, 2)
	a, b := fl.clients[0], fl.clients[1]
	db := newMemTable(1)
	newGeneration(t, a, "ab", 1000)
	setB := openShared(t, b, "ab")
	gA := newGuard(t, openShared(t, a, "ab"), db.load, guard.WithGrace(testGrace))
	gB := newGuard(t, setB, db.load, guard.WithGrace(testGrace))
	tiny := newGeneration(t, a, "ab@2", 8) // fills up at once
	inserted := make(chan struct{})
	scan := func(ctx context.Context, yield func([]byte) error) error {
		// B inserts more than the fresh generation holds, and gives the
		// Rebuild up, before the Rebuild may swap it in.
		select {
		case <-inserted:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	done := make(chan error)
	go func() { done <- gA.Rebuild(ctx, guard.Shared(tiny), scan) }()
	// Wait for the announcement to reach B.
	for {
		setB.Contains(ctx, nil)
		if _, next, _ := guard.Generations(setB); next == "ab@2" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i := range 200 {
		k := rowKey(i)
		if err := gB.Insert(ctx, k, func(ctx context.Context) error { return db.insert(ctx, k) }); err != nil {
			t.Fatalf("Insert %d while the fresh generation is full: %v", i, err)
		}
	}
	close(inserted)
	if err := <-done; !errors.Is(err, guard.ErrAbandoned) {
		t.Fatalf("Rebuild: %v, want ErrAbandoned", err)
	}
	if cur, next, _ := guard.Generations(setB); cur != "ab" || next != "" {
		t.Errorf("after the given-up Rebuild: cur %q next %q", cur, next)
	}
	if _, err := redisfilter.Open(ctx, a, "ab@2"); !errors.Is(err, redisfilter.ErrNotFound) {
		t.Errorf("the given-up generation is still there: %v", err)
	}
	for i := range 200 {
		if _, err := gA.Get(ctx, rowKey(i)); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
	}
}

// TestRedisDown: with Redis killed (connections refused) or stopped
// (SIGSTOP: connections accepted, nothing answered), Get fails over
// within the read timeout (1 s by default): fail open loads the row,
// fail closed returns the set's error. Before, a lookup that relied on
// a fresh read of the pointer waited out redisfilter's retry horizon
// (30 s) first. Each lookup here must return within 10 s, ten times the
// read timeout and a third of the 30 s it used to take and of the 30 s
// ReadTimeout of the test's clients, so neither a busy machine nor the
// old behaviour can pass for the other. The set's pointer is fresh (the
// lookup reads the generation at once) or stale (it reads the pointer
// first); the client either honours context deadlines
// (ContextTimeoutEnabled) or not (the set then waits for the reply in a
// goroutine of its own). With Redis killed and the pointer stale,
// Insert fails without running its write, and Remove runs its write and
// says the filter is stale.
func TestRedisDown(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	for _, c := range []struct {
		name                   string
		stopped, stale, ctxTTL bool
	}{
		{"killed/pointer=stale", false, true, false},
		{"killed/pointer=fresh", false, false, false},
		{"stopped/pointer=fresh", true, false, false},
		{"stopped/pointer=fresh/client-honours-deadlines", true, false, true},
		{"stopped/pointer=stale", true, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testRedisDown(t, c.stopped, c.stale, c.ctxTTL)
		})
	}
}

func testRedisDown(t *testing.T, stopped, stale, ctxDeadlines bool) {
	ctx := context.Background()
	fl := newFleet(t, 0)
	opts := &redis.Options{Addr: fl.srv.Addr, DialTimeout: redistest.ClientTimeout, ReadTimeout: redistest.ClientTimeout,
		WriteTimeout: redistest.ClientTimeout, ContextTimeoutEnabled: ctxDeadlines}
	if !stopped {
		// Writes fail fast once the server is gone (connections refused),
		// and quietly.
		// (go-redis's complaints about it are silenced in TestMain.)
		opts.DialerRetries, opts.MaxRetries = 1, -1
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	db, _ := sharedTable(t, rdb, "down", 10, 1000)
	set := openShared(t, rdb, "down")
	var gopts []guard.Option
	if stale {
		// A short grace period: the set reads its pointer again before
		// a lookup once an eighth of it has passed since the last read.
		gopts = append(gopts, guard.WithGrace(testGrace))
	}
	open := newGuard(t, set, db.load, gopts...)
	closed := newGuard(t, set, db.load, append(gopts, guard.WithFailClosed())...)
	if _, err := open.Get(ctx, rowKey(1)); err != nil {
		t.Fatal(err)
	}
	if stopped {
		if err := fl.srv.Pause(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fl.srv.Resume() })
	} else {
		fl.srv.Kill()
	}
	if stale {
		time.Sleep(testGrace) // well past the refresh interval, testGrace/8
	}

	if _, err := failsOver(t, func() (string, error) { return open.Get(ctx, rowKey(1)) }); err != nil {
		t.Fatalf("fail open, a row: %v", err)
	}
	if _, err := failsOver(t, func() (string, error) { return open.Get(ctx, []byte("absent")) }); !errors.Is(err, guard.ErrNotFound) {
		t.Fatalf("fail open, an absent key: %v", err)
	}
	if s := open.Stats(); s.FailedOpen != 2 || s.Loads != 3 {
		t.Errorf("fail open: %+v", s)
	}
	if _, err := failsOver(t, func() (string, error) { return closed.Get(ctx, rowKey(1)) }); err == nil || errors.Is(err, guard.ErrNotFound) {
		t.Fatalf("fail closed: %v, want the set's error", err)
	} else {
		t.Logf("fail closed: %v", err)
	}
	keys := [][]byte{rowKey(2), rowKey(3), []byte("absent")}
	vals, errs := make([]string, len(keys)), make([]error, len(keys))
	failsOver(t, func() (string, error) { return "", open.GetMany(ctx, keys, vals, errs) })
	if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], guard.ErrNotFound) {
		t.Fatalf("GetMany, fail open: %v", errs)
	}
	if stopped || !stale {
		return
	}
	ran := false
	if err := open.Insert(ctx, []byte("new"), func(context.Context) error { ran = true; return nil }); err == nil || ran {
		t.Fatalf("Insert with Redis down: %v, write ran %v", err, ran)
	}
	k := rowKey(2)
	err := open.Remove(ctx, k, func(ctx context.Context) error { return db.remove(ctx, k) })
	if !errors.Is(err, guard.ErrStale) {
		t.Fatalf("Remove with Redis down: %v, want ErrStale", err)
	}
	if ok, _ := db.exists(ctx, k); ok {
		t.Fatal("Remove with Redis down did not run its write")
	}
}

// failsOver returns what lookup returns, failing the test if it takes
// more than 10 s: see TestRedisDown for why that deadline.
func failsOver(t *testing.T, lookup func() (string, error)) (string, error) {
	t.Helper()
	type result struct {
		v   string
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		v, err := lookup()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		t.Logf("failed over after %v", time.Since(start).Round(time.Millisecond))
		return r.v, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("the lookup has not failed over after 10 s (the read timeout is 1 s)")
		return "", nil
	}
}

// TestMain silences go-redis's log before any test runs: the tests kill
// and stop servers on purpose, and go-redis's logger is a process-wide
// variable its goroutines read at any time, so setting it while tests run
// (around one test, as this package once did) races with other tests'
// clients.
func TestMain(m *testing.M) {
	flag.Parse()
	redis.SetLogger(quietLogger{})
	testparallel.Raise(3)
	os.Exit(m.Run())
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// TestRedisRebuildConcurrency: a Rebuild of a Shared set fills the fresh
// generation with every row of the scan whatever the number of adds in
// flight, one at a time or many.
func TestRedisRebuildConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fl := newFleet(t, 1)
	rdb := fl.clients[0]
	db := newMemTable(1)
	for i := range 500 {
		k := []byte(fmt.Sprintf("row-%d", i))
		if err := db.insert(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []int{1, 64} {
		name := fmt.Sprintf("s-conc-%d", n)
		g := newGuard(t, guard.Shared(newGeneration(t, rdb, name, 1000)), db.load,
			guard.WithGrace(testGrace), guard.WithRebuildConcurrency(n))
		if err := g.Rebuild(ctx, guard.Shared(newGeneration(t, rdb, name+"@2", 1000)), db.scan); err != nil {
			t.Fatal(err)
		}
		for i := range 500 {
			k := []byte(fmt.Sprintf("row-%d", i))
			if _, err := g.Get(ctx, k); err != nil {
				t.Fatalf("WithRebuildConcurrency(%d): row %q after the Rebuild: %v", n, k, err)
			}
		}
	}
}
