package chain

import (
	"math/bits"

	"github.com/dedupkit/cuckoo/internal/addr"
	"github.com/dedupkit/cuckoo/internal/hugepages"
	"github.com/dedupkit/cuckoo/internal/prefetch"
	"github.com/dedupkit/cuckoo/internal/table"
)

// A table that grows in place: the newest table of a Scalable (after the
// first) starts at 1/2^R of its generation's size and grows two buckets at
// a time, by linear hashing, instead of being allocated at full size
// empty. A chain whose every table is allocated whole costs, averaged over
// its growth, about 1.4 times the memory of its full tables (right after
// growing, the newest table is empty and as large as all the others
// together); a table that grows as it fills costs about
// (f+R−ℓ)/f/growLoad of its size at level ℓ while it grows.
//
// # Addresses
//
// A key has the two buckets i1, i2 it will have in the generation's plain
// table of m buckets (Table.Locate and Table.AltIndex over m: finals), and the
// same fingerprint fp. Write a final bucket as i = r + m0·q, m0 = m/2^R,
// r < m0, q < 2^R: q is the bucket's reserve. For i1 it is the top R bits
// of the hash; for i2 it is i2/m0, one multiply by a reciprocal (mulHi).
//
// The table holds m_ℓ + s buckets, m_ℓ = m0·2^ℓ, at a level ℓ < R: buckets
// [0, s) have been split, each into itself and bucket m_ℓ + j. A final
// bucket i lives in i mod m_ℓ, or in i mod m_(ℓ+1) when that is below s
// (bucketOf; finalOf is its inverse for a given reserve). With R = 2 (the
// tables have R = 4, which draws less well), the reserves each bucket
// holds:
//
//	final table:      | q=0 | q=1 | q=2 | q=3 |         blocks of m0 buckets
//	level 0, s = 0:   | 0..3 |                           [0,m0)
//	level 0, s > 0:   | 0,2 | 0..3 | 1,3 |               [0,s) [s,m0) [m0,m0+s)
//	level 1, s = 0:   | 0,2 | 1,3 |                      [0,m0) [m0,2m0)
//	level 1, s ≤ m0:  | 0 | 0,2 | 1,3 | 2 |              [0,s) [s,m0) [m0,2m0) [2m0,2m0+s)
//
// # Tags
//
// A bucket j < m_ℓ tells the low ℓ bits of its tags' reserves (they are
// ⌊j/m0⌋ mod 2^ℓ), a split bucket or an image the low ℓ+1; the rest it
// does not, and a split, which moves the tags whose reserve has bit ℓ set
// to the image, needs bit ℓ; so does a move to a tag's other bucket, which
// starts from the tag's final bucket. So a slot holds the tag
// (q>>ℓ)<<f | fp, and the slots are f+R−ℓ bits wide, narrowing by one bit
// at each level (repack, in O(m_ℓ) when the level's last bucket is
// split). A probe compares the whole tag: the bits the bucket does not
// determine only make false matches rarer.
//
// When the last bucket is split (ℓ = R) every bucket is its own final
// bucket, and repack drops the reserve bits left: what remains is, slot
// for slot, the generation's plain table, and the level goes on as a
// plain one (Level.Plain). The overflow counters of a growing table are keyed by the final
// buckets (table.PairKey of finals), so they need no change either.
//
// # Reserve
//
// Each reserve bit costs a bit per slot until the level that tells it,
// and halves the empty table a generation starts with (the root
// package's growReserve).
//
// # False positives
//
// A probe's bucket j compares tags of f + R − ℓ_j unknown bits (ℓ_j = ℓ+1
// for a split bucket or an image, ℓ otherwise), and it is a split one for
// a fraction s/m_ℓ of the keys. However unevenly the n tags are spread
// between the two kinds, the expected matches of a probe add up to
// n/(m_ℓ·2^(f+R−ℓ)) = n/(m·2^f) per bucket: the rate of the plain table
// with the same tags. So a growing table adds to the rate exactly what its
// generation's table would at the same fill (Scalable.FalsePositiveRate
// counts it so), and stays within its share of the chain's budget (the
// root package's growth.go).
//
// # Load
//
// An unsplit bucket takes the keys of two split ones, so the load is
// uneven, and inserts at a steady high load need moves: growLoad and
// growSearch trade the memory of the growing table against insert time.
//
// Invariants (besides the table's, for m_ℓ + s buckets of f+R−d bits):
//   - R is 1 to 4, m is a multiple of 2^(R+1), so m0 and the bucket count
//     are even; ℓ < R, s < m_ℓ and s is even.
//   - every tag (q>>ℓ)<<f|fp in bucket j has fp != 0, and
//     i = finalOf(j, q>>ℓ) is a final bucket (i < m) whose reserve
//     ⌊i/m0⌋ shifted right by ℓ is the tag's, and that lives in j
//     (bucketOf(i, ⌊i/m0⌋) == j). check verifies it, for the decoder.
//   - copies beyond table.MaxSlotCopies are kept in the level's overflow
//     counters, keyed by table.PairKey of the final buckets.
type Growing struct {
	final   uint64 // m: buckets when fully grown
	base    uint64 // m0 = m >> reserve
	recip   uint64 // ⌈2^64/m0⌉: i/m0 = mulHi(i, recip) for i < 2^32
	reserve uint64 // R
	fpBits  uint64 // f: the generation's fingerprint width
	fpRange uint64 // 2^f − 1
	depth   uint64 // ℓ: the tags hold q >> ℓ
	split   uint64 // s

	T        table.Table   // m_ℓ + s buckets of f+R−ℓ bit tags
	Occupied uint64        // non-empty slots of T
	search   table.Scratch // of insert's search
	rd       Probe         // how T's buckets are read (refresh keeps it T's)
}

