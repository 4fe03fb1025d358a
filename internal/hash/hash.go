// Package hash is the seeded 64-bit hash every filter in this module uses:
// XXH3-64 with a 64-bit seed, as specified by the xxHash project
// (https://github.com/Cyan4973/xxHash, doc/xxhash_spec.md), computed by
// github.com/zeebo/xxh3. XXH3 passes the whole SMHasher suite; its outputs
// here are pinned to the reference implementation's published test
// vectors (hash_test.go), so a filter written by this module can be read
// by any program that has XXH3.
//
// # What the seed buys, and what it does not
//
// With a seed the caller does not choose adversarially, distinct keys
// collide in the 64-bit output as rarely as chance allows, whatever their
// structure (lengths, shared prefixes, sequential numbers): the filters'
// false-positive rates rest on this. A filter draws a random seed by
// default, so that someone who does not know it cannot aim keys at chosen
// buckets.
//
// XXH3 is not a keyed pseudo-random function: someone who knows the seed
// can compute where any key goes and craft keys that fill a bucket pair or
// collide with a given key. Use a cryptographic MAC when keys must be
// authenticated, and keep a filter's seed as private as its contents.
//
// # Frozen
//
// The outputs are part of every persisted filter: a filter file stores the
// seed and the table positions the hash gave.
package hash

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// Sum64 returns XXH3-64 of p with the given seed. It reads p and never
// retains it; it allocates nothing. Equal (p, seed) pairs give equal
// results on every platform.
//
// Keys of up to 16 bytes, the commonest in filters, take XXH3's short
// paths written out here (from the specification, doc/xxhash_spec.md),
// which spare them the general function's dispatch; longer ones go to
// github.com/zeebo/xxh3. The test vectors pin both.
func Sum64(p []byte, seed uint64) uint64 {
	if len(p) <= 16 {
		return short(p, seed)
	}
	return xxh3.HashSeed(p, seed)
}

// Sum64String is [Sum64] of the bytes of s, without copying or allocating.
func Sum64String(s string, seed uint64) uint64 {
	if len(s) <= 16 {
		return short(unsafe.Slice(unsafe.StringData(s), len(s)), seed)
	}
	return xxh3.HashStringSeed(s, seed)
}

// XORs of little-endian words of XXH3's default secret (its first bytes,
// from the specification), the constants of its short paths: bytes 0 and 4
// (32-bit), 8 and 16, 24 and 32, 40 and 48, 56 and 64.
const (
	secret0xor4   = 0x87275a9b
	secret8xor16  = 0xc73ab174c5ecd5a2
	secret24xor32 = 0x6782737bea4239b9
	secret40xor48 = 0xaf56bc3b0996523a
	secret56xor64 = 0x8726f9105dc21ddc
)

// short is XXH3-64 of p, len(p) <= 16, with seed.
func short(p []byte, seed uint64) uint64 {
	n := uint64(len(p))
	switch {
	case n > 8:
		lo := binary.LittleEndian.Uint64(p) ^ (secret24xor32 + seed)
		hi := binary.LittleEndian.Uint64(p[n-8:]) ^ (secret40xor48 - seed)
		h, l := bits.Mul64(lo, hi)
		return avalanche(n + bits.ReverseBytes64(lo) + hi + (h ^ l))
	case n >= 4:
		seed ^= uint64(bits.ReverseBytes32(uint32(seed))) << 32
		in := uint64(binary.LittleEndian.Uint32(p[n-4:])) + uint64(binary.LittleEndian.Uint32(p))<<32
		return rrmxmx(in^(secret8xor16-seed), n)
	case n > 0:
		c := uint64(p[0])<<16 | uint64(p[n>>1])<<24 | uint64(p[n-1]) | n<<8
		return avalanche64(c ^ (secret0xor4 + seed))
	}
	return avalanche64(seed ^ secret56xor64)
}

// avalanche is XXH3's final mix.
func avalanche(h uint64) uint64 {
	h ^= h >> 37
	h *= 0x165667919e3779f9
	return h ^ h>>32
}

// avalanche64 is XXH64's final mix, which XXH3 uses for inputs of 0 to 3
// bytes.
func avalanche64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xc2b2ae3d27d4eb4f
	h ^= h >> 29
	h *= 0x165667b19e3779f9
	return h ^ h>>32
}

// Sum64Uint64 is [Sum64] of the 8-byte little-endian encoding of v,
// computed without building the bytes: XXH3's path for inputs of 4 to 8
// bytes, specialized to 8 (TestUint64MatchesBytes checks it against
// Sum64 of the bytes).
func Sum64Uint64(v, seed uint64) uint64 {
	seed ^= uint64(bits.ReverseBytes32(uint32(seed))) << 32
	return rrmxmx(bits.RotateLeft64(v, 32)^(secret8xor16-seed), 8)
}

// rrmxmx is XXH3's finalizer for inputs of 4 to 8 bytes.
func rrmxmx(h, n uint64) uint64 {
	h ^= bits.RotateLeft64(h, 49) ^ bits.RotateLeft64(h, 24)
	h *= 0x9fb21c651e98df25
	h ^= h>>35 + n
	h *= 0x9fb21c651e98df25
	return h ^ h>>28
}

// Mix64 is a bijective finalizer (SplitMix64's): it scrambles a 64-bit
// value that is already a hash, so that derived values (a Bloom filter's
// second probe step, a random walk's generator) are independent of the
// bits the caller took from the hash itself. It is not a hash of keys.
// Mix64(0) is 0.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Stream computes [Sum64] of bytes given in pieces, for a key too long to
// hold in one slice: Sum64 of the pieces joined, with the seed of
// NewStream (XXH3's streaming form, which gives what the one-shot
// function gives; TestStreamMatchesSum64 checks it at every split).
type Stream struct{ h *xxh3.Hasher }

// NewStream returns a Stream with seed and no bytes yet.
func NewStream(seed uint64) *Stream { return &Stream{xxh3.NewSeed(seed)} }

// Write adds p to the bytes hashed. It never fails.
func (s *Stream) Write(p []byte) { s.h.Write(p) }

// Sum64 returns Sum64 of the bytes written so far.
func (s *Stream) Sum64() uint64 { return s.h.Sum64() }
