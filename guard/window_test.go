package guard_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/guard"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// expiringTable is a table whose rows expire ttl after their insert (a
// rate limit's counters, a day's idempotency keys), read by load.
type expiringTable struct {
	mu    sync.Mutex
	until map[string]time.Time
	ttl   time.Duration
	n     int
}

func (e *expiringTable) insert(_ context.Context, key []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.until[string(key)] = time.Now().Add(e.ttl)
	return nil
}

func (e *expiringTable) remove(_ context.Context, key []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.until[string(key)]; !ok {
		return fmt.Errorf("remove %q: %w", key, guard.ErrNotFound)
	}
	delete(e.until, string(key))
	return nil
}

func (e *expiringTable) load(_ context.Context, key []byte) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	if t, ok := e.until[string(key)]; ok && time.Now().Before(t) {
		return "row " + string(key), nil
	}
	return "", fmt.Errorf("load %q: %w", key, guard.ErrNotFound)
}

// TestSharedWindowGuardsExpiringRows: a guard over a window in Redis (a
// window of 2.8 s) in front of a table whose rows expire 2.8 s after
// their insert: Get finds every row while it lives (in two processes),
// answers "not found" without a load for keys never inserted, and, once
// a row has expired and the window and its granularity have passed, for
// its key too. Remove deletes the row and leaves the key (Delete does
// nothing: a later Get loads and finds no row, never a wrong "not
// found"); GetMany answers as Get; Rebuild refuses the set; and a window
// whose keys Redis lost fails lookups over (ErrLost) instead of blocking
// them, while Inserts go on. Its checks follow the real clock (a lookup
// before the window ends), so it runs among the sequential tests, before
// the parallel ones, which would take time from it.
func TestSharedWindowGuardsExpiringRows(t *testing.T) {
	testlong.SkipQuickRun(t)
	ctx := context.Background()
	f := newFleet(t, 2)
	const window = 2800 * time.Millisecond
	db := &expiringTable{until: map[string]time.Time{}, ttl: window}
	var guards []*guard.Guard[string]
	for _, rdb := range f.clients {
		w, err := redisfilter.NewWindow(ctx, rdb, "sessions", 10_000, window, redisfilter.WithFingerprintBits(28))
		if err != nil {
			t.Fatal(err)
		}
		guards = append(guards, newGuard(t, guard.SharedWindow(w), db.load))
	}
	const rows = 500
	inserted := time.Now()
	for i := range rows {
		if err := guards[i%2].Insert(ctx, rowKey(i), func(ctx context.Context) error { return db.insert(ctx, rowKey(i)) }); err != nil {
			t.Fatal(err)
		}
	}
	// The inserts took time: the last key's window runs from here.
	lastInserted := time.Now()
	for i := range rows {
		v, err := guards[(i+1)%2].Get(ctx, rowKey(i))
		if time.Since(inserted) < window && (err != nil || v != "row "+string(rowKey(i))) {
			t.Fatalf("Get(%s) while its row lives: %q, %v", rowKey(i), v, err)
		}
	}
	before := db.n
	for i := range 1000 {
		if _, err := guards[0].Get(ctx, []byte(fmt.Sprintf("never-%d", i))); !errors.Is(err, guard.ErrNotFound) {
			t.Fatal(err)
		}
	}
	if loads := db.n - before; loads > 2 {
		t.Errorf("%d loads for 1000 keys never inserted (28-bit fingerprints: none expected)", loads)
	}
	// Remove: the row goes, the key stays until it expires.
	if err := guards[0].Remove(ctx, rowKey(0), func(ctx context.Context) error { return db.remove(ctx, rowKey(0)) }); err != nil {
		t.Fatal(err)
	}
	if _, err := guards[1].Get(ctx, rowKey(0)); !errors.Is(err, guard.ErrNotFound) {
		t.Fatalf("Get after Remove: %v", err)
	}
	// Read the clock after the Get returned: if the window had not ended
	// then, Redis answered within it (a loaded machine may be past it).
	if st := guards[1].Stats(); time.Since(inserted) < window && st.Missing == 0 {
		t.Errorf("Get of a removed row before the window ends: no load (Stats %+v); a window's Delete does nothing", st)
	}
	// GetMany while the rows live.
	in := make([][]byte, rows)
	for i := range in {
		in[i] = rowKey(i)
	}
	vals, errs := make([]string, rows), make([]error, rows)
	if err := guards[1].GetMany(ctx, in, vals, errs); err != nil {
		t.Fatal(err)
	}
	if time.Since(inserted) < window {
		for i := 1; i < rows; i++ {
			if errs[i] != nil {
				t.Fatalf("GetMany: %s: %v", in[i], errs[i])
			}
		}
	}
	// Past the window: the keys are forgotten, and Get answers without
	// a load.
	for time.Since(lastInserted) < window+2*window/14+200*time.Millisecond {
		time.Sleep(50 * time.Millisecond)
	}
	before = db.n
	for i := range rows {
		if _, err := guards[i%2].Get(ctx, rowKey(i)); !errors.Is(err, guard.ErrNotFound) {
			t.Fatalf("Get(%s) after its row expired: %v", rowKey(i), err)
		}
	}
	if loads := db.n - before; loads > 2 {
		t.Errorf("%d loads for %d keys past the window", loads, rows)
	}
	if err := guards[0].Rebuild(ctx, guard.SharedWindow(mustWindow(t, f.clients[0], "other", window)), func(context.Context, func([]byte) error) error { return nil }); !errors.Is(err, guard.ErrInvalidParameter) {
		t.Errorf("Rebuild of a SharedWindow set: %v", err)
	}
	// Redis loses the window's keys: lookups fail over to load.
	if err := f.clients[0].FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := guards[0].Insert(ctx, rowKey(1), func(ctx context.Context) error { return db.insert(ctx, rowKey(1)) }); err != nil {
		t.Errorf("Insert into a window Redis lost: %v", err)
	}
	st := guards[1].Stats()
	if v, err := guards[1].Get(ctx, rowKey(1)); err != nil || v != "row "+string(rowKey(1)) {
		t.Fatalf("Get of a row inserted after Redis lost the window: %q, %v", v, err)
	}
	if after := guards[1].Stats(); after.Lost == st.Lost || after.FailedOpen == st.FailedOpen {
		t.Errorf("a lookup of a lost window was not failed over: %+v", after)
	}
}

func mustWindow(t *testing.T, rdb redis.UniversalClient, name string, window time.Duration) *redisfilter.Window {
	t.Helper()
	w, err := redisfilter.NewWindow(context.Background(), rdb, name, 100, window)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