// refresh makes rd read T, after T's words or shape changed.
func (g *Growing) refresh() { g.rd = NewProbe(&g.T, 0) }

// growLoad (growLoadNum/growLoadDen) is the load past which a growing
// table splits a pair of buckets before an insert; an insert whose search
// of growSearch slots (two levels of 4-slot buckets) finds no room splits
// too. Past 0.8 most of an insert's time goes to searching for room;
// below it, the memory rises and the time does not fall (bench/notes.md
// has the measurements).
const (
	growLoadNum, growLoadDen = 4, 5
	growSearch               = 40
)

// NewGrowing returns an empty table growing to final buckets of
// fpBits-bit fingerprints with r reserve bits: final>>r buckets of
// fpBits+r-bit tags to start with. final must be a multiple of 2^(r+1),
// r > 0.
func NewGrowing(final, slots, fpBits, r uint64, semi bool) *Growing {
	g := growGeometry(final, fpBits, r)
	g.T = table.New(g.base, slots, g.TagBits(), semi)
	g.refresh()
	return g
}

// MostWords returns the most words (the padding word included) a table
// growing to final buckets of fpBits-bit fingerprints with r reserve bits
// holds in one slice at any size, from its first to its full one: what
// must fit one allocation for it to reach its full size. At level ℓ the
// slice of tags of fpBits+r−ℓ bits grows an eighth at a time (growWords)
// up to the words of 2·m_ℓ buckets, an eighth more, or of final buckets;
// the full table has fpBits-bit slots (repack). It allocates nothing.
func MostWords(final, slots, fpBits, r uint64, semi bool) uint64 {
	full := table.Layout(final, slots, fpBits, semi)
	most := full.PayloadWords() + 1
	base := final >> r
	for d := uint64(0); d < r; d++ {
		bb := table.Layout(final, slots, fpBits+r-d, semi).BucketBits
		whole := (final*bb+63)/64 + 1
		need := (2*(base<<d)*bb+63)/64 + 1
		most = max(most, min(whole, need+need/8))
	}
	return most
}

// growGeometry returns the geometry of a table growing to final buckets of
// fpBits-bit fingerprints with r reserve bits, before its first split.
func growGeometry(final, fpBits, r uint64) *Growing {
	g := &Growing{final: final, reserve: r, fpBits: fpBits, fpRange: 1<<fpBits - 1}
	g.base = final >> g.reserve
	if g.base > 0 { // always, for a generation's shape (GrowingFrom checks)
		g.recip = ^uint64(0)/g.base + 1
	}
	return g
}

// TagBits is the width of the table's slots: f plus the reserve bits the
// tags still hold.
func (g *Growing) TagBits() uint64 {
	return g.fpBits + g.reserve - g.depth
}

