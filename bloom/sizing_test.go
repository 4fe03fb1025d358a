package bloom

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testlong"
)

// poisson draws from Poisson(λ) by multiplying uniforms (λ ≤ 700).
func poisson(r *rand.Rand, lambda float64) int {
	limit, prod, n := math.Exp(-lambda), r.Float64(), 0
	for prod > limit {
		prod *= r.Float64()
		n++
	}
	return n
}

// meanSD returns the mean of xs and the standard deviation of that mean.
func meanSD(xs []float64) (float64, float64) {
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	n := float64(len(xs))
	m := s / n
	return m, math.Sqrt(max(s2/n-m*m, 0) / n)
}

// TestBlockedModelMonteCarlo checks the blocked model against a simulation
// of its assumptions: a Poisson(λ) number of keys each set k uniform bits
// of a 512-bit block, and an absent key is a false positive when its k
// uniform bits are all set, which given the block's X set bits happens with
// probability exactly (X/512)^k. The model must lie within 5 standard
// errors of the simulated mean, over 40,000 simulated blocks (200,000 with
// CUCKOO_LONG=1).
func TestBlockedModelMonteCarlo(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	trials := 40_000
	if testlong.Enabled() && !testing.Short() {
		trials = 200_000
	}
	for _, p := range []float64{0.1, 0.01, 1e-4} {
		s := blockedSizing(p)
		t.Run(fmt.Sprintf("k=%d/lambda=%.1f", s.k, s.lambda), func(t *testing.T) {
			rates := make([]float64, trials)
			for i := range rates {
				var block [blockWords]uint64
				for range poisson(r, s.lambda) * s.k {
					b := r.IntN(blockBits)
					block[b/64] |= 1 << (b % 64)
				}
				x := 0
				for _, w := range block {
					x += bits.OnesCount64(w)
				}
				rates[i] = math.Pow(float64(x)/blockBits, float64(s.k))
			}
			sim, se := meanSD(rates)
			model := newBlockedModel(s.k).fpr(s.lambda)
			t.Logf("model %.5g, simulated %.5g ± %.2g, textbook (1-e^(-kλ/B))^k %.5g",
				model, sim, se, math.Pow(-math.Expm1(-float64(s.k)*s.lambda/blockBits), float64(s.k)))
			if math.Abs(model-sim) > 5*se {
				t.Errorf("model %.5g differs from simulation %.5g by %.1f standard errors", model, sim, math.Abs(model-sim)/se)
			}
			if model > p {
				t.Errorf("sizing chose λ=%v where the model gives %v > p=%v", s.lambda, model, p)
			}
		})
	}
}

// TestClassicModelMonteCarlo checks classicFPR on small tables, where its
// independence assumption matters most: it must not be below the simulated
// rate (it is an upper bound) by more than 5 standard errors, nor above it
// by more than the stated slack: 25 % for a single word, 5 % beyond (so the
// sizing over-provisions tiny filters a little, and larger ones not at all).
// A quarter of the trials run unless CUCKOO_LONG=1.
func TestClassicModelMonteCarlo(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		m, n, k, trials int
		slack           float64
	}{{64, 6, 4, 100_000, 0.25}, {640, 66, 7, 40_000, 0.05}, {4096, 420, 7, 8_000, 0.05}} {
		t.Run(fmt.Sprintf("m=%d/n=%d/k=%d", tc.m, tc.n, tc.k), func(t *testing.T) {
			trials := tc.trials
			if !testlong.Enabled() || testing.Short() {
				trials /= 4
			}
			rates := make([]float64, trials)
			set := make([]bool, tc.m)
			for i := range rates {
				clear(set)
				x := 0
				for range tc.n * tc.k {
					if b := r.IntN(tc.m); !set[b] {
						set[b] = true
						x++
					}
				}
				rates[i] = math.Pow(float64(x)/float64(tc.m), float64(tc.k))
			}
			sim, se := meanSD(rates)
			model := classicFPR(tc.k, float64(tc.n), float64(tc.m))
			t.Logf("model %.5g, simulated %.5g ± %.2g", model, sim, se)
			if model < sim-5*se || model > (1+tc.slack)*sim+5*se {
				t.Errorf("model %.5g vs simulation %.5g ± %.2g", model, sim, se)
			}
		})
	}
}

