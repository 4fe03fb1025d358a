package table

import (
	"math/bits"
	"runtime"
	"unsafe"

	"github.com/dedupkit/cuckoo/internal/addr"
	"github.com/dedupkit/cuckoo/internal/hugepages"
)

// Table is the bucket array every filter of this package is built on:
// NumBuckets buckets of slots fingerprints of FPBits bits each, packed
// back to back in a flat slice of words with no padding between slots or
// buckets. Slot s of bucket i occupies bits [pos, pos+FPBits) of the bit
// string, where pos = i*BucketBits + s*FPBits, bit k of the string being
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
// The methods without a prefix (Holds, HoldsEither, Copies, Slot, Insert,
// Replace, Swap, Unswap) work on either layout; Plain* and semi* methods
// on one only. A Scalable's growing table (chain.Growing) stores tags, not
// fingerprints, in the same layout: to the table they are just values.
//
// Invariants:
//   - NumBuckets is even and in [2, 2^32]: AltIndex has no fixed point
//     and a bucket index fits in 32 bits.
//   - segments == 1, or NumBuckets == segments*segBuckets with segBuckets a
//     multiple of 64: every segment starts on a word boundary, and its
//     bucket count is even.
//   - len(words) == ceil(NumBuckets*BucketBits/64) + 1: the last word is
//     padding that is always zero, so a 64-bit window starting at any bit of
//     the table can be read with two loads and no bounds branch.
//   - every bit past NumBuckets*BucketBits is zero.
type Table struct {
	Words      []uint64
	NumBuckets uint64
	FPBits     uint64 // f, 4..32
	Slots      uint64 // b: 1 to MaxBucketSize
	BucketBits uint64 // b*f, or 4f-4 semi-sorted
	FPMask     uint64 // 1<<f - 1
	// A table of several segments (WithSegments) keeps the two buckets of
	// a key in one segment of segBuckets buckets; segments == 1 otherwise.
	Segments, segBuckets uint64

	// A plain bucket is read as one or more 64-bit windows of lanes: lanes
	// lanes of f bits (fewer in the last window), described by the masks of
	// LaneMasks; the last* masks describe the last window of a bucket.
	Windows                     uint64 // windows per bucket
	Aligned                     bool   // windows == 1 and 64%bucketBits == 0: buckets never straddle words
	FastLookup                  bool   // see setFastLookup: Filter.ContainsHash's inlined path
	BucketShift                 uint64 // log2(bucketBits) when aligned: bucket i starts at bit i<<bucketShift
	bucketBytes                 uint64 // bucketBits/8 when aligned and bucketBits ≥ 8: bucket i starts at byte i*bucketBytes
	Lanes                       uint64 // lanes per window but the last
	LaneLow, LaneHigh, LaneRest uint64
	LastLow, LastHigh, LastRest uint64
	LaneRecip                   uint64 // ceil(2^16/f): divides a bit index by f
	WindowBits                  uint64 // lanes*f

	// Semi-sorted buckets (semisort.go): 4 slots, BucketBits = 4f-4, a
	// 12-bit nibble code then four high parts of highBits bits, described
	// by the highLow/highHigh/highRest lane masks.
	Semi                        bool
	SemiOneWindow               bool // bucketBits <= 64
	highBits, highMask          uint64
	highLow, highHigh, highRest uint64
}

// New returns an empty table, semi-sorted when semi is set (which
// requires 4 slots).
func New(numBuckets, slots, fpBits uint64, semi bool) Table {
	t := Layout(numBuckets, slots, fpBits, semi)
	t.Words = NewWords(t.PayloadWords() + 1)
	hugepages.Advise(t.Words)
	return t
}

// Layout returns a table's geometry and masks, without its words.
func Layout(numBuckets, slots, fpBits uint64, semi bool) Table {
	t := Table{
		NumBuckets: numBuckets,
		FPBits:     fpBits,
		Slots:      slots,
		BucketBits: slots * fpBits,
		FPMask:     1<<fpBits - 1,
		Segments:   1,
	}
	t.Lanes = min(slots, 64/fpBits)
	t.Windows = (slots + t.Lanes - 1) / t.Lanes
	t.WindowBits = t.Lanes * fpBits
	t.LaneLow, t.LaneHigh, t.LaneRest = LaneMasks(t.Lanes, fpBits)
	t.LastLow, t.LastHigh, t.LastRest = LaneMasks(slots-(t.Windows-1)*t.Lanes, fpBits)
	t.LaneRecip = (1<<16 + fpBits - 1) / fpBits
	t.Aligned = t.Windows == 1 && 64%t.BucketBits == 0
	if t.Aligned {
		t.BucketShift = uint64(bits.TrailingZeros64(t.BucketBits))
		t.bucketBytes = t.BucketBits / 8
	}
	if semi {
		t.semiLayout()
	}
	t.SetFastLookup()
	return t
}

