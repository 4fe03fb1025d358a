// Package addr is the address arithmetic of a cuckoo table: where a key's
// 64-bit hash puts its fingerprint and its two buckets. The filters of
// package cuckoo and package redisfilter (whose Lua functions compute the
// alternate bucket inside Redis) share it, so a filter table means the
// same thing wherever it lives. Every function is part of the file format
// (docs/format.md): frozen.
package addr

// Fingerprint returns the fingerprint of hash h for fingerprints of f bits
// (fpMax = 2^f − 1): the low 32 bits of h reduced onto [1, fpMax]. It is
// never 0, the empty slot.
func Fingerprint(h, fpMax uint64) uint64 {
	return uint64(uint32(h))*fpMax>>32 + 1
}

// Bucket returns the first bucket of hash h in a table of m buckets
// (m ≤ 2^32): the high 32 bits of h reduced onto [0, m). In a table of s
// segments of m/s buckets it lies in segment Segment(h, s).
func Bucket(h, m uint64) uint64 {
	return (h >> 32) * m >> 32
}

// Segment returns the segment of hash h in a table of s segments: the
// segment of Bucket(h, m) for any m that s divides, computed without m.
func Segment(h, s uint64) uint64 {
	return (h >> 32) * s >> 32
}

// Alt returns the other bucket of fingerprint fp stored in bucket i of a
// table (or segment) of m buckets, m even and at most 2^32, i < m:
// alt = (−i − r) mod m, where the offset r is odd and below m, so Alt is
// an involution without a fixed point (2i ≡ −r mod m has no solution when
// m is even and r odd).
//
// r is the 32-bit multiplicative hash x = fp·0x9e3779b1 mod 2^32 reduced
// onto [0, m) by ⌊x·m/2^32⌋, then made odd. Every step is exact in 32-bit
// and 53-bit arithmetic (the product x·m is split into 16-bit halves
// there), so programs without 64-bit integers, such as Redis's Lua,
// compute the same buckets.
func Alt(i, fp, m uint64) uint64 {
	x := uint64(uint32(fp) * 0x9e3779b1)
	r := x*m>>32 | 1
	j := m - i - r
	// Wrap a negative j without a branch: the sign is random, so a branch
	// would be mispredicted half the time.
	return j + m&uint64(int64(j)>>63)
}

// Spread reports whether the offsets Alt uses in a table of m buckets
// (m even) are spread well enough for the table to fill to its target
// load, which the sizing of package cuckoo assumes. Those offsets are
//
//	r(fp) = 2·(fp·B + ⌊fp·α⌋) + 1 mod m,  where B + α = 0x9e3779b1·m / 2^33,
//
// B an integer and 0 ≤ α < 1. When α is close to a fraction p/q of small
// denominator, ⌊fp·α⌋ is nearly periodic, so the differences between
// offsets, which are the moves a chain of displacements makes, all fall
// near the multiples of one step: the buckets a crowded region can
// unload into form a ring, not a plane, and inserts fail far below the
// usual load (bench/notes.md, item 23). Spread holds when q·‖q·α‖ ≥ 1/10 for
// every q from 1 to 16, ‖·‖ being the distance to the nearest integer:
// true of about half of all m. A step of 2 buckets moves α by 0.618…
// (the golden ratio's fraction), so a few steps always find such an m.
// The bound and the range of q are a choice the measurements of that note
// support. The test is exact integer arithmetic, the same
// on every platform.
func Spread(m uint64) bool {
	const one = 1 << 33 // α in units of 2^-33
	a := 0x9e3779b1 * m & (one - 1)
	for q := uint64(1); q <= 16; q++ {
		v := q * a & (one - 1)
		if q*min(v, one-v) < one/10 {
			return false
		}
	}
	return true
}
