package cuckoo_test

import (
	"errors"
	"testing"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/replay"
)

// leastBuckets returns the least bucket count of a fixed filter of n keys
// and options opts: its count under plan version replay.PlanLeast.
func leastBuckets(t testing.TB, n uint64, opts ...cuckoo.Option) uint64 {
	t.Helper()
	p, err := cuckoo.NewPlan(n, append(opts[:len(opts):len(opts)], replay.PlanVersion[cuckoo.Option](replay.PlanLeast))...)
	if err != nil {
		t.Fatal(err)
	}
	return p.NumBuckets
}

// TestReplayBucketCount checks the server's hook replay.BucketCount: the
// table takes exactly the count given when it is valid for the capacity,
// and an error otherwise.
func TestReplayBucketCount(t *testing.T) {
	const n = 100_000
	withCount := replay.BucketCount[cuckoo.Option]
	p, err := cuckoo.NewPlan(n, cuckoo.WithFingerprintBits(8))
	if err != nil {
		t.Fatal(err)
	}
	least := leastBuckets(t, n, cuckoo.WithFingerprintBits(8))
	if least > p.NumBuckets || p.NumBuckets > least+14 {
		t.Fatalf("planned %d buckets, least %d", p.NumBuckets, least)
	}
	for _, m := range []uint64{least, least + 2, 2 * least} {
		f, err := cuckoo.New(n, cuckoo.WithFingerprintBits(8), withCount(m), cuckoo.WithSeed(1))
		if err != nil {
			t.Fatalf("%d buckets: %v", m, err)
		}
		if f.NumBuckets() != m {
			t.Fatalf("BucketCount(%d): %d buckets", m, f.NumBuckets())
		}
		for i := uint64(0); i < n; i++ {
			if err := f.Add(key(2, i)); err != nil {
				t.Fatalf("%d buckets: Add #%d: %v", m, i, err)
			}
		}
		var g cuckoo.Filter
		if err := g.UnmarshalBinary(mustMarshal(t, f)); err != nil || g.NumBuckets() != m {
			t.Fatalf("%d buckets: decoded %d, %v", m, g.NumBuckets(), err)
		}
	}
	segLeast := leastBuckets(t, n, cuckoo.WithFingerprintBits(8), cuckoo.WithSegments(4))
	for _, tc := range []struct {
		name string
		opts []cuckoo.Option
	}{
		{"odd", []cuckoo.Option{withCount(least + 1)}},
		{"below the least", []cuckoo.Option{withCount(least - 2)}},
		{"zero", []cuckoo.Option{withCount(0)}},
		{"past 2^32", []cuckoo.Option{withCount(1<<32 + 2)}},
		{"segments not of 64", []cuckoo.Option{cuckoo.WithSegments(4), withCount(segLeast + 2)}},
	} {
		if _, err := cuckoo.NewPlan(n, append([]cuckoo.Option{cuckoo.WithFingerprintBits(8)}, tc.opts...)...); !errors.Is(err, cuckoo.ErrInvalidParameter) {
			t.Errorf("%s: err = %v, want ErrInvalidParameter", tc.name, err)
		}
	}
	if _, err := cuckoo.NewScalable(n, withCount(p.NumBuckets)); !errors.Is(err, cuckoo.ErrInvalidParameter) {
		t.Errorf("NewScalable with a bucket count: err = %v", err)
	}
}

// TestReplayPlanVersion checks the server's hook replay.PlanVersion: the
// current version plans what New plans with no version; PlanLeast plans
// the least count, below the planned one where New raises it, and takes
// shapes New now refuses at the capacity; a bucket count overrides the
// version in either order; unknown versions are refused.
func TestReplayPlanVersion(t *testing.T) {
	version := replay.PlanVersion[cuckoo.Option]
	// 4-slot buckets of 5 bits at 452,024 keys: New raises the least count
	// (127,006) to 127,008 so that the offsets spread.
	shape := []cuckoo.Option{cuckoo.WithFingerprintBits(5)}
	const n = 452_024
	plan := func(opts ...cuckoo.Option) (cuckoo.Plan, error) {
		return cuckoo.NewPlan(n, append(shape[:len(shape):len(shape)], opts...)...)
	}
	now, err := plan()
	if err != nil {
		t.Fatal(err)
	}
	cur, err := plan(version(replay.CurrentPlan))
	if err != nil || cur != now {
		t.Fatalf("the current version plans %+v, %v; New plans %+v", cur, err, now)
	}
	least, err := plan(version(replay.PlanLeast))
	if err != nil || least.NumBuckets != 127_006 || now.NumBuckets != 127_008 {
		t.Fatalf("least plan %d buckets (%v), current %d; want 127006 and 127008", least.NumBuckets, err, now.NumBuckets)
	}
	f, err := cuckoo.New(n, append(shape, version(replay.PlanLeast), cuckoo.WithSeed(1))...)
	if err != nil || f.NumBuckets() != least.NumBuckets {
		t.Fatalf("New under PlanLeast: %v, %v", f, err)
	}
	for _, opts := range [][]cuckoo.Option{
		{version(replay.PlanLeast), replay.BucketCount[cuckoo.Option](127_010)},
		{replay.BucketCount[cuckoo.Option](127_010), version(replay.PlanLeast)},
	} {
		if p, err := plan(opts...); err != nil || p.NumBuckets != 127_010 {
			t.Fatalf("a bucket count with a plan version: %d buckets, %v", p.NumBuckets, err)
		}
	}
	// 2-slot buckets of 4 bits past 2^27 keys: refused now, planned then.
	wide := []cuckoo.Option{cuckoo.WithBucketSize(2), cuckoo.WithFingerprintBits(4)}
	if _, err := cuckoo.NewPlan(1<<28, wide...); !errors.Is(err, cuckoo.ErrInvalidParameter) {
		t.Fatalf("NewPlan of an unreliable shape: %v", err)
	}
	if _, err := cuckoo.NewPlan(1<<28, append(wide, version(replay.PlanLeast))...); err != nil {
		t.Fatalf("NewPlan of the same shape under PlanLeast: %v", err)
	}
	for _, v := range []int{0, -1, replay.CurrentPlan + 1} {
		if _, err := plan(version(v)); !errors.Is(err, cuckoo.ErrInvalidParameter) {
			t.Errorf("plan version %d: err = %v, want ErrInvalidParameter", v, err)
		}
	}
}