// SetFastLookup decides whether lookups take the inlined path: plain
// buckets that never straddle a word, one segment, and a bucket that
// BucketFast can read: a whole word, or (where UnalignedLittleEndian
// holds) any whole number of bytes.
func (t *Table) SetFastLookup() {
	readable := t.BucketBits == 64 || t.BucketBits >= 8 && UnalignedLittleEndian
	t.FastLookup = t.Aligned && readable && !t.Semi && t.Segments == 1 && t.NumBuckets > 0
}

// UnalignedLittleEndian holds on the architectures where an 8-byte load at
// any byte offset neither faults nor costs much and sees the table's words
// in their bit order (little-endian): there BucketFast reads a bucket of
// 8, 16 or 32 bits at its own byte offset.
const UnalignedLittleEndian = runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" ||
	runtime.GOARCH == "386" || runtime.GOARCH == "ppc64le"

// NewWords returns n zero words for a table, in an allocation that no
// other object shares a cache line with (see CacheLine: it matters to a
// Concurrent, whose lookups read lines that other cores write).
func NewWords(n uint64) []uint64 { return Padded[uint64](n, 0) }

// Segment splits t into n segments of NumBuckets/n buckets (see the
// invariants for what n must satisfy).
func (t *Table) Segment(n uint64) {
	t.Segments, t.segBuckets = n, t.NumBuckets/n
	t.SetFastLookup()
}

// PayloadWords is the number of words the packed buckets take, padding
// word excluded.
func (t *Table) PayloadWords() uint64 {
	return (t.NumBuckets*t.BucketBits + 63) / 64
}

// Window returns the 64 bits of the table starting at bit p.
func (t *Table) Window(p uint64) uint64 { return LoadWindow(t.Words, p) }

// windowPair returns the two windows of the plain bucket of two windows
// (Windows == 2) that starts at bit p: its first lanes, and its last
// lanes from bit 0, each with the next bits of the table above them.
// Such a bucket has more than 64 bits and at most 128, so the three words
// from p's hold it whole, and the table's padding word keeps them inside
// the table. The shifts are split as in LoadWindow.
func (t *Table) windowPair(p uint64) (first, last uint64) {
	w := t.Words[p>>6:]
	s := p & 63
	lo := w[0]>>s | w[1]<<1<<(63-s)
	hi := w[1]>>s | w[2]<<1<<(63-s)
	wb := t.WindowBits - 1 // 0 to 63
	return lo, lo>>wb>>1 | hi<<(63-wb)
}

// LastReadWord is the index of the last word the reads of a bucket of
// bucketBits bits at bit p touch: LoadWindow's second word (a bucket of
// at most 64 bits), windowPair's third (of at most 128, which also
// covers the 16 bytes from p's byte that the chain's lookups read), or
// the bucket's own last word. A prefetch of a bucket that may straddle
// words asks for this word's line as well as p's: about one bucket of
// 72 bits in four touches two lines, and the insert after a lookup would
// otherwise wait on the line the prefetch left out. A table's padding
// word keeps it an index of the table's words.
func LastReadWord(p, bucketBits uint64) uint64 {
	switch {
	case bucketBits <= 64:
		return p>>6 + 1
	case bucketBits <= 128:
		return p>>6 + 2
	}
	return (p + bucketBits - 1) >> 6
}

// AlignedBucket returns bucket i of a table whose buckets never straddle a
// word (BucketBits divides 64) in the low bits of the result: one load, and
// a shift instead of a multiplication to find it. The bits above the bucket
// are the next buckets of the word, or zero.
func (t *Table) AlignedBucket(i uint64) uint64 {
	p := i << (t.BucketShift & 63)
	return t.Words[p>>6] >> (p & 63)
}

// BucketFast returns the 64 bits of the table that start at the first byte
// of bucket i: the bucket in the low BucketBits bits, the next buckets (or
// the padding word every table ends with) above. It needs FastLookup, and i
// below NumBuckets; it has no bounds check, so that the lookup that inlines
// it reads both buckets with no branch, and it multiplies by bucketBytes
// rather than shifting by a variable amount, which on amd64 would tie up
// the one register such shifts take (CX) in the caller's loop.
func (t *Table) BucketFast(i uint64) uint64 {
	return *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(t.Words)), i*t.bucketBytes))
}

