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

// uniqueSet is what these benchmarks fill: Filter and Scalable.
type uniqueSet interface {
	cuckoo.Set
	cuckoo.Batcher
}

// benchAddUnique times filling a new set from newSet with the n keys
// of keysKind, a block at a time or one at a time (mode), and reports
// the time per key.
func benchAddUnique(b *testing.B, n uint64, keysKind, mode string, newSet func() (uniqueSet, error)) {
	keys := dedupKeys(keysKind, n)
	added := make([]bool, uniqueBlock)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		f, err := newSet()
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for lo := 0; lo < len(keys); lo += uniqueBlock {
			block := keys[lo:min(lo+uniqueBlock, len(keys))]
			if mode == "batch" {
				if _, err := f.AddUniqueBatch(block, added); err != nil {
					b.Fatal(err)
				}
				continue
			}
			for _, k := range block {
				if _, err := f.AddUnique(k); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(uint64(b.N)*n), "ns/key")
}

// BenchmarkScalable_AddUnique fills a Scalable sized for the lines
// (start=sized, as dedup sizes it from a file) or grown from a thousandth
// of them (start=grown, as from a pipe's first lines).
func BenchmarkScalable_AddUnique(b *testing.B) {
	const n = 1_000_000
	for _, shape := range uniqueShapes {
		for _, keysKind := range []string{"seq", "repeats"} {
			for _, start := range []string{"sized", "grown"} {
				capacity := uint64(n)
				if start == "grown" {
					capacity = n / 1000
				}
				for _, mode := range []string{"single", "batch"} {
					name := fmt.Sprintf("n=%s/%s/keys=%s/start=%s/mode=%s", human(n), shape.name, keysKind, start, mode)
					b.Run(name, func(b *testing.B) {
						benchAddUnique(b, n, keysKind, mode, func() (uniqueSet, error) {
							return cuckoo.NewScalable(capacity, shape.opts...)
						})
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
					benchAddUnique(b, n, keysKind, mode, func() (uniqueSet, error) {
						return cuckoo.New(n, shape.opts...)
					})
				})
			}
		}
	}
}
