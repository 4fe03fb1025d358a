package cuckoo

import (
	"math/rand/v2"
	"testing"

	"github.com/dedupkit/cuckoo/internal/table"
)

// TestKickSlot: the random walk's slot choice is, for a power of two, the
// one filters have always made (so that their tables stay bit for bit
// what they were), and for any size a slot of the bucket, each about as
// often as the others.
func TestKickSlot(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, b := range []uint64{1, 2, 4, 8, 16, 32, 64, 128} {
		for range 1000 {
			x := r.Uint64()
			if got, want := table.KickSlot(x, b), x>>32&(b-1); got != want {
				t.Fatalf("b=%d: kickSlot(%#x) = %d, want %d", b, x, got, want)
			}
		}
	}
	for b := uint64(1); b <= MaxBucketSize; b++ {
		counts := make([]int, b)
		const draws = 200
		for range draws * b {
			s := table.KickSlot(r.Uint64(), b)
			if s >= b {
				t.Fatalf("b=%d: slot %d", b, s)
			}
			counts[s]++
		}
		for s, n := range counts {
			// Binomial(200b, 1/b): mean 200, σ ≈ 14; 8σ off is a bias.
			if n < draws-112 || n > draws+112 {
				t.Fatalf("b=%d: slot %d drawn %d times in %d", b, s, n, draws*b)
			}
		}
	}
}
