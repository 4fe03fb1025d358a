package redisfilter_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// TestWindowNewOpenDrop: NewWindow creates a window with the parameters
// asked for, or opens the one there with the same parameters; it refuses
// others with ErrMismatch (a different window, rate or capacity), bad
// parameters with ErrInvalidParameter, and OpenWindow of a missing name
// with ErrNotFound. Drop removes every key of the window: a handle opened
// before then fails its writes and checked lookups with ErrNotFound and
// reads every key as absent.
func TestWindowNewOpenDrop(t *testing.T) {
	topologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxOf(t)
		name := uniqueName(t)
		w, err := redisfilter.NewWindow(ctx, rdb, name, 100_000, time.Hour, redisfilter.WithSegments(5))
		if err != nil {
			t.Fatal(err)
		}
		p, err := redisfilter.NewWindowPlan(100_000, time.Hour, redisfilter.WithSegments(5))
		if err != nil {
			t.Fatal(err)
		}
		if w.Capacity() != 100_000 || w.Window() != time.Hour || w.Segments() != 5 || w.BucketSize() != 4 ||
			w.FingerprintBits() != redisfilter.DefaultWindowFingerprintBits || w.NumBuckets() != p.NumBuckets {
			t.Fatalf("window: %d keys a window of %v, %d segments, %d-slot buckets of %d bits, %d buckets (plan %+v)",
				w.Capacity(), w.Window(), w.Segments(), w.BucketSize(), w.FingerprintBits(), w.NumBuckets(), p)
		}
		lib, err := cuckoo.NewWindow(100_000, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if g := 15*((time.Hour+13)/14) - time.Hour; w.Granularity() != g {
			t.Errorf("granularity %v, want 15·⌈window/14⌉ − window = %v", w.Granularity(), g)
		}
		if lib.Granularity() < w.Granularity() {
			t.Errorf("granularity %v, the library's (coarse clock) %v", w.Granularity(), lib.Granularity())
		}
		if err := w.Add(ctx, []byte("a")); err != nil {
			t.Fatal(err)
		}
		again, err := redisfilter.NewWindow(ctx, rdb, name, 100_000, time.Hour)
		if err != nil || again.Segments() != 5 {
			t.Fatalf("NewWindow of the same parameters: %v", err)
		}
		if ok, err := again.Contains(ctx, []byte("a")); !ok || err != nil {
			t.Fatalf("Contains through a second handle: %v, %v", ok, err)
		}
		for _, c := range []struct {
			n      uint64
			window time.Duration
			opts   []redisfilter.Option
		}{
			{100_000, 2 * time.Hour, nil},
			{100_001, time.Hour, nil},
			{100_000, time.Hour, []redisfilter.Option{redisfilter.WithFalsePositiveRate(0.001)}},
			{100_000, time.Hour, []redisfilter.Option{redisfilter.WithSegments(6)}},
		} {
			if _, err := redisfilter.NewWindow(ctx, rdb, name, c.n, c.window, c.opts...); !errors.Is(err, redisfilter.ErrMismatch) {
				t.Errorf("NewWindow(%d, %v) over a window of 100000, 1h: %v", c.n, c.window, err)
			}
		}
		for _, c := range []struct {
			n      uint64
			window time.Duration
			opts   []redisfilter.Option
		}{
			{0, time.Hour, nil},
			{10, time.Microsecond, nil},
			{10, time.Hour, []redisfilter.Option{redisfilter.WithBucketSize(3)}},
			{10, time.Hour, []redisfilter.Option{redisfilter.WithFingerprintBits(29)}},
		} {
			if _, err := redisfilter.NewWindow(ctx, rdb, uniqueName(t), c.n, c.window, c.opts...); !errors.Is(err, redisfilter.ErrInvalidParameter) {
				t.Errorf("NewWindow(%d, %v, %d options): %v", c.n, c.window, len(c.opts), err)
			}
		}
		if _, err := redisfilter.OpenWindow(ctx, rdb, uniqueName(t)); !errors.Is(err, redisfilter.ErrNotFound) {
			t.Errorf("OpenWindow of a missing name: %v", err)
		}
		if _, err := redisfilter.Open(ctx, rdb, name); !errors.Is(err, redisfilter.ErrNotFound) {
			t.Errorf("Open (a cuckoo filter) of a window's name: %v", err)
		}
		opened, err := redisfilter.OpenWindow(ctx, rdb, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := opened.Info(ctx)
		if err != nil || info.Len != 1 || info.Window != time.Hour || info.Segments != 5 || info.Name != name {
			t.Fatalf("Info: %+v, %v", info, err)
		}
		if err := w.Drop(ctx); err != nil {
			t.Fatal(err)
		}
		for _, k := range w.Keys() {
			if n, err := rdb.Exists(ctx, k).Result(); err != nil || n != 0 {
				t.Errorf("key %q left after Drop: %d, %v", k, n, err)
			}
		}
		if err := opened.Add(ctx, []byte("b")); !errors.Is(err, redisfilter.ErrNotFound) {
			t.Errorf("Add after Drop: %v", err)
		}
		if ok, err := opened.Contains(ctx, []byte("a")); ok || err != nil {
			t.Errorf("Contains after Drop: %v, %v", ok, err)
		}
		if ok, err := opened.ContainsChecked(ctx, []byte("a")); ok || !errors.Is(err, redisfilter.ErrNotFound) {
			t.Errorf("ContainsChecked after Drop: %v, %v", ok, err)
		}
	})
}

