package main

import (
	"fmt"
	"testing"
)

// TestDedupLowRateOnASmallInput: --fpr 1e-7, the rate docs/cli.md gives
// for output equal to awk's, works on any input: an empty file, a file
// of a line or a few, and the same on standard input. The growing filter
// sized for so few lines is one its package refuses at that rate (its
// generations would need fingerprints wider than 32 bits before it held
// 2^36 keys), so dedup starts it larger.
func TestDedupLowRateOnASmallInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"a\n", "a\n"},
		{"a\nb\na\n", "a\nb\n"},
		{"a\nb\nc\nb", "a\nb\nc\n"},
	} {
		for _, rate := range []string{"1e-7", "1.2e-7"} {
			e.write("in.txt", c.in)
			for _, from := range []string{"file", "stdin"} {
				t.Run(fmt.Sprintf("in=%q/fpr=%s/from=%s", c.in, rate, from), func(t *testing.T) {
					args := []string{"dedup", "--fpr", rate, "--seed", "1"}
					stdin := c.in
					if from == "file" {
						args, stdin = append(args, "in.txt"), ""
					}
					r := e.run(stdin, args...)
					r.want(t, exitOK, "dedup")
					if r.stdout != c.want {
						t.Fatalf("output %q, want %q", r.stdout, c.want)
					}
				})
			}
		}
	}
}
