package table

import "github.com/dedupkit/cuckoo/internal/hash"

// The random walk's generator and its choice of slot, shared by every
// table kind that walks (a Filter's, a Window's).

// KickRand is the random walk's generator (xorshift64*), seeded from the
// key's hash so that a walk depends only on the table and the key.
type KickRand uint64

func NewKickRand(h uint64) KickRand { return KickRand(hash.Mix64(h) | 1) }

// Next returns the next random word.
func (r *KickRand) Next() uint64 {
	x := uint64(*r)
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	*r = KickRand(x)
	return x * 0x2545f4914f6cdd1d
}

// KickSlot returns the slot a walk's move takes, drawn from the random
// word r, for buckets of slots slots: the low bits of r's upper half for a
// power of two (so that those tables stay bit for bit what their encoded
// files hold), its upper bits scaled onto [0, slots) for any other size.
func KickSlot(r, slots uint64) uint64 {
	if slots&(slots-1) == 0 {
		return r >> 32 & (slots - 1)
	}
	return (r >> 32) * slots >> 32
}

// NewWalk returns the generator of the random walk for the key whose hash
// is h, whose buckets are i1 and i2, and the bucket the walk starts from
// (its first draw picks it).
func NewWalk(h, i1, i2 uint64) (rng KickRand, start uint64) {
	rng = NewKickRand(h)
	if rng.Next()&1 != 0 {
		return rng, i2
	}
	return rng, i1
}