// mulHi is the high word of a·b: with b = ⌈2^64/m0⌉ and a < 2^32 it is
// ⌊a/m0⌋ exactly (the error a·(b − 2^64/m0)/2^64 < 2^−32 never reaches
// the next integer, as a/m0's fraction is at most 1 − 1/m0 and m0 < 2^32).
func mulHi(a, b uint64) uint64 {
	hi, _ := bits.Mul64(a, b)
	return hi
}

// where returns the buckets h's final buckets live in now, and its tag in
// each. The final buckets and the fingerprint are those of the key in the
// generation's plain table (finals). (Four results come back in registers; a struct
// of all the intermediate values came back through memory, and cost
// lookups twice as much.)
func (g *Growing) where(h uint64) (j1, tag1, j2, tag2 uint64) {
	i1, i2, fp := g.finals(h)
	// i1 = ⌊x·m0·2^R/2^32⌋ for x = h>>32, so ⌊i1/m0⌋ = ⌊x·2^R/2^32⌋: the
	// top R bits of x.
	q1, q2 := h>>(64-g.reserve), mulHi(i2, g.recip)
	return g.bucketOf(i1, q1), g.tagOf(q1, fp), g.bucketOf(i2, q2), g.tagOf(q2, fp)
}

// tagOf is the tag of fingerprint fp whose final bucket has reserve q:
// the reserve bits its bucket does not tell, above fp.
func (g *Growing) tagOf(q, fp uint64) uint64 {
	return q>>g.depth<<g.fpBits | fp
}

// finals returns h's two buckets in the plain table of the generation, and
// its fingerprint, as Table.Locate and Table.AltIndex compute them there.
func (g *Growing) finals(h uint64) (i1, i2, fp uint64) {
	fp, i1 = addr.Fingerprint(h, g.fpRange), addr.Bucket(h, g.final)
	return i1, addr.Alt(i1, fp, g.final), fp
}

// bucketOf returns the bucket final bucket i (of reserve q) lives in now.
func (g *Growing) bucketOf(i, q uint64) uint64 {
	j := i - g.base*(q&^(1<<g.depth-1)) // i mod m_ℓ
	k := i - g.base*(q&^(2<<g.depth-1)) // i mod m_(ℓ+1)
	// k when j < split, without a branch: which side of the split point a
	// key falls is a coin flip weighted by how far the splits have gone.
	// Both are below 2^32, so the difference's sign is the comparison.
	below := uint64(int64(j-g.split) >> 63)
	return k&below | j&^below
}

// finalOf returns the final bucket of the tag in bucket j whose reserve
// bits are stored (q >> ℓ): the inverse of bucketOf. Bucket j mod
// m_ℓ is i mod m_ℓ, and the reserve bits from ℓ on (held by the tag, as
// the bucket does not tell them all) say which of the blocks of m_ℓ
// buckets i is in.
func (g *Growing) finalOf(j, stored uint64) uint64 {
	if ml := g.base << g.depth; j >= ml {
		j -= ml
	}
	return j + g.base*(stored<<g.depth)
}

// Contains reports whether the table holds h's fingerprint.
func (g *Growing) Contains(h uint64) bool {
	j1, tag1, j2, tag2 := g.where(h)
	return g.rd.Holds(j1, tag1, j2, tag2)
}

// Stage locates up to table.BatchGroup hashes, two buckets and tags each,
// into js and tags, and prefetches the buckets.
func (g *Growing) Stage(hs []uint64, js, tags *[2 * table.BatchGroup]uint64) {
	t := &g.T
	var lines [2 * table.BatchGroup]uint64
	hs = hs[:min(len(hs), table.BatchGroup)]
	for k, h := range hs {
		j1, tag1, j2, tag2 := g.where(h)
		js[2*k], tags[2*k], js[2*k+1], tags[2*k+1] = j1, tag1, j2, tag2
		lines[2*k], lines[2*k+1] = j1*t.BucketBits>>6, j2*t.BucketBits>>6
	}
	prefetch.Words(t.Words, lines[:2*len(hs)])
}

