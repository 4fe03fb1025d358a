package bloom

import (
	"encoding/binary"
	"testing"
)

// TestScalableCannotGrow: when the next layer would exceed the table limit
// (reachable only by a decoded filter with a huge growth schedule), Add
// keeps inserting into the last layer instead of panicking, and no key is
// lost.
func TestScalableCannotGrow(t *testing.T) {
	s, err := NewScalable(1000, WithFalsePositiveRate(0.01), WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	s.growth = 1e12 // the next layer: 2^40 keys at 0.16 %, over the limit
	var key [8]byte
	for i := range uint64(5000) {
		binary.LittleEndian.PutUint64(key[:], i)
		s.Add(key[:])
	}
	if s.NumTables() != 1 || !s.stuck {
		t.Fatalf("%d layers, stuck %v; want 1 layer, stuck", s.NumTables(), s.stuck)
	}
	for i := range uint64(5000) {
		binary.LittleEndian.PutUint64(key[:], i)
		if !s.Contains(key[:]) {
			t.Fatalf("key %d lost", i)
		}
	}
	s.Reset()
	if s.stuck {
		t.Error("Reset kept the stuck flag")
	}
}
