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
