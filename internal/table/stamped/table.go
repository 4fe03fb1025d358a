package stamped

import (
	"fmt"
	"math/bits"

	"github.com/dedupkit/cuckoo/internal/addr"
	"github.com/dedupkit/cuckoo/internal/hugepages"
	"github.com/dedupkit/cuckoo/internal/prefetch"
	"github.com/dedupkit/cuckoo/internal/table"
)

// AgeBits is the width of a slot's stamp, and Stamps the number of stamp
// values. Frozen: the encoding records them.
const (
	AgeBits = 4
	Stamps  = 1 << AgeBits
)

// Table is the table of a Window (the root package's): numBuckets buckets of b slots packed
// back to back as in the engine's table (bucket i at bits [i·B, (i+1)·B) of
// the bit string in words, B = b·s, no padding), each slot s = f + 4 bits:
// its stamp in the low 4 bits, its fingerprint in the f bits above.
//
//	bit 0        4             4+f = s
//	| stamp      | fingerprint |          one slot
//
// A slot holding 0 is empty (a fingerprint is never 0, and an empty slot's
// stamp is 0 too). A bucket is read as windows of 64 bits that hold whole
// slots, lanes slots each (the last window the rest), so that one SWAR step
// compares a fingerprint with the upper bits of every lane of a window and
// tests the stamps in their low bits: with the default shape (b = 4,
// f = 12) a bucket is one 16-bit lane per slot, one word in all.
//
// What a stamp means (live, expired) depends on the Window's epoch; the
// table only stores and compares them (the root package's window.go
// explains the ages), and is told the stamp of the current epoch (now) and
// the stamp of the entries that expired in it (expired), whose slots an
// insert may take.
//
// Invariants:
//   - numBuckets is even and in [2, 2^32]; len(words) ==
//     ceil(numBuckets·B/64) + 1, the last word padding that stays zero;
//     every bit past numBuckets·B is zero.
//   - an empty slot is all zero; stamps[v] is the number of non-empty
//     slots whose stamp is v.
type Table struct {
	words      []uint64
	numBuckets uint64
	slots      uint64 // b: 2, 4 or 8
	fpBits     uint64 // f
	fpMask     uint64 // 1<<f - 1
	slotBits   uint64 // s = f + AgeBits, 8..32
	slotMask   uint64 // 1<<s - 1
	bucketBits uint64 // B = b·s
	windows    uint64 // windows per bucket
	lanes      uint64 // slots per window but the last
	windowBits uint64 // lanes·s
	aligned    bool   // B == 64: bucket i is words[i]
	laneRecip  uint64 // ceil(2^16/s): divides a bit index within a window by s
	youngShift uint64 // s − AgeBits − 1: from a lane's high bit to its guard bit (Young)
	full, last laneSet
	stamps     [Stamps]uint64 // non-empty slots by stamp
	sc         scratch        // of its inserts
}

// laneSet holds the masks of a window of lanes of s bits from bit 0.
type laneSet struct {
	low, high, rest uint64 // laneMasks
	stamp           uint64 // the stamp bits of every lane: 15·low
	fp              uint64 // the fingerprint bits of every lane
	guard           uint64 // the lowest fingerprint bit of every lane: 16·low
}

func newLaneSet(lanes, s uint64) laneSet {
	low, high, rest := table.LaneMasks(lanes, s)
	return laneSet{low: low, high: high, rest: rest,
		stamp: (Stamps - 1) * low, fp: (high | rest) &^ ((Stamps - 1) * low), guard: Stamps * low}
}

// Layout returns the geometry of a table, without its words.
func Layout(numBuckets, slots, fpBits uint64) Table {
	s := fpBits + AgeBits
	t := Table{
		numBuckets: numBuckets,
		slots:      slots,
		fpBits:     fpBits,
		fpMask:     1<<fpBits - 1,
		slotBits:   s,
		slotMask:   1<<s - 1,
		bucketBits: slots * s,
		lanes:      min(slots, 64/s),
		laneRecip:  (1<<16 + s - 1) / s,
		youngShift: s - AgeBits - 1,
	}
	t.windows = (slots + t.lanes - 1) / t.lanes
	t.windowBits = t.lanes * s
	t.aligned = t.bucketBits == 64
	t.full = newLaneSet(t.lanes, s)
	t.last = newLaneSet(slots-(t.windows-1)*t.lanes, s)
	return t
}

