package table

import "sync/atomic"

// Word-at-a-time ("SWAR") primitives for packed buckets: a bucket of at
// most 64 bits is read as one 64-bit window of lanes, one lane per slot, and
// all its slots are compared with a fingerprint in a few instructions.
// Tables that other goroutines write (a Concurrent's) read their windows
// with atomic loads: LoadWindow and AtomicLoadWindow are the same function
// apart from that, and TestWindowTwins holds them to it.

// ZeroLanes returns the high bit of every lane of x that is zero, for the
// lanes described by rest and high (LaneMasks). It is exact lane by lane:
// adding rest to the low bits of a lane never carries out of the lane.
func ZeroLanes(x, rest, high uint64) uint64 {
	return ^((x & rest) + rest | x | rest) & high
}

// LaneMasks returns the masks of lanes lanes of f bits from bit 0: low has
// the low bit of each lane set, high the high bit, rest every bit below the
// high bit. A window holding fp in every lane is fp·low.
func LaneMasks(lanes, f uint64) (low, high, rest uint64) {
	for j := uint64(0); j < lanes; j++ {
		low |= 1 << (j * f)
	}
	high = low << (f - 1)
	rest = high - low
	return low, high, rest
}

// LoadWindow returns the 64 bits of the bit string held in words that
// start at bit p, bit k of the string being bit k%64 of words[k/64]. The
// string must have a word past bit p+63's (a table's padding word). The
// high part is shifted in two steps, by 1 and by 63-s, so that p%64 == 0
// (where it must vanish) needs neither a branch nor the compiler's guard
// for shifts of 64 or more.
func LoadWindow(words []uint64, p uint64) uint64 {
	w := words[p>>6 : p>>6+2 : p>>6+2]
	s := p & 63
	return w[0]>>s | w[1]<<1<<(63-s)
}

// AtomicLoadWindow is LoadWindow with atomic loads.
func AtomicLoadWindow(words []uint64, p uint64) uint64 {
	w := words[p>>6 : p>>6+2 : p>>6+2]
	s := p & 63
	return atomic.LoadUint64(&w[0])>>s | atomic.LoadUint64(&w[1])<<1<<(63-s)
}

// StoreBits stores v (v <= mask, mask = 2^k-1 for 1 <= k <= 64) in the k
// bits of the bit string held in words starting at bit p. A field
// straddling two words is written in both; when it does not, the second
// write changes nothing (its mask is 0), which keeps the code free of a
// branch and a table's padding word zero.
func StoreBits(words []uint64, p, mask, v uint64) {
	w := words[p>>6 : p>>6+2 : p>>6+2]
	sh := p & 63
	w[0] = w[0]&^(mask<<sh) | v<<sh
	w[1] = w[1]&^(mask>>(64-sh)) | v>>(64-sh)
}
