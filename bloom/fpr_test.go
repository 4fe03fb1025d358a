package bloom_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/dedupkit/cuckoo/bloom"
	"github.com/dedupkit/cuckoo/internal/testlong"
)

// probesFor returns how many absent keys to probe at target rate p: at least
// 2000/p, so that about 2000 false positives are expected and their count
// varies by 2.2 %.
func probesFor(p float64) uint64 { return uint64(max(1e6, math.Ceil(2000/p))) }

// TestFalsePositiveRate checks the promise of every constructor: after
// capacity distinct keys, the rate measured over millions of keys never
// added is at most 1.15× the target (the bound). Besides:
//   - no added key is missing;
//   - the filter is not over-provisioned: the measured rate is at least
//     0.7× the target (Scalable excepted: its first layer is built for
//     (1−r)·p by design);
//   - FalsePositiveRate predicts the measurement within 5σ of the probes
//     plus 3 % (its model averages over the blocks' loads; the filter's own
//     rate varies around that, see below), and is at most 1.03× the target
//     (the fill of a filter with exactly capacity keys varies a little
//     around its expectation).
//
// Two sources of noise separate the measurement from the target: the
// probes (2.2 % at 2000/p of them) and the filter itself, whose realized
// rate varies around its expectation; for the blocked layout at 0.01 %,
// where a block's contribution varies most, that is about 2.5/√blocks:
// 1.2 % at 10^6 keys, 2.7 % at 2·10^5. The bound 1.15× thus sits 6σ (4.3σ
// at 2·10^5, the capacity unless CUCKOO_LONG=1, and always under -short
// and -race; they never shrink the probes or the bounds) above a filter
// that exactly meets its target.
// The 0.01 % target, whose 2·10^7 probes are 85 % of the test's work, runs
// in the long checks only (CUCKOO_LONG=1, and not under -race, where they
// take minutes).
//
// The seeds are fixed (statRand): with random ones the blocked layout at
// 0.01 % under -short broke a bound in about 1 run in 10^5. Measured over
// 30 seeds, (measured − FalsePositiveRate)/FalsePositiveRate has a standard
// deviation of 3.1 %, which puts the 5σ-plus-3 % tolerance (14.2 %) only
// 4.5σ away (two-sided: 7·10^-6), and 1.15× the target 5.0σ above the mean
// measured rate (3·10^-7).
func TestFalsePositiveRate(t *testing.T) {
	r := statRand(t)
	n := uint64(200_000)
	if full() {
		n = 1_000_000
	}
	for _, kind := range kinds {
		for _, p := range []float64{0.1, 0.01, 0.001, 0.0001} {
			seed := r.Uint64()
			t.Run(fmt.Sprintf("%s/fpr=%g", kind.name, p), func(t *testing.T) {
				if p < 0.001 && (testlong.RaceEnabled || !testlong.Enabled()) {
					t.Skip("the 0.01 % case: 2·10^7 probes, a long check (" + testlong.Env + "=1) that does not run under -race")
				}
				t.Parallel()
				f, err := kind.new(n, p, bloom.WithSeed(seed))
				if err != nil {
					t.Fatal(err)
				}
				fill(f, 0, n)
				requirePresent(t, f, 0, n)
				probes := probesFor(p)
				got := measureFPR(f, 1, probes)
				pred := f.FalsePositiveRate()
				t.Logf("seed %d: %.2f bits/key, measured %.4g (%.3f× target) over %d probes, predicted %.4g",
					seed, float64(f.SizeInBytes()*8)/float64(n), got, got/p, probes, pred)
				if got > 1.15*p {
					t.Errorf("measured rate %.4g exceeds 1.15 × target %g", got, p)
				}
				if kind.name != "NewScalable" && got < 0.7*p {
					t.Errorf("measured rate %.4g is under 0.7 × target %g: over-provisioned", got, p)
				}
				if d := math.Abs(got - pred); d > 5*sigma(pred, probes)+0.03*pred {
					t.Errorf("FalsePositiveRate %.4g, measured %.4g: off by %.1fσ", pred, got, d/sigma(pred, probes))
				}
				if pred > 1.03*p {
					t.Errorf("FalsePositiveRate %.4g at capacity exceeds target %g", pred, p)
				}
			})
		}
	}
}

// TestFalsePositiveRateSmall checks the bound at small capacities, where
// rounding to whole blocks or words and the variance of few keys matter: the
// mean rate over many independent filters (a seed each, from statRand) is
// at most 1.15× the target, probed with at least 2000/p keys in all.
func TestFalsePositiveRateSmall(t *testing.T) {
	testlong.SkipUnderRace(t)
	r := statRand(t)
	const p = 0.01
	for _, kind := range kinds {
		for _, c := range []uint64{1, 2, 7, 64, 100, 1000} {
			t.Run(fmt.Sprintf("%s/capacity=%d", kind.name, c), func(t *testing.T) {
				const total = 400_000 // probes
				trials := max(20, 4000/c)
				per := uint64(total) / trials
				var sum float64
				for range trials {
					f, err := kind.new(c, p, bloom.WithSeed(r.Uint64()))
					if err != nil {
						t.Fatal(err)
					}
					fill(f, 0, c)
					requirePresent(t, f, 0, c)
					sum += measureFPR(f, 1, per)
				}
				got := sum / float64(trials)
				t.Logf("mean measured rate %.4g over %d filters", got, trials)
				if got > 1.15*p {
					t.Errorf("mean rate %.4g exceeds 1.15 × target %g", got, p)
				}
			})
		}
	}
}

// TestFalsePositiveRateSmallTables checks the bound where double hashing
// costs most: a table of a few hundred to a few thousand cells at a low
// rate. A key whose second hash is near a fraction r/q of the table probes
// only about q cells, which adds about 2.2/(k·m) to the rate whatever k is;
// sized without it, the classic and counting layouts measured up to 11×
// the target here (20× at 1e-5). Every kind is probed with 2·10^6 keys never
// added, over 100 filters (a seed each), about 200 false positives at the
// target: 1.5× the target is 7σ above it.
func TestFalsePositiveRateSmallTables(t *testing.T) {
	testlong.SkipUnderRace(t)
	r := statRand(t)
	const p = 1e-4
	for _, kind := range kinds {
		for _, c := range []uint64{5, 30, 300} {
			t.Run(fmt.Sprintf("%s/capacity=%d", kind.name, c), func(t *testing.T) {
				const trials, per = 100, 20_000
				var sum float64
				for range trials {
					f, err := kind.new(c, p, bloom.WithSeed(r.Uint64()))
					if err != nil {
						t.Fatal(err)
					}
					fill(f, 0, c)
					requirePresent(t, f, 0, c)
					sum += measureFPR(f, 1, per)
				}
				got := sum / trials
				t.Logf("mean measured rate %.4g (%.2f× the target) over %d filters", got, got/p, trials)
				if got > 1.5*p {
					t.Errorf("mean rate %.4g exceeds 1.5 × target %g", got, p)
				}
			})
		}
	}
}
