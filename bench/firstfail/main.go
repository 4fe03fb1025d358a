// Command firstfail fills a filter of New(capacity) with distinct random
// keys until the first ErrFull and prints how far it got: the measurement
// behind targetLoad's table and reliableCapacity (sizing.go). (The rows of
// 2-slot buckets of 4- and 5-bit fingerprints past 2^27 and 2^28 keys were
// measured before New refused those shapes there.)
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
// the capacity: below 1, New's promise was broken. Keys are 64-bit values
// from PCG(seed, 7) added with AddUint64 (-seq: 0, 1, 2, …), so a run
// depends only on its flags.
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
	seq := flag.Bool("seq", false, "add the keys 0, 1, 2, … instead of random ones")
	flag.Parse()
	opts := []cuckoo.Option{cuckoo.WithBucketSize(*b), cuckoo.WithFingerprintBits(*f), cuckoo.WithSeed(*seed)}
	if *semi {
		opts = append(opts, cuckoo.WithSemiSorting())
	}
	filter, err := cuckoo.New(uint64(*n), opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "firstfail:", err)
		os.Exit(2)
	}
	r := rand.New(rand.NewPCG(*seed, 7))
	var added uint64
	for {
		k := r.Uint64()
		if *seq {
			k = added
		}
		if err := filter.AddUint64(k); err != nil {
			if !errors.Is(err, cuckoo.ErrFull) {
				fmt.Fprintln(os.Stderr, "firstfail:", err)
				os.Exit(1)
			}
			break
		}
		added++
	}
	slots := float64(filter.NumBuckets()) * float64(*b)
	fmt.Printf("b=%d f=%d semi=%v n=%d buckets=%d seed=%d: first failure after %d keys, load %.4f, %.4f of capacity\n",
		*b, *f, *semi, filter.Capacity(), filter.NumBuckets(), *seed, added, float64(added)/slots, float64(added)/float64(filter.Capacity()))
}
