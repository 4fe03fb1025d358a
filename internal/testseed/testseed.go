// Package testseed gives the module's randomized tests their seed: drawn
// from the clock, logged, and replayable with the test binary's -seed flag
// (go test -run TestX -seed N). Tests of a probabilistic answer (a rate
// within a tolerance) take a fixed seed instead ([Fixed]), which -seed
// also replaces. Only tests import it; importing it registers the -seed
// flag.
package testseed

import (
	"flag"
	"math/rand/v2"
	"testing"
	"time"
)

var seedFlag = flag.Uint64("seed", 0, "seed of the randomized tests (0: from the clock)")

// Given reports whether -seed was set, and to what.
func Given() (uint64, bool) { return *seedFlag, *seedFlag != 0 }

// Seed returns the -seed flag, or else a seed from the clock, and logs it
// so that a failure can be replayed.
func Seed(t testing.TB) uint64 {
	t.Helper()
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("random seed %d (replay with -seed %d)", s, s)
	return s
}

// Rand returns a generator seeded with [Seed].
func Rand(t testing.TB) *rand.Rand {
	t.Helper()
	return New(Seed(t))
}

// New returns the generator of seed s, the one Rand returns for it.
func New(s uint64) *rand.Rand { return rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15)) }

// Fixed returns the -seed flag when it is given, or else seed, and logs
// it. Tests whose assertion holds only with high probability (a measured
// rate within a tolerance, a filter that fits its capacity) use it, so
// that their outcome is the same on every run, checked with seed, while
// -seed still explores others.
func Fixed(t testing.TB, seed uint64) uint64 {
	t.Helper()
	if s, ok := Given(); ok {
		t.Logf("seed %d from -seed", s)
		return s
	}
	t.Logf("fixed seed %d (another with -seed N)", seed)
	return seed
}
