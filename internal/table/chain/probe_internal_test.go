package chain

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dedupkit/cuckoo/internal/table"
)

// TestProbeMatchesTable: the chain loop's reads and compares give the
// table's answers for every bucket shape, the last bucket of the table
// included (whose loads reach the padding word), with random values in
// the slots: Holds against HoldsEither, Empties against copies of 0,
// Values against the slots, and Has, First and a batch's Pass against the
// tables' own lookups.
func TestProbeMatchesTable(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 1))
	for _, slots := range []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16} {
		for f := uint64(4); f <= 32; f++ {
			for _, semi := range []bool{false, true} {
				if semi && slots != 4 {
					continue
				}
				t.Run(fmt.Sprintf("b=%d/f=%d/semi=%v", slots, f, semi), func(t *testing.T) {
					for range 4 {
						checkProbe(t, r, randomTable(r, slots, f, semi))
					}
				})
			}
		}
	}
}

// randomTable returns a small table of the shape with random values in
// about three quarters of its slots.
func randomTable(r *rand.Rand, slots, f uint64, semi bool) *table.Table {
	m := 2 + 2*r.Uint64N(40)
	tb := table.New(m, slots, f, semi)
	mask := uint64(1)<<f - 1
	for i := range m {
		for range slots {
			if r.IntN(4) != 0 {
				tb.Insert(i, 1+r.Uint64N(mask))
			}
		}
	}
	return &tb
}

func checkProbe(t *testing.T, r *rand.Rand, tb *table.Table) {
	t.Helper()
	c := NewProbe(tb, 0)
	m := tb.NumBuckets
	var vals [8]uint64
	for i := range m {
		if got, want := c.Empties(i), tb.Copies(i, 0); got != want {
			t.Fatalf("bucket %d of %d: %d empty slots, the table says %d", i, m, got, want)
		}
		if c.loads != 0 {
			c.Values(i, &vals)
			for s := range tb.Slots {
				if vals[s] != tb.Slot(i, s) {
					t.Fatalf("bucket %d slot %d: %#x, the table says %#x", i, s, vals[s], tb.Slot(i, s))
				}
			}
		}
		for range 8 {
			j := r.Uint64N(m)
			// Values held by the buckets (so that some compares match),
			// or random ones.
			f1, f2 := 1+r.Uint64N(tb.FPMask), 1+r.Uint64N(tb.FPMask)
			if v := tb.Slot(i, r.Uint64N(tb.Slots)); v != 0 && r.IntN(2) == 0 {
				f1 = v
			}
			if v := tb.Slot(j, r.Uint64N(tb.Slots)); v != 0 && r.IntN(2) == 0 {
				f2 = v
			}
			if got, want := c.Holds(i, f1, j, f2), tb.HoldsEither(i, f1, j, f2); got != want {
				t.Fatalf("buckets %d, %d of %d, values %#x, %#x: holds %v, holdsEither %v (loads %d)", i, j, m, f1, f2, got, want, c.loads)
			}
		}
	}
	// The loops over a chain of such tables (a Filter's addressing).
	cs := []Probe{c, c}
	for range 64 {
		h := r.Uint64()
		i1, fp := tb.Locate(h)
		want := tb.HoldsEither(i1, fp, tb.AltIndex(i1, fp), fp)
		if Has(cs, h) != want || (First(cs, h) == 0) != want || c.Has(h) != want {
			t.Fatalf("hash %#x: Has %v, First %d, Probe.Has %v; the table says %v", h, Has(cs, h), First(cs, h), c.Has(h), want)
		}
	}
	// A batch's pass over the table, with and without its prefetches.
	for _, large := range []bool{false, true} {
		c.Large = large
		n := 1 + r.IntN(3*table.BatchGroup)
		hs, rest, at, found := make([]uint64, n), make([]uint64, n), make([]uint16, n), make([]bool, n)
		for k := range hs {
			hs[k], at[k] = r.Uint64(), uint16(k)
		}
		copy(rest, hs)
		left := c.Pass(rest, at, found)
		var wantRest []uint64
		for k, h := range hs {
			i1, fp := tb.Locate(h)
			if want := tb.HoldsEither(i1, fp, tb.AltIndex(i1, fp), fp); found[k] != want {
				t.Fatalf("pass (large %v), hash %d of %d: %v, the table says %v", large, k, n, found[k], want)
			} else if !want {
				wantRest = append(wantRest, h)
			}
		}
		if !slices.Equal(rest[:left], wantRest) {
			t.Fatalf("pass (large %v) left %x, want %x", large, rest[:left], wantRest)
		}
		for k, h := range rest[:left] {
			if hs[at[k]] != h {
				t.Fatalf("pass (large %v): hash %d left is %#x, its index %d holds %#x", large, k, h, at[k], hs[at[k]])
			}
		}
	}
}

// FuzzProbe compares the chain loop's reads with the table's for tables of
// any shape and contents the input describes.
func FuzzProbe(f *testing.F) {
	f.Add(uint8(4), uint8(21), false, uint64(1))
	f.Add(uint8(8), uint8(9), false, uint64(2))
	f.Add(uint8(4), uint8(13), true, uint64(3))
	f.Add(uint8(2), uint8(32), false, uint64(4))
	f.Fuzz(func(t *testing.T, b, bits uint8, semi bool, seed uint64) {
		slots := 1 + uint64(b)%16
		fb := 4 + uint64(bits)%(32-4+1)
		semi = semi && slots == 4
		r := rand.New(rand.NewPCG(seed, uint64(b)))
		checkProbe(t, r, randomTable(r, slots, fb, semi))
	})
}