func New(numBuckets, slots, fpBits uint64) Table {
	t := Layout(numBuckets, slots, fpBits)
	t.words = table.NewWords(t.PayloadWords() + 1)
	hugepages.Advise(t.words)
	return t
}

// Locator returns the table's addressing for a batch's pipeline.
func (t *Table) Locator() table.Locator {
	return table.NewLocator(t.words, t.numBuckets, t.fpMask, t.bucketBits)
}

// PayloadWords is the number of words the buckets take, padding excluded.
func (t *Table) PayloadWords() uint64 { return (t.numBuckets*t.bucketBits + 63) / 64 }

// Load makes words (PayloadWords of them and the padding word, as
// decoded) the table's, counting the stamps; the caller checks it
// (Validate).
func (t *Table) Load(words []uint64) {
	t.words = words
	t.stamps = [Stamps]uint64{}
	for i := range t.numBuckets {
		for j := range t.slots {
			if v := t.get(i, j); v != 0 {
				t.stamps[v&(Stamps-1)]++
			}
		}
	}
}

// Words returns the table's words, the padding word last.
func (t *Table) Words() []uint64 { return t.words }

// NumBuckets returns the number of buckets.
func (t *Table) NumBuckets() uint64 { return t.numBuckets }

// Slots returns the slots of a bucket.
func (t *Table) Slots() uint64 { return t.slots }

// FPBits returns the fingerprint width (each slot holds AgeBits more).
func (t *Table) FPBits() uint64 { return t.fpBits }

// Stamps returns how many non-empty slots hold each stamp.
func (t *Table) Stamps() [Stamps]uint64 { return t.stamps }

// Bytes returns the memory the table holds: its words and its inserts'
// scratch.
func (t *Table) Bytes() uint64 { return uint64(len(t.words))*8 + t.sc.bytes() }

// Pair returns the two buckets and the fingerprint of the key whose hash
// is h (Locate and AltIndex).
func (t *Table) Pair(h uint64) (i1, i2, fp uint64) {
	i1, fp = t.Locate(h)
	return i1, t.AltIndex(i1, fp), fp
}

// Slot returns the fingerprint and the stamp in slot j of bucket i.
func (t *Table) Slot(i, j uint64) (fp, stamp uint64) {
	v := t.get(i, j)
	return v >> AgeBits, v & (Stamps - 1)
}

// SlotOffset is the bit offset of slot j of bucket i in the words: its
// stamp's lowest bit.
func (t *Table) SlotOffset(i, j uint64) uint64 { return i*t.bucketBits + j*t.slotBits }

// Locate returns a hash's first bucket and fingerprint (as a Filter's).
func (t *Table) Locate(h uint64) (bucket, fp uint64) {
	return addr.Bucket(h, t.numBuckets), addr.Fingerprint(h, t.fpMask)
}

// AltIndex returns the other bucket of fingerprint fp in bucket i.
func (t *Table) AltIndex(i, fp uint64) uint64 { return addr.Alt(i, fp, t.numBuckets) }

// window returns window w of bucket i in its low bits (the bits above its
// lanes belong to the next window or bucket).
func (t *Table) window(i, w uint64) uint64 {
	if t.aligned {
		return t.words[i]
	}
	return table.LoadWindow(t.words, i*t.bucketBits+w*t.windowBits)
}

// lanesOf returns the masks of window w.
func (t *Table) lanesOf(w uint64) *laneSet {
	if w == t.windows-1 {
		return &t.last
	}
	return &t.full
}

// slotAt returns the slot index of the lowest lane flagged in z (a
// table.ZeroLanes result: a lane's flag is its high bit) of window w.
func (t *Table) slotAt(w, z uint64) uint64 {
	return w*t.lanes + uint64(bits.TrailingZeros64(z))*t.laneRecip>>16
}

// get returns the value of slot j of bucket i.
func (t *Table) get(i, j uint64) uint64 {
	return table.LoadWindow(t.words, i*t.bucketBits+j*t.slotBits) & t.slotMask
}

// set stores v in slot j of bucket i.
func (t *Table) set(i, j, v uint64) {
	p := i*t.bucketBits + j*t.slotBits
	if t.aligned {
		w := &t.words[p>>6]
		*w = *w&^(t.slotMask<<(p&63)) | v<<(p&63)
		return
	}
	table.StoreBits(t.words, p, t.slotMask, v)
}