// TestWindowFindsForTheWindowAndForgets, with the servers' real clocks: a
// window of 2.8 s (epochs of 200 ms, granularity 200 ms) finds every key
// of a batch in every lookup whose reply came within the window of the
// batch's first send (a key's time is the server's at its write, after
// that send), and finds none (but false positives, at most the expected
// rate plus 5σ) in the lookups sent more than window + granularity after
// the batch's reply; Len falls from the keys to 0 the same way. A second
// batch added meanwhile keeps its own times. On a single node and on a
// 3-master cluster (6 segments: two a master).
func TestWindowFindsForTheWindowAndForgets(t *testing.T) {
	testlong.SkipQuickRun(t)
	topologiesBeforeParallel(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxOf(t)
		const window = 2800 * time.Millisecond
		const n = 3000
		w, err := redisfilter.NewWindow(ctx, rdb, uniqueName(t), 2*n, window, redisfilter.WithSegments(6))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Drop(ctx) })
		if g := w.Granularity(); g != 200*time.Millisecond {
			t.Fatalf("granularity %v", g)
		}
		first, second := keys("first", n), keys("second", n)
		add := func(in [][]byte) (sent, returned time.Time) {
			errs := make([]error, len(in))
			sent = time.Now()
			if err := w.AddBatch(ctx, in, errs); err != nil {
				t.Fatal(err)
			}
			return sent, time.Now()
		}
		sent1, ret1 := add(first)
		var sent2, ret2 time.Time
		found, errs := make([]bool, n), make([]error, n)
		bound := fpBoundOf(n, 2*0.002)
		var within, past int
		for {
			if sent2.IsZero() && time.Since(sent1) > window/2 {
				sent2, ret2 = add(second)
			}
			for b, in := range [][][]byte{first, second} {
				s, r := sent1, ret1
				if b == 1 {
					if sent2.IsZero() {
						continue
					}
					s, r = sent2, ret2
				}
				asked := time.Now()
				if err := w.ContainsBatch(ctx, in, found, errs); err != nil {
					t.Fatal(err)
				}
				answered := time.Now()
				hits := 0
				for _, f := range found {
					if f {
						hits++
					}
				}
				switch {
				case answered.Sub(s) <= window:
					within++
					if hits != n {
						t.Fatalf("batch %d: %d of %d keys found %v after it was sent", b+1, hits, n, answered.Sub(s))
					}
				case asked.Sub(r) > window+w.Granularity():
					past++
					if hits > bound {
						t.Fatalf("batch %d: %d of %d keys found %v after it returned (at most %d false positives expected)", b+1, hits, n, asked.Sub(r), bound)
					}
				}
			}
			if !sent2.IsZero() && time.Since(ret2) > window+w.Granularity()+300*time.Millisecond {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if within == 0 || past == 0 {
			t.Fatalf("%d lookups within the window, %d past it: the machine is too slow for this test's timing", within, past)
		}
		if l, err := w.Len(ctx); err != nil || l != 0 {
			t.Errorf("Len after the window: %d, %v", l, err)
		}
		t.Logf("%d lookup rounds within the window, %d past it", within, past)
	})
}

// fpBoundOf is the most false positives among n probes at rate p: the
// expectation plus 5 standard deviations, plus one.
func fpBoundOf(n int, p float64) int {
	mean := float64(n) * p
	return int(mean + 5*math.Sqrt(mean) + 1)
}

