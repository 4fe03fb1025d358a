package redisfilter_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// TestModel applies random adds, unique adds and deletes to a filter and
// to a Go map of counts, and checks after each step that the filter finds
// every key the map holds, counts at least the map's count, and holds as
// many items; at the end, that the filter's snapshot is a valid library
// filter answering every lookup and count exactly as Redis does. The
// shapes run in parallel, each with a generator of its own, for 600 steps
// (3000 with CUCKOO_LONG=1).
func TestModel(t *testing.T) {
	bothTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		seed := testseed.Seed(t)
		steps := 600
		if testlong.Enabled() {
			steps = 3000
		}
		for i, shape := range []struct{ b, f, segments int }{{4, 16, 4}, {2, 12, 2}, {8, 7, 1}, {4, 13, 3}, {3, 10, 2}} {
			t.Run(fmt.Sprintf("b=%d/f=%d/segments=%d", shape.b, shape.f, shape.segments), func(t *testing.T) {
				t.Parallel()
				// Its own deadline, from when it runs: a parallel subtest
				// may wait long for its turn under the race detector.
				ctx := ctxOf(t)
				rng := testseed.New(seed + uint64(i))
				const universe = 600
				f, err := redisfilter.New(ctx, rdb, uniqueName(t), 2000, redisfilter.WithBucketSize(shape.b),
					redisfilter.WithFingerprintBits(shape.f), redisfilter.WithSegments(shape.segments), redisfilter.WithSeed(rng.Uint64()))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Drop(ctx) })
				model := map[int]uint64{}
				var total uint64
				for step := range steps {
					k := rng.IntN(universe)
					kb := key("m", k)
					switch op := rng.IntN(10); {
					case op < 5:
						if err := f.Add(ctx, kb); err != nil {
							t.Fatalf("step %d: Add(%s): %v", step, kb, err)
						}
						model[k]++
						total++
					case op < 7:
						added, err := f.AddUnique(ctx, kb)
						if err != nil {
							t.Fatalf("step %d: AddUnique(%s): %v", step, kb, err)
						}
						if added {
							model[k]++
							total++
						} else if model[k] == 0 {
							// A false positive: the filter reported a key never added.
							t.Logf("step %d: AddUnique(%s) skipped a key never added (false positive)", step, kb)
						}
					case model[k] > 0:
						// Only keys that were added are deleted: deleting
						// another may remove a colliding key's copy.
						ok, err := f.Delete(ctx, kb)
						if err != nil {
							t.Fatal(err)
						}
						if !ok {
							t.Fatalf("step %d: Delete(%s) of a key with %d copies reported none", step, kb, model[k])
						}
						model[k]--
						total--
					}
					if model[k] > 0 {
						if ok, err := f.Contains(ctx, kb); err != nil || !ok {
							t.Fatalf("step %d: Contains(%s) = %v, %v with %d copies in", step, kb, ok, err, model[k])
						}
					}
					if n, err := f.Count(ctx, kb); err != nil || n < model[k] {
						t.Fatalf("step %d: Count(%s) = %d, %v, want at least %d", step, kb, n, err, model[k])
					}
				}
				if n, err := f.Len(ctx); err != nil || n != total {
					t.Fatalf("Len = %d, %v; want %d", n, err, total)
				}
				all := keys("m", universe)
				found := make([]bool, universe)
				if err := f.ContainsBatch(ctx, all, found, make([]error, len(found))); err != nil {
					t.Fatal(err)
				}
				lib, err := f.Snapshot(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if lib.Len() != total {
					t.Fatalf("snapshot Len = %d, want %d", lib.Len(), total)
				}
				for i, kb := range all {
					if model[i] > 0 && !found[i] {
						t.Fatalf("ContainsBatch misses %s, added %d times", kb, model[i])
					}
					if got := lib.Contains(kb); got != found[i] {
						t.Fatalf("%s: snapshot Contains %v, Redis %v", kb, got, found[i])
					}
					n, err := f.Count(ctx, kb)
					if err != nil {
						t.Fatal(err)
					}
					if lib.Count(kb) != n {
						t.Fatalf("%s: snapshot Count %d, Redis %d", kb, lib.Count(kb), n)
					}
				}
			})
		}
	})
}