// The SWAR tests on a window x of lanes described by l. Each returns the
// high bit of every lane that passes: they combine with & and |, lane by
// lane, because table.ZeroLanes is exact lane by lane.

// lanesHolding flags the lanes whose fingerprint is fp (fp 0: empty lanes).
func lanesHolding(x, fp uint64, l *laneSet) uint64 {
	return table.ZeroLanes((x^fp<<AgeBits*l.low)&l.fp, l.rest, l.high)
}

// lanesStamped flags the lanes whose stamp is v (empty lanes have stamp 0).
func lanesStamped(x, v uint64, l *laneSet) uint64 {
	return table.ZeroLanes((x^v*l.low)&l.stamp, l.rest, l.high)
}

// lanesYoung flags the lanes whose age (ref − stamp) mod 16 is below
// 16 − c, for 1 ≤ c ≤ 15: each lane computes (16 + ref − stamp) mod 16
// with its guard bit lent to the subtraction, so that no borrow leaves
// the lane, then adds c and reads the carry into the guard bit; s is the
// lane width (the flag moves from bit 4 to the lane's high bit).
func lanesYoung(x, ref, c, s uint64, l *laneSet) uint64 {
	age := ((ref*l.low | l.guard) - x&l.stamp) & l.stamp
	return (^(age + c*l.low) & l.guard) << (s - AgeBits - 1)
}

// freeLanes flags the lanes an insert may take at stamp expired (see
// Window: the stamp of the slots that expired at the current epoch):
// empty ones, and those holding an expired entry.
func freeLanes(x, expired uint64, l *laneSet) uint64 {
	return lanesHolding(x, 0, l) | lanesStamped(x, expired, l)
}

// findLive returns the bucket and slot of a copy of fp not stamped expired
// in bucket i or j.
func (t *Table) findLive(i, j, fp, expired uint64) (bucket, slot uint64, ok bool) {
	for _, b := range [2]uint64{i, j} {
		for w := range t.windows {
			l := t.lanesOf(w)
			x := t.window(b, w)
			if z := lanesHolding(x, fp, l) &^ lanesStamped(x, expired, l); z != 0 {
				return b, t.slotAt(w, z), true
			}
		}
	}
	return 0, 0, false
}

// HoldsYoung reports whether bucket i or j holds fp in a lane whose age
// from stamp ref is below 16 − c (lanesYoung).
func (t *Table) HoldsYoung(i, j, fp, ref, c uint64) bool {
	for _, b := range [2]uint64{i, j} {
		for w := range t.windows {
			l := t.lanesOf(w)
			x := t.window(b, w)
			if lanesHolding(x, fp, l)&lanesYoung(x, ref, c, t.slotBits, l) != 0 {
				return true
			}
		}
	}
	return false
}

// Holds reports whether bucket i or j holds fp, of any age.
func (t *Table) Holds(i, j, fp uint64) bool {
	for _, b := range [2]uint64{i, j} {
		for w := range t.windows {
			if lanesHolding(t.window(b, w), fp, t.lanesOf(w)) != 0 {
				return true
			}
		}
	}
	return false
}

// OneWindow reports whether a bucket is one window (the default shape
// among others): the lookups of Bucket and Holding.
func (t *Table) OneWindow() bool { return t.windows == 1 }

// A lookup in a table of one window a bucket (OneWindow) goes in steps
// that each inline into its caller, so that a Window's lookup, which reads
// its clock between them, makes no call: Locate and AltIndex, then Bucket
// for both buckets (both read before either is tested), then Holding for both, and,
// only when a lane holds the fingerprint, the clock and Young.

// Bucket returns bucket i of a table of one window a bucket.
func (t *Table) Bucket(i uint64) uint64 { return t.window(i, 0) }

// Holding flags the lanes of bucket x (from Bucket) that hold fp, of any
// age.
func (t *Table) Holding(x, fp uint64) uint64 { return lanesHolding(x, fp, &t.full) }

// Young reports whether a lane Holding flagged, mx of bucket x or my of
// bucket y, holds an entry whose age from stamp ref is below 16 − c:
// lanesYoung of both buckets, written out with their common terms shared,
// so that it is small enough to inline into a lookup.
func (t *Table) Young(x, y, mx, my, ref, c uint64) bool {
	l := &t.full
	a, cl := ref*l.low|l.guard, c*l.low
	ax, ay := (a-x&l.stamp)&l.stamp, (a-y&l.stamp)&l.stamp
	return (mx>>t.youngShift&^(ax+cl)|my>>t.youngShift&^(ay+cl))&l.guard != 0
}