// SlotCopies returns the number of slots holding h's fingerprint.
func (g *Growing) SlotCopies(h uint64) uint64 {
	t := &g.T
	j1, tag1, j2, tag2 := g.where(h)
	return t.Copies(j1, tag1) + t.Copies(j2, tag2)
}

// holdsFinal reports whether final bucket i holds fingerprint fp.
func (g *Growing) holdsFinal(i, fp uint64) bool {
	t := &g.T
	q := mulHi(i, g.recip)
	return t.Holds(g.bucketOf(i, q), g.tagOf(q, fp))
}

// growToFull splits the rest of the buckets: the table then is the
// generation's plain table. Splits only move tags, so it cannot fail.
func (g *Growing) growToFull() {
	for !g.splitPair() {
	}
}

// pairKey is the key of h's overflow counters: table.PairKey of its final
// buckets, as in the plain table the table becomes.
func (g *Growing) pairKey(h uint64) uint64 {
	i1, i2, fp := g.finals(h)
	return table.PairKey(i1, i2, fp)
}

// CrowdedPast reports whether the table holds more than growLoad of its
// slots, which an insert never leaves (it splits first: crowded).
func (g *Growing) CrowdedPast() bool {
	return growLoadDen*g.Occupied > growLoadNum*g.T.NumBuckets*g.T.Slots
}

// crowded reports whether the table should split before taking another
// fingerprint.
func (g *Growing) crowded() bool {
	return growLoadDen*(g.Occupied+1) > growLoadNum*g.T.NumBuckets*g.T.Slots
}

// Insert puts a copy of h's fingerprint in a slot, moving others if both
// buckets are full, and reports false, with the table unchanged, if a
// search within table.Budget(maxKicks, growSearch) found no room: the
// caller then splits, which is cheaper than a longer search.
func (g *Growing) Insert(h uint64, maxKicks int) bool {
	if g.place(h, maxKicks) {
		g.Occupied++
		return true
	}
	return false
}

func (g *Growing) place(h uint64, maxKicks int) bool {
	j1, tag1, j2, tag2 := g.where(h)
	// The emptier bucket first: two choices keep the buckets' loads even.
	e1, e2 := g.rd.Empties(j1), g.rd.Empties(j2)
	switch {
	case e2 > e1:
		return g.rd.Replace(j2, 0, tag2)
	case e1 > 0:
		return g.rd.Replace(j1, 0, tag1)
	}
	q, end, ok := g.search.Room(g, j1, j2, table.Budget(maxKicks, growSearch))
	if ok {
		table.PlaceChain(g, q, end, tag1, tag2)
	}
	return ok
}

// A growing table is a table.ChainKind whose values are tags: other gives a
// tag's other bucket and its form there, and its buckets are read and
// written as its lookups read them.

func (g *Growing) Shape() (slots, bucketBits uint64) { return g.T.Slots, g.T.BucketBits }

func (g *Growing) Prefetch(lines []uint64) { prefetch.Words(g.T.Words, lines) }

func (g *Growing) AppendBucket(q []table.Node, b, n uint64, parent int32) []table.Node {
	if g.rd.loads == 0 || n > 8 {
		return g.T.AppendBucket(q, b, n, parent)
	}
	var v [8]uint64
	g.rd.Values(b, &v)
	for _, x := range v[:n] {
		q = append(q, table.Node{Bucket: uint32(b), Tag: uint32(x), Parent: parent})
	}
	return q
}

func (g *Growing) HasRoom(b uint64) bool { return g.rd.Empties(b) != 0 }

func (g *Growing) Replace(b, old, new uint64) bool { return g.rd.Replace(b, old, new) }

// Other returns the other bucket of the tag in bucket j, and its tag
// there: the tag's other final bucket (from its final bucket, which the
// bucket and the tag's reserve bits give), where that bucket lives now,
// and the reserve bits of it the tag keeps.
func (g *Growing) Other(j, tag uint64) (alt, altTag uint64) {
	fp := tag & g.fpRange
	i := addr.Alt(g.finalOf(j, tag>>g.fpBits), fp, g.final)
	q := mulHi(i, g.recip)
	return g.bucketOf(i, q), g.tagOf(q, fp)
}