// TestDuplicates adds one key 100 times: it counts 100, and takes 99
// deletes to count 1 and 100 to disappear, while keys beside it stay.
func TestDuplicates(t *testing.T) {
	topologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxOf(t)
		// A fixed seed: with a random one, another key sharing the hot
		// key's fingerprint in its buckets would add to its count in
		// about one run in a thousand.
		f, err := redisfilter.New(ctx, rdb, uniqueName(t), 10000, redisfilter.WithFalsePositiveRate(0.001), redisfilter.WithSeed(0x5eed))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Drop(ctx)
		others := keys("other", 2000)
		errs := make([]error, len(others))
		if err := f.AddBatch(ctx, others, errs); err != nil {
			t.Fatal(err)
		}
		hot := []byte("hot key")
		for range 60 {
			if err := f.Add(ctx, hot); err != nil {
				t.Fatal(err)
			}
		}
		batch := make([][]byte, 40)
		for i := range batch {
			batch[i] = hot
		}
		if err := f.AddBatch(ctx, batch, errs); err != nil || errs[0] != nil || errs[39] != nil {
			t.Fatal(err, errs[0])
		}
		if n, err := f.Count(ctx, hot); err != nil || n != 100 {
			t.Fatalf("Count = %d, %v after 100 adds", n, err)
		}
		if n, _ := f.Len(ctx); n != 2100 {
			t.Fatalf("Len = %d, want 2100", n)
		}
		lib, err := f.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if lib.Count(hot) != 100 {
			t.Fatalf("snapshot Count = %d", lib.Count(hot))
		}
		for i := range 99 {
			if ok, err := f.Delete(ctx, hot); err != nil || !ok {
				t.Fatalf("delete %d: %v, %v", i, ok, err)
			}
		}
		if n, _ := f.Count(ctx, hot); n != 1 {
			t.Fatalf("Count = %d after 99 deletes", n)
		}
		if ok, _ := f.Contains(ctx, hot); !ok {
			t.Fatal("the last copy is not found")
		}
		if ok, _ := f.Delete(ctx, hot); !ok {
			t.Fatal("the last delete found nothing")
		}
		if n, _ := f.Count(ctx, hot); n != 0 {
			t.Fatalf("Count = %d after 100 deletes", n)
		}
		found := make([]bool, len(others))
		if err := f.ContainsBatch(ctx, others, found, make([]error, len(found))); err != nil {
			t.Fatal(err)
		}
		for i, ok := range found {
			if !ok {
				t.Fatalf("%s lost", others[i])
			}
		}
	})
}

// TestDeleteTouchesOnlyItsKey deletes half of the keys: the other half is
// all found, and the deleted half is found only at about the
// false-positive rate (the seed is fixed).
func TestDeleteTouchesOnlyItsKey(t *testing.T) {
	testlong.SkipQuickRun(t)
	topologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxOf(t)
		f, err := redisfilter.New(ctx, rdb, uniqueName(t), 20000, redisfilter.WithFingerprintBits(16), redisfilter.WithSegments(4),
			redisfilter.WithSeed(testseed.Fixed(t, 0xde1)))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Drop(ctx)
		all := keys("d", 20000)
		addAll(t, ctx, f, all)
		gone := all[:10000]
		deleted := make([]bool, len(gone))
		if err := f.DeleteBatch(ctx, gone, deleted, make([]error, len(gone))); err != nil {
			t.Fatal(err)
		}
		for i, ok := range deleted {
			if !ok {
				t.Fatalf("Delete(%s) found nothing", gone[i])
			}
		}
		found := make([]bool, len(all))
		if err := f.ContainsBatch(ctx, all, found, make([]error, len(found))); err != nil {
			t.Fatal(err)
		}
		stale := 0
		for i, ok := range found {
			if i >= 10000 && !ok {
				t.Fatalf("%s was not deleted and is not found", all[i])
			}
			if i < 10000 && ok {
				stale++
			}
		}
		// 16-bit fingerprints at half load: about 2·4·0.25/65535 = 3e-5
		// per key; 10 of 10,000 is 30 times that.
		if stale > 10 {
			t.Fatalf("%d of 10000 deleted keys still found", stale)
		}
		if n, _ := f.Len(ctx); n != 10000 {
			t.Fatalf("Len = %d", n)
		}
	})
}

