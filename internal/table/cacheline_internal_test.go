package table

import "testing"

// TestPadded checks Padded's slices: the length and capacity asked for,
// zeroed, and cut from a larger allocation (the padding lies outside the
// capacity, so an append cannot reach it).
func TestPadded(t *testing.T) {
	for _, n := range []uint64{0, 1, 7, 8, 9, 1000} {
		for _, extra := range []uint64{0, 3} {
			w := Padded[uint64](n, extra)
			if uint64(len(w)) != n || uint64(cap(w)) != n+extra {
				t.Fatalf("Padded(%d, %d): len %d cap %d", n, extra, len(w), cap(w))
			}
			for _, v := range w[:cap(w)] {
				if v != 0 {
					t.Fatal("padded memory is not zero")
				}
			}
		}
	}
	p := Padded[*Table](3, 0)
	if len(p) != 3 || cap(p) != 3 {
		t.Fatalf("padded pointers: len %d cap %d", len(p), cap(p))
	}
}
