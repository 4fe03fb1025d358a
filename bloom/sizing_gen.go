//go:build ignore

// sizing_gen prints the table of bits per key that doc.go shows, computed
// from the constructors themselves. Run it from this directory with
//
//	go run sizing_gen.go
//
// and paste the output over the table in doc.go; TestDocSizingTable fails
// until the two agree.
package main

import (
	"encoding/binary"
	"fmt"
	"log"

	"github.com/dedupkit/cuckoo/bloom"
)

// The capacity the table is computed for: large enough that rounding to
// whole blocks or words does not show.
const capacity = 1_000_000

func main() {
	fmt.Println("//	rate      New          NewClassic   NewCounting  NewScalable")
	fmt.Println("//	          bits/key  k  bits/key  k  bits/key     1×     1000×")
	for _, p := range []float64{0.1, 0.03, 0.01, 1e-3, 1e-4, 1e-5, 1e-6} {
		b, err := bloom.New(capacity, bloom.WithFalsePositiveRate(p), bloom.WithSeed(1))
		check(err)
		c, err := bloom.NewClassic(capacity, bloom.WithFalsePositiveRate(p), bloom.WithSeed(1))
		check(err)
		n, err := bloom.NewCounting(capacity, bloom.WithFalsePositiveRate(p), bloom.WithSeed(1))
		check(err)
		s1, err := bloom.NewScalable(capacity, bloom.WithFalsePositiveRate(p), bloom.WithSeed(1))
		check(err)
		fmt.Printf("//	%-8s  %6.2f  %2d  %6.2f  %2d  %6.2f   %6.2f  %6.2f\n", rate(p),
			perKey(b.SizeInBytes(), capacity), b.HashCount(),
			perKey(c.SizeInBytes(), capacity), c.HashCount(),
			perKey(n.SizeInBytes(), capacity),
			perKey(s1.SizeInBytes(), capacity), grown(p))
	}
}

// grown returns the bits per key of a Scalable filter grown 1000× from a
// capacity of 1000: holding 10^6 keys, in ten layers.
func grown(p float64) float64 {
	s, err := bloom.NewScalable(1000, bloom.WithFalsePositiveRate(p), bloom.WithSeed(1))
	check(err)
	var key [8]byte
	for i := uint64(0); s.Len() < 1000*1000; i++ {
		binary.LittleEndian.PutUint64(key[:], i)
		s.Add(key[:])
	}
	return perKey(s.SizeInBytes(), s.Len())
}

func perKey(bytes, keys uint64) float64 { return float64(bytes*8) / float64(keys) }

func rate(p float64) string { return fmt.Sprintf("%.4g %%", p*100) }

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
