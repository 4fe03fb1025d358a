// Package hash is the seeded 64-bit hash every filter in this module uses.
//
// The function is a multiply-mix hash of the wyhash family: the key is read
// 4 or 8 bytes at a time and folded with 64×64→128-bit multiplications, whose
// high and low halves are XORed together. It costs a few nanoseconds for keys
// up to 16 bytes, needs no allocation and no CPU feature, and every output bit
// depends on every input bit and on every seed bit.
//
// The seed is mixed into both operands of every multiplication, so an
// attacker who does not know the seed cannot zero an operand and build
// seed-independent collisions (the weakness of plain wyhash-style mixers).
// It is not a cryptographic MAC: use it to spread keys, not to authenticate.
//
// # Frozen
//
// The outputs are part of every persisted filter: a filter file stores the
// seed and the table positions the hash gave. Changing a single constant or
// step here breaks every file ever written. The golden values in hash_test.go
// pin the function; they must never be edited.
package hash

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// Multiplicative constants: odd, with balanced bit counts. Frozen.
const (
	k0 = 0x2d358dccaa6c78a5
	k1 = 0x8bb84b93962eacc9
	k2 = 0x4b33a62ed433d4a3
	k3 = 0x9e3779b97f4a7c15
)

// mix folds the 128-bit product of a and b into 64 bits.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// Sum64 returns the seeded 64-bit hash of p. It reads p and never retains
// it. Equal (p, seed) pairs always give equal results, on every platform.
// A caller that hashes many keys with one seed saves a multiplication per
// key with [Seeded].
func Sum64(p []byte, seed uint64) uint64 { return NewSeeded(seed).Sum64(p) }

// Sum64String is [Sum64] of the bytes of s, without copying or allocating.
func Sum64String(s string, seed uint64) uint64 { return NewSeeded(seed).Sum64String(s) }

// Sum64Uint64 is [Sum64] of the 8-byte little-endian encoding of v, computed
// without building the bytes.
func Sum64Uint64(v, seed uint64) uint64 { return NewSeeded(seed).Sum64Uint64(v) }

// Seeded is the hash for one seed, with the seed's own mixing step done once.
// Its methods return exactly what the package functions return for that
// seed. The zero Seeded is not the seed 0: build it with [NewSeeded].
type Seeded struct{ state uint64 }

// NewSeeded returns the hash for seed.
func NewSeeded(seed uint64) Seeded { return Seeded{seed ^ mix(seed^k0, k1)} }

// Sum64 is [Sum64] for this seed.
func (h Seeded) Sum64(p []byte) uint64 {
	n := len(p)
	// s is the running state; it carries the seed into every later step.
	s := h.state ^ uint64(n)
	var a, b uint64
	switch {
	case n > 16:
		i, rem := 0, n
		if rem > 48 {
			// Three independent lanes so the multiplies overlap.
			s1, s2 := s^k1, s^k2
			for rem > 48 {
				q := p[i : i+48 : i+48]
				s = mix(binary.LittleEndian.Uint64(q[0:])^k0^s, binary.LittleEndian.Uint64(q[8:])^s^k3)
				s1 = mix(binary.LittleEndian.Uint64(q[16:])^k1^s1, binary.LittleEndian.Uint64(q[24:])^s1^k3)
				s2 = mix(binary.LittleEndian.Uint64(q[32:])^k2^s2, binary.LittleEndian.Uint64(q[40:])^s2^k3)
				i += 48
				rem -= 48
			}
			s ^= s1 ^ s2
		}
		if rem > 16 {
			s = mix(binary.LittleEndian.Uint64(p[i:])^k2^s, binary.LittleEndian.Uint64(p[i+8:])^s^k1)
			if rem > 32 {
				s = mix(binary.LittleEndian.Uint64(p[i+16:])^k2^s, binary.LittleEndian.Uint64(p[i+24:])^s^k0)
			}
		}
		a = binary.LittleEndian.Uint64(p[n-16:])
		b = binary.LittleEndian.Uint64(p[n-8:])
	case n >= 8:
		// 8..16 bytes: a is word(0)<<32 | word(n-4) and b is
		// word(4)<<32 | word(n-8), where word(i) is the 4 bytes at i.
		// Together they cover every byte. Two overlapping 8-byte reads
		// give all four words (TestShortKeyWords pins this against
		// four 4-byte reads).
		x := binary.LittleEndian.Uint64(p)
		y := binary.LittleEndian.Uint64(p[n-8:])
		a = x<<32 | y>>32
		b = x&^0xffffffff | y&0xffffffff
	case n >= 4:
		// 4..7 bytes: word(0) and word(n-4) overlap and cover every byte.
		a = uint64(binary.LittleEndian.Uint32(p))<<32 | uint64(binary.LittleEndian.Uint32(p[n-4:]))
		b = a
	case n > 0:
		a = uint64(p[0])<<56 | uint64(p[n>>1])<<32 | uint64(p[n-1])
	}
	hi, lo := bits.Mul64(a^k1^s, b^s^k2)
	return mix(lo^k0^uint64(n)^s, hi^k1)
}

// Sum64String is [Sum64String] for this seed.
func (h Seeded) Sum64String(s string) uint64 {
	return h.Sum64(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// Sum64Uint64 is [Sum64Uint64] for this seed.
func (h Seeded) Sum64Uint64(v uint64) uint64 {
	s := h.state ^ 8
	a := bits.RotateLeft64(v, 32)
	hi, lo := bits.Mul64(a^k1^s, v^s^k2)
	return mix(lo^k0^8^s, hi^k1)
}

// Mix64 is a bijective finalizer: it scrambles a caller's 64-bit value (an
// integer key, or a hash of doubtful quality) so that every output bit depends
// on every input bit. Mix64(0) is 0.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
