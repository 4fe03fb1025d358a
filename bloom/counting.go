package bloom

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/dedupkit/cuckoo/internal/hash"
	"github.com/dedupkit/cuckoo/internal/invariants"
)

// Counting is a counting Bloom filter: a Bloom filter whose cells are 4-bit
// counters instead of bits, so that keys can be deleted. Add increments the
// key's k counters, Delete decrements them, and Contains reports whether
// they are all nonzero. It answers like a [Filter] built with [NewClassic]
// for the same capacity and rate, with four times the memory.
//
// Counters saturate at 15 instead of wrapping, and a saturated counter is
// never decremented again, because it no longer knows how many keys share
// it: so a Delete can never make a present key absent. The price is that a
// key whose counters all saturated (one key added 15 times or more, or a
// filter filled far past its capacity) can no longer be deleted; it stays
// present. At capacity, saturation by distinct keys is vanishingly rare.
//
// Delete of a key that Contains reports absent returns false and changes
// nothing. Delete of a key that was never added but is reported present (a
// false positive) removes it the only way it can, by decrementing counters
// that belong to other keys, and may make one of them absent: delete only
// keys you added. Adding a key n times and deleting it n times leaves the
// filter as it was (unless its counters saturated).
//
// # Concurrency
//
// Counting is like a Go map: any number of goroutines may call Contains,
// ContainsString, Len and the other read-only methods at once, but Add,
// AddUnique, Delete, Union, Reset and the decoders need exclusive access.
// [SyncCounting] wraps a Counting with a read-write mutex for free sharing.
//
// The zero Counting is empty and has no table: Contains reports false,
// Delete reports false, UnmarshalBinary or ReadFrom can decode into it,
// Add, AddUnique and their key forms return an error wrapping
// [ErrUninitialized].
type Counting struct {
	table        // 16 four-bit counters per word; counter i at bits 4(i%16) of word i/16; cells = 16·len(words)
	count uint64 // Add calls minus Delete calls that returned true
}

const (
	counterBits = 4
	counterMax  = 1<<counterBits - 1 // the saturated value
	countersPer = 64 / counterBits   // counters per word
)

// NewCounting returns an empty counting Bloom filter sized so that, holding
// capacity keys, its expected false-positive rate is at most the target
// rate ([WithFalsePositiveRate], [DefaultFalsePositiveRate] if not given).
// It is sized like [NewClassic],
// with a 4-bit counter in place of each bit. The seed is random unless
// [WithSeed] is given. It returns an error wrapping [ErrInvalidParameter]
// for a capacity of 0 or above [MaxCapacity], a rate out of range, a table
// above 1 TiB (2 GiB on 32-bit CPUs), or a Scalable-only option.
func NewCounting(capacity uint64, opts ...Option) (*Counting, error) {
	c, err := resolve(capacity, false, opts)
	if err != nil {
		return nil, err
	}
	fpr := c.fpr
	k, words, ok := classicSizing(capacity, fpr, countersPer)
	if !ok {
		return nil, tooLarge(capacity, fpr)
	}
	f := &Counting{table: table{words: make([]uint64, words), cells: words * countersPer, k: uint32(k), seed: c.seed, capacity: capacity, fpr: fpr}}
	if invariants.Enabled {
		f.checkInvariants()
	}
	return f, nil
}

// Add inserts one copy of key, incrementing its k counters (those at 15
// stay at 15). Adding a key several times needs as many Deletes to remove
// it. It allocates nothing. On the zero Counting it returns an error
// wrapping [ErrUninitialized]; on a built one, nil.
func (f *Counting) Add(key []byte) error { return f.add(hash.Sum64(key, f.seed)) }

// AddString is [Counting.Add] for a string key, without copying it.
func (f *Counting) AddString(key string) error { return f.add(hash.Sum64String(key, f.seed)) }

// add is Add of a key's hash: ErrUninitialized on the zero Counting.
func (f *Counting) add(h uint64) error {
	if len(f.words) == 0 {
		return errZeroCounting
	}
	f.addHash(h)
	return nil
}

// AddUnique adds key unless Contains reports it present, and reports
// whether it added it. On the zero Counting it returns an error wrapping
// [ErrUninitialized], as Add does.
func (f *Counting) AddUnique(key []byte) (added bool, err error) {
	return f.addUniqueHash(hash.Sum64(key, f.seed))
}

func (f *Counting) addUniqueHash(h uint64) (bool, error) {
	if len(f.words) == 0 {
		return false, errZeroCounting
	}
	if f.containsHash(h) {
		return false, nil
	}
	f.addHash(h)
	return true, nil
}

// Contains reports whether key may be in the filter: false is certain, true
// is wrong with probability [Counting.FalsePositiveRate]. It allocates
// nothing.
func (f *Counting) Contains(key []byte) bool { return f.containsHash(hash.Sum64(key, f.seed)) }

// ContainsString is [Counting.Contains] for a string key, without copying
// it.
func (f *Counting) ContainsString(key string) bool {
	return f.containsHash(hash.Sum64String(key, f.seed))
}

// Delete removes one copy of key and reports whether it did. When Contains
// reports key absent, Delete returns false and changes nothing. Otherwise
// it decrements each of the key's counters that is neither 0 nor saturated
// and returns true. Deleting a key that was never added is unsafe (see
// [Counting]). It allocates nothing.
func (f *Counting) Delete(key []byte) bool { return f.deleteHash(hash.Sum64(key, f.seed)) }

