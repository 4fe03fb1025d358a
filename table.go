package cuckoo

import (
	"math/bits"
	"runtime"
	"unsafe"

	"github.com/dedupkit/cuckoo/internal/addr"
)

// table is the bucket array every filter of this package is built on:
// numBuckets buckets of slots fingerprints of fpBits bits each, packed
// back to back in a flat slice of words with no padding between slots or
// buckets. Slot s of bucket i occupies bits [pos, pos+fpBits) of the bit
// string, where pos = i*bucketBits + s*fpBits, bit k of the string being
// bit k%64 of words[k/64].
//
//	word 0                          word 1
//	|<---- bucket 0 ---->|<---- bucket 1 ---->|<-- ...
//	| s0 | s1 | s2 | s3  | s0 | s1 | s2 | s3  |
//	 f bits each, low bits first; a bucket may straddle two words
//
// A slot holding 0 is empty; fingerprints are never 0. Semi-sorted tables
// (semisort.go) pack a bucket of four fingerprints into 4f-4 bits instead.
//
// The methods without a prefix (holds, holdsEither, copies, slot, insert,
// replace, swap, unswap) work on either layout; plain* and semi* methods
// on one only. A growing table (growtable.go) stores tags, not
// fingerprints, in the same layout: to the table they are just values.
//
// Invariants:
//   - numBuckets is even and in [2, 2^32]: altIndex has no fixed point
//     and a bucket index fits in 32 bits.
//   - segments == 1, or numBuckets == segments*segBuckets with segBuckets a
//     multiple of 64: every segment starts on a word boundary, and its
//     bucket count is even.
//   - len(words) == ceil(numBuckets*bucketBits/64) + 1: the last word is
//     padding that is always zero, so a 64-bit window starting at any bit of
//     the table can be read with two loads and no bounds branch.
//   - every bit past numBuckets*bucketBits is zero.
type table struct {
	words      []uint64
	numBuckets uint64
	fpBits     uint64 // f, 4..32
	slots      uint64 // b: 1 to MaxBucketSize
	bucketBits uint64 // b*f, or 4f-4 semi-sorted
	fpMask     uint64 // 1<<f - 1
	// A table of several segments (WithSegments) keeps the two buckets of
	// a key in one segment of segBuckets buckets; segments == 1 otherwise.
	segments, segBuckets uint64

	// A plain bucket is read as one or more 64-bit windows of lanes: lanes
	// lanes of f bits (fewer in the last window), described by the masks of
	// laneMasks; the last* masks describe the last window of a bucket.
	windows                     uint64 // windows per bucket
	aligned                     bool   // windows == 1 and 64%bucketBits == 0: buckets never straddle words
	fastLookup                  bool   // see setFastLookup: Filter.ContainsHash's inlined path
	bucketShift                 uint64 // log2(bucketBits) when aligned: bucket i starts at bit i<<bucketShift
	bucketBytes                 uint64 // bucketBits/8 when aligned and bucketBits ≥ 8: bucket i starts at byte i*bucketBytes
	lanes                       uint64 // lanes per window but the last
	laneLow, laneHigh, laneRest uint64
	lastLow, lastHigh, lastRest uint64
	laneRecip                   uint64 // ceil(2^16/f): divides a bit index by f
	windowBits                  uint64 // lanes*f

	// Semi-sorted buckets (semisort.go): 4 slots, bucketBits = 4f-4, a
	// 12-bit nibble code then four high parts of highBits bits, described
	// by the highLow/highHigh/highRest lane masks.
	semi                        bool
	semiOneWindow               bool // bucketBits <= 64
	highBits, highMask          uint64
	highLow, highHigh, highRest uint64
}

// newTable returns an empty table, semi-sorted when semi is set (which
// requires 4 slots).
func newTable(numBuckets, slots, fpBits uint64, semi bool) table {
	t := tableLayout(numBuckets, slots, fpBits, semi)
	t.words = newWords(t.payloadWords() + 1)
	adviseHugePages(t.words)
	return t
}

