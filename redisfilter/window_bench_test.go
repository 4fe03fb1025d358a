package redisfilter_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/redisfilter"
)

// BenchmarkWindowEpochPass measures the write that starts an epoch in a
// window's segment of 32,768 keys a window (the default's largest) and of
// 65,536, full,
// when the incremental sweep has not kept up: the pass over the segment's
// table that empties the slots the new epoch makes expire, run in Lua
// inside that one write, during which the segment's server does nothing
// else. "dense": every slot of the segment expires at once (the keys of
// a burst, 15 epochs later, with no write since); "sparse": 1 % of them
// (a trickle of keys in an epoch, the rest younger), which the pass must
// still find over the whole table. The server's functions read a test
// clock, so that the epochs fall where the benchmark puts them. ns/op is
// the one write's time; the fill before it is not timed.
//
//	go test ./redisfilter -run '^$' -bench BenchmarkWindowEpochPass -benchtime 5x
func BenchmarkWindowEpochPass(b *testing.B) {
	skipWithoutRedis(b)
	// Not ctxOf's five minutes: the eight cases fill 2^15 to 2^16 keys per
	// round, which on a busy machine takes longer than that; go test's own
	// -timeout bounds a hang.
	ctx := context.Background()
	srv := redistest.NewServer(b, redistest.Config{})
	rdb := clientOf(b, srv)
	if err := redisfilter.LoadTestClockLibrary(ctx, rdb); err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	step := func(d time.Duration) {
		now = now.Add(d)
		if err := redisfilter.SetTestClock(ctx, rdb, now); err != nil {
			b.Fatal(err)
		}
	}
	step(0)
	for _, bits := range []int{12, 13} {
		for _, n := range []int{1 << 15, 1 << 16} {
			for _, c := range []struct {
				name string
				// many keys at epoch E, few at E+1; the timed write is at E+16
				// (every key of E expires: dense) or E+17 (those of E+1:
				// sparse)
				many, few int
				sparse    bool
			}{{"dense", n, 0, false}, {"sparse", n - n/100, n / 100, true}} {
				b.Run(fmt.Sprintf("f=%d/keys=%d/%s", bits, n, c.name), func(b *testing.B) {
					for i := range b.N {
						b.StopTimer()
						w, err := redisfilter.NewWindow(ctx, rdb, fmt.Sprintf("pass-%d-%d-%s-%d", bits, n, c.name, i), uint64(n), 14*time.Hour,
							redisfilter.WithSegments(1), redisfilter.WithFingerprintBits(bits))
						if err != nil {
							b.Fatal(err)
						}
						// The many keys at epoch E, the few at E+1; writes at
						// E+14 and E+15 empty nothing (no key is old enough),
						// and the write at E+16 empties the keys of E (dense);
						// with few keys, the one at E+17 those of E+1 (sparse).
						start := now
						manyKeys := keys("many", c.many)
						if err := w.AddBatch(ctx, manyKeys, make([]error, len(manyKeys))); err != nil {
							b.Fatal(err)
						}
						step(time.Hour)
						if c.few > 0 {
							fewKeys := keys("few", c.few)
							if err := w.AddBatch(ctx, fewKeys, make([]error, len(fewKeys))); err != nil {
								b.Fatal(err)
							}
						}
						last := 16
						if c.sparse {
							last = 17
						}
						for e := 14; e < last; e++ {
							step(start.Add(time.Duration(e) * time.Hour).Sub(now))
							if err := w.Add(ctx, []byte(fmt.Sprint("x", e))); err != nil {
								b.Fatal(err)
							}
						}
						step(start.Add(time.Duration(last) * time.Hour).Sub(now))
						b.StartTimer()
						if err := w.Add(ctx, []byte("z")); err != nil {
							b.Fatal(err)
						}
						b.StopTimer()
						w.Drop(ctx)
						step(100 * time.Hour)
					}
				})
			}
		}
	}
}
