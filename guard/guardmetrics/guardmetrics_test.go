package guardmetrics_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/guard"
	"github.com/dedupkit/cuckoo/guard/guardmetrics"
)

// newGuard returns a guard over a filter holding "present", whose load
// finds "present" alone.
func newGuard(t *testing.T) *guard.Guard[string] {
	t.Helper()
	f, err := cuckoo.NewConcurrent(1000, cuckoo.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	f.Add([]byte("present"))
	g, err := guard.New(guard.Local(f), func(_ context.Context, key []byte) (string, error) {
		if string(key) == "present" {
			return "row", nil
		}
		return "", guard.ErrNotFound
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestCollectorFollowsStats: the counters are the guard's Stats, labelled
// with the guard's name, and move with its lookups.
func TestCollectorFollowsStats(t *testing.T) {
	g := newGuard(t)
	ctx := context.Background()
	for i := range 100 {
		if _, err := g.Get(ctx, fmt.Appendf(nil, "absent-%d", i)); !errors.Is(err, guard.ErrNotFound) {
			t.Fatal(err)
		}
	}
	if _, err := g.Get(ctx, []byte("present")); err != nil {
		t.Fatal(err)
	}
	s := g.Stats()
	c := guardmetrics.NewCollector("users", g.Stats)
	want := fmt.Sprintf(`
# HELP cuckoo_guard_lookups_total Keys looked up: each Get, each key of GetMany.
# TYPE cuckoo_guard_lookups_total counter
cuckoo_guard_lookups_total{guard="users"} 101
# HELP cuckoo_guard_blocked_total Lookups the filter answered alone, without a load: database queries saved.
# TYPE cuckoo_guard_blocked_total counter
cuckoo_guard_blocked_total{guard="users"} %d
# HELP cuckoo_guard_missing_total Lookups the filter let through whose load found no row: false positives, and rows removed behind the filter.
# TYPE cuckoo_guard_missing_total counter
cuckoo_guard_missing_total{guard="users"} %d
# HELP cuckoo_guard_loads_total Calls of load (concurrent lookups of one key share one).
# TYPE cuckoo_guard_loads_total counter
cuckoo_guard_loads_total{guard="users"} %d
`, s.Blocked, s.Missing, s.Loads)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"cuckoo_guard_lookups_total", "cuckoo_guard_blocked_total", "cuckoo_guard_missing_total", "cuckoo_guard_loads_total"); err != nil {
		t.Fatal(err)
	}
	if s.Blocked+s.Missing != 100 || s.Loads != s.Missing+1 {
		t.Fatalf("stats %+v", s)
	}
	if n := testutil.CollectAndCount(c); n != 12 {
		t.Fatalf("%d metrics, want one per field of guard.Stats (12)", n)
	}
}

// TestCollectorsSideBySide: two guards' collectors register in one
// registry, told apart by their label.
func TestCollectorsSideBySide(t *testing.T) {
	a, b := newGuard(t), newGuard(t)
	a.Get(context.Background(), []byte("present"))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(guardmetrics.NewCollector("a", a.Stats), guardmetrics.NewCollector("b", b.Stats))
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP cuckoo_guard_lookups_total Keys looked up: each Get, each key of GetMany.
# TYPE cuckoo_guard_lookups_total counter
cuckoo_guard_lookups_total{guard="a"} 1
cuckoo_guard_lookups_total{guard="b"} 0
`), "cuckoo_guard_lookups_total"); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}
