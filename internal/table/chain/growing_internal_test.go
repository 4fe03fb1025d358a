package chain

import (
	"math/rand/v2"
	"testing"
)

// TestGrowingAddresses checks, at every split point of a few table
// sizes and reserves, that bucketOf maps each final
// bucket into the table, that finalOf inverts it, that a final bucket's
// image only moves when its own bucket is split, and that the tags are as
// wide as the reserve bits the buckets do not yet tell.
func TestGrowingAddresses(t *testing.T) {
	for _, tc := range []struct {
		final, f, r uint64
	}{
		{8, 12, 2}, {24, 12, 2}, {40, 31, 2}, {1000, 16, 2},
		{32, 12, 4}, {96, 12, 4}, {160, 29, 4}, {40, 31, 4}, {1024, 16, 4},
	} {
		r := min(tc.r, 32-tc.f) // reserve bits, as the schedule gives them
		g := NewGrowing(tc.final, 4, tc.f, r, false)
		tab := &g.T
		if g.reserve != r || tab.FPBits != tc.f+r {
			t.Fatalf("m=%d f=%d: reserve %d, tags of %d bits", tc.final, tc.f, g.reserve, tab.FPBits)
		}
		prev := make([]uint64, tc.final)
		var mlBefore uint64
		for step := 0; ; step++ {
			for i := uint64(0); i < tc.final; i++ {
				q := i / g.base
				if mq := mulHi(i, g.recip); mq != q {
					t.Fatalf("m=%d: %d/m0 = %d by the reciprocal, want %d", tc.final, i, mq, q)
				}
				j := g.bucketOf(i, q)
				if j >= tab.NumBuckets {
					t.Fatalf("m=%d step %d: final %d in bucket %d of %d", tc.final, step, i, j, tab.NumBuckets)
				}
				if back := g.finalOf(j, q>>g.depth); back != i {
					t.Fatalf("m=%d step %d: finalOf(bucketOf(%d)) = %d", tc.final, step, i, back)
				}
				if step > 0 && j != prev[i] && j != prev[i]+mlBefore {
					t.Fatalf("m=%d step %d: final %d moved from %d to %d, not to its image", tc.final, step, i, prev[i], j)
				}
				prev[i] = j
			}
			mlBefore = g.base << g.depth
			if g.splitPair() {
				break
			}
			want := tc.f + r - g.depth
			if tab.FPBits != want || g.TagBits() != want {
				t.Fatalf("m=%d f=%d level %d: tags of %d bits (geometry %d), want %d", tc.final, tc.f, g.depth, tab.FPBits, g.TagBits(), want)
			}
			if tab.NumBuckets%2 != 0 || g.split%2 != 0 {
				t.Fatalf("m=%d: %d buckets, split %d: odd", tc.final, tab.NumBuckets, g.split)
			}
		}
		if tab.NumBuckets != tc.final || tab.FPBits != tc.f {
			t.Fatalf("m=%d: fully grown at %d buckets of %d bits", tc.final, tab.NumBuckets, tab.FPBits)
		}
	}
	// The reciprocal is exact for every bucket index below 2^32.
	r := rand.New(rand.NewPCG(1, 2))
	for k := 0; k < 100000; k++ {
		m0 := 2 + r.Uint64N(1<<31)
		i := r.Uint64N(1 << 32)
		if k%3 == 0 {
			i = (i/m0)*m0 + m0 - 1 // just below a multiple
			if i >= 1<<32 {
				continue
			}
		}
		if got := mulHi(i, ^uint64(0)/m0+1); got != i/m0 {
			t.Fatalf("%d/%d: %d, want %d", i, m0, got, i/m0)
		}
	}
}

// TestMostWordsBoundsEveryAllocation grows tables of a few shapes from
// their first size to their full one and checks that the words they hold
// in one slice never pass MostWords, which the root package checks
// against the platform's largest slice before it starts a table, and
// that MostWords is reached (it is the largest slice, not a loose bound
// that would refuse tables a platform can make).
func TestMostWordsBoundsEveryAllocation(t *testing.T) {
	for _, tc := range []struct {
		final, slots, f, r uint64
		semi               bool
	}{
		{1024, 4, 16, 4, false}, {4096, 4, 20, 4, false}, {4096, 2, 7, 4, false},
		{2048, 8, 30, 2, false}, {1 << 14, 4, 13, 4, true}, {1 << 14, 1, 12, 4, false},
	} {
		most := MostWords(tc.final, tc.slots, tc.f, tc.r, tc.semi)
		g := NewGrowing(tc.final, tc.slots, tc.f, tc.r, tc.semi)
		held := uint64(cap(g.T.Words))
		for !g.splitPair() {
			held = max(held, uint64(cap(g.T.Words)))
		}
		held = max(held, uint64(cap(g.T.Words)))
		if held > most {
			t.Errorf("m=%d b=%d f=%d r=%d semi=%v: a slice of %d words, more than MostWords %d", tc.final, tc.slots, tc.f, tc.r, tc.semi, held, most)
		}
		if held < most*9/10 {
			t.Errorf("m=%d b=%d f=%d r=%d semi=%v: at most %d words held, MostWords %d is loose", tc.final, tc.slots, tc.f, tc.r, tc.semi, held, most)
		}
	}
}
