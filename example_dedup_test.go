package cuckoo_test

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/dedupkit/cuckoo"
)

// This example removes repeated lines from a stream, keeping the first
// occurrence of each, with a filter instead of a map: memory stays at a few
// bytes per distinct line however long the lines are. A line is dropped
// wrongly only with the false-positive probability (here about 1 in
// 300 million with 32-bit fingerprints at this tiny load).
func Example_dedup() {
	input := strings.NewReader("apple\nbanana\napple\ncherry\nbanana\ndate\n")
	seen, err := cuckoo.New(1_000_000, cuckoo.WithFingerprintBits(32), cuckoo.WithSeed(1))
	if err != nil {
		panic(err)
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	sc := bufio.NewScanner(input)
	for sc.Scan() {
		added, err := seen.AddUnique(sc.Bytes())
		if err != nil {
			panic(err) // ErrFull: the filter was sized too small
		}
		if added {
			fmt.Fprintln(out, sc.Text())
		}
	}
	// Output:
	// apple
	// banana
	// cherry
	// date
}
