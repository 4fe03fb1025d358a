package cuckoo_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/dedupkit/cuckoo"
)

// The set-semantics inserts as `cuckoo dedup` drives them: a filter
// filled from empty with n lines, a block of them at a time
// (mode=batch: AddUniqueBatch, as dedup hands over its blocks) or one
// at a time (mode=single: AddUnique in a loop), at dedup's default rate
// (1e-4, whose wider tables have buckets of two windows) and at 12-bit
// fingerprints (one window). ns/key is what to compare:
//
//	go test -run '^$' -bench 'Scalable_AddUnique|Filter_AddUnique' -count 8

// uniqueBlock is how many keys a batch of these benchmarks hands over at
// once: dedup's blocks hold at most 4,096 lines.
const uniqueBlock = 4096

// dedupKeys returns n lines as dedup reads them: keys=seq is `seq 1 n`
// (all distinct), keys=repeats takes its lines from 0.4·n values, so
// that about 60 % of them repeat an earlier one, as in Go's source tree.
func dedupKeys(kind string, n uint64) [][]byte {
	return fixture(fmt.Sprint("dedupkeys/", kind, "/", n), func() [][]byte {
		keys := make([][]byte, n)
		for i := range keys {
			v := uint64(i) + 1
			if kind == "repeats" {
				v = uint64(i) * 2654435761 % (n * 4 / 10)
			}
			keys[i] = strconv.AppendUint(nil, v, 10)
		}
		return keys
	})
}

// uniqueShapes are the filters' options of these benchmarks.
var uniqueShapes = []struct {
	name string
	opts []cuckoo.Option
}{
	{"rate=1e-4", []cuckoo.Option{cuckoo.WithFalsePositiveRate(1e-4), cuckoo.WithSeed(1)}},
	{"f=12", []cuckoo.Option{cuckoo.WithFingerprintBits(12), cuckoo.WithSeed(1)}},
}

// addUniqueAll adds keys to f, a block at a time or one at a time, and
// returns how many were added.
func addUniqueAll(b *testing.B, f interface {
	AddUnique([]byte) (bool, error)
	AddUniqueBatch([][]byte, []bool) (int, error)
}, keys [][]byte, mode string, added []bool) int {
	n := 0
	for lo := 0; lo < len(keys); lo += uniqueBlock {
		block := keys[lo:min(lo+uniqueBlock, len(keys))]
		if mode == "single" {
			for i, k := range block {
				ok, err := f.AddUnique(k)
				if err != nil {
					b.Fatal(err)
				}
				added[i] = ok
			}
		} else if _, err := f.AddUniqueBatch(block, added); err != nil {
			b.Fatal(err)
		}
		for _, ok := range added[:len(block)] {
			if ok {
				n++
			}
		}
	}
	return n
}

// BenchmarkScalable_AddUnique fills a Scalable sized for the lines
// (start=sized, as dedup sizes it from a file) or grown from a thousandth
// of them (start=grown, as from a pipe's first lines).
func BenchmarkScalable_AddUnique(b *testing.B) {
	const n = 1_000_000
	for _, shape := range uniqueShapes {
		for _, keysKind := range []string{"seq", "repeats"} {
			for _, start := range []string{"sized", "grown"} {
				for _, mode := range []string{"single", "batch"} {
					name := fmt.Sprintf("n=%s/%s/keys=%s/start=%s/mode=%s", human(n), shape.name, keysKind, start, mode)
					b.Run(name, func(b *testing.B) {
						keys := dedupKeys(keysKind, n)
						capacity := uint64(n)
						if start == "grown" {
							capacity = n / 1000
						}
						added := make([]bool, uniqueBlock)
						b.ReportAllocs()
						for b.Loop() {
							b.StopTimer()
							s, err := cuckoo.NewScalable(capacity, shape.opts...)
							if err != nil {
								b.Fatal(err)
							}
							b.StartTimer()
							addUniqueAll(b, s, keys, mode, added)
						}
						b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
					})
				}
			}
		}
	}
}

// BenchmarkFilter_AddUnique fills a Filter sized for the lines.
func BenchmarkFilter_AddUnique(b *testing.B) {
	const n = 1_000_000
	for _, shape := range uniqueShapes {
		for _, keysKind := range []string{"seq", "repeats"} {
			for _, mode := range []string{"single", "batch"} {
				b.Run(fmt.Sprintf("n=%s/%s/keys=%s/mode=%s", human(n), shape.name, keysKind, mode), func(b *testing.B) {
					keys := dedupKeys(keysKind, n)
					added := make([]bool, uniqueBlock)
					b.ReportAllocs()
					for b.Loop() {
						b.StopTimer()
						f, err := cuckoo.New(n, shape.opts...)
						if err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
						addUniqueAll(b, f, keys, mode, added)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
				})
			}
		}
	}
}
