package addr

import (
	"math"
	"math/rand/v2"
	"testing"
)

// spreadFloat is Spread computed in floating point from its definition:
// α is the fraction of 0x9e3779b1·m/2^33.
func spreadFloat(m uint64) (bool, float64) {
	alpha := math.Mod(float64(0x9e3779b1)*float64(m)/math.Exp2(33), 1)
	worst := 1.0
	for q := 1; q <= 16; q++ {
		x := float64(q) * alpha
		worst = min(worst, float64(q)*math.Abs(x-math.Round(x)))
	}
	return worst >= 0.1, worst
}

func TestSpread(t *testing.T) {
	// Bucket counts whose tables were measured to refuse keys early, and
	// the fraction α of each (see Spread) is within 0.016 of 0 or 1.
	for _, m := range []uint64{1458402, 2144196, 127006, 458910, 3166046} {
		if Spread(m) {
			t.Errorf("Spread(%d) = true", m)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	agree := 0
	for range 100000 {
		m := r.Uint64N(1<<32)&^1 + 2
		want, worst := spreadFloat(m)
		if math.Abs(worst-0.1) < 1e-4 {
			continue // too close to the bound for the rounded product to decide
		}
		if got := Spread(m); got != want {
			t.Fatalf("Spread(%d) = %v, want %v (q·‖qα‖ down to %.6f)", m, got, want, worst)
		}
		if want {
			agree++
		}
	}
	// About half of all counts spread (an estimate, not a bound: the
	// share of α in [0,1) that no fraction of denominator ≤ 16 is near).
	if agree < 45000 || agree > 62000 {
		t.Errorf("%d of 100000 counts spread, want about half", agree)
	}
}

// TestAltInvolution checks Alt's promise on the counts Spread picks and
// on others: Alt(Alt(i)) = i and Alt(i) ≠ i, for every fingerprint width.
func TestAltInvolution(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		m := r.Uint64N(1<<32)&^1 + 2
		i := r.Uint64N(m)
		fp := Fingerprint(r.Uint64(), 1<<(4+r.IntN(29))-1)
		j := Alt(i, fp, m)
		if j >= m || j == i || Alt(j, fp, m) != i {
			t.Fatalf("m=%d i=%d fp=%d: Alt %d, back %d", m, i, fp, j, Alt(j, fp, m))
		}
	}
}