// Put writes the entry of the key whose hash is h, stamped now, and
// reports whether the key was live (a copy not stamped expired): refresh
// restamps a live copy, and without it a live copy stays as it was. A key
// not live takes a free slot (empty or expired) of its buckets, by moving
// other entries if both are full (makeRoom), at most maxKicks of them on a
// random walk; ok is false when no room could be made, and the table is
// then as it was.
func (t *Table) Put(h, now, expired uint64, refresh bool, maxKicks int) (seen, ok bool) {
	i1, fp := t.Locate(h)
	i2 := t.AltIndex(i1, fp)
	v := fp<<AgeBits | now
	if t.windows == 1 {
		// One window a bucket (the default shape among others): both
		// buckets read once, the live copy or the free slots found in the
		// two reads, the slot written from its offset in them.
		l := &t.full
		x, y := t.window(i1, 0), t.window(i2, 0)
		ex, ey := lanesStamped(x, expired, l), lanesStamped(y, expired, l)
		b, word, z := i1, x, lanesHolding(x, fp, l)&^ex
		if z == 0 {
			b, word, z = i2, y, lanesHolding(y, fp, l)&^ey
		}
		if z != 0 {
			if refresh {
				t.replaceLane(b, word, table.LaneStart(z, t.slotBits), v)
			}
			return true, true
		}
		// The placement rule of table.Table.Add: the bucket with more free
		// slots, the first on a tie.
		fx, fy := lanesHolding(x, 0, l)|ex, lanesHolding(y, 0, l)|ey
		if fx|fy == 0 {
			return false, t.moveOne(i1, i2, x, y, v, expired) || t.makeRoom(&t.sc, i1, i2, v, h, expired, maxKicks)
		}
		b, word, z = i1, x, fx
		if bits.OnesCount64(fy) > bits.OnesCount64(fx) {
			b, word, z = i2, y, fy
		}
		t.replaceLane(b, word, table.LaneStart(z, t.slotBits), v)
		return false, true
	}
	if b, s, live := t.findLive(i1, i2, fp, expired); live {
		if refresh {
			t.stamps[t.get(b, s)&(Stamps-1)]--
			t.set(b, s, v)
			t.stamps[now]++
		}
		return true, true
	}
	return false, t.place(i1, i2, v, expired) || t.makeRoom(&t.sc, i1, i2, v, h, expired, maxKicks)
}

// Delete empties every copy of h's fingerprint not stamped expired in its
// buckets, and reports whether there was one.
func (t *Table) Delete(h, expired uint64) bool {
	i1, i2, fp := t.Pair(h)
	return t.clearLive(i1, i2, fp, expired)
}

// free returns how many slots of bucket i an insert may take at stamp
// expired, and the lowest of them.
func (t *Table) free(i, expired uint64) (n int, slot uint64) {
	for w := t.windows; w > 0; w-- {
		z := freeLanes(t.window(i, w-1), expired, t.lanesOf(w-1))
		if z != 0 {
			n += bits.OnesCount64(z)
			slot = t.slotAt(w-1, z)
		}
	}
	return n, slot
}

// take puts v into slot j of bucket i, a free slot, forgetting the expired
// entry it may hold.
func (t *Table) take(i, j, v uint64) {
	if old := t.get(i, j); old != 0 {
		t.stamps[old&(Stamps-1)]--
	}
	t.set(i, j, v)
	t.stamps[v&(Stamps-1)]++
}

// replaceLane puts v into the slot at bit sh of bucket b's one window,
// word being that window as read: a slot found free or holding the key,
// whose old entry (if any) leaves the stamp counts.
func (t *Table) replaceLane(b, word, sh, v uint64) {
	if old := word >> sh & t.slotMask; old != 0 {
		t.stamps[old&(Stamps-1)]--
	}
	t.stamps[v&(Stamps-1)]++
	if t.aligned {
		t.words[b] = t.words[b]&^(t.slotMask<<sh) | v<<sh
		return
	}
	table.StoreBits(t.words, b*t.bucketBits+sh, t.slotMask, v)
}