// TestFullChangesNothing fills a small filter past its capacity: every
// refused insert leaves the segment bit for bit as it was, every key
// accepted is found, and the filter took at least its capacity. The seeds
// are fixed: how many keys a table takes before it is full depends on
// them. The quick run fills buckets of 4 and 3 slots; the long checks
// (CUCKOO_LONG=1) 2, 4, 8, 3 and 5.
func TestFullChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := ctxOf(t)
	rdb := singleClient(t)
	rng := testseed.New(testseed.Fixed(t, 0xf011))
	sizes := []int{4, 3}
	if testlong.Enabled() {
		sizes = []int{2, 4, 8, 3, 5}
	}
	for _, b := range sizes {
		f, err := redisfilter.New(ctx, rdb, uniqueName(t), 200, redisfilter.WithBucketSize(b), redisfilter.WithFingerprintBits(12),
			redisfilter.WithSegments(1), redisfilter.WithMaxKicks(50), redisfilter.WithSeed(rng.Uint64()))
		if err != nil {
			t.Fatal(err)
		}
		var in [][]byte
		refused := 0
		before, err := f.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; refused < 20 && i < 5000; i++ {
			k := key(fmt.Sprintf("full%d-", b), i)
			err := f.Add(ctx, k)
			after, serr := f.Snapshot(ctx)
			if serr != nil {
				t.Fatal(serr)
			}
			switch {
			case errors.Is(err, redisfilter.ErrFull):
				refused++
				x, _ := before.MarshalBinary()
				y, _ := after.MarshalBinary()
				if !bytes.Equal(x, y) {
					t.Fatalf("b=%d: a refused insert changed the filter", b)
				}
			case err != nil:
				t.Fatal(err)
			default:
				in = append(in, k)
			}
			before = after
		}
		if refused == 0 {
			t.Fatalf("b=%d: never full after %d keys", b, len(in))
		}
		t.Logf("b=%d: %d keys in (capacity 200, %d slots), %d refused", b, len(in), f.NumBuckets()*uint64(b), refused)
		found := make([]bool, len(in))
		if err := f.ContainsBatch(ctx, in, found, make([]error, len(found))); err != nil {
			t.Fatal(err)
		}
		for i, ok := range found {
			if !ok {
				t.Fatalf("b=%d: %s lost", b, in[i])
			}
		}
		if uint64(len(in)) < f.Capacity() {
			t.Fatalf("b=%d: full at %d keys, capacity %d", b, len(in), f.Capacity())
		}
		f.Drop(ctx)
	}
}

// TestCapacity fills filters of several shapes with exactly their capacity
// of distinct keys, 5,000 (30,000 with CUCKOO_LONG=1): none is refused
// (New sizes like the library's New). The seed is fixed: whether a table
// fills to its capacity depends on it.
func TestCapacity(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	ctx := ctxOf(t)
	rdb := singleClient(t)
	n := 5000
	if testlong.Enabled() {
		n = 30000
	}
	seed := testseed.Fixed(t, 0xca9)
	for _, s := range []struct{ b, f, segments int }{{2, 12, 4}, {4, 8, 2}, {4, 16, 8}, {8, 12, 1}, {4, 13, 0}} {
		f, err := redisfilter.New(ctx, rdb, uniqueName(t), uint64(n), redisfilter.WithBucketSize(s.b),
			redisfilter.WithFingerprintBits(s.f), segmentsOpt(s.segments), redisfilter.WithSeed(seed))
		if err != nil {
			t.Fatal(err)
		}
		all := keys(fmt.Sprintf("cap%d-%d-", s.b, s.f), n)
		errs := make([]error, n)
		if err := f.AddBatch(ctx, all, errs); err != nil {
			t.Fatal(err)
		}
		for i, err := range errs {
			if err != nil {
				t.Fatalf("b=%d f=%d segments=%d: key %d of %d: %v", s.b, s.f, f.Segments(), i, n, err)
			}
		}
		lib, err := f.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("b=%d f=%d segments=%d: load %.3f at capacity", s.b, s.f, f.Segments(), lib.LoadFactor())
		f.Drop(ctx)
	}
}

func segmentsOpt(n int) redisfilter.Option {
	if n == 0 {
		return nil
	}
	return redisfilter.WithSegments(n)
}

// TestSegmentsOnEveryMaster creates a filter of the default segment count on
// the 3-master cluster and checks that every master holds segments, within
// one of an equal share, and that each segment's two keys share a slot.
func TestSegmentsOnEveryMaster(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	if testing.Short() {
		t.Skip("cluster in -short mode")
	}
	ctx := ctxOf(t)
	c := sharedCluster(t)
	f, err := redisfilter.New(ctx, clusterClient(t), uniqueName(t), 1_000_000, redisfilter.WithFalsePositiveRate(0.001))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Drop(ctx)
	perMaster := map[string]int{}
	k := f.Keys()
	for s := range f.Segments() {
		var slots [2]int
		for j := range 2 {
			text, err := c.Servers[0].Do("CLUSTER", "KEYSLOT", k[1+2*s+j])
			if err != nil {
				t.Fatal(err)
			}
			fmt.Sscan(text, &slots[j])
		}
		if slots[0] != slots[1] {
			t.Fatalf("segment %d: table in slot %d, hash in slot %d", s, slots[0], slots[1])
		}
		m, err := c.MasterOf(slots[0])
		if err != nil {
			t.Fatal(err)
		}
		perMaster[m.Addr]++
	}
	t.Logf("%d segments: %v", f.Segments(), perMaster)
	if len(perMaster) != 3 {
		t.Fatalf("segments on %d masters of 3: %v", len(perMaster), perMaster)
	}
	for addr, n := range perMaster {
		if n < f.Segments()/3-1 || n > (f.Segments()+2)/3+1 {
			t.Fatalf("master %s holds %d of %d segments", addr, n, f.Segments())
		}
	}
}

