package guard_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/guard"
	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// benchLocal is a 1M-key Local filter at 1 % holding the keys row:N, and
// keys it does not hold, built once.
var benchLocal struct {
	once   sync.Once
	f      *cuckoo.Concurrent
	absent [][]byte
}

func localBench(b *testing.B) (*cuckoo.Concurrent, [][]byte) {
	benchLocal.once.Do(func() {
		const n = 1 << 20
		f, err := cuckoo.NewConcurrent(n, cuckoo.WithFalsePositiveRate(0.01), cuckoo.WithSeed(1))
		if err != nil {
			panic(err)
		}
		for i := range n {
			if err := f.Add(fmt.Appendf(nil, "row:%d", i)); err != nil {
				panic(err)
			}
		}
		for i := range 1 << 16 {
			k := fmt.Appendf(nil, "absent:%d", i)
			if !f.Contains(k) {
				benchLocal.absent = append(benchLocal.absent, k)
			}
		}
		benchLocal.f = f
	})
	return benchLocal.f, benchLocal.absent
}

func noLoad(context.Context, []byte) (string, error) { return "", guard.ErrNotFound }

// BenchmarkGetAbsent compares a Get of an absent key through a Local
// guard with the bare lookup of its filter (the guard adds bookkeeping,
// not a round trip): impl=guard against impl=contains.
func BenchmarkGetAbsent(b *testing.B) {
	f, absent := localBench(b)
	g := newGuard(b, guard.Local(f), noLoad)
	ctx := context.Background()
	mask := len(absent) - 1
	for mask&(mask+1) != 0 { // a power of two minus one
		mask >>= 1
	}
	b.Run("n=1M/impl=guard", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			g.Get(ctx, absent[i&mask])
			i++
		}
	})
	b.Run("n=1M/impl=contains", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			f.Contains(absent[i&mask])
			i++
		}
	})
	b.Run("n=1M/impl=guard/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				g.Get(ctx, absent[i&mask])
				i++
			}
		})
	})
	b.Run("n=1M/impl=contains/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				f.Contains(absent[i&mask])
				i++
			}
		})
	})
}

// BenchmarkGetAbsentInterleaved times the two of BenchmarkGetAbsent in
// alternating blocks of 4096 lookups within one run, so that a load on
// the machine that comes and goes weighs on both alike, and reports
// their ratio (guard/contains).
func BenchmarkGetAbsentInterleaved(b *testing.B) {
	f, absent := localBench(b)
	g := newGuard(b, guard.Local(f), noLoad)
	ctx := context.Background()
	mask := len(absent) - 1
	for mask&(mask+1) != 0 {
		mask >>= 1
	}
	const block = 4096
	var tg, tc time.Duration
	i, n := 0, 0
	for b.Loop() {
		if n%(2*block) < block {
			t := time.Now()
			for range block {
				g.Get(ctx, absent[i&mask])
				i++
			}
			tg += time.Since(t)
		} else {
			t := time.Now()
			for range block {
				f.Contains(absent[i&mask])
				i++
			}
			tc += time.Since(t)
		}
		n += block
	}
	if tc > 0 && tg > 0 {
		half := float64(n / 2)
		b.ReportMetric(float64(tg.Nanoseconds())/half, "guard-ns/op")
		b.ReportMetric(float64(tc.Nanoseconds())/half, "contains-ns/op")
		b.ReportMetric(float64(tg)/float64(tc), "guard/contains")
	}
}

// BenchmarkGetManyShared compares a batched lookup of absent keys through
// a Shared guard with redisfilter's batch lookup of the same keys
// (impl=guard against impl=redisfilter), and a Get at a time.
func BenchmarkGetManyShared(b *testing.B) {
	if _, _, err := redistest.Binaries(); err != nil {
		b.Skip(err)
	}
	srv, err := redistest.Start(redistest.Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	f, err := redisfilter.New(ctx, rdb, "bench", 1<<20, redisfilter.WithFalsePositiveRate(0.01))
	if err != nil {
		b.Fatal(err)
	}
	set, err := guard.OpenShared(ctx, rdb, "bench")
	if err != nil {
		b.Fatal(err)
	}
	g := newGuard(b, set, noLoad)
	const batch = 1000
	keys := make([][]byte, batch)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "absent:%d", i)
	}
	vals, errs, found, ferrs := make([]string, batch), make([]error, batch), make([]bool, batch), make([]error, batch)
	b.Run(fmt.Sprintf("batch=%d/impl=guard", batch), func(b *testing.B) {
		for b.Loop() {
			if err := g.GetMany(ctx, keys, vals, errs); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/key")
	})
	b.Run(fmt.Sprintf("batch=%d/impl=redisfilter", batch), func(b *testing.B) {
		for b.Loop() {
			if err := f.ContainsBatch(ctx, keys, found, ferrs); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/key")
	})
	// Both in turn within one run, so that the machine's load weighs on
	// both alike: the ratio is the guard's cost.
	b.Run(fmt.Sprintf("batch=%d/interleaved", batch), func(b *testing.B) {
		var tg, tr time.Duration
		for b.Loop() {
			t := time.Now()
			if err := g.GetMany(ctx, keys, vals, errs); err != nil {
				b.Fatal(err)
			}
			tg += time.Since(t)
			t = time.Now()
			if err := f.ContainsBatch(ctx, keys, found, ferrs); err != nil {
				b.Fatal(err)
			}
			tr += time.Since(t)
		}
		b.ReportMetric(float64(tg.Nanoseconds())/float64(b.N*batch), "guard-ns/key")
		b.ReportMetric(float64(tr.Nanoseconds())/float64(b.N*batch), "redisfilter-ns/key")
		b.ReportMetric(float64(tg)/float64(tr), "guard/redisfilter")
	})
	// A Get at a time against redisfilter's Contains, in turn in blocks
	// of 64 within one run, through a client that honours context
	// deadlines (the set's lookup runs in the caller's goroutine) and one
	// that does not (the set waits for the reply in a goroutine of its
	// own, to return by the read timeout).
	for _, c := range []struct {
		name    string
		honours bool
	}{{"client=default", false}, {"client=context-deadlines", true}} {
		crdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: c.honours})
		defer crdb.Close()
		cset, err := guard.OpenShared(ctx, crdb, "bench")
		if err != nil {
			b.Fatal(err)
		}
		cg := newGuard(b, cset, noLoad)
		cf, err := redisfilter.Open(ctx, crdb, "bench")
		if err != nil {
			b.Fatal(err)
		}
		b.Run("batch=1/"+c.name+"/interleaved", func(b *testing.B) {
			const block = 64
			var tg, tr time.Duration
			i, n := 0, 0
			for b.Loop() {
				t := time.Now()
				for range block {
					cg.Get(ctx, keys[i%batch])
					i++
				}
				tg += time.Since(t)
				t = time.Now()
				for range block {
					cf.Contains(ctx, keys[i%batch])
					i++
				}
				tr += time.Since(t)
				n += block
			}
			b.ReportMetric(float64(tg.Nanoseconds())/float64(n), "guard-ns/op")
			b.ReportMetric(float64(tr.Nanoseconds())/float64(n), "redisfilter-ns/op")
			b.ReportMetric(float64(tg)/float64(tr), "guard/redisfilter")
		})
	}
	b.Run("batch=1/impl=guard", func(b *testing.B) {
		i := 0
		for b.Loop() {
			g.Get(ctx, keys[i%batch])
			i++
		}
	})
	b.Run("batch=1/impl=redisfilter", func(b *testing.B) {
		i := 0
		for b.Loop() {
			f.Contains(ctx, keys[i%batch])
			i++
		}
	})
}