// Holds reports whether bucket i holds fp.
func (t *Table) Holds(i, fp uint64) bool {
	if t.Semi {
		return t.semiMatches(i, fp) != 0
	}
	return t.plainHolds(i, fp)
}

// HoldsEither reports whether bucket i holds fi or bucket j holds fj (the
// two values differ in a growing table, whose tags carry bucket bits).
func (t *Table) HoldsEither(i, fi, j, fj uint64) bool {
	if t.Semi {
		return t.semiMatches(i, fi)|t.semiMatches(j, fj) != 0
	}
	switch t.Windows {
	case 1:
		x := t.Window(i*t.BucketBits) ^ fi*t.LaneLow
		y := t.Window(j*t.BucketBits) ^ fj*t.LaneLow
		return ZeroLanes(x, t.LaneRest, t.LaneHigh)|ZeroLanes(y, t.LaneRest, t.LaneHigh) != 0
	case 2:
		// Buckets of two windows (4 slots of 17..32 bits, as in the wider
		// tables of a Scalable, or 8 slots of 9..16): all four windows read
		// and tested without a branch, as in the one-window shapes; which
		// window matches is a coin flip a branch would mispredict.
		pi, pj := i*t.BucketBits, j*t.BucketBits
		first := ZeroLanes(t.Window(pi)^fi*t.LaneLow, t.LaneRest, t.LaneHigh) |
			ZeroLanes(t.Window(pj)^fj*t.LaneLow, t.LaneRest, t.LaneHigh)
		last := ZeroLanes(t.Window(pi+t.WindowBits)^fi*t.LastLow, t.LastRest, t.LastHigh) |
			ZeroLanes(t.Window(pj+t.WindowBits)^fj*t.LastLow, t.LastRest, t.LastHigh)
		return first|last != 0
	}
	return t.plainHolds(i, fi) || t.plainHolds(j, fj)
}

// Copies returns how many slots of bucket i hold fp (fp 0: the empty
// slots).
func (t *Table) Copies(i, fp uint64) uint64 {
	if t.Semi {
		return uint64(bits.OnesCount64(t.semiMatches(i, fp)))
	}
	return t.plainCopies(i, fp)
}

// Slot returns the value in slot s of bucket i (0: empty). In a semi-sorted
// bucket slots are numbered in sorted order, so a write to the bucket may
// renumber them.
func (t *Table) Slot(i, s uint64) uint64 {
	if t.Semi {
		return t.semiRead(i)[s&3]
	}
	return t.plainGet(i, s)
}

// Insert puts fp in an empty slot of bucket i, and reports false when the
// bucket is full.
func (t *Table) Insert(i, fp uint64) bool {
	return t.Replace(i, 0, fp)
}

// Replace puts new in place of one copy of old in bucket i, and reports
// false when the bucket holds no old.
func (t *Table) Replace(i, old, new uint64) bool {
	if t.Semi {
		// The SWAR match first: it is cheaper than decoding the bucket.
		return t.semiMatches(i, old) != 0 && t.semiReplace(i, old, new)
	}
	if t.Aligned {
		// The bucket lies in one word: test its lanes for old in one SWAR
		// step and rewrite the lowest match in place.
		p := i << (t.BucketShift & 63)
		w := &t.Words[p>>6]
		z := ZeroLanes(*w>>(p&63)^old*t.LaneLow, t.LaneRest, t.LaneHigh)
		if z == 0 {
			return false
		}
		sh := p&63 + LaneStart(z, t.FPBits)
		*w = *w&^(t.FPMask<<sh) | new<<sh
		return true
	}
	if t.Windows == 2 {
		// Both windows read before either is tested, as in Add.
		p := i * t.BucketBits
		w0, w1 := t.windowPair(p)
		z0 := ZeroLanes(w0^old*t.LaneLow, t.LaneRest, t.LaneHigh)
		z1 := ZeroLanes(w1^old*t.LastLow, t.LastRest, t.LastHigh)
		switch {
		case z0 != 0:
			p += LaneStart(z0, t.FPBits)
		case z1 != 0:
			p += t.WindowBits + LaneStart(z1, t.FPBits)
		default:
			return false
		}
		StoreBits(t.Words, p, t.FPMask, new)
		return true
	}
	s, ok := t.plainFind(i, old)
	if ok {
		t.PlainSet(i, s, new)
	}
	return ok
}

