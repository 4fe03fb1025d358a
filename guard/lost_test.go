package guard_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/guard"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/redisfilter"
)

// TestRedisLostData: Redis loses a Shared set's data while two processes
// use it, one failing open and one failing closed. Neither ever answers
// "not found" for a row that exists: from the loss on, the one failing
// open loads every lookup from the table and the one failing closed
// returns an error wrapping ErrLost, and both count the loss in
// Stats.Lost. Inserts and Removes go on. A Rebuild from the surviving
// process recovers the set for both, and for a process started
// afterwards; one started during the loss cannot open a set that is
// wholly gone, and finds a set whose current generation is gone lost.
// The ways to lose it: FLUSHALL (after a Rebuild, so that the set has a
// pointer, and before any), a DEL of the pointer (alone, and followed by
// a redisfilter.New of the set's name, as a process starting with the
// code that created the first generation would do: an empty filter the
// processes that had read the pointer must not take for the set), a DEL
// of the current generation's keys, and a restart of a server without
// persistence.
func TestRedisLostData(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	for _, c := range []struct {
		name    string
		rebuilt bool // a Rebuild ran before the loss (the set has a pointer)
		// newcomer is what OpenShared does after the loss: "gone" (fails
		// with redisfilter.ErrNotFound), "lost" (opens a lost set), or ""
		// (not checked: it opens the empty filter, which it cannot tell
		// from a filled one; see docs/guard.md).
		newcomer string
		lose     func(t *testing.T, fl *fleet, set, cur string)
	}{
		{"flushall", true, "gone", func(t *testing.T, fl *fleet, _, _ string) { redisDo(t, fl, "FLUSHALL") }},
		{"flushall-before-any-rebuild", false, "gone", func(t *testing.T, fl *fleet, _, _ string) { redisDo(t, fl, "FLUSHALL") }},
		{"del-pointer", true, "gone", func(t *testing.T, fl *fleet, set, _ string) { redisDo(t, fl, "DEL", "ckg:"+set) }},
		{"del-pointer-then-new-first-generation", true, "", func(t *testing.T, fl *fleet, set, _ string) {
			redisDo(t, fl, "DEL", "ckg:"+set)
			newGeneration(t, fl.clients[2], set, 2000)
		}},
		{"del-generation", true, "lost", func(t *testing.T, fl *fleet, _, cur string) {
			f, err := redisfilter.Open(context.Background(), fl.clients[0], cur)
			if err != nil {
				t.Fatal(err)
			}
			redisDo(t, fl, append([]string{"DEL"}, f.Keys()...)...)
		}},
		{"restart-without-persistence", true, "gone", func(t *testing.T, fl *fleet, _, _ string) {
			if err := fl.srv.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := fl.srv.Restart(); err != nil {
				t.Fatal(err)
			}
			if n, err := fl.srv.Do("DBSIZE"); err != nil || n != "0" {
				t.Fatalf("the restarted server holds %s keys (%v): it was meant to have no persistence", n, err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testLostData(t, c.rebuilt, c.newcomer, c.lose)
		})
	}
}

func redisDo(t *testing.T, fl *fleet, args ...string) {
	t.Helper()
	if _, err := fl.srv.Do(args...); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
}

func testLostData(t *testing.T, rebuilt bool, newcomer string, lose func(t *testing.T, fl *fleet, set, cur string)) {
	ctx := context.Background()
	fl := newFleet(t, 3) // the process failing open, the one failing closed, a newcomer
	const rows, name = 300, "lost"
	db, _ := sharedTable(t, fl.clients[0], name, rows, 2000)
	// Near misses of the rows' keys, which the table does not hold.
	absent := make([][]byte, 50)
	for i := range absent {
		absent[i] = rowKey(rows + i)
	}
	open := newGuard(t, openShared(t, fl.clients[0], name), db.load, guard.WithGrace(testGrace))
	closed := newGuard(t, openShared(t, fl.clients[1], name), db.load, guard.WithGrace(testGrace), guard.WithFailClosed())
	cur := name
	if rebuilt {
		cur = name + "@2"
		if err := open.Rebuild(ctx, guard.Shared(newGeneration(t, fl.clients[0], cur, 2000)), db.scan); err != nil {
			t.Fatal(err)
		}
	}
	// rowsFound checks that both processes find every row of the table,
	// and that absent keys are blocked, with no loss counted.
	rowsFound := func(when string) {
		t.Helper()
		for _, g := range []*guard.Guard[string]{open, closed} {
			before := g.Stats()
			for _, k := range allRows(db) {
				if _, err := g.Get(ctx, k); err != nil {
					t.Fatalf("%s: %s: %v", when, k, err)
				}
			}
			for _, k := range absent {
				if _, err := g.Get(ctx, k); !errors.Is(err, guard.ErrNotFound) {
					t.Fatalf("%s: absent %s: %v", when, k, err)
				}
			}
			if s := g.Stats(); s.Blocked == before.Blocked || s.Lost != before.Lost || s.Errors != before.Errors {
				t.Fatalf("%s: stats went from %+v to %+v: want absent keys blocked, no error", when, before, s)
			}
		}
	}
	rowsFound("before the loss")

	lose(t, fl, name, cur)

	// Until both processes have seen the loss (at once, or at the next
	// read of the pointer), and after: never "not found" for a row.
	deadline := time.Now().Add(30 * time.Second)
	for seen := false; !seen; {
		if time.Now().After(deadline) {
			t.Fatalf("the loss is not reported after 30 s: open %+v, closed %+v", open.Stats(), closed.Stats())
		}
		seen = true
		for _, k := range allRows(db) {
			if _, err := open.Get(ctx, k); err != nil {
				t.Fatalf("after the loss, failing open: %s: %v", k, err)
			}
			_, err := closed.Get(ctx, k)
			if errors.Is(err, guard.ErrNotFound) {
				t.Fatalf("after the loss, failing closed: %s: %v", k, err)
			}
			seen = seen && errors.Is(err, guard.ErrLost)
		}
		seen = seen && open.Stats().Lost > 0
	}
	t.Logf("after the loss: open %+v; closed %+v", open.Stats(), closed.Stats())
	// Lookups of absent keys go to the table (failing open) or fail.
	for _, k := range absent[:5] {
		if _, err := open.Get(ctx, k); !errors.Is(err, guard.ErrNotFound) {
			t.Fatalf("after the loss, failing open: absent %s: %v", k, err)
		}
		if _, err := closed.Get(ctx, k); !errors.Is(err, guard.ErrLost) || errors.Is(err, guard.ErrNotFound) {
			t.Fatalf("after the loss, failing closed: absent %s: %v", k, err)
		}
	}
	keys := append(allRows(db), absent...)
	vals, errs := make([]string, len(keys)), make([]error, len(keys))
	if err := open.GetMany(ctx, keys, vals, errs); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if i < rows && (errs[i] != nil || vals[i] == "") || i >= rows && !errors.Is(errs[i], guard.ErrNotFound) {
			t.Fatalf("after the loss, GetMany failing open: %s: %q, %v", k, vals[i], errs[i])
		}
	}
	if err := closed.GetMany(ctx, keys, vals, errs); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if !errors.Is(errs[i], guard.ErrLost) || errors.Is(errs[i], guard.ErrNotFound) {
			t.Fatalf("after the loss, GetMany failing closed: %s: %v", k, errs[i])
		}
	}

	// Writes go on, counted.
	lostBefore := open.Stats().Lost
	inserted := []byte("row:new")
	if err := open.Insert(ctx, inserted, func(ctx context.Context) error { return db.insert(ctx, inserted) }); err != nil {
		t.Fatalf("Insert after the loss: %v", err)
	}
	removed := rowKey(7)
	if err := open.Remove(ctx, removed, func(ctx context.Context) error { return db.remove(ctx, removed) }); err != nil {
		t.Fatalf("Remove after the loss: %v", err)
	}
	if s := open.Stats(); s.Lost < lostBefore+2 {
		t.Errorf("an Insert and a Remove after the loss: Lost went from %d to %d", lostBefore, s.Lost)
	}
	if _, err := open.Get(ctx, inserted); err != nil {
		t.Fatalf("the row inserted after the loss: %v", err)
	}

	// A process that starts now.
	set, err := guard.OpenShared(ctx, fl.clients[2], name)
	switch {
	case newcomer == "gone" && !errors.Is(err, redisfilter.ErrNotFound):
		t.Fatalf("OpenShared of a set that is gone: %v, want ErrNotFound", err)
	case newcomer == "lost" && err != nil:
		t.Fatalf("OpenShared of a set whose current generation is gone: %v", err)
	case newcomer == "lost":
		g := newGuard(t, set, db.load, guard.WithFailClosed())
		if _, err := g.Get(ctx, rowKey(1)); !errors.Is(err, guard.ErrLost) {
			t.Fatalf("a process started after the loss, failing closed: %v", err)
		}
	}

	// A Rebuild recovers the set for every process.
	if err := open.Rebuild(ctx, guard.Shared(newGeneration(t, fl.clients[0], name+"@3", 2000)), db.scan); err != nil {
		t.Fatalf("Rebuild after the loss: %v", err)
	}
	rowsFound("after the Rebuild")
	if _, err := closed.Get(ctx, inserted); err != nil {
		t.Fatalf("the row inserted during the loss, after the Rebuild: %v", err)
	}
	g := newGuard(t, openShared(t, fl.clients[2], name), db.load, guard.WithFailClosed())
	for _, k := range allRows(db) {
		if _, err := g.Get(ctx, k); err != nil {
			t.Fatalf("a process started after the Rebuild: %s: %v", k, err)
		}
	}
}