// TestWindowOperations: Add, Touch, AddUnique, Delete and their batches
// answer as a window does, with per-key results: AddUnique adds once and
// leaves the key's age, Touch reports a key seen, a key added twice in
// one batch is seen by its second add, Delete removes it once, and the
// batches refuse result slices shorter than the keys with
// ErrInvalidParameter.
func TestWindowOperations(t *testing.T) {
	bothTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxOf(t)
		w, err := redisfilter.NewWindow(ctx, rdb, uniqueName(t), 10_000, time.Hour, redisfilter.WithSegments(3),
			redisfilter.WithFingerprintBits(28), redisfilter.WithSeed(3))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Drop(ctx) })
		k := []byte("k")
		if added, err := w.AddUnique(ctx, k); !added || err != nil {
			t.Fatalf("AddUnique of a new key: %v, %v", added, err)
		}
		if added, err := w.AddUnique(ctx, k); added || err != nil {
			t.Fatalf("AddUnique of a key in the window: %v, %v", added, err)
		}
		if seen, err := w.Touch(ctx, k); !seen || err != nil {
			t.Fatalf("Touch of a key in the window: %v, %v", seen, err)
		}
		if seen, err := w.Touch(ctx, []byte("new")); seen || err != nil {
			t.Fatalf("Touch of a new key: %v, %v", seen, err)
		}
		if ok, err := w.Delete(ctx, k); !ok || err != nil {
			t.Fatalf("Delete: %v, %v", ok, err)
		}
		if ok, err := w.Delete(ctx, k); ok || err != nil {
			t.Fatalf("Delete again: %v, %v", ok, err)
		}
		if ok, err := w.Contains(ctx, k); ok || err != nil {
			t.Fatalf("Contains after Delete: %v, %v", ok, err)
		}
		in := append(keys("b", 5000), keys("b", 100)...) // the first 100 twice
		out, errs := make([]bool, len(in)), make([]error, len(in))
		if err := w.AddUniqueBatch(ctx, in, out, errs); err != nil {
			t.Fatal(err)
		}
		for i := range in {
			if errs[i] != nil || out[i] != (i < 5000) {
				t.Fatalf("AddUniqueBatch: key %d (%s): added %v, %v", i, in[i], out[i], errs[i])
			}
		}
		if err := w.TouchBatch(ctx, in, out, errs); err != nil {
			t.Fatal(err)
		}
		for i := range in {
			if errs[i] != nil || !out[i] {
				t.Fatalf("TouchBatch: key %d (%s): seen %v, %v", i, in[i], out[i], errs[i])
			}
		}
		if err := w.DeleteBatch(ctx, in, out, errs); err != nil {
			t.Fatal(err)
		}
		for i := range in {
			if errs[i] != nil || out[i] != (i < 5000) {
				t.Fatalf("DeleteBatch: key %d (%s): deleted %v, %v", i, in[i], out[i], errs[i])
			}
		}
		if err := w.ContainsBatch(ctx, in, out, errs); err != nil {
			t.Fatal(err)
		}
		for i := range in {
			if errs[i] != nil || out[i] {
				t.Fatalf("ContainsBatch after DeleteBatch: key %d (%s): %v, %v", i, in[i], out[i], errs[i])
			}
		}
		if n, err := w.Len(ctx); err != nil || n != 1 {
			t.Fatalf("Len: %d, %v (want 1: the key \"new\")", n, err)
		}
		short := make([]bool, 3)
		for name, err := range map[string]error{
			"AddUniqueBatch": w.AddUniqueBatch(ctx, in, short, errs),
			"TouchBatch":     w.TouchBatch(ctx, in, short, errs),
			"DeleteBatch":    w.DeleteBatch(ctx, in, short, errs),
			"ContainsBatch":  w.ContainsBatch(ctx, in, short, errs),
			"AddBatch":       w.AddBatch(ctx, in, errs[:3]),
			"TouchBatchAt":   w.TouchBatchAt(ctx, in, make([]time.Time, 3), out, errs),
		} {
			if !errors.Is(err, redisfilter.ErrInvalidParameter) {
				t.Errorf("%s with short slices: %v", name, err)
			}
		}
	})
}