// ReplaceEither is replace(i, old, new) || replace(j, old, new), with both
// buckets read before either is tested when each is one window: a
// fingerprint is in either of its buckets about as often (the placement
// rule in Add), so testing the first before reading the second
// would make a second cache miss wait for the first half of the time.
func (t *Table) ReplaceEither(i, j, old, new uint64) bool {
	if t.Windows != 1 || t.Semi {
		return t.Replace(i, old, new) || t.Replace(j, old, new)
	}
	var p, q, wi, wj uint64
	if t.Aligned {
		p, q = i<<(t.BucketShift&63), j<<(t.BucketShift&63)
		wi, wj = t.AlignedBucket(i), t.AlignedBucket(j)
	} else {
		p, q = i*t.BucketBits, j*t.BucketBits
		wi, wj = t.Window(p), t.Window(q)
	}
	rep := old * t.LaneLow
	z := ZeroLanes(wi^rep, t.LaneRest, t.LaneHigh)
	if z == 0 {
		p, z = q, ZeroLanes(wj^rep, t.LaneRest, t.LaneHigh)
		if z == 0 {
			return false
		}
	}
	t.SetSlotAt(p+LaneStart(z, t.FPBits), new)
	return true
}

// Swap puts v in slot s of bucket i and returns the value it displaced. In
// a semi-sorted bucket v takes its sorted place, and unswap is how to take
// it back.
func (t *Table) Swap(i, s, v uint64) uint64 {
	if t.Semi {
		old := t.semiRead(i)[s&3]
		t.semiReplace(i, old, v)
		return old
	}
	old := t.plainGet(i, s)
	t.PlainSet(i, s, v)
	return old
}

// Unswap undoes swap(i, s, placed) == old, bucket i being as that swap left
// it: bit for bit the bucket is as before the swap.
func (t *Table) Unswap(i, s, placed, old uint64) {
	if t.Semi {
		t.semiReplace(i, placed, old)
		return
	}
	t.PlainSet(i, s, old)
}

// plainHolds is holds for a plain bucket: one SWAR step per window.
func (t *Table) plainHolds(i, fp uint64) bool {
	p := i * t.BucketBits
	for w := uint64(0); w < t.Windows-1; w++ {
		if ZeroLanes(t.Window(p)^fp*t.LaneLow, t.LaneRest, t.LaneHigh) != 0 {
			return true
		}
		p += t.WindowBits
	}
	return ZeroLanes(t.Window(p)^fp*t.LastLow, t.LastRest, t.LastHigh) != 0
}

// plainMatches returns, for window w of plain bucket i, the high bit of
// every lane holding fp.
func (t *Table) plainMatches(i, w, fp uint64) uint64 {
	low, rest, high := t.LaneLow, t.LaneRest, t.LaneHigh
	if w == t.Windows-1 {
		low, rest, high = t.LastLow, t.LastRest, t.LastHigh
	}
	return ZeroLanes(t.Window(i*t.BucketBits+w*t.WindowBits)^fp*low, rest, high)
}

// plainFind returns the lowest slot of plain bucket i holding fp (0: an
// empty slot).
func (t *Table) plainFind(i, fp uint64) (slot uint64, ok bool) {
	for w := uint64(0); w < t.Windows; w++ {
		if z := t.plainMatches(i, w, fp); z != 0 {
			return w*t.Lanes + uint64(bits.TrailingZeros64(z))*t.LaneRecip>>16, true
		}
	}
	return 0, false
}

// plainCopies returns how many slots of plain bucket i hold fp.
func (t *Table) plainCopies(i, fp uint64) uint64 {
	var n int
	for w := uint64(0); w < t.Windows; w++ {
		n += bits.OnesCount64(t.plainMatches(i, w, fp))
	}
	return uint64(n)
}

// plainGet returns the value in slot s of plain bucket i (0 when empty).
func (t *Table) plainGet(i, s uint64) uint64 {
	if t.Aligned {
		return t.AlignedBucket(i) >> (s * t.FPBits & 63) & t.FPMask
	}
	return t.Window(i*t.BucketBits+s*t.FPBits) & t.FPMask
}

// PlainSet stores v in slot s of plain bucket i.
func (t *Table) PlainSet(i, s, v uint64) {
	t.SetSlotAt(i*t.BucketBits+s*t.FPBits, v)
}

// SetSlotAt stores v in the slot of a plain table that starts at bit p: in
// one word when buckets never straddle words (one load and one store, where
// StoreBits makes two of each).
func (t *Table) SetSlotAt(p, v uint64) {
	if t.Aligned {
		w := &t.Words[p>>6]
		*w = *w&^(t.FPMask<<(p&63)) | v<<(p&63)
		return
	}
	StoreBits(t.Words, p, t.FPMask, v)
}

