package exactdedup

import (
	"github.com/dedupkit/cuckoo/internal/hash"
	"github.com/dedupkit/cuckoo/internal/hugepages"
	"github.com/dedupkit/cuckoo/internal/prefetch"
)

// The index of a scratch seen-set: a bucketized cuckoo hash table in RAM
// from a key's hash to the location of its record in the scratch log. A
// slot is one uint64:
//
//	 63              41   40   39                               0
//	+------------------+-------+----------------------------------+
//	| fragment (23)    | which | location (40 bits)               |
//	+------------------+-------+----------------------------------+
//
// location is the record's offset in the log plus one (0 is an empty
// slot), so the log may grow to 1 TiB. The table has 2^k buckets of 8
// slots (a cache line), filled in order and never emptied. A key's
// fragment is bits [k, k+fragBits) of its hash; its first bucket is the
// low k bits of the hash, its second the first XOR alt(fragment), which
// is odd, so the two differ and each is found from the other (which
// says which one the entry is in). A lookup compares the fragments in
// both buckets, so that a key reads the log only when an entry has its
// fragment: a key never seen, about 8 × load × 2^−fragBits of the time
// (the slots of its buckets whose which fits); a key seen before, once
// to confirm it. An insert takes a slot of the emptier
// bucket, or else moves entries to their other buckets along a random
// walk (cuckoo hashing), which succeeds far below the load at which the
// table doubles.
//
// # Growth
//
// When the table holds maxLoad of its slots, it doubles. k+fragBits
// stays the same: the fragment's first bit becomes the bucket number's
// new top bit. alt depends only on the fragment's top altBits bits, the
// same hash bits at every size, so an entry of bucket b goes to bucket b
// or b+2^k, with its which: doubling splits each bucket in two, in
// order, reading neither the log nor the keys, and never fails. The
// buckets live in chunks, so the new half is new chunks and the old half
// is split in place: the table is never held twice. Once the fragments
// would be shorter than minFrag bits, the table is rebuilt from the
// log's keys with whole fragments instead (scratch.rebuild).
//
// Memory: 8 bytes a slot, between maxLoad and half of it full: 9.4 to
// 19 bytes per key.
type index struct {
	// chunks hold the buckets, chunkBuckets each (one chunk of all the
	// buckets while there are fewer).
	chunks   [][]uint64
	k        uint   // log2 of the number of buckets
	fragBits uint   // valid bits of every fragment
	count    uint64 // entries
	limit    uint64 // entries at which the table doubles
	rng      uint64 // the walk's generator
}

const (
	bucketSlots = 8
	locBits     = 40
	locMask     = 1<<locBits - 1
	whichBit    = 1 << locBits
	fragShift   = locBits + 1
	maxFrag     = 64 - fragShift // 23
	minFrag     = 12
	altBits     = minFrag // the fragment's bits alt depends on
	// maxLoadNum/maxLoadDen is the load at which the table doubles.
	maxLoadNum, maxLoadDen = 85, 100
	minBuckets             = 10 // log2
	maxKicks               = 500
	// chunkShift is the log2 of the buckets in a chunk: 2 MiB, one huge
	// page (hugepages.Words), since the random lookups of a table of
	// several MiB in 4 KiB pages miss the TLB as well as the caches.
	chunkShift   = 15
	chunkBuckets = 1 << chunkShift
)

// newIndex returns an empty index of 2^k buckets.
func newIndex(k uint) *index {
	k = max(k, minBuckets)
	ix := &index{k: k, fragBits: maxFrag, rng: 0x9e3779b97f4a7c15}
	if k < chunkShift {
		ix.chunks = [][]uint64{make([]uint64, 1<<k*bucketSlots)}
	} else {
		for range 1 << (k - chunkShift) {
			ix.chunks = append(ix.chunks, hugepages.Words(chunkBuckets*bucketSlots))
		}
	}
	ix.setLimit()
	return ix
}

func (ix *index) setLimit() {
	ix.limit = uint64(1) << ix.k * bucketSlots * maxLoadNum / maxLoadDen
}

// bucketsFor returns the log2 of the buckets that hold n keys below the
// maximum load.
func bucketsFor(n uint64) uint {
	k := uint(minBuckets)
	for uint64(1)<<k*bucketSlots*maxLoadNum/maxLoadDen < n {
		k++
	}
	return k
}

func (ix *index) bytes() uint64 { return uint64(1) << ix.k * bucketSlots * 8 }

// locate returns the buckets and fragment of hash h.
func (ix *index) locate(h uint64) (b1, b2, frag uint64) {
	b1 = h & (1<<ix.k - 1)
	frag = h >> ix.k & (1<<ix.fragBits - 1)
	return b1, b1 ^ ix.alt(frag), frag
}

// alt is the XOR between the two buckets of a fragment: odd, below 2^k,
// from the fragment's top altBits bits.
func (ix *index) alt(frag uint64) uint64 { return ix.mix(frag)&(1<<ix.k-1) | 1 }

func (ix *index) mix(frag uint64) uint64 { return hash.Mix64(frag >> (ix.fragBits - altBits)) }

func (ix *index) bucket(b uint64) []uint64 {
	c := ix.chunks[b>>chunkShift]
	o := b & (chunkBuckets - 1) * bucketSlots
	return c[o : o+bucketSlots : o+bucketSlots]
}