// tableLayout returns a table's geometry and masks, without its words.
func tableLayout(numBuckets, slots, fpBits uint64, semi bool) table {
	t := table{
		numBuckets: numBuckets,
		fpBits:     fpBits,
		slots:      slots,
		bucketBits: slots * fpBits,
		fpMask:     1<<fpBits - 1,
		segments:   1,
	}
	t.lanes = min(slots, 64/fpBits)
	t.windows = (slots + t.lanes - 1) / t.lanes
	t.windowBits = t.lanes * fpBits
	t.laneLow, t.laneHigh, t.laneRest = laneMasks(t.lanes, fpBits)
	t.lastLow, t.lastHigh, t.lastRest = laneMasks(slots-(t.windows-1)*t.lanes, fpBits)
	t.laneRecip = (1<<16 + fpBits - 1) / fpBits
	t.aligned = t.windows == 1 && 64%t.bucketBits == 0
	if t.aligned {
		t.bucketShift = uint64(bits.TrailingZeros64(t.bucketBits))
		t.bucketBytes = t.bucketBits / 8
	}
	if semi {
		t.semiLayout()
	}
	t.setFastLookup()
	return t
}

// setFastLookup decides whether lookups take the inlined path: plain
// buckets that never straddle a word, one segment, and a bucket that
// bucketFast can read: a whole word, or (where unalignedLittleEndian
// holds) any whole number of bytes.
func (t *table) setFastLookup() {
	readable := t.bucketBits == 64 || t.bucketBits >= 8 && unalignedLittleEndian
	t.fastLookup = t.aligned && readable && !t.semi && t.segments == 1 && t.numBuckets > 0
}

// unalignedLittleEndian holds on the architectures where an 8-byte load at
// any byte offset neither faults nor costs much and sees the table's words
// in their bit order (little-endian): there bucketFast reads a bucket of
// 8, 16 or 32 bits at its own byte offset.
const unalignedLittleEndian = runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" ||
	runtime.GOARCH == "386" || runtime.GOARCH == "ppc64le"

// newWords returns n zero words for a table, in an allocation that no
// other object shares a cache line with (see cacheLine: it matters to a
// Concurrent, whose lookups read lines that other cores write).
func newWords(n uint64) []uint64 { return padded[uint64](n, 0) }

// segment splits t into n segments of numBuckets/n buckets (see the
// invariants for what n must satisfy).
func (t *table) segment(n uint64) {
	t.segments, t.segBuckets = n, t.numBuckets/n
	t.setFastLookup()
}

// payloadWords is the number of words the packed buckets take, padding
// word excluded.
func (t *table) payloadWords() uint64 {
	return (t.numBuckets*t.bucketBits + 63) / 64
}

// window returns the 64 bits of the table starting at bit p.
func (t *table) window(p uint64) uint64 { return loadWindow(t.words, p) }

// alignedBucket returns bucket i of a table whose buckets never straddle a
// word (bucketBits divides 64) in the low bits of the result: one load, and
// a shift instead of a multiplication to find it. The bits above the bucket
// are the next buckets of the word, or zero.
func (t *table) alignedBucket(i uint64) uint64 {
	p := i << (t.bucketShift & 63)
	return t.words[p>>6] >> (p & 63)
}

// bucketFast returns the 64 bits of the table that start at the first byte
// of bucket i: the bucket in the low bucketBits bits, the next buckets (or
// the padding word every table ends with) above. It needs fastLookup, and i
// below numBuckets; it has no bounds check, so that the lookup that inlines
// it reads both buckets with no branch, and it multiplies by bucketBytes
// rather than shifting by a variable amount, which on amd64 would tie up
// the one register such shifts take (CX) in the caller's loop.
func (t *table) bucketFast(i uint64) uint64 {
	return *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(t.words)), i*t.bucketBytes))
}

// holds reports whether bucket i holds fp.
func (t *table) holds(i, fp uint64) bool {
	if t.semi {
		return t.semiMatches(i, fp) != 0
	}
	return t.plainHolds(i, fp)
}

// holdsEither reports whether bucket i holds fi or bucket j holds fj (the
// two values differ in a growing table, whose tags carry bucket bits).
func (t *table) holdsEither(i, fi, j, fj uint64) bool {
	if t.semi {
		return t.semiMatches(i, fi)|t.semiMatches(j, fj) != 0
	}
	switch t.windows {
	case 1:
		x := t.window(i*t.bucketBits) ^ fi*t.laneLow
		y := t.window(j*t.bucketBits) ^ fj*t.laneLow
		return zeroLanes(x, t.laneRest, t.laneHigh)|zeroLanes(y, t.laneRest, t.laneHigh) != 0
	case 2:
		// Buckets of two windows (4 slots of 17..32 bits, as in the wider
		// tables of a Scalable, or 8 slots of 9..16): all four windows read
		// and tested without a branch, as in the one-window shapes; which
		// window matches is a coin flip a branch would mispredict.
		pi, pj := i*t.bucketBits, j*t.bucketBits
		first := zeroLanes(t.window(pi)^fi*t.laneLow, t.laneRest, t.laneHigh) |
			zeroLanes(t.window(pj)^fj*t.laneLow, t.laneRest, t.laneHigh)
		last := zeroLanes(t.window(pi+t.windowBits)^fi*t.lastLow, t.lastRest, t.lastHigh) |
			zeroLanes(t.window(pj+t.windowBits)^fj*t.lastLow, t.lastRest, t.lastHigh)
		return first|last != 0
	}
	return t.plainHolds(i, fi) || t.plainHolds(j, fj)
}

