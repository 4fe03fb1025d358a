package redisfilter_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/redisfilter"
)

// BenchmarkAddUniqueBatch measures AddUniqueBatch of 8,192 new keys (a
// batch of cuckoo dedup --redis) into a filter of one segment and of 16,
// on a server of its own: ns/op is one batch, its round trips and the
// server's function calls (256 of 32 keys) included. The filter holds
// 2^22 keys, so that b.N up to 200 batches stay below half its capacity.
//
//	go test ./redisfilter -run '^$' -bench BenchmarkAddUniqueBatch -benchtime 100x
func BenchmarkAddUniqueBatch(b *testing.B) {
	skipWithoutRedis(b)
	ctx := context.Background()
	srv := redistest.NewServer(b, redistest.Config{})
	rdb := clientOf(b, srv)
	for _, segs := range []int{1, 16} {
		b.Run(fmt.Sprintf("segments=%d", segs), func(b *testing.B) {
			f, err := redisfilter.New(ctx, rdb, fmt.Sprintf("bench-%d-%d", segs, b.N), 1<<22, redisfilter.WithSegments(segs))
			if err != nil {
				b.Fatal(err)
			}
			const n = 8192
			in := make([][]byte, n)
			added := make([]bool, n)
			errs := make([]error, n)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				for k := range in {
					in[k] = key(fmt.Sprintf("b%d-", i), k)
				}
				b.StartTimer()
				if err := f.AddUniqueBatch(ctx, in, added, errs); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if err := f.Drop(ctx); err != nil {
				b.Fatal(err)
			}
		})
	}
}