// prefetch asks the CPU for the lines of h's buckets (a bucket is one
// line) and returns at once, so that a lookup a little later finds them
// in the cache. Unlike loads, the prefetches hold nothing up until they
// arrive: the work on the keys before h goes on meanwhile.
func (ix *index) prefetch(h uint64) {
	b1, b2, _ := ix.locate(h)
	ix.prefetchBucket(b1)
	ix.prefetchBucket(b2)
}

func (ix *index) prefetchBucket(b uint64) {
	at := [1]uint64{b & (chunkBuckets - 1) * bucketSlots}
	prefetch.Words(ix.chunks[b>>chunkShift], at[:])
}

// candidates appends to locs the locations of the entries with h's
// fragment in h's buckets: the records that may hold h's key.
func (ix *index) candidates(h uint64, locs []uint64) []uint64 {
	b1, b2, frag := ix.locate(h)
	for _, e := range ix.bucket(b1) {
		if e == 0 {
			break // slots fill in order
		}
		if e>>fragShift == frag && e&whichBit == 0 {
			locs = append(locs, e&locMask)
		}
	}
	for _, e := range ix.bucket(b2) {
		if e == 0 {
			break
		}
		if e>>fragShift == frag && e&whichBit != 0 {
			locs = append(locs, e&locMask)
		}
	}
	return locs
}

// insert adds an entry for hash h at location loc (never 0). It reports
// false when the table must grow first; the table is then as it was.
func (ix *index) insert(h, loc uint64) bool {
	if ix.count >= ix.limit {
		return false
	}
	b1, b2, frag := ix.locate(h)
	return ix.place(b1, b2, frag<<fragShift|loc)
}

// free returns the index of the first empty slot of bucket b, or -1.
func (ix *index) free(b uint64) int {
	for i, e := range ix.bucket(b) {
		if e == 0 {
			return i
		}
	}
	return -1
}

// place puts entry e (fragment and location; which is set here) into the
// emptier of buckets b1 and b2, or else moves entries to their other
// buckets to make room. It reports false, with the table as it was, when
// maxKicks moves found none.
func (ix *index) place(b1, b2, e uint64) bool {
	i1, i2 := ix.free(b1), ix.free(b2)
	switch {
	case i1 >= 0 && (i2 < 0 || i1 <= i2): // b1 has at least as many free slots
		ix.bucket(b1)[i1] = e
	case i2 >= 0:
		ix.bucket(b2)[i2] = e | whichBit
	default:
		return ix.walk(b1, b2, e)
	}
	ix.count++
	return true
}

// walk is place's random walk: e takes a random slot of one of its
// buckets, the entry there moves to its other bucket, and so on. On
// failure it undoes every move.
func (ix *index) walk(b1, b2, e uint64) bool {
	type move struct {
		b    uint64
		slot int
		old  uint64
	}
	var moves [maxKicks]move
	b, cur := b1, e
	if ix.next()&1 != 0 {
		b, cur = b2, e|whichBit
	}
	for n := range maxKicks {
		slot := int(ix.next() % bucketSlots)
		bucket := ix.bucket(b)
		moves[n] = move{b, slot, bucket[slot]}
		cur, bucket[slot] = bucket[slot], cur
		// cur moves to its other bucket, with which flipped.
		frag := cur >> fragShift
		b ^= ix.alt(frag)
		cur ^= whichBit
		if i := ix.free(b); i >= 0 {
			ix.bucket(b)[i] = cur
			ix.count++
			return true
		}
	}
	for n := maxKicks - 1; n >= 0; n-- {
		ix.bucket(moves[n].b)[moves[n].slot] = moves[n].old
	}
	return false
}

// next steps the walk's generator (xorshift64).
func (ix *index) next() uint64 {
	x := ix.rng
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	ix.rng = x
	return x
}

// double doubles the table, each fragment a bit shorter, and reports
// true; or false when the fragments are too short to give a bit, and the
// index must be rebuilt from the keys.
func (ix *index) double() bool {
	if ix.fragBits <= minFrag {
		return false
	}
	old := ix.k
	if old < chunkShift {
		c := make([]uint64, 2<<old*bucketSlots)
		copy(c, ix.chunks[0])
		ix.chunks[0] = c
	} else {
		for range 1 << (old - chunkShift) {
			ix.chunks = append(ix.chunks, hugepages.Words(chunkBuckets*bucketSlots))
		}
	}
	for b := range uint64(1) << old {
		bucket, high := ix.bucket(b), ix.bucket(b|1<<old)
		var lo, hi int // slots used in buckets b and b+2^k
		for _, e := range bucket {
			if e == 0 {
				break
			}
			frag := e >> fragShift
			// The new top bit of the first bucket's number is the
			// fragment's first; for the second bucket, XOR the new top
			// bit of alt.
			top := frag & 1
			if e&whichBit != 0 {
				top ^= ix.mix(frag) >> old & 1
			}
			e = frag>>1<<fragShift | e&(whichBit|locMask)
			if top == 0 {
				bucket[lo] = e
				lo++
			} else {
				high[hi] = e
				hi++
			}
		}
		clear(bucket[lo:])
	}
	ix.k++
	ix.fragBits--
	ix.setLimit()
	return true
}
