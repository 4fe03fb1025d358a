package bloom

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"

	"github.com/dedupkit/cuckoo/internal/hash"
	"github.com/dedupkit/cuckoo/internal/invariants"
)

// layout says how a Filter maps a key's hash to bit positions. The values
// appear in the encoding (as the kind byte) and are frozen.
type layout uint8

const (
	layoutBlocked layout = 1 // one 512-bit block per key ([New])
	layoutClassic layout = 2 // k positions over the whole array ([NewClassic])
)

// Filter is a Bloom filter: a set of keys that answers "maybe present" or
// "certainly absent". A key that was added is always reported present (no
// false negatives); a key that was not is reported present with a small
// probability, the false-positive rate, which the constructors bound at the
// filter's capacity. Keys cannot be removed; see [Counting] for that.
//
// A Filter has one of two layouts, chosen by its constructor. [New] builds
// the blocked layout: each key's bits lie in one 64-byte block, so an
// operation touches one cache line. [NewClassic] builds the classic layout:
// k bits anywhere in the array, which needs the fewest bits for a rate but
// touches up to k cache lines.
//
// # Concurrency
//
// Add, AddString, AddUnique, Contains, ContainsString, Len, Union (as the
// receiver or the argument), Clone, EstimatedCount, the encoders and the
// getters are safe to call from any number of goroutines at once without a
// lock: bits are set with atomic OR on 64-bit words and read with atomic
// loads, so no concurrent insert is lost. A key whose Add has returned is
// reported present by every Contains that starts afterwards. Reset,
// UnmarshalBinary and ReadFrom need exclusive access.
//
// The zero Filter is empty and has no table: Contains reports false,
// UnmarshalBinary or ReadFrom can decode into it, Add and its key forms
// return an error wrapping [ErrUninitialized] (a Filter has a fixed size
// that only its constructor knows), as AddUnique and its key forms do.
//
// # Invariants
//
// len(words) = 8·cells for the blocked layout and cells/64 for the classic
// one; 1 ≤ k ≤ 64. Bits are only ever set, never cleared, except by Reset
// and decoding.
type Filter struct {
	table  // the bit array; a block is 8 consecutive words
	layout layout
	count  atomic.Uint64 // keys whose insertion set at least one bit
}

// newFilter allocates a filter of the given shape.
func newFilter(l layout, k int, words, capacity uint64, fpr float64, seed uint64) *Filter {
	f := &Filter{table: table{words: make([]uint64, words), k: uint32(k), seed: seed, capacity: capacity, fpr: fpr}, layout: l}
	f.cells = cellsOf(l, words)
	if invariants.Enabled {
		f.checkInvariants()
	}
	return f
}

// blockBitsOf returns the bits per cell of a layout: a blocked table's
// cells are blocks.
func blockBitsOf(l layout) uint64 {
	if l == layoutBlocked {
		return blockBits
	}
	return 1
}

func cellsOf(l layout, words uint64) uint64 {
	if l == layoutBlocked {
		return words / blockWords
	}
	return words * 64
}

// Add inserts key. It allocates nothing and costs one hash and one cache
// line (blocked layout) or k cache lines (classic layout). Adding a key
// twice is harmless: the second Add changes nothing. Adding more keys than
// the capacity raises the false-positive rate beyond the target (see
// [Filter.FalsePositiveRate]); it never fails on a built filter. On the
// zero Filter it returns an error wrapping [ErrUninitialized] (see
// [Filter]); its error result is that one, so that Bloom and cuckoo
// filters add keys alike.
func (f *Filter) Add(key []byte) error { return f.add(hash.Sum64(key, f.seed)) }

// AddString is [Filter.Add] for a string key, without copying it.
func (f *Filter) AddString(key string) error { return f.add(hash.Sum64String(key, f.seed)) }

// add is Add of a key's hash: ErrUninitialized on the zero Filter.
func (f *Filter) add(h uint64) error {
	if len(f.words) == 0 {
		return errZeroFilter
	}
	f.addHash(h)
	return nil
}