// DeleteString is [Counting.Delete] for a string key, without copying it.
func (f *Counting) DeleteString(key string) bool {
	return f.deleteHash(hash.Sum64String(key, f.seed))
}

// The counters use the probe sequence of the classic layout (classic.go)
// over the m counters.

func (f *Counting) addHash(h uint64) {
	if len(f.words) == 0 {
		panic("bloom: Add on a zero Counting; create it with NewCounting")
	}
	a, b := h, hash.Mix64(h)
	for i := range uint64(f.k) {
		p, _ := bits.Mul64(a, f.cells)
		w, sh := &f.words[p/countersPer], (p%countersPer)*counterBits
		if (*w>>sh)&counterMax != counterMax {
			*w += 1 << sh
		}
		a += b
		b += i
	}
	f.count++
}

func (f *Counting) containsHash(h uint64) bool {
	if len(f.words) == 0 {
		return false
	}
	a, b := h, hash.Mix64(h)
	for i := range uint64(f.k) {
		p, _ := bits.Mul64(a, f.cells)
		if (f.words[p/countersPer]>>((p%countersPer)*counterBits))&counterMax == 0 {
			return false
		}
		a += b
		b += i
	}
	return true
}

func (f *Counting) deleteHash(h uint64) bool {
	if !f.containsHash(h) {
		return false
	}
	a, b := h, hash.Mix64(h)
	for i := range uint64(f.k) {
		p, _ := bits.Mul64(a, f.cells)
		w, sh := &f.words[p/countersPer], (p%countersPer)*counterBits
		// INVARIANT: a saturated counter is never decremented, and a counter
		// at 0 (possible only when this key was never added and shares a
		// counter twice) is never wrapped.
		if c := (*w >> sh) & counterMax; c != 0 && c != counterMax {
			*w -= 1 << sh
		}
		a += b
		b += i
	}
	if f.count > 0 {
		f.count--
	}
	return true
}

// Len returns the number of keys in the filter as counted: Add calls plus
// AddUnique calls that added, minus Delete calls that returned true.
// Copies of one key count separately.
func (f *Counting) Len() uint64 { return f.count }

// nonzero returns the number of nonzero counters.
func (f *Counting) nonzero() uint64 {
	const low = 0x1111111111111111 // the low bit of every counter
	var n int
	for _, w := range f.words {
		// Fold each 4-bit counter into its low bit: set iff the counter ≠ 0.
		x := w | w>>1
		x |= x >> 2
		n += bits.OnesCount64(x & low)
	}
	return uint64(n)
}

// FalsePositiveRate returns the expected false-positive rate at the
// filter's current content, computed like [Filter.FalsePositiveRate] from
// the number of nonzero counters. O(m/16).
func (f *Counting) FalsePositiveRate() float64 {
	if len(f.words) == 0 {
		return 0
	}
	return rateAtFill(layoutClassic, int(f.k), f.cells, f.nonzero())
}

// EstimatedCount estimates the number of distinct keys in the filter from
// the number of nonzero counters, like [Filter.EstimatedCount]. Unlike Len
// it counts a key added several times once. O(m/16).
func (f *Counting) EstimatedCount() uint64 {
	if len(f.words) == 0 {
		return 0
	}
	return uint64(math.Round(keysAtFill(layoutClassic, int(f.k), f.cells, f.nonzero())))
}

// Union adds every key of other to f: each counter becomes the sum of both,
// saturating at 15, as if f had received other's Adds too. Both must have
// the same size, hash count and seed; otherwise Union returns
// [ErrIncompatible] and leaves f unchanged. Len becomes the sum of both.
// O(m/16).
func (f *Counting) Union(other *Counting) error {
	if other == nil {
		return fmt.Errorf("%w: the other filter is nil", ErrIncompatible)
	}
	if err := f.table.compatible(&other.table); err != nil {
		return err
	}
	snapshot := other.words
	if f == other {
		snapshot = append([]uint64(nil), other.words...)
	}
	for i, ow := range snapshot {
		if ow == 0 {
			continue
		}
		w := f.words[i]
		var out uint64
		for sh := uint(0); sh < 64; sh += counterBits {
			out |= min((w>>sh)&counterMax+(ow>>sh)&counterMax, counterMax) << sh
		}
		f.words[i] = out
	}
	if f.count+other.count < f.count {
		f.count = math.MaxUint64
	} else {
		f.count += other.count
	}
	return nil
}

// Reset removes every key, keeping the size, hash count and seed.
func (f *Counting) Reset() {
	clear(f.words)
	f.count = 0
}

// Clone returns a deep copy of f.
func (f *Counting) Clone() *Counting {
	c := *f
	c.words = append([]uint64(nil), f.words...)
	return &c
}

func (f *Counting) checkInvariants() {
	if len(f.words) == 0 {
		return
	}
	switch {
	case f.cells != uint64(len(f.words))*countersPer:
		panic(fmt.Sprintf("bloom: invariant: %d counters in %d words", f.cells, len(f.words)))
	case f.k < 1 || f.k > maxK:
		panic(fmt.Sprintf("bloom: invariant: k = %d", f.k))
	case f.capacity == 0 || !(f.fpr > 0 && f.fpr < 1):
		panic(fmt.Sprintf("bloom: invariant: capacity %d, rate %v", f.capacity, f.fpr))
	}
}
