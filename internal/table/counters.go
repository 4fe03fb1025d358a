package table

import "slices"

// MaxSlotCopies is how many slots of one bucket pair may hold the same
// fingerprint. Further copies are counted beside the table, so a key added
// a million times still takes only two slots and never makes its buckets
// (or anyone else's) overflow. Frozen: the encoding relies on it.
const MaxSlotCopies = 2

// Counters counts copies kept beside a table, by pair key (PairKey: a
// bucket pair and a fingerprint): a Filter's duplicate counters, a growing
// filter's overflow counters. The zero value is empty and ready.
//
// Invariants: every value is > 0 (a count that reaches 0 is removed), and
// the pair holds at least one slot copy of the fingerprint (the caller
// keeps this: counted copies are taken before slot copies).
type Counters map[uint64]uint64

// Add counts one more copy for pair key k.
func (m *Counters) Add(k uint64) {
	if *m == nil {
		*m = make(Counters)
	}
	(*m)[k]++
}

// Set sets the count of pair key k to v (> 0), as a decoder does.
func (m *Counters) Set(k, v uint64) {
	if *m == nil {
		*m = make(Counters)
	}
	(*m)[k] = v
}

// Take removes one copy for pair key k, and reports whether there was one.
func (m Counters) Take(k uint64) bool {
	switch v := m[k]; v {
	case 0:
		return false
	case 1:
		delete(m, k)
	default:
		m[k] = v - 1
	}
	return true
}

// SortedKeys returns the pair keys in increasing order, the order of the
// encodings.
func (m Counters) SortedKeys() []uint64 {
	keys := make([]uint64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
