package bloom

import "fmt"

// table is what a [Filter] and a [Counting] share: the array of cells
// (bits or 4-bit counters), the number of cells a key uses, and what the
// table was built for. Its getters are theirs.
type table struct {
	words    []uint64 // the cells, flat
	cells    uint64   // cells the hash maps onto: blocks (blocked layout), bits (classic) or counters
	k        uint32   // cells per key
	seed     uint64
	capacity uint64
	fpr      float64 // target rate at capacity
}

// Capacity returns the number of keys the filter was sized for: up to that
// many, the false-positive rate stays at or below the target.
func (t *table) Capacity() uint64 { return t.capacity }

// TargetFalsePositiveRate returns the rate the filter was built for: with
// Capacity distinct keys its expected false-positive rate is at most this.
// It is kept in the encoding.
func (t *table) TargetFalsePositiveRate() float64 { return t.fpr }

// HashCount returns k, the number of bits (counters, in a Counting) each
// key sets.
func (t *table) HashCount() int { return int(t.k) }

// Seed returns the hash seed. A filter built by the same constructor with
// the same capacity and rate and [WithSeed](f.Seed()) can be merged with f
// by Union.
func (t *table) Seed() uint64 { return t.seed }

// SizeInBytes returns the size of the bit (or counter) array, which is all
// the memory the filter holds apart from a fixed header of under 100
// bytes.
func (t *table) SizeInBytes() uint64 { return uint64(len(t.words)) * 8 }

// compatible returns an error wrapping ErrIncompatible unless Union may
// merge tables t and o: the same size, hash count and seed, not zero.
func (t *table) compatible(o *table) error {
	switch {
	case len(t.words) != len(o.words):
		return fmt.Errorf("%w: %d and %d bytes", ErrIncompatible, len(t.words)*8, len(o.words)*8)
	case t.k != o.k:
		return fmt.Errorf("%w: %d and %d hashes per key", ErrIncompatible, t.k, o.k)
	case t.seed != o.seed:
		return fmt.Errorf("%w: different seeds", ErrIncompatible)
	case len(t.words) == 0:
		return fmt.Errorf("%w: zero filters have no table", ErrIncompatible)
	}
	return nil
}
