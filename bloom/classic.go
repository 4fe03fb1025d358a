package bloom

import (
	"math/bits"
	"sync/atomic"

	"github.com/dedupkit/cuckoo/internal/hash"
)

// NewClassic returns an empty classic Bloom filter sized so that, holding
// capacity keys, its expected false-positive rate is at most the target
// rate ([WithFalsePositiveRate], [DefaultFalsePositiveRate] if not given).
//
// Each key sets k bits anywhere in an array of m bits. The sizing starts
// from the textbook optimum m = −n·ln p / ln²2 and k = (m/n)·ln 2, tries
// the integers around that k, and takes the smallest m (a whole number of
// 64-bit words) whose exact expected rate meets the target: the fewest bits of any
// layout here. An operation touches up to k cache lines (Contains of an
// absent key usually stops after one or two), so for large filters [New]
// is faster.
//
// The seed is random unless [WithSeed] is given. NewClassic returns an error
// wrapping [ErrInvalidParameter] for a capacity of 0 or above
// [MaxCapacity], a rate out of range, a table above 1 TiB (2 GiB on 32-bit
// CPUs), or a Scalable-only option.
func NewClassic(capacity uint64, opts ...Option) (*Filter, error) {
	c, err := resolve(capacity, false, opts)
	if err != nil {
		return nil, err
	}
	return newClassic(capacity, c.fpr, c.seed)
}

func newClassic(capacity uint64, fpr float64, seed uint64) (*Filter, error) {
	k, words, ok := classicSizing(capacity, fpr, 64)
	if !ok {
		return nil, tooLarge(capacity, fpr)
	}
	return newFilter(layoutClassic, k, words, capacity, fpr, seed), nil
}

// The classic layout (and the counting filter) derive k positions in
// [0, m) from the key's hash h by enhanced double hashing on 64-bit values,
// a = h, b = Mix64(h), then a += b, b += i after the i-th probe, each
// position being the multiply-shift reduction of a onto m (the high half of
// a·m): no division, any m.

func classicContains(words []uint64, m uint64, k uint32, h uint64) bool {
	a, b := h, hash.Mix64(h)
	for i := range uint64(k) {
		p, _ := bits.Mul64(a, m)
		if atomic.LoadUint64(&words[p>>6])&(1<<(p&63)) == 0 {
			return false
		}
		a += b
		b += i
	}
	return true
}

// classicAdd sets the bits of h and returns how many of them were clear,
// exactly for a single writer (see blockedAdd).
func classicAdd(words []uint64, m uint64, k uint32, h uint64) uint64 {
	a, b := h, hash.Mix64(h)
	var added uint64
	for i := range uint64(k) {
		p, _ := bits.Mul64(a, m)
		w, bit := &words[p>>6], uint64(1)<<(p&63)
		if atomic.LoadUint64(w)&bit == 0 {
			atomic.OrUint64(w, bit)
			added++
		}
		a += b
		b += i
	}
	return added
}