// AddUnique inserts key and reports whether it was absent before, that is
// whether Contains would have reported false, in one pass over the key's
// bits. When several goroutines add the same absent key at once, at least
// one of them gets true. A false positive (a new key whose bits were all
// set already) gets false and changes nothing. On the zero Filter it
// returns an error wrapping [ErrUninitialized], as Add does.
func (f *Filter) AddUnique(key []byte) (added bool, err error) {
	return f.addUnique(hash.Sum64(key, f.seed))
}

// AddUniqueString is [Filter.AddUnique] for a string key.
func (f *Filter) AddUniqueString(key string) (added bool, err error) {
	return f.addUnique(hash.Sum64String(key, f.seed))
}

// addUnique is AddUnique of a key's hash: ErrUninitialized on the zero
// Filter.
func (f *Filter) addUnique(h uint64) (bool, error) {
	if len(f.words) == 0 {
		return false, errZeroFilter
	}
	return f.addHash(h) > 0, nil
}

// Contains reports whether key may be in the filter. A false answer is
// certain; a true answer is wrong with the probability
// [Filter.FalsePositiveRate]. It allocates nothing and costs one hash and
// one cache line (blocked) or at most k cache lines (classic; an absent key
// usually stops after one or two).
func (f *Filter) Contains(key []byte) bool { return f.containsHash(hash.Sum64(key, f.seed)) }

// ContainsString is [Filter.Contains] for a string key, without copying it.
func (f *Filter) ContainsString(key string) bool {
	return f.containsHash(hash.Sum64String(key, f.seed))
}

// addHash sets the bits of h and returns how many were clear; Len counts
// the calls that set any.
func (f *Filter) addHash(h uint64) uint64 {
	if len(f.words) == 0 {
		panic("bloom: Add on a zero Filter; create it with New or NewClassic")
	}
	var added uint64
	if f.layout == layoutBlocked {
		added = blockedAdd(f.words, f.cells, f.k, h)
	} else {
		added = classicAdd(f.words, f.cells, f.k, h)
	}
	if added > 0 {
		f.count.Add(1)
	}
	return added
}

func (f *Filter) containsHash(h uint64) bool {
	if f.layout == layoutBlocked {
		return blockedContains(f.words, f.cells, f.k, h)
	}
	if len(f.words) == 0 {
		return false // the zero Filter
	}
	return classicContains(f.words, f.cells, f.k, h)
}

// Len returns the number of keys added: the Add and AddUnique calls that
// set at least one bit. Repeated keys are not counted again, and neither are
// the rare new keys that were false positives when they were added (they
// change nothing). Under concurrent adds of one key, each caller that set a
// bit counts it.
func (f *Filter) Len() uint64 { return f.count.Load() }

// FalsePositiveRate returns the expected false-positive rate at the
// filter's current content: the probability that Contains reports a key
// that was never added as present. With Capacity distinct keys added it is
// at most the target the filter was built for; it grows as more are added.
// It is computed from the number of bits set, which tells how many keys the
// filter holds (see [Filter.EstimatedCount]) more faithfully than
// [Filter.Len] does after Union or decoding, and then from the same exact
// model that sized the filter (see the package documentation). It reads the
// whole array: O(m/64), plus O(k²·(1 + keys per block)) arithmetic for the
// blocked layout.
func (f *Filter) FalsePositiveRate() float64 {
	if len(f.words) == 0 {
		return 0
	}
	return rateAtFill(f.layout, int(f.k), f.cells, f.setBits())
}

// EstimatedCount estimates the number of distinct keys in the filter from
// the number of bits set, with the estimator of Swamidass and Baldi (2007):
// n ≈ ln(1 − X/m) / (k·ln(1 − 1/m)) for X of m bits set. For the blocked
// layout it inverts the expected fill of the whole array instead,
// 1 − X/m = (1 − u/blocks)^n with u = 1 − (1 − 1/512)^k, which accounts for
// the uneven load of the blocks. Unlike [Filter.Len] it also counts keys
// merged in with Union. Its error is a fraction of a percent at capacity
// (the tests state the bound) and grows as the array saturates. It reads
// the whole array: O(m/64).
func (f *Filter) EstimatedCount() uint64 {
	if len(f.words) == 0 {
		return 0
	}
	return uint64(math.Round(keysAtFill(f.layout, int(f.k), f.cells, f.setBits())))
}

