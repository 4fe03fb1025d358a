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
	fmt.Println("//\tb     f   load  bits/item  false positives at capacity")
	for _, layout := range []string{"2", "4", "8", "4ss"} {
		b := int(layout[0] - '0')
		semi := layout == "4ss"
		widths := []int{4, 6, 8, 10, 12, 14, 16, 20, 24, 32}
		if semi {
			widths = []int{9, 13, 17, 21}
		}
		for _, f := range widths {
			opts := []cuckoo.Option{cuckoo.WithBucketSize(b), cuckoo.WithFingerprintBits(f)}
			if semi {
				opts = append(opts, cuckoo.WithSemiSorting())
			}
			p, err := cuckoo.NewPlan(10_000_000, opts...)
			if err != nil {
				panic(err)
			}
			fmt.Printf("//\t%-4s  %-2d  %.2f  %9.2f  %s\n", layout, f, p.Load, p.BitsPerItem, rate(p.FalsePositiveRate))
		}
		if layout != "4ss" {
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
