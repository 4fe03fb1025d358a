package redisfilter_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// TestConcurrentClients runs 8 goroutines on each of 2 clients (their own
// connection pools) against one filter: each adds its own keys, 300 (1500
// with CUCKOO_LONG=1; singly and in batches, some twice), deletes some,
// and races the others to AddUnique a shared set. Afterwards every acknowledged key that was not
// deleted is found, the counts add up, and each shared key was added by
// exactly one goroutine.
//
// A shared key whose fingerprint and bucket pair another of the test's
// keys also has is a false positive for every AddUnique and has no
// winner. With a random seed that happens in about one run in 1,200: each
// of the 500 shared keys meets each of the 24,500 other keys in its
// bucket pair with probability 2/27,648 and in its fingerprint with
// 1/(2^20−1). Whether it happens depends only on the seed and the keys,
// not on the order of the writes, so the seed is fixed, one for which no
// shared key has such a twin (checked with the library filter of the same
// geometry: each shared key counts 1 there after adding every key; the
// quick version's keys are a subset of the long one's).
func TestConcurrentClients(t *testing.T) {
	testlong.SkipQuickRun(t)
	topologies(t, func(t *testing.T, first redis.UniversalClient) {
		ctx := ctxOf(t)
		var second redis.UniversalClient
		switch c := first.(type) {
		case *redis.Client:
			second = clientOf(t, singleServer(t))
			_ = c
		default:
			second = clusterClient(t)
		}
		name := uniqueName(t)
		f1, err := redisfilter.New(ctx, first, name, 100000, redisfilter.WithFingerprintBits(20), redisfilter.WithSegments(6),
			redisfilter.WithSeed(0xc0c0))
		if err != nil {
			t.Fatal(err)
		}
		defer f1.Drop(ctx)
		f2, err := redisfilter.Open(ctx, second, name)
		if err != nil {
			t.Fatal(err)
		}
		const workers, shared = 16, 500
		perWorker := 300
		if testlong.Enabled() {
			perWorker = 1500
		}
		sharedKeys := keys("shared", shared)
		var winners [shared]atomic.Int32
		acked := make([][][]byte, workers)   // keys acknowledged, still in
		doubled := make([][][]byte, workers) // of those, added twice
		var items atomic.Int64
		var wg sync.WaitGroup
		errc := make(chan error, workers)
		for w := range workers {
			f := f1
			if w%2 == 1 {
				f = f2
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				mine := keys(fmt.Sprintf("w%d-", w), perWorker)
				// Singly, the first third; some twice.
				for i, k := range mine[:perWorker/3] {
					if err := f.Add(ctx, k); err != nil {
						errc <- err
						return
					}
					acked[w] = append(acked[w], k)
					items.Add(1)
					if i%7 == 0 {
						if err := f.Add(ctx, k); err != nil {
							errc <- err
							return
						}
						doubled[w] = append(doubled[w], k)
						items.Add(1)
					}
				}
				// In batches, the rest.
				rest := mine[perWorker/3:]
				errs := make([]error, len(rest))
				for lo := 0; lo < len(rest); lo += 200 {
					hi := min(lo+200, len(rest))
					if err := f.AddBatch(ctx, rest[lo:hi], errs[lo:hi]); err != nil {
						errc <- err
						return
					}
					for i := lo; i < hi; i++ {
						if errs[i] != nil {
							errc <- errs[i]
							return
						}
						acked[w] = append(acked[w], rest[i])
						items.Add(1)
					}
				}
				// Delete every tenth acknowledged key (one copy).
				var kept [][]byte
				for i, k := range acked[w] {
					if i%10 == 3 {
						ok, err := f.Delete(ctx, k)
						if err != nil || !ok {
							errc <- fmt.Errorf("Delete(%s) = %v, %v", k, ok, err)
							return
						}
						items.Add(-1)
						continue
					}
					kept = append(kept, k)
				}
				acked[w] = kept
				// Race for the shared keys, half of the workers by batch.
				if w%2 == 0 {
					added := make([]bool, shared)
					errs := make([]error, shared)
					if err := f.AddUniqueBatch(ctx, sharedKeys, added, errs); err != nil {
						errc <- err
						return
					}
					for i, a := range added {
						if errs[i] != nil {
							errc <- errs[i]
							return
						}
						if a {
							winners[i].Add(1)
							items.Add(1)
						}
					}
				} else {
					for i, k := range sharedKeys {
						a, err := f.AddUnique(ctx, k)
						if err != nil {
							errc <- err
							return
						}
						if a {
							winners[i].Add(1)
							items.Add(1)
						}
					}
				}
				// Every own key still acknowledged is found meanwhile.
				found := make([]bool, len(acked[w]))
				if err := f.ContainsBatch(ctx, acked[w], found, make([]error, len(found))); err != nil {
					errc <- err
					return
				}
				for i, ok := range found {
					if !ok {
						errc <- fmt.Errorf("%s not found by its writer", acked[w][i])
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		var all [][]byte
		for w := range workers {
			all = append(all, acked[w]...)
		}
		found := make([]bool, len(all))
		if err := f2.ContainsBatch(ctx, all, found, make([]error, len(found))); err != nil {
			t.Fatal(err)
		}
		for i, ok := range found {
			if !ok {
				t.Fatalf("acknowledged key %s lost", all[i])
			}
		}
		for w := range workers {
			for _, k := range doubled[w] {
				n, err := f1.Count(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				// Added twice; one copy deleted if it was a tenth.
				if n < 1 {
					t.Fatalf("%s added twice counts %d", k, n)
				}
			}
		}
		for i := range shared {
			if n := winners[i].Load(); n != 1 {
				t.Fatalf("%s was added by %d goroutines, want exactly 1", sharedKeys[i], n)
			}
		}
		if n, err := f1.Len(ctx); err != nil || int64(n) != items.Load() {
			t.Fatalf("Len = %d, %v; acknowledged items %d", n, err, items.Load())
		}
	})
}
