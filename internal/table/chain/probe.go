package chain

import (
	"math/bits"
	"unsafe"

	"github.com/dedupkit/cuckoo/internal/addr"
	"github.com/dedupkit/cuckoo/internal/prefetch"
	"github.com/dedupkit/cuckoo/internal/table"
)

// A lookup in a chain of tables (a Scalable's) probes every table for an
// absent key, so what a table costs to probe is multiplied by their number
// (ten after a growth of 1000×). Probe holds what a probe of one plain
// table reads, so that a lookup is one loop over a small array (it stays in
// L1), the tables' geometry in registers as the loop goes, with no call per
// table, no bounds check, and each bucket read with one or two loads: the
// loads of all the tables are independent, and the CPU keeps many of them
// in flight while the loop runs on.
//
// A bucket of at most 120 bits lies within the 16 bytes from the byte it
// starts in; two 8-byte loads there and a shift give its bits from bit 0
// (Probe.read). A table's words end with a padding word (table.Table),
// which holds the last bucket's 16 bytes when buckets are 64 bits or more;
// smaller buckets of at most 57 bits are read with one load, which the
// padding word also covers. Other shapes (57 to 63 bits, more than 120,
// semi-sorted) take the table's general probe.

// Probe is one plain table of a chain, as its lookups see it.
type Probe struct {
	words unsafe.Pointer // &t.Words[0]
	m     uint64         // buckets
	fpMax uint64         // 2^f − 1
	bb    uint64         // bits per bucket
	wb    uint64         // bits of the first window, lanes·f, mod 64 (a one-window bucket's second window is never compared)
	// The lanes of a bucket's first window, and of its second (0 when a
	// bucket is one window: the second then never matches).
	low, rest, high             uint64
	lastLow, lastRest, lastHigh uint64
	lastLanes                   uint64 // the bits of the second window's lanes: fp·lastLow = fp·low & lastLanes
	loads                       uint64 // 2: two loads; 1: one load; 0: t.HoldsEither
	t                           *table.Table
	Large                       bool // the table takes LargeTableBytes or more
	Prefetch                    bool // Large, in a chain of FarChainBytes or more: PrefetchFar prefetches it
}

// LargeTableBytes is the size from which lookups prefetch a table's
// buckets (PrefetchFar, Probe.Pass): the smaller tables of a chain,
// together about as large as the largest of them, stay in a core's L2
// cache between lookups; larger ones do not, beside the others.
const LargeTableBytes = 256 << 10

// FarChainBytes is the size of a chain's plain tables from which a single
// lookup prefetches the large tables' buckets before it probes the chain
// (PrefetchFar): a smaller chain stays mostly in the caches, where
// locating a key's buckets twice costs a present key, which the newest
// tables mostly hold, more than the prefetches save; in a larger one
// even the tables of a few hundred KiB are evicted between lookups.
const FarChainBytes = 4 << 20

// anyZero returns nonzero when some lane of x (of the lanes low and high
// describe) is zero: (x − low) &^ x & high is the classic test, which may
// also flag lanes above a zero one (a borrow runs up from it), never
// when no lane is zero; bits above the lanes do not matter. Three
// operations where table.ZeroLanes, exact lane by lane, takes six.
func anyZero(x, low, high uint64) uint64 { return (x - low) &^ x & high }

// NewProbe returns the probe of plain table t in a chain whose plain
// tables take chainBytes: a large table is prefetched (Prefetch) when they
// take FarChainBytes or more. A table read on its own (a growing table's
// reads) gives 0.
func NewProbe(t *table.Table, chainBytes uint64) Probe {
	c := Probe{
		words: unsafe.Pointer(unsafe.SliceData(t.Words)),
		m:     t.NumBuckets, fpMax: t.FPMask, bb: t.BucketBits, wb: t.WindowBits & 63,
		low: t.LaneLow, rest: t.LaneRest, high: t.LaneHigh,
		t: t, Large: uint64(len(t.Words))*8 >= LargeTableBytes,
	}
	if t.Windows == 2 {
		c.lastLow, c.lastRest, c.lastHigh = t.LastLow, t.LastRest, t.LastHigh
		c.lastLanes = c.lastHigh | c.lastRest
	}
	switch {
	case t.Semi || t.Segments != 1 || t.Windows > 2 || !table.UnalignedLittleEndian || !fastSlots(t.Slots):
	case t.BucketBits >= 64 && t.BucketBits <= 120:
		c.loads = 2
	case t.BucketBits <= 57:
		c.loads = 1
	}
	c.Prefetch = c.Large && chainBytes >= FarChainBytes
	return c
}

