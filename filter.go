package cuckoo

import (
	"fmt"

	"github.com/dedupkit/cuckoo/internal/hash"
	"github.com/dedupkit/cuckoo/internal/invariants"
	"github.com/dedupkit/cuckoo/internal/table"
)

// Filter is a cuckoo filter: an approximate set (a multiset, in fact) of
// byte-string keys that answers "have I seen this key?" with no false
// negatives and a small, tunable rate of false positives, and that supports
// Delete.
//
// A Filter holds a fingerprint of f bits for each key in one of the key's
// two candidate buckets of b slots. Memory is capacity × f / load bits, with
// the load about 0.94 for b = 4; there is no rounding up to a power of two.
//
// # Concurrency
//
// Like a Go map, a Filter may be read (Contains, Count, Len, encoding…) by
// many goroutines at once, but any mutation (Add, Delete, Reset, decoding)
// needs exclusive access. Use [Concurrent] to share one filter between
// writers.
//
// # Zero value
//
// The zero Filter is empty and has no table, like a nil map: Contains
// reports false, Count and Len 0, Delete false, and every insert returns an
// error wrapping [ErrUninitialized] and changes nothing (its size is not
// known: create filters with [New]). It can decode
// ([Filter.UnmarshalBinary], [Filter.ReadFrom]).
type Filter struct {
	m        table.Multiset // the table and the copies counted beside it, with their invariants
	seed     uint64
	capacity uint64
	maxKicks int
}

// errZeroFilter is the error of an insert on the zero Filter, naming what
// makes one.
var errZeroFilter = fmt.Errorf("%w: the zero Filter has no table; create it with New, or decode into it", ErrUninitialized)

// New returns an empty filter that holds at least capacity distinct keys.
// The default shape is 4-slot buckets with 16-bit fingerprints; opts change
// it. It returns an error wrapping [ErrInvalidParameter], and no filter,
// when a parameter is out of range or capacity needs more than 2^32 buckets
// (or, on a 32-bit platform, a table of more than 2 GiB).
func New(capacity uint64, opts ...Option) (*Filter, error) {
	c, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	p, err := fixedPlan(capacity, c)
	if err == nil {
		err = checkTableBytes(p.SizeInBytes)
	}
	if err != nil {
		return nil, err
	}
	t := table.New(p.NumBuckets, uint64(c.slots), uint64(p.FingerprintBits), c.semi)
	t.Segment(uint64(c.segments))
	return &Filter{m: table.Multiset{T: t}, seed: c.seed, capacity: capacity, maxKicks: c.maxKicks}, nil
}

// Add inserts one copy of key. The filter is a multiset: adding a key n
// times stores n copies, which n Deletes remove. Copies beyond the second
// of a fingerprint in its bucket pair are counted beside the table, so
// repeated keys never fill it.
//
// It returns [ErrFull] when no room can be made for a new fingerprint (or
// the filter holds 2^62 items); the filter is then exactly as it was. New(n)
// makes room for n distinct keys (see the package documentation for how
// sure that is). Each of the first two copies of a key takes a slot like a
// distinct key, so a filter of capacity n given every key twice may refuse
// one before it holds n distinct keys. Add allocates nothing, except when a
// key is added a third time or more (an entry in the duplicate counters).
func (f *Filter) Add(key []byte) error { return f.AddHash(hash.Sum64(key, f.seed)) }

// AddString is [Filter.Add] for a string key, without allocating.
func (f *Filter) AddString(key string) error { return f.AddHash(hash.Sum64String(key, f.seed)) }

// AddUnique adds key unless Contains(key) already reports it, and says
// whether it did. A false positive makes it skip a key that was never added:
// use it for set semantics (dedup), and Add for counting.
func (f *Filter) AddUnique(key []byte) (added bool, err error) {
	return f.addUniqueHash(hash.Sum64(key, f.seed))
}

// AddUniqueString is [Filter.AddUnique] for a string key, without allocating.
func (f *Filter) AddUniqueString(key string) (added bool, err error) {
	return f.addUniqueHash(hash.Sum64String(key, f.seed))
}

// addUniqueHash is ContainsHash and then AddHash, with the key's buckets
// read once for both (table.Multiset.AddAbsent).
func (f *Filter) addUniqueHash(h uint64) (bool, error) {
	if f.m.T.NumBuckets == 0 {
		return false, errZeroFilter
	}
	i1, i2, fp := f.m.T.Pair(h)
	return f.addUniqueAt(h, i1, i2, fp)
}

// addUniqueAt is addUniqueHash for h located in the table already (i1,
// i2 and fp as table.Table.Pair gives them). The table is not empty.
func (f *Filter) addUniqueAt(h, i1, i2, fp uint64) (bool, error) {
	switch f.m.AddAbsentAt(h, i1, i2, fp, f.maxKicks) {
	case table.Present:
		return false, nil
	case table.Full:
		return false, ErrFull
	}
	if invariants.Enabled {
		f.m.Check()
	}
	return true, nil
}

// Contains reports whether key may be in the filter: always true for a key
// added and not deleted, true with a small probability (the false-positive
// rate) for any other key. It allocates nothing and may run concurrently
// with other readers.
func (f *Filter) Contains(key []byte) bool { return f.ContainsHash(hash.Sum64(key, f.seed)) }

// ContainsString is [Filter.Contains] for a string key, without allocating.
func (f *Filter) ContainsString(key string) bool {
	return f.ContainsHash(hash.Sum64String(key, f.seed))
}

