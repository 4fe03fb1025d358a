package bloom_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/dedupkit/cuckoo/bloom"
)

// Benchmarks use 16-byte keys built from an index (about 1 ns, included in
// every figure). Hits look up keys that were added, misses keys that were
// not; both walk the table in hash order, so large tables miss the caches
// as real lookups do. Tables are built once, on first use.
//
//	go test -run '^$' -bench . -count 10 ./bloom | benchstat -

var sizes = []struct {
	name string
	n    uint64
}{{"1M", 1_000_000}, {"10M", 10_000_000}}

var rates = []float64{0.01, 0.0001}

var (
	builtMu sync.Mutex
	built   = map[string]any{}
)

// cached returns the value mk builds for name, building it once.
func cached[T any](name string, mk func() T) T {
	builtMu.Lock()
	defer builtMu.Unlock()
	if v, ok := built[name]; ok {
		return v.(T)
	}
	v := mk()
	built[name] = v
	return v
}

// layoutName names a Filter constructor's layout in benchmark names.
func layoutName(constructor string) string {
	if constructor == "New" {
		return "blocked"
	}
	return "classic"
}

// benchContains times contains on the keys of n added (hit) or of n never
// added, in turn.
func benchContains(b *testing.B, contains func([]byte) bool, n uint64, hit bool) {
	family := uint64(0)
	if !hit {
		family = 1
	}
	var kb keyBuf
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		sink = contains(kb.at(family, i%n))
		i++
	}
}

func BenchmarkFilter_Add(b *testing.B) {
	for _, l := range filterLayouts {
		for _, sz := range sizes {
			for _, p := range rates {
				b.Run(fmt.Sprintf("layout=%s/n=%s/fpr=%g", layoutName(l.name), sz.name, p), func(b *testing.B) {
					f, err := l.new(sz.n, p)
					if err != nil {
						b.Fatal(err)
					}
					var kb keyBuf
					b.ReportAllocs()
					i := uint64(0)
					for b.Loop() {
						if i%sz.n == 0 && i > 0 {
							f.Reset() // stay at or under capacity
						}
						f.Add(kb.at(0, i))
						i++
					}
				})
			}
		}
	}
}

// BenchmarkFilter_AddUnique is the test-and-add of a dedup loop over new
// keys: the filter is reset each time it holds its capacity.
func BenchmarkFilter_AddUnique(b *testing.B) {
	for _, l := range filterLayouts {
		b.Run(fmt.Sprintf("layout=%s/n=1M/fpr=0.001", layoutName(l.name)), func(b *testing.B) {
			const n = 1_000_000
			f, err := l.new(n, 0.001)
			if err != nil {
				b.Fatal(err)
			}
			var kb keyBuf
			b.ReportAllocs()
			i := uint64(0)
			for b.Loop() {
				if i%n == 0 && i > 0 {
					f.Reset()
				}
				sink, _ = f.AddUnique(kb.at(0, i))
				i++
			}
		})
	}
}

func BenchmarkFilter_Contains(b *testing.B) {
	for _, l := range filterLayouts {
		for _, sz := range sizes {
			for _, p := range rates {
				for _, hit := range []bool{true, false} {
					b.Run(fmt.Sprintf("layout=%s/n=%s/fpr=%g/hit=%v", layoutName(l.name), sz.name, p, hit), func(b *testing.B) {
						f := cached(fmt.Sprint(l.name, sz.n, p), func() *bloom.Filter {
							f, err := l.new(sz.n, p)
							if err != nil {
								b.Fatal(err)
							}
							fill(f, 0, sz.n)
							return f
						})
						benchContains(b, f.Contains, sz.n, hit)
					})
				}
			}
		}
	}
}

func BenchmarkCounting(b *testing.B) {
	const n = 1_000_000
	for _, p := range rates {
		f := func() *bloom.Counting {
			return cached(fmt.Sprint("counting", p), func() *bloom.Counting {
				f, _ := bloom.NewCounting(n, bloom.WithFalsePositiveRate(p))
				fill(f, 0, n)
				return f
			})
		}
		b.Run(fmt.Sprintf("op=Add+Delete/n=1M/fpr=%g", p), func(b *testing.B) {
			f := f()
			var kb keyBuf
			b.ReportAllocs()
			i := uint64(0)
			for b.Loop() {
				f.Add(kb.at(2, i))
				f.Delete(kb.at(2, i))
				i++
			}
		})
		for _, hit := range []bool{true, false} {
			b.Run(fmt.Sprintf("op=Contains/n=1M/fpr=%g/hit=%v", p, hit), func(b *testing.B) {
				benchContains(b, f().Contains, n, hit)
			})
		}
	}
}

// BenchmarkScalable measures a filter grown 1000× from a capacity of 1000
// (10 layers): Add includes the lookup in every layer that precedes it.
func BenchmarkScalable(b *testing.B) {
	const n = 1_000_000
	for _, p := range rates {
		b.Run(fmt.Sprintf("op=Add/n=1M/fpr=%g", p), func(b *testing.B) {
			var f *bloom.Scalable
			var kb keyBuf
			b.ReportAllocs()
			i := uint64(0)
			for b.Loop() {
				if i%n == 0 {
					f, _ = bloom.NewScalable(1000, bloom.WithFalsePositiveRate(p)) // regrow: allocations are part of growth
				}
				f.Add(kb.at(0, i))
				i++
			}
		})
		for _, hit := range []bool{true, false} {
			b.Run(fmt.Sprintf("op=Contains/n=1M/fpr=%g/hit=%v", p, hit), func(b *testing.B) {
				f := cached(fmt.Sprint("scalable", p), func() *bloom.Scalable {
					f, _ := bloom.NewScalable(1000, bloom.WithFalsePositiveRate(p))
					fill(f, 0, n)
					return f
				})
				benchContains(b, f.Contains, n, hit)
			})
		}
	}
}