// place puts v into a free slot of bucket i1 or i2, the one with more free
// slots (the first on a tie: the placement rule of Filter.AddHash), and
// reports false when neither has one.
func (t *Table) place(i1, i2, v, expired uint64) bool {
	n1, s1 := t.free(i1, expired)
	n2, s2 := t.free(i2, expired)
	switch {
	case n1 == 0 && n2 == 0:
		return false
	case n2 > n1:
		t.take(i2, s2, v)
	default:
		t.take(i1, s1, v)
	}
	return true
}

// sweep empties the slots of bucket i stamped expired and returns how many
// it emptied.
func (t *Table) sweep(i, expired uint64) uint64 {
	var n uint64
	for w := range t.windows {
		l := t.lanesOf(w)
		x := t.window(i, w)
		z := lanesStamped(x, expired, l) &^ lanesHolding(x, 0, l)
		if z == 0 {
			continue
		}
		n += uint64(bits.OnesCount64(z))
		if t.aligned {
			// Every flagged lane cleared at once: each flag, moved to its
			// lane's low bit and multiplied by the slot mask, covers its lane.
			t.words[i] &^= z >> (t.slotBits - 1) * t.slotMask
			continue
		}
		for ; z != 0; z &= z - 1 {
			t.set(i, t.slotAt(w, z), 0)
		}
	}
	t.stamps[expired] -= n
	return n
}

// SweepRange is sweep for buckets [from, to): a one-word bucket (the
// default shape) at a time, without a call, else bucket by bucket.
func (t *Table) SweepRange(from, to, expired uint64) {
	if !t.aligned {
		for i := from; i < to; i++ {
			t.sweep(i, expired)
		}
		return
	}
	// The masks in locals: the stores into words would make the compiler
	// reload them from t.
	l := t.full
	ex, shift, slot := expired*l.low, t.slotBits-1, t.slotMask
	words := t.words[from:to:to]
	var n uint64
	for k, x := range words {
		z := table.ZeroLanes((x^ex)&l.stamp, l.rest, l.high) &^ table.ZeroLanes(x&l.fp, l.rest, l.high)
		if z != 0 {
			n += uint64(bits.OnesCount64(z))
			words[k] = x &^ (z >> shift * slot)
		}
	}
	t.stamps[expired] -= n
}

// Age empties every non-empty slot of buckets [from, numBuckets) whose
// age (ref − stamp) mod 16 is at least least: the pass a Window makes when
// its epoch moves on (window.go). It visits slot by slot; it runs at most
// once an epoch.
func (t *Table) Age(from, ref, least uint64) {
	for i := from; i < t.numBuckets; i++ {
		for j := range t.slots {
			v := t.get(i, j)
			if v != 0 && (ref-v)&(Stamps-1) >= least {
				t.set(i, j, 0)
				t.stamps[v&(Stamps-1)]--
			}
		}
	}
}

// clearLive empties every copy of fp not stamped expired in buckets i and
// j, and reports whether there was one.
func (t *Table) clearLive(i, j, fp, expired uint64) bool {
	found := false
	for {
		b, s, ok := t.findLive(i, j, fp, expired)
		if !ok {
			return found
		}
		t.stamps[t.get(b, s)&(Stamps-1)]--
		t.set(b, s, 0)
		found = true
	}
}

// Reset empties the table.
func (t *Table) Reset() {
	clear(t.words)
	t.stamps = [Stamps]uint64{}
}

// step is one move of the random walk: placed went into slot of bucket.
type step struct {
	bucket uint32
	slot   uint8
	placed uint64
}

// scratch is the working memory of a table's inserts, kept between them.
type scratch struct {
	search table.Scratch // of the search for room
	kind   View          // the table as that search sees it
	path   []step
}

func (sc *scratch) bytes() uint64 {
	return sc.search.Bytes() + uint64(cap(sc.path))*16
}

// View is a Window's table as the search for room sees it: a table.Kind
// whose values are stamped fingerprints (the other bucket comes from the
// fingerprint alone) and whose free slots are the empty and the expired
// ones.
type View struct {
	t       *Table
	expired uint64
}

// View returns the table as the search for room sees it while the
// entries stamped expired are free. It is the table's own (its inserts
// search through it), valid until the next call.
func (t *Table) View(expired uint64) *View {
	t.sc.kind = View{t: t, expired: expired}
	return &t.sc.kind
}