// copies returns how many slots of bucket i hold fp (fp 0: the empty
// slots).
func (t *table) copies(i, fp uint64) uint64 {
	if t.semi {
		return uint64(bits.OnesCount64(t.semiMatches(i, fp)))
	}
	return t.plainCopies(i, fp)
}

// slot returns the value in slot s of bucket i (0: empty). In a semi-sorted
// bucket slots are numbered in sorted order, so a write to the bucket may
// renumber them.
func (t *table) slot(i, s uint64) uint64 {
	if t.semi {
		return t.semiRead(i)[s&3]
	}
	return t.plainGet(i, s)
}

// insert puts fp in an empty slot of bucket i, and reports false when the
// bucket is full.
func (t *table) insert(i, fp uint64) bool {
	return t.replace(i, 0, fp)
}

// replace puts new in place of one copy of old in bucket i, and reports
// false when the bucket holds no old.
func (t *table) replace(i, old, new uint64) bool {
	if t.semi {
		// The SWAR match first: it is cheaper than decoding the bucket.
		return t.semiMatches(i, old) != 0 && t.semiReplace(i, old, new)
	}
	if t.aligned {
		// The bucket lies in one word: test its lanes for old in one SWAR
		// step and rewrite the lowest match in place.
		p := i << (t.bucketShift & 63)
		w := &t.words[p>>6]
		z := zeroLanes(*w>>(p&63)^old*t.laneLow, t.laneRest, t.laneHigh)
		if z == 0 {
			return false
		}
		sh := p&63 + laneStart(z, t.fpBits)
		*w = *w&^(t.fpMask<<sh) | new<<sh
		return true
	}
	s, ok := t.plainFind(i, old)
	if ok {
		t.plainSet(i, s, new)
	}
	return ok
}

// replaceEither is replace(i, old, new) || replace(j, old, new), with both
// buckets read before either is tested when each is one window: a
// fingerprint is in either of its buckets about as often (the placement
// rule in Filter.AddHash), so testing the first before reading the second
// would make a second cache miss wait for the first half of the time.
func (t *table) replaceEither(i, j, old, new uint64) bool {
	if t.windows != 1 || t.semi {
		return t.replace(i, old, new) || t.replace(j, old, new)
	}
	var p, q, wi, wj uint64
	if t.aligned {
		p, q = i<<(t.bucketShift&63), j<<(t.bucketShift&63)
		wi, wj = t.alignedBucket(i), t.alignedBucket(j)
	} else {
		p, q = i*t.bucketBits, j*t.bucketBits
		wi, wj = t.window(p), t.window(q)
	}
	rep := old * t.laneLow
	z := zeroLanes(wi^rep, t.laneRest, t.laneHigh)
	if z == 0 {
		p, z = q, zeroLanes(wj^rep, t.laneRest, t.laneHigh)
		if z == 0 {
			return false
		}
	}
	t.setSlotAt(p+laneStart(z, t.fpBits), new)
	return true
}

// swap puts v in slot s of bucket i and returns the value it displaced. In
// a semi-sorted bucket v takes its sorted place, and unswap is how to take
// it back.
func (t *table) swap(i, s, v uint64) uint64 {
	if t.semi {
		old := t.semiRead(i)[s&3]
		t.semiReplace(i, old, v)
		return old
	}
	old := t.plainGet(i, s)
	t.plainSet(i, s, v)
	return old
}

// unswap undoes swap(i, s, placed) == old, bucket i being as that swap left
// it: bit for bit the bucket is as before the swap.
func (t *table) unswap(i, s, placed, old uint64) {
	if t.semi {
		t.semiReplace(i, placed, old)
		return
	}
	t.plainSet(i, s, old)
}