// Holds reports whether bucket j1 holds tag1 or bucket j2 holds tag2
// (Locate's results), reading both buckets before comparing either.
func (g *Growing) Holds(j1, tag1, j2, tag2 uint64) bool { return g.rd.Holds(j1, tag1, j2, tag2) }

// Locate is where h's fingerprint is: the buckets it lives in now and its
// tag in each. In a chain whose lookups prefetch (Far(ps), ps the chain's
// plain tables) it also prefetches those buckets, if the table is large,
// and the chain's (PrefetchFar): a lookup then waits for all of its cache
// misses at once rather than for the growing table's first.
func (g *Growing) Locate(h uint64, ps []Probe) (j1, tag1, j2, tag2 uint64) {
	j1, tag1, j2, tag2 = g.where(h)
	if Far(ps) {
		if g.rd.Large {
			lines := [2]uint64{j1 * g.rd.bb >> 6, j2 * g.rd.bb >> 6}
			g.Prefetch(lines[:])
		}
		PrefetchFar(ps, h)
	}
	return j1, tag1, j2, tag2
}

// Final returns the buckets of the table once grown: its generation's.
func (g *Growing) Final() uint64 { return g.final }

// FPBits returns the fingerprint width of its generation.
func (g *Growing) FPBits() uint64 { return g.fpBits }

// Geometry returns how far the table has grown: m0 (its first size), ℓ
// (the halvings done) and s (the buckets of this level split), so that it
// holds m0·2^ℓ + s buckets.
func (g *Growing) Geometry() (base, depth, split uint64) { return g.base, g.depth, g.split }

// Bytes returns the memory the table holds: its words, the capacity
// allocated ahead of the splits included, and its search's scratch.
func (g *Growing) Bytes() uint64 { return uint64(cap(g.T.Words))*8 + g.search.Bytes() }

// Probe returns how the table's buckets are read.
func (g *Growing) Probe() *Probe { return &g.rd }

// remove deletes one slot copy of h's fingerprint and reports whether
// there was one.
func (g *Growing) remove(h uint64) bool {
	j1, tag1, j2, tag2 := g.where(h)
	if g.rd.Replace(j1, tag1, 0) || g.rd.Replace(j2, tag2, 0) {
		g.Occupied--
		return true
	}
	return false
}

// splitPair splits the next two buckets, appending their images, and
// reports whether the table has reached its full size, and so become the
// generation's plain table (its reserve bits dropped).
func (g *Growing) splitPair() (full bool) {
	t := &g.T
	ml := g.base << g.depth
	g.growWords(t.NumBuckets + 2)
	var small [8]uint64
	tags := small[:]
	if t.Slots > uint64(len(small)) {
		tags = make([]uint64, t.Slots)
	}
	for k := uint64(0); k < 2; k++ {
		src := g.split + k
		dst := t.NumBuckets
		t.NumBuckets++
		for s := uint64(0); s < t.Slots; s++ {
			tags[s] = t.Slot(src, s)
		}
		for _, tag := range tags[:t.Slots] {
			if tag != 0 && tag>>g.fpBits&1 != 0 {
				g.rd.Replace(src, tag, 0)
				g.rd.Replace(dst, 0, tag)
			}
		}
	}
	g.split += 2
	if g.split == ml {
		g.depth++
		g.split = 0
		// Every bucket now tells bit ℓ−1 of its tags' reserves: the tags
		// drop it.
		g.repack(1)
	}
	return g.depth == g.reserve
}

// growWords makes room in t's words for n buckets. The slice grows by an
// eighth at a time, so the memory held stays within about 1/8 of what the
// buckets need (doubling it would cost as much as the chain's doubling that
// growing in place avoids), at the cost of copying the table about eight
// times over as it grows.
func (g *Growing) growWords(n uint64) {
	t := &g.T
	need := (n*t.BucketBits+63)/64 + 1
	if need <= uint64(cap(t.Words)) {
		t.Words = t.Words[:need] // the same words: rd reads them still
		return
	}
	words := g.newWords(need, t.BucketBits)
	copy(words, t.Words)
	t.Words = words
	g.refresh()
}

// newWords returns need words for a growing table of bucketBits-bit
// buckets, with room for an eighth more, up to the words of its full size.
func (g *Growing) newWords(need, bucketBits uint64) []uint64 {
	most := (g.final*bucketBits+63)/64 + 1
	words := table.Padded[uint64](need, min(most, need+need/8)-need)
	hugepages.Advise(words)
	return words
}

