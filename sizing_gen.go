//go:build ignore

// sizing_gen prints the parameter table of the package documentation
// (doc.go, "Choosing parameters"): for each bucket size and fingerprint
// width, the load New sizes for, the bits per item and the expected
// false-positive rate at capacity. Regenerate with
//
//	go run sizing_gen.go
//
// and paste the output over the table in doc.go.
package main

import (
	"fmt"
	"strconv"

	"github.com/dedupkit/cuckoo"
)

func main() {
	fmt.Println("//\tb  f   load  bits/item  false positives at capacity")
	for _, b := range []int{2, 4, 8} {
		for _, f := range []int{4, 6, 8, 10, 12, 14, 16, 20, 24, 32} {
			p, err := cuckoo.NewPlan(10_000_000, cuckoo.WithBucketSize(b), cuckoo.WithFingerprintBits(f))
			if err != nil {
				panic(err)
			}
			fmt.Printf("//\t%d  %-2d  %.2f  %9.2f  %s\n", b, f, p.Load, p.BitsPerItem, rate(p.FalsePositiveRate))
		}
		if b != 8 {
			fmt.Println("//")
		}
	}
}

// rate prints p as a percentage with two significant digits and no
// exponent, and as "1 in N".
func rate(p float64) string {
	pct := strconv.FormatFloat(100*p, 'g', 2, 64)
	if v, err := strconv.ParseFloat(pct, 64); err == nil {
		pct = strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprintf("%-13s (1 in %s)", pct+" %", strconv.FormatFloat(1/p, 'f', 0, 64))
}