// fastSlots reports whether buckets of the given slots are laid out as
// the lane masks of the one- and two-load reads assume: 1, 2, 4 or 8
// slots. Other sizes are read through the table's general path.
func fastSlots(slots uint64) bool {
	return slots == 1 || slots == 2 || slots == 4 || slots == 8
}

// read returns the bits of bucket i from bit 0: the first 64 in w0, the
// bits of its second window from bit 0 in w1 (both with the next
// buckets' bits above, which the lane masks leave out). It needs loads = 2.
func (c *Probe) read(i uint64) (w0, w1 uint64) {
	p := i * c.bb
	at := unsafe.Add(c.words, p>>3)
	sh := p & 7
	lo, hi := *(*uint64)(at), *(*uint64)(unsafe.Add(at, 8))
	// Two steps for the high word, so that sh = 0 shifts it out.
	lo = lo>>sh | hi<<(63-sh)<<1
	hi >>= sh
	wb := c.wb & 63
	return lo, lo>>wb | hi<<((64-wb)&63)
}

// read1 returns the bits of bucket i from bit 0 (a bucket of at most 57
// bits: loads = 1).
func (c *Probe) read1(i uint64) uint64 {
	p := i * c.bb
	return *(*uint64)(unsafe.Add(c.words, p>>3)) >> (p & 7)
}

// has reports whether the table holds h's fingerprint in one of its
// buckets.
func (c *Probe) Has(h uint64) bool {
	fp := addr.Fingerprint(h, c.fpMax)
	i1 := addr.Bucket(h, c.m)
	return c.Holds(i1, fp, addr.Alt(i1, fp, c.m), fp)
}

// holds reports whether bucket i1 holds f1 or bucket i2 holds f2 (the two
// differ in a growing table, whose tags carry bucket bits). Both buckets
// are read before either is compared.
func (c *Probe) Holds(i1, f1, i2, f2 uint64) bool {
	switch c.loads {
	case 2:
		a0, a1 := c.read(i1)
		b0, b1 := c.read(i2)
		r, q := f1*c.low, f2*c.low
		return anyZero(a0^r, c.low, c.high)|anyZero(a1^r&c.lastLanes, c.lastLow, c.lastHigh)|
			anyZero(b0^q, c.low, c.high)|anyZero(b1^q&c.lastLanes, c.lastLow, c.lastHigh) != 0
	case 1:
		a, b := c.read1(i1), c.read1(i2)
		return anyZero(a^f1*c.low, c.low, c.high)|anyZero(b^f2*c.low, c.low, c.high) != 0
	}
	return c.t.HoldsEither(i1, f1, i2, f2)
}

// empties returns the empty slots of bucket i.
func (c *Probe) Empties(i uint64) uint64 {
	switch c.loads {
	case 2:
		w0, w1 := c.read(i)
		return uint64(bits.OnesCount64(table.ZeroLanes(w0, c.rest, c.high)) + bits.OnesCount64(table.ZeroLanes(w1, c.lastRest, c.lastHigh)))
	case 1:
		return uint64(bits.OnesCount64(table.ZeroLanes(c.read1(i), c.rest, c.high)))
	}
	return c.t.Copies(i, 0)
}

// Has reports whether any table of cs holds h's fingerprint,
// probing them from the last (the newest of a Scalable's, which holds the
// most keys) and stopping at the first that does.
func Has(cs []Probe, h uint64) bool {
	if Far(cs) {
		PrefetchFar(cs, h)
	}
	return Find(cs, h, true) >= 0
}