// TestWindowFullLeavesSegmentAsItWas: inserts past what a window's
// segment can hold get ErrFull (Add, and per key in AddBatch), the keys
// in the window stay found, and a refused insert leaves the segment's
// table, epoch, cursor and counts exactly as they were.
func TestWindowFullLeavesSegmentAsItWas(t *testing.T) {
	t.Parallel()
	ctx := ctxOf(t)
	rdb := singleClient(t)
	w, err := redisfilter.NewWindow(ctx, rdb, uniqueName(t), 100, time.Hour, redisfilter.WithSegments(1),
		redisfilter.WithFingerprintBits(28), redisfilter.WithMaxKicks(20))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Drop(ctx) })
	in := keys("full", 400)
	errs := make([]error, len(in))
	w.AddBatch(ctx, in, errs)
	var held [][]byte
	full := 0
	for i, err := range errs {
		switch {
		case err == nil:
			held = append(held, in[i])
		case errors.Is(err, redisfilter.ErrFull):
			full++
		default:
			t.Fatalf("key %d: %v", i, err)
		}
	}
	if full == 0 || len(held) < 100 {
		t.Fatalf("%d keys held, %d refused", len(held), full)
	}
	before, err := redisfilter.WindowSegmentState(ctx, w, 0)
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for i := range 10 {
		err := w.Add(ctx, key("more", i))
		if err == nil {
			t.Logf("key %d found room", i)
			break
		}
		if !errors.Is(err, redisfilter.ErrFull) {
			t.Fatal(err)
		}
		refused++
		after, err := redisfilter.WindowSegmentState(ctx, w, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(after.Table, before.Table) || after.Epoch != before.Epoch || after.Cursor != before.Cursor || after.Counts != before.Counts {
			t.Fatalf("a refused Add changed the segment (epoch %d → %d, cursor %d → %d)", before.Epoch, after.Epoch, before.Cursor, after.Cursor)
		}
	}
	found, ferrs := make([]bool, len(held)), make([]error, len(held))
	if err := w.ContainsBatch(ctx, held, found, ferrs); err != nil {
		t.Fatal(err)
	}
	for i := range held {
		if !found[i] {
			t.Fatalf("%s, added, is not found", held[i])
		}
	}
	t.Logf("%d keys held, %d refused in the batch, %d single refusals", len(held), full, refused)
}

// TestWindowPushSnapshotBitIdentical: a library window pushed into Redis
// and snapshot back is the window pushed, byte for byte, and answers as
// it does; a window made in Redis, snapshot and pushed under another
// name, holds the same segment (table, epoch, cursor, counts). A window of
// several segments cannot be snapshot (ErrUnsupported); pushing over an
// existing window needs replace (ErrExists otherwise).
func TestWindowPushSnapshotBitIdentical(t *testing.T) {
	testlong.SkipQuickRun(t)
	topologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxOf(t)
		now := time.Now()
		clock := func() time.Time { return now }
		lib, err := cuckoo.NewWindow(5000, time.Hour, cuckoo.WithClock(clock), cuckoo.WithFalsePositiveRate(0.001))
		if err != nil {
			t.Fatal(err)
		}
		// Keys of several epochs, some expired, a sweep under way.
		for e := range 20 {
			now = now.Add(5 * time.Minute)
			if _, err := lib.AddBatch(keys(fmt.Sprintf("e%d-", e), 200)); err != nil {
				t.Fatal(err)
			}
		}
		now = time.Now()
		want, err := lib.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		name := uniqueName(t)
		w, err := redisfilter.PushWindow(ctx, rdb, name, lib, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Drop(ctx) })
		snap, err := w.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := snap.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("pushed and snapshot: %d bytes, pushed %d, not the same", len(got), len(want))
		}
		if _, err := redisfilter.PushWindow(ctx, rdb, name, lib, false); !errors.Is(err, redisfilter.ErrExists) {
			t.Fatalf("PushWindow over a window: %v", err)
		}

		// Made in Redis, snapshot, pushed elsewhere: the same segment.
		// 28-bit fingerprints and a fixed seed: no two of the keys share
		// a slot, so the deletes take only their own keys.
		made, err := redisfilter.NewWindow(ctx, rdb, uniqueName(t), 5000, time.Hour, redisfilter.WithSegments(1),
			redisfilter.WithFingerprintBits(28), redisfilter.WithSeed(0x3a9e))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { made.Drop(ctx) })
		in := keys("made", 3000)
		if err := made.AddBatch(ctx, in, make([]error, len(in))); err != nil {
			t.Fatal(err)
		}
		if err := made.DeleteBatch(ctx, in[:100], make([]bool, 100), make([]error, 100)); err != nil {
			t.Fatal(err)
		}
		snap, err = made.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		copied, err := redisfilter.PushWindow(ctx, rdb, uniqueName(t), snap, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { copied.Drop(ctx) })
		a, err := redisfilter.WindowSegmentState(ctx, made, 0)
		if err != nil {
			t.Fatal(err)
		}
		b, err := redisfilter.WindowSegmentState(ctx, copied, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Table, b.Table) || a.Epoch != b.Epoch || a.Cursor != b.Cursor || a.Counts != b.Counts || a.End != b.End {
			t.Fatalf("snapshot and pushed: epoch %d, %d; cursor %d, %d; counts %v, %v; end %v, %v",
				a.Epoch, b.Epoch, a.Cursor, b.Cursor, a.Counts, b.Counts, a.End, b.End)
		}
		for i, k := range in {
			ok, err := copied.Contains(ctx, k)
			if err != nil || ok != (i >= 100) || snap.Contains(k) != ok {
				t.Fatalf("%s: copied %v, %v; snapshot %v", k, ok, err, snap.Contains(k))
			}
		}

		split, err := redisfilter.NewWindow(ctx, rdb, uniqueName(t), 5000, time.Hour, redisfilter.WithSegments(2))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { split.Drop(ctx) })
		if _, err := split.Snapshot(ctx); !errors.Is(err, redisfilter.ErrUnsupported) {
			t.Errorf("Snapshot of 2 segments: %v", err)
		}
	})
}

