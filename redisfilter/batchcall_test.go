package redisfilter_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
	"github.com/dedupkit/cuckoo/redisfilter"
)

// TestBatchMatchesSingleCalls holds a function call of many keys to calls
// of one key each: batches of AddBatch, AddUniqueBatch and DeleteBatch go
// to one filter, and the same keys, in the same order, one call each
// (Add, AddUnique, Delete) to a twin of the same geometry and seed; after
// every batch the two segments must hold the same bytes, counters and
// items, and every key the same reply. A call of many keys reads its
// buckets once and writes what changed at its end, so here its keys share
// buckets (64 buckets a segment, up to 32 keys a call), change slots whose
// bytes a neighbouring bucket's slots share (fingerprints of 9, 12 and 13
// bits), repeat within a call (counted copies, AddUnique of a key the
// call has just added), and, once the segment is full, search and walk
// for room (max kicks 20), some walks failing and being undone between
// keys that fit.
// The one-key calls are held to the library's engine by
// TestLuaMatchesEngine.
func TestBatchMatchesSingleCalls(t *testing.T) {
	t.Parallel()
	shapes := []struct{ b, f int }{{4, 13}, {2, 9}, {3, 12}}
	if testlong.Enabled() {
		shapes = append(shapes, struct{ b, f int }{4, 16}, struct{ b, f int }{1, 20}, struct{ b, f int }{8, 32}, struct{ b, f int }{5, 7})
	}
	rdb := singleClient(t)
	for _, sh := range shapes {
		t.Run(fmt.Sprintf("b%d-f%d", sh.b, sh.f), func(t *testing.T) {
			t.Parallel()
			ctx := ctxOf(t)
			rng := testseed.Rand(t)
			opts := []redisfilter.Option{redisfilter.WithBucketSize(sh.b), redisfilter.WithFingerprintBits(sh.f),
				redisfilter.WithSegments(1), redisfilter.WithMaxKicks(20), redisfilter.WithSeed(rng.Uint64())}
			batched, err := redisfilter.New(ctx, rdb, uniqueName(t)+"-batch", 1, opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { batched.Drop(ctx) })
			single, err := redisfilter.New(ctx, rdb, uniqueName(t)+"-single", 1, opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { single.Drop(ctx) })
			slots := int(batched.NumBuckets()) * sh.b
			pool := keys("batch-", 2*slots)
			var full, refusedBetween int
			for round := 0; round < 40; round++ {
				n := 1 + rng.IntN(80)
				batch := make([][]byte, n)
				for i := range batch {
					if i > 0 && rng.IntN(8) == 0 {
						batch[i] = batch[rng.IntN(i)] // a key the batch has already
					} else {
						batch[i] = pool[rng.IntN(len(pool))]
					}
				}
				op := rng.IntN(12)
				if round < 12 {
					op %= 8 // no deletes while it fills
				}
				errs := make([]error, n)
				got := make([]bool, n)
				want := make([]bool, n)
				wantErr := make([]error, n)
				var what string
				switch {
				case op < 5:
					what = "AddBatch"
					if err := batched.AddBatch(ctx, batch, errs); err != nil && !errors.Is(err, redisfilter.ErrFull) {
						t.Fatal(err)
					}
					for i, k := range batch {
						wantErr[i] = single.Add(ctx, k)
						got[i], want[i] = errs[i] == nil, wantErr[i] == nil
					}
				case op < 8:
					what = "AddUniqueBatch"
					if err := batched.AddUniqueBatch(ctx, batch, got, errs); err != nil && !errors.Is(err, redisfilter.ErrFull) {
						t.Fatal(err)
					}
					for i, k := range batch {
						want[i], wantErr[i] = single.AddUnique(ctx, k)
					}
				default:
					what = "DeleteBatch"
					if err := batched.DeleteBatch(ctx, batch, got, errs); err != nil {
						t.Fatal(err)
					}
					for i, k := range batch {
						want[i], wantErr[i] = single.Delete(ctx, k)
					}
				}
				refused := false
				for i := range batch {
					if errs[i] != nil && !errors.Is(errs[i], redisfilter.ErrFull) {
						t.Fatalf("round %d, %s, key %d: %v", round, what, i, errs[i])
					}
					if wantErr[i] != nil && !errors.Is(wantErr[i], redisfilter.ErrFull) {
						t.Fatalf("round %d, one call a key, key %d: %v", round, i, wantErr[i])
					}
					if got[i] != want[i] || (errs[i] == nil) != (wantErr[i] == nil) {
						t.Fatalf("round %d, %s, key %d (%q): batch %v %v, one call a key %v %v", round, what, i, batch[i], got[i], errs[i], want[i], wantErr[i])
					}
					if errs[i] != nil {
						full++
						refused = true
					} else if refused {
						refusedBetween++ // a key placed after a refusal in the batch
					}
				}
				a, err := redisfilter.SegmentState(ctx, batched, 0)
				if err != nil {
					t.Fatal(err)
				}
				b, err := redisfilter.SegmentState(ctx, single, 0)
				if err != nil {
					t.Fatal(err)
				}
				tw := twin{rf: batched}
				if !tw.equal(a, b) {
					t.Fatalf("round %d, %s of %d keys: batched segment %s\none call a key %s\n%s", round, what, n, describe(a), describe(b), tw.slotDiff(a.Table, b.Table))
				}
			}
			t.Logf("%d keys refused for want of room, %d of them followed by a key placed in the same batch", full, refusedBetween)
			if full == 0 || refusedBetween == 0 {
				t.Fatalf("the batches did not fill the segment (%d refusals, %d keys placed after one in a batch)", full, refusedBetween)
			}
		})
	}
}