// First returns the index of the first table of cs that holds h's
// fingerprint, or -1.
func First(cs []Probe, h uint64) int {
	if Far(cs) {
		PrefetchFar(cs, h)
	}
	return Find(cs, h, false)
}

// Far reports whether a lookup in cs prefetches the large tables'
// buckets before it probes the chain (PrefetchFar; see FarChainBytes).
func Far(cs []Probe) bool { return len(cs) > 0 && cs[len(cs)-1].Prefetch }

// Find returns the index of a table of cs that holds h's fingerprint,
// the first such from the last table when newestFirst is set, from the
// first otherwise, or -1. Each table's buckets are loaded before anything
// is compared, and the loop's exit is predicted not taken for an absent
// key, so the CPU issues the loads of the next tables while it compares.
// The callers prefetch a far chain's large tables first.
func Find(cs []Probe, h uint64, newestFirst bool) int {
	k, end, step := 0, len(cs), 1
	if newestFirst {
		k, end, step = len(cs)-1, -1, -1
	}
	for ; k != end; k += step {
		c := &cs[k]
		fp := addr.Fingerprint(h, c.fpMax)
		i1 := addr.Bucket(h, c.m)
		i2 := addr.Alt(i1, fp, c.m)
		if c.loads != 2 {
			if c.Holds(i1, fp, i2, fp) {
				return k
			}
			continue
		}
		// holds, inline: the shape of the chain's wider tables.
		a0, a1 := c.read(i1)
		b0, b1 := c.read(i2)
		r0 := fp * c.low
		r1 := r0 & c.lastLanes
		if anyZero(a0^r0, c.low, c.high)|anyZero(a1^r1, c.lastLow, c.lastHigh)|
			anyZero(b0^r0, c.low, c.high)|anyZero(b1^r1, c.lastLow, c.lastHigh) != 0 {
			return k
		}
	}
	return -1
}

// PrefetchFar prefetches h's two buckets in each table of cs marked
// prefetch (see FarChainBytes): the CPU holds the instructions of only a table
// or two of a chain's loop in flight at once, so without it the misses of
// the large tables of a long chain would come one or two at a time.
func PrefetchFar(cs []Probe, h uint64) {
	for k := len(cs) - 1; k >= 0 && cs[k].Prefetch; k-- {
		c := &cs[k]
		fp := addr.Fingerprint(h, c.fpMax)
		i1 := addr.Bucket(h, c.m)
		lines := [2]uint64{i1 * c.bb >> 6, addr.Alt(i1, fp, c.m) * c.bb >> 6}
		prefetch.Words(c.t.Words, lines[:])
	}
}

// group is a group of keys located in one table.
type group struct {
	i1, i2, fp [table.BatchGroup]uint64
}

// values reads bucket i's values (0: empty) into out[:slots] (loads ≥ 1).
func (c *Probe) Values(i uint64, out *[8]uint64) {
	t := c.t
	f, mask := t.FPBits&63, t.FPMask
	var w0, w1 uint64
	if c.loads == 2 {
		w0, w1 = c.read(i)
	} else {
		w0 = c.read1(i)
	}
	for s := uint64(0); s < t.Lanes; s++ {
		out[s&7] = w0 >> (s * f & 63) & mask
	}
	for s := t.Lanes; s < t.Slots; s++ {
		out[s&7] = w1 >> ((s - t.Lanes) * f & 63) & mask
	}
}

// replace puts new in place of one copy of old in bucket i (old 0: an
// empty slot), and reports false when the bucket holds no old: table.replace
// with the bucket read as the lookups read it.
func (c *Probe) Replace(i, old, new uint64) bool {
	if c.loads == 0 {
		return c.t.Replace(i, old, new)
	}
	var w0, w1 uint64
	if c.loads == 2 {
		w0, w1 = c.read(i)
	} else {
		w0 = c.read1(i)
	}
	f := c.t.FPBits
	p := i * c.bb
	if z := table.ZeroLanes(w0^old*c.low, c.rest, c.high); z != 0 {
		p += table.LaneStart(z, f)
	} else if z := table.ZeroLanes(w1^old*c.lastLow, c.lastRest, c.lastHigh); z != 0 {
		p += c.t.WindowBits + table.LaneStart(z, f)
	} else {
		return false
	}
	c.t.SetSlotAt(p, new)
	return true
}

