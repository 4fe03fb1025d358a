package cuckoo

import (
	"fmt"

	"github.com/dedupkit/cuckoo/internal/addr"
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
//
// Invariants:
//   - count == (non-empty slots) + Σ dups.
//   - for every (pair, fp) key in dups: the value is > 0 and the pair's two
//     buckets hold at least table.MaxSlotCopies copies of fp, so Contains (which
//     only looks at slots) finds every key whose Count is non-zero.
//   - a fingerprint stored in bucket i belongs to a key whose buckets are i
//     and t.altIndex(i, fp): displacement moves it only between these two.
type Filter struct {
	t        table.Table
	seed     uint64
	capacity uint64
	maxKicks int
	count    uint64         // items, copies included
	occupied uint64         // non-empty slots
	dups     table.Counters // copies beyond maxSlotCopies
	ins      table.Inserts  // the scratch of its inserts
}

// maxItems bounds the items of an encoded filter, copies included:
// decoders refuse counts above it, so Len and every sum of counters of a
// decoded filter fit in a uint64 with room for 3·2^62 more Adds (far more
// than a program can make). Filter.Add refuses to pass it, so every Filter
// it built can be decoded.
const maxItems = 1 << 62

// errZeroFilter is the error of an insert on the zero Filter, naming what
// makes one.
var errZeroFilter = fmt.Errorf("%w: the zero Filter has no table; create it with New, or decode into it", ErrUninitialized)

// New returns an empty filter that holds at least capacity distinct keys.
// The default shape is 4-slot buckets with 16-bit fingerprints; opts change
// it. It returns an error wrapping [ErrInvalidParameter], and no filter,
// when a parameter is out of range or capacity needs more than 2^32 buckets.
func New(capacity uint64, opts ...Option) (*Filter, error) {
	c, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	p, err := fixedPlan(capacity, c)
	if err != nil {
		return nil, err
	}
	t := table.New(p.NumBuckets, uint64(c.slots), uint64(p.FingerprintBits), c.semi)
	t.Segment(uint64(c.segments))
	f := &Filter{}
	f.init(t, c.seed, capacity, c.maxKicks)
	return f, nil
}

// init sets up f around t, empty of counters.
func (f *Filter) init(t table.Table, seed, capacity uint64, maxKicks int) {
	*f = Filter{
		t:        t,
		seed:     seed,
		capacity: capacity,
		maxKicks: maxKicks,
	}
}

// locate splits a key's hash into its first bucket and its fingerprint:
// the bucket from the upper 32 bits (a multiply-shift reduction onto
// [0, numBuckets)), the fingerprint from the lower 32 (onto [1, 2^f-1]).
func (f *Filter) locate(h uint64) (bucket, fp uint64) {
	return f.t.Locate(h)
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

func (f *Filter) addUniqueHash(h uint64) (bool, error) {
	if f.ContainsHash(h) {
		return false, nil
	}
	if err := f.AddHash(h); err != nil {
		return false, err
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
	t := &f.t
	if t.NumBuckets == 0 {
		return errZeroFilter
	}
	if f.count >= maxItems {
		return ErrFull
	}
	i1, fp := f.locate(h)
	i2 := t.AltIndex(i1, fp)
	switch t.Add(&f.ins, i1, i2, fp, h, f.maxKicks) {
	case table.Full:
		return ErrFull
	case table.Crowded:
		f.addDup(table.PairKey(i1, i2, fp))
		return nil
	}
	f.count++
	f.occupied++
	if invariants.Enabled {
		f.checkInvariants()
	}
	return nil
}

func (f *Filter) addDup(k uint64) {
	f.dups.Add(k)
	f.count++
	if invariants.Enabled {
		f.checkInvariants()
	}
}

// ContainsHash is [Filter.Contains] for a key's 64-bit hash (see
// [Filter.AddHash]).
func (f *Filter) ContainsHash(h uint64) bool {
	t := &f.t
	if !t.FastLookup {
		return f.containsHashGeneral(h)
	}
	// The common shapes (fastLookup: plain buckets of 8 to 64 bits that
	// never straddle a word, one segment; 4 × 8 and 4 × 16 among them):
	// both bucket words are loaded before anything is compared,
	// with no call, no branch and no bounds check between the hash and the
	// loads, so that the CPU can keep the cache misses of many lookups in
	// flight. The test is the classic any-zero-lane one: (x − low) &^ x &
	// high is non-zero exactly when some lane of x is zero (a borrow only
	// runs up from a zero lane, so only lanes above a true zero can be
	// reported falsely), which is all a lookup asks. The bits above a
	// bucket of fewer than 64 bits are the next buckets', outside the high
	// mask.
	m, low := t.NumBuckets, t.LaneLow
	fp := addr.Fingerprint(h, t.FPMask)
	i1 := addr.Bucket(h, m)
	i2 := addr.Alt(i1, fp, m)
	x := t.BucketFast(i1) ^ fp*low
	y := t.BucketFast(i2) ^ fp*low
	return ((x-low)&^x|(y-low)&^y)&t.LaneHigh != 0
}

// containsHashGeneral is ContainsHash for every other shape.
func (f *Filter) containsHashGeneral(h uint64) bool {
	t := &f.t
	if t.NumBuckets == 0 {
		return false
	}
	i1, fp := f.locate(h)
	i2 := t.AltIndex(i1, fp)
	switch {
	case t.Aligned:
		rep := fp * t.LaneLow
		x := t.AlignedBucket(i1) ^ rep
		y := t.AlignedBucket(i2) ^ rep
		return table.ZeroLanes(x, t.LaneRest, t.LaneHigh)|table.ZeroLanes(y, t.LaneRest, t.LaneHigh) != 0
	case t.SemiOneWindow:
		// Both buckets read before either is decoded.
		return t.SemiHasEither(t.Window(i1*t.BucketBits), t.Window(i2*t.BucketBits), fp)
	}
	return t.HoldsEither(i1, fp, i2, fp)
}

// DeleteHash is [Filter.Delete] for a key's 64-bit hash (see
// [Filter.AddHash]).
func (f *Filter) DeleteHash(h uint64) bool {
	if f.t.NumBuckets == 0 {
		return false
	}
	i1, fp := f.locate(h)
	i2 := f.t.AltIndex(i1, fp)
	// Copies beyond the slots go first: the slot copies must stay while any
	// counted copy remains (see the invariants).
	if len(f.dups) != 0 && f.dups.Take(table.PairKey(i1, i2, fp)) {
		f.count--
		if invariants.Enabled {
			f.checkInvariants()
		}
		return true
	}
	if !f.t.ReplaceEither(i1, i2, fp, 0) {
		return false
	}
	f.count--
	f.occupied--
	if invariants.Enabled {
		f.checkInvariants()
	}
	return true
}

// CountHash is [Filter.Count] for a key's 64-bit hash (see
// [Filter.AddHash]).
func (f *Filter) CountHash(h uint64) uint64 {
	if f.t.NumBuckets == 0 {
		return 0
	}
	i1, fp := f.locate(h)
	i2 := f.t.AltIndex(i1, fp)
	n := f.t.Copies(i1, fp) + f.t.Copies(i2, fp)
	if len(f.dups) != 0 {
		n += f.dups[table.PairKey(i1, i2, fp)]
	}
	return n
}

// Len returns the number of items stored, copies included.
func (f *Filter) Len() uint64 { return f.count }

// Capacity returns the number of distinct keys the filter was sized for;
// that many always fit.
func (f *Filter) Capacity() uint64 { return f.capacity }

// LoadFactor returns the fraction of slots that hold a fingerprint.
// Duplicate copies counted beside the table do not occupy slots.
func (f *Filter) LoadFactor() float64 {
	if f.t.NumBuckets == 0 {
		return 0
	}
	return float64(f.occupied) / float64(f.t.NumBuckets*f.t.Slots)
}

// FalsePositiveRate returns the expected probability that Contains reports
// a key that was never added, at the current load:
// 1 − (1 − 1/(2^f−1))^(2·b·load), about 2·b·load/2^f.
func (f *Filter) FalsePositiveRate() float64 {
	return expectedFPR(f.LoadFactor(), f.t.Slots, f.t.FPBits)
}

// SizeInBytes returns the memory the filter holds: the table, the duplicate
// counters (an estimate of the map's size) and the fixed parts.
func (f *Filter) SizeInBytes() uint64 {
	const fixed = 256 // the struct and slice headers, rounded up
	const perDup = 32 // a map entry of two words, with the map's overhead
	return uint64(len(f.t.Words))*8 + uint64(len(f.dups))*perDup +
		f.ins.Bytes() + fixed
}

// FingerprintBits returns the fingerprint width f in bits.
func (f *Filter) FingerprintBits() int { return int(f.t.FPBits) }

// SemiSorted reports whether the buckets are stored semi-sorted (see
// [WithSemiSorting]).
func (f *Filter) SemiSorted() bool { return f.t.Semi }

// BucketSize returns the number of slots per bucket.
func (f *Filter) BucketSize() int { return int(f.t.Slots) }

// Segments returns the number of segments of the table ([WithSegments]);
// 1 for an unsegmented one.
func (f *Filter) Segments() int { return int(max(f.t.Segments, 1)) }

// NumBuckets returns the number of buckets in the table.
func (f *Filter) NumBuckets() uint64 { return f.t.NumBuckets }

// Seed returns the hash seed: a filter made with WithSeed(f.Seed()) and the
// same parameters stores keys in the same places.
func (f *Filter) Seed() uint64 { return f.seed }

// MaxKicks returns the bound on displacements per insert.
func (f *Filter) MaxKicks() int { return f.maxKicks }

// Reset removes every item, keeping the parameters, the seed and the memory.
func (f *Filter) Reset() {
	f.t.Reset()
	f.dups = nil
	f.count, f.occupied = 0, 0
}

// checkInvariants panics if a structural invariant is broken. It scans the
// whole table, so it runs in full only on small tables (the tests build
// those on purpose), and checks the counters always.
func (f *Filter) checkInvariants() {
	if err := f.validate(len(f.t.Words) <= 256); err != nil {
		panic("cuckoo: invariant broken: " + err.Error())
	}
}

// validate checks the invariants; full adds the O(table) ones. It is shared
// by the decoder, which must reject any state the operations cannot reach.
func (f *Filter) validate(full bool) error {
	t := &f.t
	var dupSum uint64
	for k, c := range f.dups {
		i, fp := k>>32, k&0xffffffff
		if c == 0 {
			return fmt.Errorf("duplicate counter for bucket %d fingerprint %#x is zero", i, fp)
		}
		if i >= t.NumBuckets || fp == 0 || fp > t.FPMask {
			return fmt.Errorf("duplicate counter for bucket %d fingerprint %#x is out of range", i, fp)
		}
		j := t.AltIndex(i, fp)
		if j < i {
			return fmt.Errorf("duplicate counter for bucket %d fingerprint %#x is not keyed by the lower bucket", i, fp)
		}
		if t.Copies(i, fp)+t.Copies(j, fp) < table.MaxSlotCopies {
			return fmt.Errorf("duplicate counter for bucket %d fingerprint %#x without %d slot copies", i, fp, table.MaxSlotCopies)
		}
		if dupSum+c < dupSum {
			return fmt.Errorf("duplicate counters overflow")
		}
		dupSum += c
	}
	if f.occupied+dupSum != f.count || f.occupied+dupSum < dupSum {
		return fmt.Errorf("item count %d != %d slots + %d counted copies", f.count, f.occupied, dupSum)
	}
	if used := t.NumBuckets * t.BucketBits; used%64 != 0 && t.Words[used/64]>>(used%64) != 0 {
		return fmt.Errorf("bits past the last bucket are set")
	}
	if t.Words[len(t.Words)-1] != 0 {
		return fmt.Errorf("padding word is not zero")
	}
	if full {
		if t.Semi {
			for i := uint64(0); i < t.NumBuckets; i++ {
				if !t.SemiValid(i) {
					return fmt.Errorf("semi-sorted bucket %d is not in canonical form", i)
				}
			}
		}
		if n := t.OccupiedSlots(); n != f.occupied {
			return fmt.Errorf("%d slots occupied, %d recorded", n, f.occupied)
		}
	}
	return nil
}