// plainHolds is holds for a plain bucket: one SWAR step per window.
func (t *table) plainHolds(i, fp uint64) bool {
	p := i * t.bucketBits
	for w := uint64(0); w < t.windows-1; w++ {
		if zeroLanes(t.window(p)^fp*t.laneLow, t.laneRest, t.laneHigh) != 0 {
			return true
		}
		p += t.windowBits
	}
	return zeroLanes(t.window(p)^fp*t.lastLow, t.lastRest, t.lastHigh) != 0
}

// plainMatches returns, for window w of plain bucket i, the high bit of
// every lane holding fp.
func (t *table) plainMatches(i, w, fp uint64) uint64 {
	low, rest, high := t.laneLow, t.laneRest, t.laneHigh
	if w == t.windows-1 {
		low, rest, high = t.lastLow, t.lastRest, t.lastHigh
	}
	return zeroLanes(t.window(i*t.bucketBits+w*t.windowBits)^fp*low, rest, high)
}

// plainFind returns the lowest slot of plain bucket i holding fp (0: an
// empty slot).
func (t *table) plainFind(i, fp uint64) (slot uint64, ok bool) {
	for w := uint64(0); w < t.windows; w++ {
		if z := t.plainMatches(i, w, fp); z != 0 {
			return w*t.lanes + uint64(bits.TrailingZeros64(z))*t.laneRecip>>16, true
		}
	}
	return 0, false
}

// plainCopies returns how many slots of plain bucket i hold fp.
func (t *table) plainCopies(i, fp uint64) uint64 {
	var n int
	for w := uint64(0); w < t.windows; w++ {
		n += bits.OnesCount64(t.plainMatches(i, w, fp))
	}
	return uint64(n)
}

// plainGet returns the value in slot s of plain bucket i (0 when empty).
func (t *table) plainGet(i, s uint64) uint64 {
	if t.aligned {
		return t.alignedBucket(i) >> (s * t.fpBits & 63) & t.fpMask
	}
	return t.window(i*t.bucketBits+s*t.fpBits) & t.fpMask
}

// plainSet stores v in slot s of plain bucket i.
func (t *table) plainSet(i, s, v uint64) {
	t.setSlotAt(i*t.bucketBits+s*t.fpBits, v)
}

// setSlotAt stores v in the slot of a plain table that starts at bit p: in
// one word when buckets never straddle words (one load and one store, where
// storeBits makes two of each).
func (t *table) setSlotAt(p, v uint64) {
	if t.aligned {
		w := &t.words[p>>6]
		*w = *w&^(t.fpMask<<(p&63)) | v<<(p&63)
		return
	}
	storeBits(t.words, p, t.fpMask, v)
}

// laneStart returns the offset in its window of the lowest lane flagged in
// z (a zeroLanes result) for lanes of f bits: a lane's flag is its high
// bit, so the lane starts f-1 bits below it.
func laneStart(z, f uint64) uint64 {
	return uint64(bits.TrailingZeros64(z)) + 1 - f
}

// locate splits a key's hash into its first bucket and its fingerprint
// (addr.Bucket and addr.Fingerprint: the high 32 bits give the bucket, the
// low 32 the fingerprint, so the two do not overlap).
func (t *table) locate(h uint64) (bucket, fp uint64) {
	return addr.Bucket(h, t.numBuckets), addr.Fingerprint(h, t.fpMask)
}

// altIndex returns the other bucket of a fingerprint fp stored in bucket i.
// It is an involution, altIndex(altIndex(i, fp), fp) == i, and the two
// buckets always differ (see addr.Alt). In a table of several segments
// (WithSegments) both buckets lie in i's segment.
func (t *table) altIndex(i, fp uint64) uint64 {
	if t.segments == 1 {
		return addr.Alt(i, fp, t.numBuckets)
	}
	base := i / t.segBuckets * t.segBuckets
	return base + addr.Alt(i-base, fp, t.segBuckets)
}

// pairKey identifies the unordered bucket pair {i, j} (j = altIndex(i, fp))
// together with fp: the key of the duplicate and overflow counters.
func pairKey(i, j, fp uint64) uint64 {
	return min(i, j)<<32 | fp
}

// occupiedSlots counts the non-empty slots of the whole table.
func (t *table) occupiedSlots() uint64 {
	var n uint64
	for i := uint64(0); i < t.numBuckets; i++ {
		n += t.slots - t.copies(i, 0)
	}
	return n
}

func (t *table) reset() { clear(t.words) }
