package table

import "math/bits"

// The insert into a table that one goroutine writes (a Filter's, and a
// Scalable's full tables): a free slot of the key's emptier bucket, else
// room made by moving other fingerprints, by a random walk and by the
// breadth-first search for room (search.go). A failed insert leaves the
// table bit for bit as it was.

// Outcome is how Add ended.
type Outcome uint8

const (
	// Stored: fp took a slot.
	Stored Outcome = iota
	// Crowded: the key's buckets hold MaxSlotCopies copies of fp already;
	// the table is unchanged, and the caller counts the copy beside it
	// (Counters, by PairKey).
	Crowded
	// Full: no room was found; the table is as it was.
	Full
	// Present (AddAbsent only): the key's buckets hold fp already; the
	// table is unchanged.
	Present
)

// kickStep is one move of the random walk: placed went into slot of
// bucket, displacing the fingerprint the walk carried on with. (Bucket
// indexes and fingerprints fit 32 bits: see table.)
type kickStep struct {
	bucket, placed uint32
	slot           uint8
}

// Inserts is the memory a table's inserts keep between them, so that they
// allocate nothing once warm: the random walk's path and the search's
// scratch. The zero value is ready.
type Inserts struct {
	path   []kickStep // of one insert's random walk
	search Scratch    // of one insert's breadth-first search
}

// Bytes is the memory the scratch holds.
func (in *Inserts) Bytes() uint64 {
	return uint64(cap(in.path))*12 + in.search.Bytes()
}

// Add puts fp, the fingerprint of a key whose buckets are i1 and i2 and
// whose hash is h (it seeds the walk), into t, moving at most maxKicks
// fingerprints on a walk, and reports how it ended. It needs a table of
// one segment or with i2 = t.AltIndex(i1, fp).
func (t *Table) Add(in *Inserts, i1, i2, fp, h uint64, maxKicks int) Outcome {
	return t.add(in, i1, i2, fp, h, maxKicks, MaxSlotCopies)
}

// AddAbsent is Add for a set: it puts fp into t unless one of its buckets
// holds fp already, and then returns Present with the table unchanged. It
// reads each bucket once for both questions, where Contains and then Add
// would read them twice, so the table after it is the one Contains and
// then Add build.
func (t *Table) AddAbsent(in *Inserts, i1, i2, fp, h uint64, maxKicks int) Outcome {
	if o := t.add(in, i1, i2, fp, h, maxKicks, 1); o != Crowded {
		return o
	}
	return Present
}

// add is Add, with the key's buckets taken to be crowded (Crowded, the
// table unchanged) when they hold most copies of fp.
func (t *Table) add(in *Inserts, i1, i2, fp, h uint64, maxKicks int, most int) Outcome {
	switch {
	case t.Windows == 1 && !t.Semi:
		// The common shapes: read each bucket once, find the copies of fp
		// and the empty slots of both with four SWAR steps.
		var p1, p2, w1, w2 uint64
		if t.Aligned {
			p1, p2 = i1<<(t.BucketShift&63), i2<<(t.BucketShift&63)
			w1, w2 = t.AlignedBucket(i1), t.AlignedBucket(i2)
		} else {
			p1, p2 = i1*t.BucketBits, i2*t.BucketBits
			w1, w2 = t.Window(p1), t.Window(p2)
		}
		rep := fp * t.LaneLow
		copies := bits.OnesCount64(ZeroLanes(w1^rep, t.LaneRest, t.LaneHigh)) +
			bits.OnesCount64(ZeroLanes(w2^rep, t.LaneRest, t.LaneHigh))
		if copies >= most {
			return Crowded
		}
		// The placement rule: fp goes into whichever bucket has more empty
		// slots, the first on a tie. Two choices keep the buckets' loads
		// even, so that near capacity fewer inserts find both buckets full,
		// and their moves are shorter; lookups read both buckets anyway.
		// The bucket is selected with masks, not a branch, which would
		// mispredict about half the time.
		e1, e2 := ZeroLanes(w1, t.LaneRest, t.LaneHigh), ZeroLanes(w2, t.LaneRest, t.LaneHigh)
		second := -(uint64(bits.OnesCount64(e1)-bits.OnesCount64(e2)) >> 63)
		p := p1 ^ (p1^p2)&second
		e := e1 ^ (e1^e2)&second
		if e != 0 {
			p += LaneStart(e, t.FPBits)
			if t.Aligned {
				t.Words[p>>6] |= fp << (p & 63)
			} else {
				StoreBits(t.Words, p, t.FPMask, fp)
			}
		} else if !t.makeRoom(in, i1, i2, fp, h, maxKicks) {
			return Full
		}
	case t.Windows == 2 && !t.Semi:
		// Buckets of two windows (4 slots of 17 to 32 bits, the wider
		// tables of a Scalable; 8 slots of 9 to 16): the same steps on
		// both windows of each bucket, each window read once. The lowest
		// empty slot of the chosen bucket is in its first window if that
		// has one (Insert's choice).
		p1, p2 := i1*t.BucketBits, i2*t.BucketBits
		a0, a1 := t.windowPair(p1)
		b0, b1 := t.windowPair(p2)
		rep, repLast := fp*t.LaneLow, fp*t.LastLow
		copies := bits.OnesCount64(ZeroLanes(a0^rep, t.LaneRest, t.LaneHigh)) +
			bits.OnesCount64(ZeroLanes(a1^repLast, t.LastRest, t.LastHigh)) +
			bits.OnesCount64(ZeroLanes(b0^rep, t.LaneRest, t.LaneHigh)) +
			bits.OnesCount64(ZeroLanes(b1^repLast, t.LastRest, t.LastHigh))
		if copies >= most {
			return Crowded
		}
		za0, za1 := ZeroLanes(a0, t.LaneRest, t.LaneHigh), ZeroLanes(a1, t.LastRest, t.LastHigh)
		zb0, zb1 := ZeroLanes(b0, t.LaneRest, t.LaneHigh), ZeroLanes(b1, t.LastRest, t.LastHigh)
		e1 := bits.OnesCount64(za0) + bits.OnesCount64(za1)
		e2 := bits.OnesCount64(zb0) + bits.OnesCount64(zb1)
		second := -(uint64(e1-e2) >> 63) // the placement rule, as above
		p := p1 ^ (p1^p2)&second
		z0, z1 := za0^(za0^zb0)&second, za1^(za1^zb1)&second
		switch {
		case z0 != 0:
			StoreBits(t.Words, p+LaneStart(z0, t.FPBits), t.FPMask, fp)
		case z1 != 0:
			StoreBits(t.Words, p+t.WindowBits+LaneStart(z1, t.FPBits), t.FPMask, fp)
		default:
			if !t.makeRoom(in, i1, i2, fp, h, maxKicks) {
				return Full
			}
		}
	default:
		if t.Copies(i1, fp)+t.Copies(i2, fp) >= uint64(most) {
			return Crowded
		}
		a, b := i1, i2 // the placement rule, as above
		if t.Copies(i2, 0) > t.Copies(i1, 0) {
			a, b = i2, i1
		}
		if !t.Insert(a, fp) && !t.Insert(b, fp) && !t.makeRoom(in, i1, i2, fp, h, maxKicks) {
			return Full
		}
	}
	return Stored
}