func (s *View) Shape() (slots, bucketBits uint64) { return s.t.slots, s.t.bucketBits }

func (s *View) Other(b, v uint64) (alt, altV uint64) {
	return s.t.AltIndex(b, v>>AgeBits), v
}

func (s *View) HasRoom(b uint64) bool { return s.t.hasFree(b, s.expired) }

func (s *View) Prefetch(lines []uint64) { prefetch.Words(s.t.words, lines) }

func (s *View) AppendBucket(q []table.Node, b, n uint64, parent int32) []table.Node {
	var vals [8]uint64
	s.t.values(b, &vals)
	for _, v := range vals[:n&15] {
		q = append(q, table.Node{Bucket: uint32(b), Tag: uint32(v), Parent: parent})
	}
	return q
}

// values reads the entries of bucket i into out[:slots]: a bucket of one
// window with one read.
func (t *Table) values(i uint64, out *[8]uint64) {
	if t.windows == 1 {
		x := t.window(i, 0)
		for j := range t.slots {
			out[j&7] = x >> (j * t.slotBits) & t.slotMask
		}
		return
	}
	for j := range t.slots {
		out[j&7] = t.get(i, j)
	}
}

// hasFree reports whether bucket i has a slot an insert may take.
func (t *Table) hasFree(i, expired uint64) bool {
	if t.windows == 1 {
		return freeLanes(t.window(i, 0), expired, &t.full) != 0
	}
	n, _ := t.free(i, expired)
	return n > 0
}

// makeRoom puts v (a stamped fingerprint) into bucket i1 or i2, both
// without a free slot, by moving other entries: first by the breadth-first
// search for the shortest chain of moves that ends in a free slot, then by
// a random walk. It reports false, with the table as it was, when neither
// finds room. Only live entries move: a bucket without a free slot holds
// no expired one.
func (t *Table) makeRoom(sc *scratch, i1, i2, v, h, expired uint64, maxKicks int) bool {
	return t.searchPath(sc, i1, i2, v, expired, table.Budget(maxKicks, table.WalkLimit)) ||
		t.walk(sc, i1, i2, v, h, expired, maxKicks)
}

// moveOne is the first level of searchPath for a table of one window a
// bucket, from the words x and y of the key's full buckets i1 and i2 as
// put read them: the first of their entries, in searchPath's order, whose
// other bucket has a free slot moves into its lowest one, and v takes its
// place. It makes the move searchPath would make, and reports false,
// changing nothing, when no entry can move (searchPath then looks deeper).
// Most of the inserts that find both buckets full end here, at a load
// like the steady state's, without building the search's queue.
func (t *Table) moveOne(i1, i2, x, y, v, expired uint64) bool {
	var alts, lines [16]uint64
	n := 2 * t.slots
	s, fpMask, bb := t.slotBits, t.fpMask, t.bucketBits
	for k := range t.slots {
		a1 := t.AltIndex(i1, x>>(k*s+AgeBits)&fpMask)
		a2 := t.AltIndex(i2, y>>(k*s+AgeBits)&fpMask)
		alts[k&7], alts[(k+t.slots)&15] = a1, a2
		lines[k&7], lines[(k+t.slots)&15] = a1*bb>>6, a2*bb>>6
	}
	prefetch.Words(t.words, lines[:n&15])
	l := &t.full
	for k := range n {
		alt := alts[k&15]
		z := freeLanes(t.window(alt, 0), expired, l)
		if z == 0 {
			continue
		}
		b, word, j := i1, x, k
		if k >= t.slots {
			b, word, j = i2, y, k-t.slots
		}
		e := word >> (j * s) & t.slotMask
		s := t.slotAt(0, z)
		if old := t.get(alt, s); old != 0 {
			t.stamps[old&(Stamps-1)]--
		}
		t.set(alt, s, e)
		t.set(b, j, v)
		t.stamps[v&(Stamps-1)]++
		return true
	}
	return false
}