// TestWindowMemoryUsageMatchesPlan measures MEMORY USAGE of windows and
// cuckoo filters of the same capacity and rate (0.19 %, 12-bit
// fingerprints) on a real server, each holding a thousand keys (so that
// the segments' hashes hold their fields): of one string each (10^4 keys)
// and of several (2 × 10^5 keys: 17 segments against 4). Each is within 3
// % of the memory its plan counts (which leaves out the metadata key) (WindowPlanMemory, FilterPlanMemory),
// which TestWindowPlanMemoryAgainstFilter holds over capacities and rates
// without a server, and the window takes at most 1.5 times the filter's.
func TestWindowMemoryUsageMatchesPlan(t *testing.T) {
	rdb := singleClient(t)
	ctx := ctxOf(t)
	const rate = 0.0019
	in := keys("memory", 1000)
	for _, n := range []uint64{10_000, 200_000} {
		wp, err := redisfilter.NewWindowPlan(n, 24*time.Hour, redisfilter.WithFalsePositiveRate(rate))
		if err != nil {
			t.Fatal(err)
		}
		fp, err := redisfilter.NewPlan(n, redisfilter.WithFalsePositiveRate(rate))
		if err != nil {
			t.Fatal(err)
		}
		w, err := redisfilter.NewWindow(ctx, rdb, uniqueName(t), n, 24*time.Hour, redisfilter.WithFalsePositiveRate(rate))
		if err != nil {
			t.Fatal(err)
		}
		f, err := redisfilter.New(ctx, rdb, uniqueName(t), n, redisfilter.WithFalsePositiveRate(rate))
		if err != nil {
			t.Fatal(err)
		}
		if w.Segments() != wp.Segments || f.Segments() != fp.Segments {
			t.Fatalf("%d keys: %d and %d segments, planned %d and %d", n, w.Segments(), f.Segments(), wp.Segments, fp.Segments)
		}
		errs := make([]error, len(in))
		if err := w.AddBatch(ctx, in, errs); err != nil || errors.Join(errs...) != nil {
			t.Fatal(err, errors.Join(errs...))
		}
		addAll(t, ctx, f, in)
		wUsed, err := w.MemoryUsage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fUsed, err := f.MemoryUsage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wPlan, fPlan := redisfilter.WindowPlanMemory(wp), redisfilter.FilterPlanMemory(fp)
		t.Logf("%d keys: window %d segments, MEMORY USAGE %d (plan %d); filter %d segments, %d (plan %d); %.3f×",
			n, w.Segments(), wUsed, wPlan, f.Segments(), fUsed, fPlan, float64(wUsed)/float64(fUsed))
		if relErr(float64(wUsed), float64(wPlan)) > 0.03 || relErr(float64(fUsed), float64(fPlan)) > 0.03 {
			t.Errorf("%d keys: MEMORY USAGE %d and %d, not within 3 %% of the plans' %d and %d", n, wUsed, fUsed, wPlan, fPlan)
		}
		if float64(wUsed) > 1.5*float64(fUsed) {
			t.Errorf("%d keys: the window takes %d bytes, more than 1.5 times the filter's %d", n, wUsed, fUsed)
		}
		w.Drop(ctx)
		f.Drop(ctx)
	}
}