// LaneStart returns the offset in its window of the lowest lane flagged in
// z (a ZeroLanes result) for lanes of f bits: a lane's flag is its high
// bit, so the lane starts f-1 bits below it.
func LaneStart(z, f uint64) uint64 {
	return uint64(bits.TrailingZeros64(z)) + 1 - f
}

// Locate splits a key's hash into its first bucket and its fingerprint
// (addr.Bucket and addr.Fingerprint: the high 32 bits give the bucket, the
// low 32 the fingerprint, so the two do not overlap).
func (t *Table) Locate(h uint64) (bucket, fp uint64) {
	return addr.Bucket(h, t.NumBuckets), addr.Fingerprint(h, t.FPMask)
}

// Pair returns the two buckets and the fingerprint of the key whose hash
// is h.
func (t *Table) Pair(h uint64) (i1, i2, fp uint64) {
	i1, fp = t.Locate(h)
	return i1, t.AltIndex(i1, fp), fp
}

// AltIndex returns the other bucket of a fingerprint fp stored in bucket i.
// It is an involution, AltIndex(AltIndex(i, fp), fp) == i, and the two
// buckets always differ (see addr.Alt). In a table of several segments
// (WithSegments) both buckets lie in i's segment.
func (t *Table) AltIndex(i, fp uint64) uint64 {
	if t.Segments == 1 {
		return addr.Alt(i, fp, t.NumBuckets)
	}
	base := i / t.segBuckets * t.segBuckets
	return base + addr.Alt(i-base, fp, t.segBuckets)
}

// PairKey identifies the unordered bucket pair {i, j} (j = AltIndex(i, fp))
// together with fp: the key of the duplicate and overflow counters.
func PairKey(i, j, fp uint64) uint64 {
	return min(i, j)<<32 | fp
}

// OccupiedSlots counts the non-empty slots of the whole table.
func (t *Table) OccupiedSlots() uint64 {
	var n uint64
	for i := uint64(0); i < t.NumBuckets; i++ {
		n += t.Slots - t.Copies(i, 0)
	}
	return n
}

func (t *Table) Reset() { clear(t.Words) }

// Contains reports whether the table holds the fingerprint of the key
// whose hash is h in one of the key's buckets: always for a key added and
// not deleted, with the false-positive probability for any other. The
// zero Table holds nothing.
func (t *Table) Contains(h uint64) bool {
	if !t.FastLookup {
		return t.containsGeneral(h)
	}
	// The common shapes (FastLookup: plain buckets of 8 to 64 bits that
	// never straddle a word, one segment; 4 × 8 and 4 × 16 among them):
	// both bucket words are loaded before anything is compared,
	// with no call, no branch and no bounds check between the hash and the
	// loads, so that the CPU can keep the cache misses of many lookups in
	// flight. The test is the classic any-zero-lane one: (x − low) &^ x &
	// high is non-zero exactly when some lane of x is zero (a borrow only
	// runs up from a zero lane, so only lanes above a true zero can be
	// reported falsely), which is all a lookup asks. The bits above a
	// bucket of fewer than 64 bits are the next buckets', outside the high
	// mask.
	m, low := t.NumBuckets, t.LaneLow
	fp := addr.Fingerprint(h, t.FPMask)
	i1 := addr.Bucket(h, m)
	i2 := addr.Alt(i1, fp, m)
	x := t.BucketFast(i1) ^ fp*low
	y := t.BucketFast(i2) ^ fp*low
	return ((x-low)&^x|(y-low)&^y)&t.LaneHigh != 0
}

// containsGeneral is Contains for every other shape.
func (t *Table) containsGeneral(h uint64) bool {
	if t.NumBuckets == 0 {
		return false
	}
	i1, fp := t.Locate(h)
	i2 := t.AltIndex(i1, fp)
	switch {
	case t.Aligned:
		rep := fp * t.LaneLow
		x := t.AlignedBucket(i1) ^ rep
		y := t.AlignedBucket(i2) ^ rep
		return ZeroLanes(x, t.LaneRest, t.LaneHigh)|ZeroLanes(y, t.LaneRest, t.LaneHigh) != 0
	case t.SemiOneWindow:
		// Both buckets read before either is decoded.
		return t.SemiHasEither(t.Window(i1*t.BucketBits), t.Window(i2*t.BucketBits), fp)
	}
	return t.HoldsEither(i1, fp, i2, fp)
}
