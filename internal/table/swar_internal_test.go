package table

import (
	"math/rand/v2"
	"testing"
)

// TestWindowTwins: LoadWindow and AtomicLoadWindow read the same 64 bits at
// every offset, including word boundaries.
func TestWindowTwins(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := make([]uint64, 9)
	for i := range words[:8] {
		words[i] = r.Uint64()
	}
	for p := uint64(0); p < 8*64; p++ {
		if a, b := LoadWindow(words, p), AtomicLoadWindow(words, p); a != b {
			t.Fatalf("bit %d: loadWindow %#x, atomicLoadWindow %#x", p, a, b)
		}
		// The window starts at bit p.
		want := words[p/64] >> (p % 64)
		if p%64 != 0 {
			want |= words[p/64+1] << (64 - p%64)
		}
		if got := LoadWindow(words, p); got != want {
			t.Fatalf("bit %d: window %#x, want %#x", p, got, want)
		}
	}
}

// TestZeroLanes: ZeroLanes flags exactly the zero lanes, for every lane
// width of the tables.
func TestZeroLanes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for f := uint64(4); f <= 32; f++ {
		lanes := 64 / f
		_, high, rest := LaneMasks(lanes, f)
		for range 2000 {
			var x, want uint64
			for j := range lanes {
				v := r.Uint64() & (1<<f - 1)
				if r.IntN(3) == 0 {
					v = 0
				}
				x |= v << (j * f)
				if v == 0 {
					want |= 1 << (j*f + f - 1)
				}
			}
			if got := ZeroLanes(x, rest, high); got != want {
				t.Fatalf("f=%d x=%#x: %#x, want %#x", f, x, got, want)
			}
		}
	}
}
