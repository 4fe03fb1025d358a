package main

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
)

// TestDedupPipeLarge dedups, from a pipe, an input larger than the
// read-ahead (8 MiB), so the filter is sized from its start and then
// grows: no line is written twice (no false negative), the lines written
// are the first occurrences in order less false positives, and those are
// within what the default rate (1e-4) promises for the distinct lines,
// with 5σ of margin. The seed is fixed.
func TestDedupPipeLarge(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	const distinct, rate = 1_200_000, 1e-4
	r := testseed.New(testseed.Fixed(t, 5))
	var in bytes.Buffer
	var want []string
	for i := range distinct {
		l := fmt.Sprintf("%08x\n", uint32(i)*2654435761)
		in.WriteString(l)
		want = append(want, l)
		if r.IntN(4) == 0 {
			in.WriteString(want[r.IntN(len(want))])
		}
	}
	if in.Len() <= 8<<20 {
		t.Fatalf("input of %d bytes: not past the read-ahead", in.Len())
	}
	e := newEnv(t)
	res := runIn(t, e.dir, in.Bytes(), "dedup", "--seed", "9")
	res.want(t, exitOK, "dedup")
	got := strings.SplitAfter(res.stdout, "\n")
	got = got[:len(got)-1]
	dropped, j := 0, 0
	for _, l := range got {
		for j < len(want) && want[j] != l {
			j++
			dropped++
		}
		if j == len(want) {
			t.Fatalf("line %q written out of order or twice", l)
		}
		j++
	}
	dropped += len(want) - j
	limit := distinct*rate + 5*math.Sqrt(distinct*rate)
	t.Logf("%d new lines dropped, at most %.0f allowed", dropped, limit)
	if float64(dropped) > limit {
		t.Errorf("%d new lines dropped, over the rate's bound (%.0f allowed)", dropped, limit)
	}
}
