package guard_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/dedupkit/cuckoo/guard"
	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/redis/go-redis/v9"
)

// TestRedisClusterShared: a Shared set on a Redis Cluster of three
// masters, used by two processes (cluster clients of their own): a
// Rebuild from one process is seen by the other, and no row is reported
// missing before or after it.
func TestRedisClusterShared(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	ctx := context.Background()
	cl := redistest.NewCluster(t, 3, 0, redistest.Config{})
	client := func() redis.UniversalClient {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), DialTimeout: redistest.ClientTimeout,
			ReadTimeout: redistest.ClientTimeout, WriteTimeout: redistest.ClientTimeout})
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := client(), client()
	db := newMemTable(1)
	for i := range 300 {
		if err := db.insert(ctx, []byte(fmt.Sprintf("row-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	name := "s-cluster"
	first := newGeneration(t, a, name, 1000)
	if _, err := guard.Fill(ctx, guard.Shared(first), db.scan); err != nil {
		t.Fatal(err)
	}
	gA := newGuard(t, guard.Shared(first), db.load, guard.WithGrace(testGrace))
	setB := openShared(t, b, name)
	gB := newGuard(t, setB, db.load, guard.WithGrace(testGrace))
	check := func(when string, g *guard.Guard[string]) {
		t.Helper()
		for i := range 300 {
			k := []byte(fmt.Sprintf("row-%d", i))
			if _, err := g.Get(ctx, k); err != nil {
				t.Fatalf("%s: row %q: %v", when, k, err)
			}
		}
	}
	check("B before the Rebuild", gB)
	if err := gA.Rebuild(ctx, guard.Shared(newGeneration(t, a, name+"@2", 1000)), db.scan); err != nil {
		t.Fatal(err)
	}
	k := []byte("after")
	if err := gB.Insert(ctx, k, func(ctx context.Context) error { return db.insert(ctx, k) }); err != nil {
		t.Fatal(err)
	}
	check("A after the Rebuild", gA)
	check("B after the Rebuild", gB)
	if _, err := gA.Get(ctx, k); err != nil {
		t.Fatalf("A misses the row B inserted after the Rebuild: %v", err)
	}
	cur, _, _ := guard.Generations(setB)
	if cur != name+"@2" {
		t.Errorf("B reads generation %q after the Rebuild, want %q", cur, name+"@2")
	}
}