// WalkFirstBytes is the largest table whose inserts try the random walk
// before the breadth-first search. In a table that fits in a core's L2
// cache (2 MiB on most current server cores) a walk's moves are cache
// hits, and at the loads a filter reaches it ends within a few of them,
// cheaper than the search's first level of eight alternate buckets.
// Beyond the cache the search, which overlaps its misses, wins
// (bench/notes.md, item 13). It depends only on the table's shape, so the
// table after an insert still depends only on the table before and the
// key. Semi-sorted tables, whose inserts are dominated by decoding and
// encoding buckets, search first: the walk gains them nothing, and its
// path buffer would cost them memory.
const WalkFirstBytes = 2 << 20

// makeRoom inserts fp, whose buckets i1 and i2 are both full, by moving
// other fingerprints: by a random walk (kick) and, if that fails, by a
// breadth-first search (searchPath), or the other way round for a table
// larger than WalkFirstBytes or semi-sorted. Each leaves the table as it
// was when it fails.
func (t *Table) makeRoom(in *Inserts, i1, i2, fp, h uint64, maxKicks int) bool {
	if !t.Semi && uint64(len(t.Words))*8 <= WalkFirstBytes {
		return t.kick(in, i1, i2, fp, h, maxKicks) || t.searchPath(in, i1, i2, fp, maxKicks)
	}
	return t.searchPath(in, i1, i2, fp, maxKicks) || t.kick(in, i1, i2, fp, h, maxKicks)
}

// kick makes room for fp, whose buckets i1 and i2 are both full, by a random
// walk: put fp in a random slot of one bucket, move the fingerprint it
// displaces to that one's other bucket, and so on, until a displaced
// fingerprint lands in an empty slot. If none does within maxKicks moves,
// every move is undone in reverse order, which restores the table bit for
// bit, and kick reports false.
//
// The walk's random choices are drawn from a generator seeded with the key's
// hash h, not from state kept in the filter: the table after an operation
// depends only on the table before it and the key, so a decoded filter goes
// on exactly like the one that was encoded.
func (t *Table) kick(in *Inserts, i1, i2, fp, h uint64, maxKicks int) bool {
	rng, i := NewWalk(h, i1, i2)
	cur := fp
	// The path grows as needed and is kept for the next walk: filters that
	// never need a long walk do not pay for maxKicks steps of it.
	in.path = in.path[:0]
	for n := 0; n < maxKicks; n++ {
		s := KickSlot(rng.Next(), t.Slots)
		victim := t.Swap(i, s, cur)
		in.path = append(in.path, kickStep{uint32(i), uint32(cur), uint8(s)})
		cur = victim
		i = t.AltIndex(i, cur)
		if t.Insert(i, cur) {
			return true
		}
	}
	// INVARIANT: walking the path backwards, cur is the fingerprint that
	// step k displaced, and bucket k is as step k left it.
	for k := len(in.path) - 1; k >= 0; k-- {
		st := in.path[k]
		t.Unswap(uint64(st.bucket), uint64(st.slot), uint64(st.placed), cur)
		cur = uint64(st.placed)
	}
	return false
}

// searchPath makes room for fp, whose buckets i1 and i2 are both full, by
// the breadth-first search for the shortest chain of moves that ends in an
// empty slot (internal/table/search.go), exploring the slots Budget allows a
// table that a random walk backs up. It moves nothing unless it finds a chain, and then moves
// the chain hole first with fp going into the freed slot.
func (t *Table) searchPath(in *Inserts, i1, i2, fp uint64, maxKicks int) bool {
	q, end, ok := in.search.Room(t, i1, i2, Budget(maxKicks, WalkLimit))
	if ok {
		PlaceChain(t, q, end, fp, fp)
	}
	return ok
}