// Delete removes one copy of key and reports whether there was one to
// remove. Delete only keys you added: deleting a key that was never added
// removes the fingerprint of another key that happens to share it (with the
// false-positive probability), and that key then reads as absent.
func (f *Filter) Delete(key []byte) bool { return f.DeleteHash(hash.Sum64(key, f.seed)) }

// DeleteString is [Filter.Delete] for a string key, without allocating.
func (f *Filter) DeleteString(key string) bool { return f.DeleteHash(hash.Sum64String(key, f.seed)) }

// Count returns how many copies of key's fingerprint the key's two buckets
// hold: the number of times key was added and not deleted, plus any copies
// of other keys that collide with it (so never less than the true count).
func (f *Filter) Count(key []byte) uint64 { return f.CountHash(hash.Sum64(key, f.seed)) }

// CountString is [Filter.Count] for a string key, without allocating.
func (f *Filter) CountString(key string) uint64 { return f.CountHash(hash.Sum64String(key, f.seed)) }

// AddUint64 is [Filter.Add] for an integer key: the same as Add of its 8
// little-endian bytes, computed without building them.
func (f *Filter) AddUint64(key uint64) error { return f.AddHash(hash.Sum64Uint64(key, f.seed)) }

// ContainsUint64 is [Filter.Contains] for an integer key (see
// [Filter.AddUint64]).
func (f *Filter) ContainsUint64(key uint64) bool {
	return f.ContainsHash(hash.Sum64Uint64(key, f.seed))
}

// DeleteUint64 is [Filter.Delete] for an integer key (see
// [Filter.AddUint64]).
func (f *Filter) DeleteUint64(key uint64) bool { return f.DeleteHash(hash.Sum64Uint64(key, f.seed)) }

// CountUint64 is [Filter.Count] for an integer key (see [Filter.AddUint64]).
func (f *Filter) CountUint64(key uint64) uint64 { return f.CountHash(hash.Sum64Uint64(key, f.seed)) }

// AddHash is [Filter.Add] for a caller that already holds a 64-bit hash of
// its key. The hash must be well mixed over all 64 bits (for an integer key,
// pass it through a mixer first); the filter's seed is not applied to it,
// and keys added by hash are found only by hash.
func (f *Filter) AddHash(h uint64) error {
	if f.m.T.NumBuckets == 0 {
		return errZeroFilter
	}
	if !f.m.Add(h, f.maxKicks) {
		return ErrFull
	}
	if invariants.Enabled {
		f.m.Check()
	}
	return nil
}

// ContainsHash is [Filter.Contains] for a key's 64-bit hash (see
// [Filter.AddHash]).
func (f *Filter) ContainsHash(h uint64) bool { return f.m.T.Contains(h) }

// DeleteHash is [Filter.Delete] for a key's 64-bit hash (see
// [Filter.AddHash]).
func (f *Filter) DeleteHash(h uint64) bool {
	if !f.m.Delete(h) {
		return false
	}
	if invariants.Enabled {
		f.m.Check()
	}
	return true
}

// CountHash is [Filter.Count] for a key's 64-bit hash (see
// [Filter.AddHash]).
func (f *Filter) CountHash(h uint64) uint64 { return f.m.Count(h) }

// Len returns the number of items stored, copies included.
func (f *Filter) Len() uint64 { return f.m.Items }

// Capacity returns the number of distinct keys the filter was sized for;
// that many always fit.
func (f *Filter) Capacity() uint64 { return f.capacity }

// LoadFactor returns the fraction of slots that hold a fingerprint.
// Duplicate copies counted beside the table do not occupy slots.
func (f *Filter) LoadFactor() float64 {
	t := &f.m.T
	if t.NumBuckets == 0 {
		return 0
	}
	return float64(f.m.Occupied) / float64(t.NumBuckets*t.Slots)
}

// FalsePositiveRate returns the expected probability that Contains reports
// a key that was never added, at the current load:
// 1 − (1 − 1/(2^f−1))^(2·b·load), about 2·b·load/2^f.
func (f *Filter) FalsePositiveRate() float64 {
	return expectedFPR(f.LoadFactor(), f.m.T.Slots, f.m.T.FPBits)
}

// SizeInBytes returns the memory the filter holds: the table, the duplicate
// counters (an estimate of the map's size) and the fixed parts.
func (f *Filter) SizeInBytes() uint64 {
	const fixed = 256 // the struct and slice headers, rounded up
	return f.m.Bytes() + fixed
}

// FingerprintBits returns the fingerprint width f in bits.
func (f *Filter) FingerprintBits() int { return int(f.m.T.FPBits) }

// SemiSorted reports whether the buckets are stored semi-sorted (see
// [WithSemiSorting]).
func (f *Filter) SemiSorted() bool { return f.m.T.Semi }

// BucketSize returns the number of slots per bucket.
func (f *Filter) BucketSize() int { return int(f.m.T.Slots) }

// Segments returns the number of segments of the table ([WithSegments]);
// 1 for an unsegmented one.
func (f *Filter) Segments() int { return int(max(f.m.T.Segments, 1)) }

// NumBuckets returns the number of buckets in the table.
func (f *Filter) NumBuckets() uint64 { return f.m.T.NumBuckets }

// Seed returns the hash seed: a filter made with WithSeed(f.Seed()) and the
// same parameters stores keys in the same places.
func (f *Filter) Seed() uint64 { return f.seed }

// MaxKicks returns the bound on displacements per insert.
func (f *Filter) MaxKicks() int { return f.maxKicks }

// Reset removes every item, keeping the parameters, the seed and the memory.
func (f *Filter) Reset() { f.m.Reset() }
