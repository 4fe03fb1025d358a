package main

import (
	"fmt"
	"testing"
)

// TestBuildGrowLowRateOnASmallInput: build --grow --fpr 1e-7 works on a
// file of no line or a few, as dedup does (TestDedupLowRateOnASmallInput):
// the growing filter sized for so few lines is one its package refuses at
// that rate, so build starts it larger, and the filter holds the lines.
func TestBuildGrowLowRateOnASmallInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, in := range []string{"", "a\n", "a\nb\n", "a\nb\nc\nd\n"} {
		for _, rate := range []string{"1e-7", "1.2e-7"} {
			t.Run(fmt.Sprintf("in=%q/fpr=%s", in, rate), func(t *testing.T) {
				e.write("in.txt", in)
				r := e.run("", "build", "--grow", "--fpr", rate, "-o", "f.ckoo", "in.txt")
				r.want(t, exitOK, "build")
				if in == "" {
					return
				}
				q := e.run("", "query", "f.ckoo", "--absent", "--count", "in.txt")
				q.want(t, exitOK, "query")
				if q.stdout != "0\n" {
					t.Fatalf("query --absent --count: %q, want every line present", q.stdout)
				}
			})
		}
	}
}