// allRows returns the keys of the rows of db.
func allRows(db *memTable) [][]byte {
	db.mu.Lock()
	defer db.mu.Unlock()
	keys := make([][]byte, 0, len(db.rows))
	for k := range db.rows {
		keys = append(keys, []byte(k))
	}
	return keys
}

// TestRedisLostPointerWritesKeepTheGenerations: a DEL of the pointer
// alone leaves the generations, and the processes that had read it keep
// adding to them: the Rebuild that writes a pointer again names the
// current one, which lookups then read while the fresh one fills, so it
// must hold the rows inserted meanwhile.
func TestRedisLostPointerWritesKeepTheGenerations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fl := newFleet(t, 1)
	rdb := fl.clients[0]
	db, first := sharedTable(t, rdb, "p", 100, 1000)
	g := newGuard(t, guard.Shared(first), db.load, guard.WithGrace(testGrace), guard.WithFailClosed())
	if err := g.Rebuild(ctx, guard.Shared(newGeneration(t, rdb, "p@2", 1000)), db.scan); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Del(ctx, "ckg:p").Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := g.Get(ctx, rowKey(1))
		if errors.Is(err, guard.ErrLost) {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("the lost pointer is not reported: %v", err)
		}
	}
	cur, err := redisfilter.Open(ctx, rdb, "p@2")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		k := fmt.Appendf(nil, "new:%d", i)
		if err := g.Insert(ctx, k, func(ctx context.Context) error { return db.insert(ctx, k) }); err != nil {
			t.Fatal(err)
		}
		if n, err := cur.Count(ctx, k); err != nil || n == 0 {
			t.Fatalf("an Insert while the pointer is gone did not reach the generation the process had read: %d, %v", n, err)
		}
	}
}