// searchPath makes room for v by the breadth-first search for room
// (internal/table/search.go) over a Window's table, where a slot is free
// when empty or expired: it explores up to budget slots, moves nothing
// unless it finds a chain, and moves the chain hole first.
func (t *Table) searchPath(sc *scratch, i1, i2, v, expired uint64, budget int) bool {
	q, end, ok := sc.search.Room(t.View(expired), i1, i2, budget)
	if !ok {
		return false
	}
	// The chain, hole first: the last entry to its free slot, then each
	// parent's entry into the slot its child left, then v. Node k holds
	// slot k%slots of its bucket: the search appends a bucket's slots in
	// order, a whole bucket at a time but for the last. Entries that move
	// keep their counts; the expired entry the first move overwrites (if
	// any) loses its own, and v gains one.
	n := q[end]
	_, s := t.free(uint64(n.Alt), expired)
	if old := t.get(uint64(n.Alt), s); old != 0 {
		t.stamps[old&(Stamps-1)]--
	}
	t.set(uint64(n.Alt), s, uint64(n.Tag))
	for k := end; ; {
		in, parent := v, q[k].Parent
		if parent >= 0 {
			in = uint64(q[parent].Tag)
		}
		t.set(uint64(q[k].Bucket), uint64(k)%t.slots, in)
		if parent < 0 {
			t.stamps[v&(Stamps-1)]++
			return true
		}
		k = int(parent)
	}
}

// walk is the random walk of table.Table.kick over a Window's table: it puts v
// in a random slot of one of its buckets, carries the entry it displaced
// to that entry's other bucket, and so on until a carried entry finds a
// free slot, or undoes every move after maxKicks of them. Its random
// choices come from the key's hash h, so the table after an insert depends
// only on the table before and the key.
func (t *Table) walk(sc *scratch, i1, i2, v, h, expired uint64, maxKicks int) bool {
	rng, i := table.NewWalk(h, i1, i2)
	cur := v
	sc.path = sc.path[:0]
	for range maxKicks {
		s := table.KickSlot(rng.Next(), t.slots)
		victim := t.get(i, s)
		t.set(i, s, cur)
		sc.path = append(sc.path, step{bucket: uint32(i), slot: uint8(s), placed: cur})
		cur = victim
		i = t.AltIndex(i, cur>>AgeBits)
		if n, s := t.free(i, expired); n > 0 {
			t.take(i, s, cur)
			// cur was counted where it came from; v is new.
			t.stamps[cur&(Stamps-1)]--
			t.stamps[v&(Stamps-1)]++
			return true
		}
	}
	// INVARIANT: walking the path backwards, cur is the entry that step k
	// displaced, and bucket k is as step k left it.
	for k := len(sc.path) - 1; k >= 0; k-- {
		st := sc.path[k]
		t.set(uint64(st.bucket), uint64(st.slot), cur)
		cur = st.placed
	}
	return false
}

// Validate checks the invariants; full adds the O(table) ones, and that
// no slot of buckets [0, swept) holds an entry stamped expired (the
// Window's sweep has emptied them). Decoders run it in full: they must
// refuse any state the operations cannot reach.
func (t *Table) Validate(full bool, expired, swept uint64) error {
	if used := t.numBuckets * t.bucketBits; used%64 != 0 && t.words[used/64]>>(used%64) != 0 {
		return fmt.Errorf("bits past the last bucket are set")
	}
	if t.words[len(t.words)-1] != 0 {
		return fmt.Errorf("padding word is not zero")
	}
	if !full {
		return nil
	}
	var stamps [Stamps]uint64
	for i := range t.numBuckets {
		for j := range t.slots {
			v := t.get(i, j)
			fp, stamp := v>>AgeBits, v&(Stamps-1)
			switch {
			case v == 0:
				continue
			case fp == 0:
				return fmt.Errorf("bucket %d slot %d: an empty slot with stamp %d", i, j, stamp)
			case i < swept && stamp == expired:
				return fmt.Errorf("bucket %d slot %d: expired, behind the sweep", i, j)
			}
			stamps[stamp]++
			if stamp == expired {
				continue
			}
			// A key is in one slot: a live copy of fp in its buckets, no
			// other.
			alt := t.AltIndex(i, fp)
			n := 0
			for _, b := range [2]uint64{i, alt} {
				for k := range t.slots {
					if u := t.get(b, k); u>>AgeBits == fp && u&(Stamps-1) != expired {
						n++
					}
				}
			}
			if n != 1 {
				return fmt.Errorf("bucket %d slot %d: %d live copies of fingerprint %#x in its buckets", i, j, n, fp)
			}
		}
	}
	if stamps != t.stamps {
		return fmt.Errorf("stamp counts %v, recorded %v", stamps, t.stamps)
	}
	return nil
}