// setBits returns the number of bits set.
func (f *Filter) setBits() uint64 {
	var set int
	for i := range f.words {
		set += bits.OnesCount64(atomic.LoadUint64(&f.words[i]))
	}
	return uint64(set)
}

// Union sets f to the union of f and other: afterwards f reports present
// every key either reported present. Both must have the same layout, size,
// hash count and seed (build them with the same constructor, capacity, rate
// and [WithSeed], or [Filter.Clone] one and [Filter.Reset] the copy);
// otherwise Union returns [ErrIncompatible] and leaves f unchanged. f's
// Len becomes the sum of both Lens, an upper bound when the sets overlap
// ([Filter.EstimatedCount] gives the size of the union). It is safe to run
// concurrently with Add and Contains on either filter; it costs O(m/64)
// atomic ORs.
func (f *Filter) Union(other *Filter) error {
	if err := f.compatible(other); err != nil {
		return err
	}
	if f == other {
		return nil
	}
	for i := range f.words {
		if w := atomic.LoadUint64(&other.words[i]); w != 0 {
			atomic.OrUint64(&f.words[i], w)
		}
	}
	b := other.count.Load()
	for {
		a := f.count.Load()
		s := a + b
		if s < a {
			s = math.MaxUint64
		}
		if f.count.CompareAndSwap(a, s) {
			break
		}
	}
	if invariants.Enabled {
		f.checkInvariants()
	}
	return nil
}

func (f *Filter) compatible(other *Filter) error {
	switch {
	case other == nil:
		return fmt.Errorf("%w: the other filter is nil", ErrIncompatible)
	case f.layout != other.layout:
		return fmt.Errorf("%w: %s and %s layouts", ErrIncompatible, f.layout, other.layout)
	}
	return f.table.compatible(&other.table)
}

func (l layout) String() string {
	switch l {
	case layoutBlocked:
		return "blocked"
	case layoutClassic:
		return "classic"
	}
	return fmt.Sprintf("layout(%d)", uint8(l))
}

// Reset removes every key: it clears the bits and sets Len to 0, keeping the
// size, hash count and seed. It needs exclusive access: a key added
// concurrently may be kept, lost, or kept in part (then Contains reports it
// absent).
func (f *Filter) Reset() {
	for i := range f.words {
		atomic.StoreUint64(&f.words[i], 0)
	}
	f.count.Store(0)
}

// Clone returns a deep copy of f: same parameters, seed and bits, sharing no
// memory. It may run concurrently with Add; keys added meanwhile may or may
// not be in the copy.
func (f *Filter) Clone() *Filter {
	c := &Filter{table: f.table, layout: f.layout}
	c.words = make([]uint64, len(f.words))
	for i := range f.words {
		c.words[i] = atomic.LoadUint64(&f.words[i])
	}
	c.count.Store(f.count.Load())
	return c
}

// checkInvariants panics if the filter's shape is inconsistent. It is
// O(1) and runs after construction, decoding and Union when
// invariants.Enabled.
func (f *Filter) checkInvariants() {
	if len(f.words) == 0 {
		return
	}
	switch {
	case f.layout != layoutBlocked && f.layout != layoutClassic:
		panic(fmt.Sprintf("bloom: invariant: layout %d", f.layout))
	case f.k < 1 || f.k > maxK:
		panic(fmt.Sprintf("bloom: invariant: k = %d", f.k))
	case f.cells != cellsOf(f.layout, uint64(len(f.words))):
		panic(fmt.Sprintf("bloom: invariant: %d cells for %d words (%s)", f.cells, len(f.words), f.layout))
	case f.layout == layoutBlocked && uint64(len(f.words)) != f.cells*blockWords:
		panic("bloom: invariant: blocked table is not whole blocks")
	case f.capacity == 0 || !(f.fpr > 0 && f.fpr < 1):
		panic(fmt.Sprintf("bloom: invariant: capacity %d, rate %v", f.capacity, f.fpr))
	}
}