// TestSizingIsTight: the sizes chosen meet the rate, and one word (classic)
// or 1 % more load (blocked) less would not.
func TestSizingIsTight(t *testing.T) {
	for _, p := range []float64{0.5, 0.1, 0.01, 1e-3, 1e-4, 1e-6, 1e-9, MinFalsePositiveRate} {
		for _, n := range []uint64{1, 100, 1_000_000} {
			k, w, ok := classicSizing(n, p, 64)
			if !ok {
				t.Fatalf("classicSizing(%d, %g) failed", n, p)
			}
			if probedFPR(k, float64(n), float64(w*64)) > p {
				t.Errorf("classic n=%d p=%g: %d words miss the rate", n, p, w)
			}
			if w > minWords && probedFPR(k, float64(n), float64((w-1)*64)) <= p {
				t.Errorf("classic n=%d p=%g: %d words would do", n, p, w-1)
			}
			textbook := float64(n) * -math.Log(p) / (math.Ln2 * math.Ln2)
			if float64(w*64) < textbook {
				t.Errorf("classic n=%d p=%g: %d bits, below the textbook optimum %.0f", n, p, w*64, textbook)
			}
		}
		s := blockedSizing(p)
		m := newBlockedModel(s.k)
		if m.fpr(s.lambda) > p || m.fpr(s.lambda*1.01) <= p {
			t.Errorf("blocked p=%g: λ=%v is not the largest load meeting the rate", p, s.lambda)
		}
		for _, k := range []int{s.k - 1, s.k + 1} {
			if k >= 1 && newBlockedModel(k).maxLoad(p) > s.lambda {
				t.Errorf("blocked p=%g: k=%d holds more keys per block than the chosen k=%d", p, k, s.k)
			}
		}
	}
}

// TestSizingTinyRates: the models stay usable far below the rates a user
// may ask for, as the layers of a Scalable filter tighten. The blocked
// layout meets any rate; the classic one, whose double hashing adds about
// 2/(k·m) (probeFloor), meets 1e-20 for a few keys and refuses what would
// take more than maxWords, and a Scalable's layer then is blocked.
func TestSizingTinyRates(t *testing.T) {
	for _, p := range []float64{1e-20, 1e-40} {
		s := blockedSizing(p)
		if !(s.lambda > 0) || newBlockedModel(s.k).fpr(s.lambda) > p {
			t.Errorf("blocked p=%g: %+v", p, s)
		}
	}
	k, w, ok := classicSizing(10, 1e-20, 64)
	if !ok || probedFPR(k, 10, float64(w*64)) > 1e-20 {
		t.Errorf("classic 10 keys at 1e-20: k=%d, %d words, %v", k, w, ok)
	}
	if _, _, ok := classicSizing(1000, 1e-40, 64); ok {
		t.Error("classic 1000 keys at 1e-40: sized, though 2/(k·m) alone needs more than maxWords")
	}
	s := &Scalable{capacity: 1000, fpr: 1e-3, growth: 2, tightening: 0.5}
	if l, _, _, ok := s.layerShape(120, 1000); !ok || l != layoutBlocked {
		t.Errorf("Scalable layer at %g: layout %v, %v; want blocked", s.layerRate(120), l, ok)
	}
}

// TestFillInverse: keysAtFill inverts fillAt, from a sparse table to one
// at about twice the load its sizing targets.
func TestFillInverse(t *testing.T) {
	const cells = 1000
	for _, l := range []layout{layoutBlocked, layoutClassic} {
		m := float64(cells * blockBitsOf(l))
		for _, k := range []int{1, 7, 20} {
			for _, frac := range []float64{0.01, 0.3, 1, 2} {
				n := frac * m * math.Ln2 / float64(k) // frac = 1: half the bits set
				x := fillAt(l, k, cells, n)
				if got := keysAtFill(l, k, cells, uint64(math.Round(x))); math.Abs(got-n) > 0.005*n+1 {
					t.Errorf("%s k=%d n=%v: fill %v inverts to %v", l, k, n, x, got)
				}
			}
		}
	}
}