// TestRedisRebuildStopsWhenThePointerIsLost: a Rebuild running when
// Redis loses the set's pointer does not swap its fresh generation in
// (writes that began since know of no fresh generation): it fails with
// ErrLost and writes no pointer back.
func TestRedisRebuildStopsWhenThePointerIsLost(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	ctx := context.Background()
	fl := newFleet(t, 1)
	rdb := fl.clients[0]
	db, _ := sharedTable(t, rdb, "r", 100, 1000)
	g := newGuard(t, openShared(t, rdb, "r"), db.load, guard.WithGrace(testGrace))
	if err := g.Rebuild(ctx, guard.Shared(newGeneration(t, rdb, "r@2", 1000)), db.scan); err != nil {
		t.Fatal(err)
	}
	scanning, lost := make(chan struct{}), make(chan struct{})
	scan := func(ctx context.Context, yield func([]byte) error) error {
		close(scanning)
		<-lost
		return db.scan(ctx, yield)
	}
	done := make(chan error)
	go func() { done <- g.Rebuild(ctx, guard.Shared(newGeneration(t, rdb, "r@3", 1000)), scan) }()
	<-scanning
	if err := rdb.Del(ctx, "ckg:r").Err(); err != nil {
		t.Fatal(err)
	}
	close(lost)
	if err := <-done; !errors.Is(err, guard.ErrLost) {
		t.Fatalf("Rebuild whose pointer was lost during its scan: %v, want ErrLost", err)
	}
	if n, err := rdb.Exists(ctx, "ckg:r").Result(); err != nil || n != 0 {
		t.Fatalf("the pointer after the Rebuild stopped: %d, %v; want none", n, err)
	}
}
