// Command firstfail fills a filter of New(capacity) with distinct random
// keys until the first ErrFull (or -limit times the capacity: shapes whose
// fingerprints take fewer values than two buckets have slots never fill)
// and prints how far it got: the measurement behind targetLoad's table and
// reliableCapacity (sizing.go). (The rows of 2-slot buckets of 4- and
// 5-bit fingerprints past 2^27 and 2^28 keys were measured before New
// refused those shapes there.)
//
//	cd bench && go run ./firstfail -n 4257279 -b 4 -f 4 -seed 28
//
// prints
//
//	b=4 f=4 semi=false n=4257279 buckets=1330470 seed=28: first failure after 4869797 keys, load 0.9151, 1.1439 of capacity
//
// where load is the keys added over the slots (copies past two of a bucket
// pair's fingerprint are counted beside the table, so with 4- and 5-bit
// fingerprints it can pass 1), and the last figure is the keys added over
// the capacity: below 1, New's promise was broken. With -seeds 1000 it
// fills 1,000 filters of consecutive seeds and prints the one that got
// least far (the measurement behind smallTableMargin). Keys are 64-bit
// values from PCG(seed, 7) added with AddUint64 (-seq: 0, 1, 2, …), so a
// run depends only on its flags.
package main

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/dedupkit/cuckoo"
)

func main() {
	n := flag.Float64("n", 1e6, "capacity New is given")
	b := flag.Int("b", 4, "slots per bucket")
	f := flag.Int("f", 8, "fingerprint bits")
	semi := flag.Bool("semi", false, "semi-sorted buckets")
	seed := flag.Uint64("seed", 1, "filter seed and key stream")
	seeds := flag.Int("seeds", 1, "fill `k` filters, of seeds seed to seed+k-1, and print the least of them (the small-table margin)")
	seq := flag.Bool("seq", false, "add the keys 0, 1, 2, … instead of random ones")
	limit := flag.Float64("limit", 0, "stop without a failure after `x` times the capacity in keys (0: never)")
	flag.Parse()
	var least fill
	for s := *seed; s < *seed+uint64(max(*seeds, 1)); s++ {
		r := fillOne(uint64(*n), *b, *f, *semi, s, *seq, *limit)
		if *seeds == 1 {
			r.print()
			return
		}
		if s == *seed || r.capacityShare() < least.capacityShare() {
			least = r
		}
	}
	fmt.Printf("least of %d seeds: ", *seeds)
	least.print()
}

// fill is how far one filter got.
type fill struct {
	b, f         int
	semi, failed bool
	capacity, m  uint64
	seed, added  uint64
}

func (r fill) capacityShare() float64 { return float64(r.added) / float64(r.capacity) }

func (r fill) print() {
	slots := float64(r.m) * float64(r.b)
	what := "first failure"
	if !r.failed {
		what = "no failure"
	}
	fmt.Printf("b=%d f=%d semi=%v n=%d buckets=%d seed=%d: %s after %d keys, load %.4f, %.4f of capacity\n",
		r.b, r.f, r.semi, r.capacity, r.m, r.seed, what, r.added, float64(r.added)/slots, r.capacityShare())
}

// fillOne fills a filter of New(n) of the shape with keys of seed until
// the first ErrFull, or limit times its capacity.
func fillOne(n uint64, b, f int, semi bool, seed uint64, seq bool, limit float64) fill {
	opts := []cuckoo.Option{cuckoo.WithBucketSize(b), cuckoo.WithFingerprintBits(f), cuckoo.WithSeed(seed)}
	if semi {
		opts = append(opts, cuckoo.WithSemiSorting())
	}
	filter, err := cuckoo.New(n, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "firstfail:", err)
		os.Exit(2)
	}
	r := rand.New(rand.NewPCG(seed, 7))
	out := fill{b: b, f: f, semi: semi, capacity: filter.Capacity(), m: filter.NumBuckets(), seed: seed}
	most := uint64(limit * float64(filter.Capacity()))
	for most == 0 || out.added < most {
		k := r.Uint64()
		if seq {
			k = out.added
		}
		if err := filter.AddUint64(k); err != nil {
			if !errors.Is(err, cuckoo.ErrFull) {
				fmt.Fprintln(os.Stderr, "firstfail:", err)
				os.Exit(1)
			}
			out.failed = true
			break
		}
		out.added++
	}
	return out
}