// TestBatchRounds checks ContainsBatch over more keys than one pipeline
// round carries, so that several rounds are in flight at once: every
// key's answer is the snapshot's, and every added key is found. The
// Bloom filter's ContainsBatch must agree with its Contains. One key in
// five was added, spread over every round: of 30,000 keys, more than
// roundsInFlight rounds (50,000 with CUCKOO_LONG=1).
func TestBatchRounds(t *testing.T) {
	testlong.SkipQuickRun(t)
	topologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxOf(t)
		rng := testseed.Rand(t)
		n := 30000
		if testlong.Enabled() {
			n = 50000
		}
		in, out := keys("in", n/5), keys("out", n-n/5)
		var all [][]byte
		for i, k := range out {
			if i%4 == 0 {
				all = append(all, in[i/4])
			}
			all = append(all, k)
		}
		added := func(i int) bool { return i%5 == 0 }
		f, err := redisfilter.New(ctx, rdb, uniqueName(t), uint64(n), redisfilter.WithSeed(rng.Uint64()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Drop(ctx) })
		addAll(t, ctx, f, in)
		lib, err := f.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		found := make([]bool, len(all))
		if err := f.ContainsBatch(ctx, all, found, make([]error, len(found))); err != nil {
			t.Fatal(err)
		}
		for i, k := range all {
			if added(i) && !found[i] {
				t.Fatalf("ContainsBatch misses %s", k)
			}
			if found[i] != lib.Contains(k) {
				t.Fatalf("%s: ContainsBatch %v, snapshot %v", k, found[i], lib.Contains(k))
			}
		}

		bloomName := uniqueName(t)
		b, err := redisfilter.NewBloom(ctx, rdb, bloomName, uint64(n), redisfilter.WithFalsePositiveRate(0.01), redisfilter.WithSeed(rng.Uint64()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Drop(ctx) })
		if b.Name() != bloomName {
			t.Errorf("Bloom.Name() = %q, want %q", b.Name(), bloomName)
		}
		if err := b.AddBatch(ctx, in, make([]error, len(in))); err != nil {
			t.Fatal(err)
		}
		clear(found)
		if err := b.ContainsBatch(ctx, all, found, make([]error, len(found))); err != nil {
			t.Fatal(err)
		}
		for i, k := range all {
			if added(i) && !found[i] {
				t.Fatalf("Bloom ContainsBatch misses %s", k)
			}
			if i%50 == 0 {
				if ok, err := b.Contains(ctx, k); err != nil || ok != found[i] {
					t.Fatalf("%s: Bloom ContainsBatch %v, Contains %v, %v", k, found[i], ok, err)
				}
			}
		}
	})
}

// TestNewPlanIsNewsTable checks that NewPlan, which needs no server,
// describes the table New makes (segments, bucket size, fingerprint
// width, buckets) and refuses what New refuses, with the same error.
func TestNewPlanIsNewsTable(t *testing.T) {
	t.Parallel()
	rdb := singleClient(t)
	ctx := ctxOf(t)
	for _, c := range []struct {
		capacity uint64
		opts     []redisfilter.Option
	}{
		{1000, nil},
		{3_000_000, []redisfilter.Option{redisfilter.WithFalsePositiveRate(1e-6)}},
		{70_000, []redisfilter.Option{redisfilter.WithBucketSize(2), redisfilter.WithFingerprintBits(12)}},
		{100_000, []redisfilter.Option{redisfilter.WithSegments(7), redisfilter.WithBucketSize(8)}},
		{10, []redisfilter.Option{redisfilter.WithFalsePositiveRate(1e-9)}},
		{10, []redisfilter.Option{redisfilter.WithFingerprintBits(40)}},
		{10, []redisfilter.Option{redisfilter.WithRetryWindow(time.Second), redisfilter.WithRetryHorizon(time.Second)}},
	} {
		p, planErr := redisfilter.NewPlan(c.capacity, c.opts...)
		f, newErr := redisfilter.New(ctx, rdb, uniqueName(t), c.capacity, c.opts...)
		switch {
		case planErr != nil || newErr != nil:
			if planErr == nil || newErr == nil || planErr.Error() != newErr.Error() || !errors.Is(planErr, redisfilter.ErrInvalidParameter) {
				t.Fatalf("capacity %d: NewPlan: %v; New: %v", c.capacity, planErr, newErr)
			}
		case p.Segments != f.Segments() || p.BucketSize != f.BucketSize() || p.FingerprintBits != f.FingerprintBits() || p.NumBuckets != f.NumBuckets():
			t.Fatalf("capacity %d: NewPlan %+v; New made %d segments, b=%d, f=%d, %d buckets", c.capacity, p, f.Segments(), f.BucketSize(), f.FingerprintBits(), f.NumBuckets())
		default:
			f.Drop(ctx)
		}
	}
}
