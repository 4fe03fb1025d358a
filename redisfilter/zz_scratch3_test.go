package redisfilter_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/redisfilter"
)

func TestScratchMemory(t *testing.T) {
	rdb := singleClient(t)
	ctx := ctxOf(t)
	for _, n := range []uint64{10000, 14125, 100000, 200000, 1000000} {
		w, err := redisfilter.NewWindow(ctx, rdb, fmt.Sprint("w", n), n, 24*time.Hour, redisfilter.WithFalsePositiveRate(0.0019))
		if err != nil {
			t.Fatal(err)
		}
		f, err := redisfilter.New(ctx, rdb, fmt.Sprint("f", n), n, redisfilter.WithFalsePositiveRate(0.0019))
		if err != nil {
			t.Fatal(err)
		}
		ks := keys("k", 2000)
		w.AddBatch(ctx, ks, make([]error, len(ks)))
		f.AddBatch(ctx, ks, make([]error, len(ks)))
		wm, _ := w.MemoryUsage(ctx)
		fm, _ := f.MemoryUsage(ctx)
		per := func(keys []string) {
			for _, k := range keys[:3] {
				u, _ := rdb.MemoryUsage(ctx, k, 0).Result()
				fmt.Printf("   %s %d\n", k, u)
			}
		}
		per(w.Keys())
		per(f.Keys())
		fmt.Printf("n=%d window seg=%d mem=%d (%.3f/key) filter seg=%d mem=%d (%.3f/key) ratio %.3f\n", n, w.Segments(), wm, float64(wm)/float64(n), f.Segments(), fm, float64(fm)/float64(n), float64(wm)/float64(fm))
		w.Drop(ctx)
		f.Drop(ctx)
	}
}