// pass looks up hashes hs in the table, the answers going to found at the
// indexes at holds (at[k] for hs[k]): it sets found[at[k]] for each hash
// the table holds and moves the others, in order, to the front of hs and
// at, returning how many there are. It locates a group of hashes while it
// compares the group before, and in a large table prefetches the located
// buckets, so that their misses overlap.
func (c *Probe) Pass(hs []uint64, at []uint16, found []bool) int {
	at = at[:len(hs)]
	if c.loads != 2 {
		n := 0
		for k, h := range hs {
			hit := c.Has(h)
			found[at[k]] = hit
			hs[n], at[n] = h, at[k]
			n += 1 - b2u(hit)
		}
		return n
	}
	var gs [2]group
	c.locate(hs, &gs[0])
	words, bb, wb := c.words, c.bb, c.wb&63
	low, high, lastLow, lastHigh, lastLanes := c.low, c.high, c.lastLow, c.lastHigh, c.lastLanes
	n := 0
	for lo := 0; lo < len(hs); lo += table.BatchGroup {
		hi := min(lo+table.BatchGroup, len(hs))
		g := &gs[lo/table.BatchGroup&1]
		if hi < len(hs) {
			c.locate(hs[hi:], &gs[lo/table.BatchGroup&1^1])
		}
		for k := lo; k < hi; k++ {
			x := (k - lo) & (table.BatchGroup - 1)
			a0, a1 := readAt(words, g.i1[x]*bb, wb)
			b0, b1 := readAt(words, g.i2[x]*bb, wb)
			r := g.fp[x] * low
			hit := anyZero(a0^r, low, high)|anyZero(a1^r&lastLanes, lastLow, lastHigh)|
				anyZero(b0^r, low, high)|anyZero(b1^r&lastLanes, lastLow, lastHigh) != 0
			found[at[k]] = hit
			hs[n], at[n] = hs[k], at[k]
			n += 1 - b2u(hit)
		}
	}
	return n
}

// locate puts the buckets and fingerprints of up to table.BatchGroup hashes in
// g, prefetching the buckets' lines if the table is large: the line of
// each bucket's first word and of the last word its reads touch
// (table.LastReadWord), which the insert after the lookup reads too.
func (c *Probe) locate(hs []uint64, g *group) {
	hs = hs[:min(len(hs), table.BatchGroup)]
	for k, h := range hs {
		fp := addr.Fingerprint(h, c.fpMax)
		i1 := addr.Bucket(h, c.m)
		g.i1[k], g.i2[k], g.fp[k] = i1, addr.Alt(i1, fp, c.m), fp
	}
	if c.Large {
		var lines [4 * table.BatchGroup]uint64
		for k := range hs {
			p1, p2 := g.i1[k]*c.bb, g.i2[k]*c.bb
			lines[4*k], lines[4*k+1] = p1>>6, table.LastReadWord(p1, c.bb)
			lines[4*k+2], lines[4*k+3] = p2>>6, table.LastReadWord(p2, c.bb)
		}
		prefetch.Words(c.t.Words, lines[:4*len(hs)])
	}
}

// readAt is Probe.read of the bucket at bit p of words, whose first
// window has wb bits.
func readAt(words unsafe.Pointer, p, wb uint64) (w0, w1 uint64) {
	at := unsafe.Add(words, p>>3)
	sh := p & 7
	lo, hi := *(*uint64)(at), *(*uint64)(unsafe.Add(at, 8))
	lo = lo>>sh | hi<<(63-sh)<<1
	hi >>= sh
	return lo, lo>>wb | hi<<((64-wb)&63)
}

// b2u is 1 for true, 0 for false.
func b2u(b bool) int {
	if b {
		return 1
	}
	return 0
}