// repack makes t's tags drop bits narrower, slot for slot: each loses the
// lowest drop bits of its stored reserve, which the buckets determine
// now. When no reserve bit is left, t is the generation's plain table. A
// table that goes on growing gets room for an eighth more buckets, as in
// growWords.
func (g *Growing) repack(drop uint64) {
	t := &g.T
	p := table.Layout(t.NumBuckets, t.Slots, t.FPBits-drop, t.Semi)
	need := p.PayloadWords() + 1
	if p.FPBits == g.fpBits {
		p.Words = table.NewWords(need)
		hugepages.Advise(p.Words)
	} else {
		p.Words = g.newWords(need, p.BucketBits)
	}
	shift := g.fpBits + drop
	for i := uint64(0); i < t.NumBuckets; i++ {
		for s := uint64(0); s < t.Slots; s++ {
			tag := t.Slot(i, s)
			switch {
			case tag == 0:
			case t.Semi:
				p.Insert(i, tag>>shift<<g.fpBits|tag&g.fpRange) // canonical order, whatever the slots
			default:
				p.PlainSet(i, s, tag>>shift<<g.fpBits|tag&g.fpRange)
			}
		}
	}
	*t = p
	g.refresh()
}

// GrowingFrom returns the geometry of a growing table of numBuckets
// buckets (as decoded), and whether numBuckets is one a table growing to
// final buckets with r reserve bits passes through. Load gives it its
// table.
func GrowingFrom(final, numBuckets, fpBits, r uint64) (*Growing, bool) {
	g := growGeometry(final, fpBits, r)
	if g.reserve == 0 || g.base == 0 || final%(2<<g.reserve) != 0 {
		return nil, false
	}
	if numBuckets < g.base || numBuckets >= final || numBuckets%2 != 0 {
		return nil, false
	}
	for g.base<<(g.depth+1) <= numBuckets {
		g.depth++
	}
	g.split = numBuckets - g.base<<g.depth
	return g, true
}

// Load makes t (a decoded table of the geometry GrowingFrom gave) the
// table, counting its occupied slots; the caller checks it (CrowdedPast,
// Check).
func (g *Growing) Load(t table.Table) {
	g.T = t
	g.refresh()
	g.Occupied = t.OccupiedSlots()
}

// Check verifies that every tag of the table has a nonzero fingerprint
// and sits in the bucket its final bucket lives in (the decoder's check).
func (g *Growing) Check() (bucket uint64, ok bool) {
	t := &g.T
	for j := uint64(0); j < t.NumBuckets; j++ {
		for s := uint64(0); s < t.Slots; s++ {
			tag := t.Slot(j, s)
			if tag == 0 {
				continue
			}
			i := g.finalOf(j, tag>>g.fpBits)
			if tag&g.fpRange == 0 || i >= g.final {
				return j, false
			}
			if q := mulHi(i, g.recip); q>>g.depth != tag>>g.fpBits || g.bucketOf(i, q) != j {
				return j, false
			}
		}
	}
	return 0, true
}

// Pass is Probe.Pass for a growing table, whose buckets are always
// prefetched a group ahead: the newest table of a chain takes half the
// keys.
func (g *Growing) Pass(hs []uint64, at []uint16, found []bool) int {
	at = at[:len(hs)]
	var js, tags [2][2 * table.BatchGroup]uint64
	g.Stage(hs, &js[0], &tags[0])
	n := 0
	for lo := 0; lo < len(hs); lo += table.BatchGroup {
		hi := min(lo+table.BatchGroup, len(hs))
		b := lo / table.BatchGroup & 1
		if hi < len(hs) {
			g.Stage(hs[hi:], &js[b^1], &tags[b^1])
		}
		for k := lo; k < hi; k++ {
			x := 2 * (k - lo) & (2*table.BatchGroup - 1)
			hit := g.rd.Holds(js[b][x], tags[b][x], js[b][x+1], tags[b][x+1])
			found[at[k]] = hit
			hs[n], at[n] = hs[k], at[k]
			if !hit {
				n++
			}
		}
	}
	return n
}
