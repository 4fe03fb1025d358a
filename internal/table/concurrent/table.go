package concurrent

import (
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/dedupkit/cuckoo/internal/invariants"
	"github.com/dedupkit/cuckoo/internal/prefetch"
	"github.com/dedupkit/cuckoo/internal/table"
)

// Table is one cuckoo table shared by goroutines: the table of the root
// package's Concurrent, or one table of a growing one. Its bucket layout,
// hashing and duplicate counters are those of a table.Multiset (a
// Filter's; plain buckets only), so a snapshot of it is one
// (SnapshotLocked), and a decoded one can become a Table (From).
//
// # Writers: lock striping
//
// The buckets are divided into stripes (bucket i belongs to stripe
// i & smask); each stripe has a mutex. A writer locks the stripes of the
// two buckets it touches, lower stripe first, so writers of different
// buckets run in parallel and no two writers ever wait for each other in a
// cycle. A slot is emptied, and a fingerprint moved, only by a holder of
// its stripe's lock; an empty slot may also be filled without a lock (see
// "Inserts without a lock" below). Two buckets of different stripes may
// share a memory word, so each write is one atomic operation on the word
// that changes one slot only: a compare-and-swap or an OR (a slot goes
// from empty to a fingerprint), an AND (from a fingerprint to empty). A
// slot straddling two words takes one operation on each; a reader may then
// see half a fingerprint, which can make it see a fingerprint for a moment
// that is not there, never miss one that is, as only that slot changes.
// Every shared word is read with an atomic load and written with an atomic
// operation, so the race detector sees no race.
//
// # Readers: no lock, version-validated
//
// Contains takes no lock. An insert into an empty slot or a delete changes
// one slot and needs nothing more: a reader sees the slot before or after,
// and either answer is right for an operation it overlaps. The hazard is a
// displacement, which moves a fingerprint fp from bucket S to bucket D (its
// other bucket): a reader of a key with that fingerprint reads its two
// buckets, S and D, one after the other, and if it reads D before fp
// arrives there and S after fp left, it misses a key that was present all
// along — a false negative.
//
// So every move is a seqlock write: the mover, holding the stripe locks of
// S and D, increments the version counters of both stripes to odd, copies
// fp into an empty slot of D, then clears its slot in S, and increments
// both versions back to even. The copy comes before the clear, so fp is in
// S or D (or both) at every moment. A reader loads the versions of its two
// buckets' stripes, reads the buckets, and if it found fp it answers yes
// at once (fp was really there). If not, it reloads the versions: if both
// were even and are unchanged, no move of any fingerprint between its two
// buckets overlapped its reads (any such move goes through exactly those
// two stripes and changes their versions), so the buckets it read were a
// consistent view and the answer is no. Otherwise it reads again. Go's
// atomics are sequentially consistent, which is all this argument needs.
// Readers retry only on a miss that overlapped a move, which is rare: a
// lookup costs two version loads more than a Filter's.
//
// # Displacement
//
// When both buckets of a key are full, the writer releases its locks and
// searches for a chain of moves that ends in an empty slot, breadth first,
// reading the table without locks, a level at a time with each level's
// buckets prefetched. (When its search fails a Filter falls back to a
// random walk, which moves fingerprints as it goes and holds one out of
// the table at every step: no reader could be sure to find it. The search
// alone, over up to 4×MaxKicks slots, fills tables about as far.) It then
// performs the chain hole first:
// the last fingerprint into the empty slot, then the one before into the
// slot just freed, and so on, each move under the locks of its own two
// buckets and checked again there (the fingerprint is still in its bucket,
// the destination still has an empty slot). If a check fails because
// another writer got there first, the moves already made are harmless
// (each fingerprint went to its other bucket), and the insert starts
// again. A chain is never half-moved with a fingerprint out of the table,
// so a failed insert loses nothing.
//
// # Inserts without a lock
//
// In a fixed-capacity table most inserts take no lock either: when one of
// the key's buckets has an empty slot held in a single word, the insert
// claims it with a compare-and-swap of that word (addFast), which fails
// if any slot of the word changed and then reads again. So that such
// inserts and locked writers never write the same slot, every fill of a
// slot that fits in a word, locked or not, is that compare-and-swap
// (claim): a locked writer that finds its empty slot taken looks again.
// Slots straddling two words are filled only under their stripe's lock.
// Nothing else about readers changes: a lock-free insert fills one empty
// slot, like a locked one. Deletes, displacements, AddUnique (whose check
// and insert must be one step) and the tables of a growing filter (sealed
// and limited while others take their keys) keep the locks.
//
// Counts are kept in tallies rather than per stripe: a writer adds to the
// tally of its own goroutine (tallyOf), so two cores rarely write one
// counter line, which would cost a cache-line transfer per insert. A tally
// also counts its lock-free inserts in progress: Exclusive, which stops
// every writer for snapshots, sealing and Reset, takes every lock, sets
// frozen (lock-free inserts then take the locked path), and waits for the
// tallies' inserts in progress to end. An insert marks itself active
// before it loads frozen, and Exclusive sets frozen before it loads the
// marks, so with sequentially consistent atomics one of them sees the
// other.
//
// Invariants (besides the Multiset's):
//   - the tallies' items and slots add up to the table's items (copies
//     included) and occupied slots, once the operations in progress end;
//     a stripe's dups and over maps hold the counters of the bucket pairs
//     whose lower bucket is in the stripe. A move keeps a fingerprint in
//     its pair, so it changes none of them.
//   - versions are even whenever no move is in progress in the stripe.
//   - a slot that straddles two words is filled only by a holder of its
//     stripe's lock; a slot in one word only by claim.
type Table struct {
	// Every operation reads the fields from t to frozen; the padding
	// before and after them keeps their cache lines inside the struct
	// wherever the allocator puts it (see table.CacheLine).
	_        [table.CacheLine - 8]byte
	t        table.Table // t.words is accessed atomically
	capacity uint64
	maxKicks int
	vers     []atomic.Uint64
	stripes  []stripe
	tallies  *[numTallies]tally
	smask    uint64
	gen      uint32
	aligned  bool   // buckets never straddle a word (b·f is 32 or 64)
	growing  bool   // a table of a growing filter (see addLocked)
	limit    uint64 // most occupied slots; limited: enforced with occ
	limited  bool
	// state is written with every stripe lock held and read with any one.
	state  State
	frozen atomic.Bool // set by Exclusive: inserts take the locks

	// Written by some writers, so kept off the line of the fields above,
	// which every operation reads.
	_     [table.CacheLine]byte
	occ   atomic.Uint64 // occupied slots, kept when limited
	live  atomic.Int64  // items, kept once sealed, to release emptied tables
	moves atomic.Uint64 // fingerprints moved by displacements
	_     [table.CacheLine]byte
}

// tally is one goroutine-affine share of a table's counts (see the type's
// doc), a cache line of its own.
//
// slots packs two counters, so that a lock-free insert changes its tally
// with two atomic additions, not four:
//
//	bits 63..20: slots filled less slots emptied (signed)
//	bits 19..0:  lock-free inserts in progress (0 to 2^20-1)
//
// The second stays in range as long as fewer than a million goroutines
// share the tally at one moment; a change of the first leaves it as it is,
// and an arithmetic shift by 20 recovers the first.
type tally struct {
	slots  atomic.Int64
	copies atomic.Int64 // counted copies (duplicate and overflow counters) added less removed
	_      [48]byte
}

const (
	activeBits = 20
	oneSlot    = 1 << activeBits
	activeMask = oneSlot - 1
)

// numTallies is the number of tallies of a table: two goroutines share one
// with probability 1/64.
const numTallies = 64

// tallyOf returns the tally of the calling goroutine, chosen by the
// address of a local variable: goroutine stacks are separate blocks of at
// least 2 KiB, so goroutines running at once get different tallies (up to
// collisions), and one goroutine keeps its own while its stack stays put.
// A goroutine that moves, or two that share a tally, only cost speed: the
// figures are sums over every tally.
func (c *Table) tallyOf() *tally {
	var anchor byte
	p := uint64(uintptr(unsafe.Pointer(&anchor)))
	return &c.tallies[(p>>11)*0x9e3779b97f4a7c15>>(64-6)]
}

// State is where a table is in its filter's chain.
type State uint8

const (
	Open    State = iota // takes new fingerprints
	Sealed               // a newer table exists: copies only
	Dropped              // released from the chain: empty
)

// Gen is a table's place in its filter.
type Gen struct {
	K        uint32 // the generation: 0 for a fixed-capacity filter's one table
	Capacity uint64 // the keys it was sized for
	Limit    uint64 // most occupied slots (every slot: no limit)
	Growing  bool   // a table of a growing filter (see addLocked)
}

// stripe is the lock and counter maps of a set of buckets, padded to a
// cache line so writers of neighbouring stripes do not share one.
type stripe struct {
	mu   sync.Mutex
	dups table.Counters // copies beyond maxSlotCopies
	over table.Counters // copies a full sealed table had no slot for
	_    [40]byte
}

// maxStripes bounds the number of stripes: with 1024, two writers meet on
// a lock once in a thousand inserts at most.
const maxStripes = 1024

// New returns an empty table of numBuckets buckets of slots fingerprints
// of fpBits bits, whose inserts move up to maxKicks fingerprints, placed
// in its filter as g says.
func New(numBuckets, slots, fpBits uint64, maxKicks int, g Gen) *Table {
	c := &Table{t: table.New(numBuckets, slots, fpBits, false), maxKicks: maxKicks}
	c.setUp(g)
	return c
}

func (c *Table) setUp(g Gen) {
	n := uint64(1)
	for n < maxStripes && n*8 <= c.t.NumBuckets {
		n *= 2
	}
	c.aligned = 64%c.t.BucketBits == 0
	c.vers = table.Padded[atomic.Uint64](n, 0) // see cacheLine
	c.stripes = make([]stripe, n)
	c.tallies = new([numTallies]tally)
	c.smask = n - 1
	c.gen, c.capacity, c.limit, c.growing = g.K, g.Capacity, g.Limit, g.Growing
	c.limited = g.Limit < c.t.NumBuckets*c.t.Slots
}

// Gen returns the table's place in its filter.
func (c *Table) Gen() Gen {
	return Gen{K: c.gen, Capacity: c.capacity, Limit: c.limit, Growing: c.growing}
}

// Size returns the table's buckets, its slots per bucket and its
// fingerprint width.
func (c *Table) Size() (numBuckets, slots, fpBits uint64) {
	return c.t.NumBuckets, c.t.Slots, c.t.FPBits
}

// stripeOf returns the stripe of bucket i.
func (c *Table) stripeOf(i uint64) *stripe { return &c.stripes[i&c.smask] }

// lock2 locks the stripes of buckets i and j, the lower stripe first, and
// returns the second (nil when both are the same) for unlock2.
func (c *Table) lock2(i, j uint64) (a, b *stripe) {
	si, sj := i&c.smask, j&c.smask
	if si > sj {
		si, sj = sj, si
	}
	a = &c.stripes[si]
	a.mu.Lock()
	if sj != si {
		b = &c.stripes[sj]
		b.mu.Lock()
	}
	return a, b
}

func unlock2(a, b *stripe) {
	if b != nil {
		b.mu.Unlock()
	}
	a.mu.Unlock()
}

// Exclusive stops every writer of the table, while readers go on: it locks
// every stripe, in order, then freezes lock-free inserts and waits for
// those in progress (see the type's doc). EndExclusive undoes it.
func (c *Table) Exclusive() {
	for i := range c.stripes {
		c.stripes[i].mu.Lock()
	}
	c.frozen.Store(true)
	for i := range c.tallies {
		for c.tallies[i].slots.Load()&activeMask != 0 {
			runtime.Gosched()
		}
	}
}

func (c *Table) EndExclusive() {
	c.frozen.Store(false)
	for i := len(c.stripes) - 1; i >= 0; i-- {
		c.stripes[i].mu.Unlock()
	}
}

// window is table.window with atomic loads.
func (c *Table) window(p uint64) uint64 { return table.AtomicLoadWindow(c.t.Words, p) }

// buckets returns the first 64 bits of buckets i and j: the whole buckets
// when a bucket takes one window, with one load each when buckets never
// straddle a word.
func (c *Table) buckets(i, j uint64) (x, y uint64) {
	p, q := i*c.t.BucketBits, j*c.t.BucketBits
	if c.aligned {
		return c.word(p) >> (p & 63), c.word(q) >> (q & 63)
	}
	return c.window(p), c.window(q)
}

// word atomically loads the word holding bit p of the table.
func (c *Table) word(p uint64) uint64 { return atomic.LoadUint64(&c.t.Words[p>>6]) }

// match returns, for window w of bucket i, the high bit of every lane
// holding fp.
func (c *Table) match(i, w, fp uint64) uint64 {
	t := &c.t
	low, rest, high := t.LaneLow, t.LaneRest, t.LaneHigh
	if w == t.Windows-1 {
		low, rest, high = t.LastLow, t.LastRest, t.LastHigh
	}
	return table.ZeroLanes(c.window(i*t.BucketBits+w*t.WindowBits)^fp*low, rest, high)
}

// countIn returns how many slots of bucket i hold fp (0: empty slots).
func (c *Table) countIn(i, fp uint64) uint64 {
	n := 0
	for w := uint64(0); w < c.t.Windows; w++ {
		n += bits.OnesCount64(c.match(i, w, fp))
	}
	return uint64(n)
}

// findIn returns the lowest slot of bucket i holding fp (0: an empty slot).
func (c *Table) findIn(i, fp uint64) (slot uint64, ok bool) {
	t := &c.t
	for w := uint64(0); w < t.Windows; w++ {
		if z := c.match(i, w, fp); z != 0 {
			return w*t.Lanes + uint64(bits.TrailingZeros64(z))*t.LaneRecip>>16, true
		}
	}
	return 0, false
}

// slotAt returns the fingerprint in slot s of bucket i.
func (c *Table) slotAt(i, s uint64) uint64 {
	t := &c.t
	return c.window(i*t.BucketBits+s*t.FPBits) & t.FPMask
}

// has2 reports whether bucket i or j holds fp, as one unvalidated read.
func (c *Table) has2(i, j, fp uint64) bool {
	t := &c.t
	if t.Windows == 1 {
		// buckets, written out: the lookup is the hot path.
		p, q := i*t.BucketBits, j*t.BucketBits
		var x, y uint64
		if c.aligned {
			x, y = c.word(p)>>(p&63), c.word(q)>>(q&63)
		} else {
			x, y = c.window(p), c.window(q)
		}
		rep := fp * t.LaneLow
		return table.ZeroLanes(x^rep, t.LaneRest, t.LaneHigh)|table.ZeroLanes(y^rep, t.LaneRest, t.LaneHigh) != 0
	}
	if t.Windows == 2 {
		// Buckets of two windows (the wider tables of a growing chain):
		// all four windows read before any is compared, as in the
		// one-window shapes, so the loads of both buckets overlap.
		p, q := i*t.BucketBits, j*t.BucketBits
		a0, b0 := c.window(p), c.window(q)
		a1, b1 := c.window(p+t.WindowBits), c.window(q+t.WindowBits)
		r0, r1 := fp*t.LaneLow, fp*t.LastLow
		return table.ZeroLanes(a0^r0, t.LaneRest, t.LaneHigh)|table.ZeroLanes(b0^r0, t.LaneRest, t.LaneHigh)|
			table.ZeroLanes(a1^r1, t.LastRest, t.LastHigh)|table.ZeroLanes(b1^r1, t.LastRest, t.LastHigh) != 0
	}
	for w := uint64(0); w < t.Windows; w++ {
		if c.match(i, w, fp)|c.match(j, w, fp) != 0 {
			return true
		}
	}
	return false
}

// fill writes fp into slot s of bucket i, which the caller, holding the
// bucket's stripe lock, found empty. It reports false when a lock-free
// insert took the slot first.
func (c *Table) fill(i, s, fp uint64) bool {
	t := &c.t
	p := i*t.BucketBits + s*t.FPBits
	sh := p & 63
	if sh+t.FPBits <= 64 {
		return c.claim(p, fp)
	}
	// A straddling slot: only lock holders fill it, so it is still empty.
	w := t.Words[p>>6 : p>>6+2 : p>>6+2]
	atomic.OrUint64(&w[0], fp<<sh)
	atomic.OrUint64(&w[1], fp>>(64-sh))
	return true
}

// claim writes fp into the slot at bit p, which lies in one word, if the
// slot is empty, and reports whether it did. Other slots of the word may
// change meanwhile: it then reads the word again.
func (c *Table) claim(p, fp uint64) bool {
	t := &c.t
	w := &t.Words[p>>6]
	sh := p & 63
	for {
		old := atomic.LoadUint64(w)
		if old>>sh&t.FPMask != 0 {
			return false
		}
		if atomic.CompareAndSwapUint64(w, old, old|fp<<sh) {
			return true
		}
	}
}

// empty clears slot s of bucket i; the caller holds its stripe lock.
func (c *Table) empty(i, s uint64) {
	t := &c.t
	p := i*t.BucketBits + s*t.FPBits
	w := t.Words[p>>6 : p>>6+2 : p>>6+2]
	sh := p & 63
	atomic.AndUint64(&w[0], ^(t.FPMask << sh))
	if hi := t.FPMask >> (64 - sh); hi != 0 && sh != 0 {
		atomic.AndUint64(&w[1], ^hi)
	}
}

// Contains reports whether the table holds h's fingerprint, validated
// against concurrent moves (see the type's doc). It takes no lock.
func (c *Table) Contains(h uint64) bool {
	i1, fp := c.t.Locate(h)
	i2 := c.t.AltIndex(i1, fp)
	va, vb := &c.vers[i1&c.smask], &c.vers[i2&c.smask]
	for n := 0; ; n++ {
		a, b := va.Load(), vb.Load()
		if c.has2(i1, i2, fp) {
			return true
		}
		if (a|b)&1 == 0 && va.Load() == a && vb.Load() == b {
			return false
		}
		if n >= 4 {
			runtime.Gosched() // the mover may be descheduled mid-move
		}
	}
}

// AddKind says which insertion an add is.
type AddKind uint8

const (
	AddMulti  AddKind = iota // one more copy (Add)
	AddUnique                // only if the pair holds no copy (AddUnique)
	AddSealed                // a copy into a sealed table that holds the fingerprint
)

// AddResult is how an add ended.
type AddResult uint8

const (
	Done    AddResult = iota
	Present           // AddUnique: the pair holds the fingerprint already
	NoRoom            // the table is full (or at its limit)
	Reroute           // the table was sealed or Released, or lost the fingerprint: rescan the chain
)

// Add inserts h's fingerprint as kind says.
func (c *Table) Add(h uint64, kind AddKind) AddResult {
	i1, fp := c.t.Locate(h)
	i2 := c.t.AltIndex(i1, fp)
	if kind == AddMulti && !c.growing && c.addFast(i1, fp, i2) {
		return Done
	}
	if r, done := c.addUnderLocks(i1, fp, i2, kind, false); done {
		return r
	}
	return c.addSlow(i1, fp, i2, kind)
}

// addFast tries to insert fp without a lock, into an empty slot of bucket
// i1 or i2 that lies in one word (see the type's doc), and reports whether
// it did. It leaves to the locked path a pair with table.MaxSlotCopies copies of
// fp already, full buckets, a straddling slot, and a frozen table.
//
// Two goroutines adding the same new key at once may both take a slot, so
// a pair can hold more than table.MaxSlotCopies slot copies. That wastes a slot
// and nothing else: later copies go to the duplicate counters all the
// same, and a delete takes those first.
func (c *Table) addFast(i1, fp, i2 uint64) bool {
	t := &c.t
	tl := c.tallyOf()
	tl.slots.Add(1) // one insert in progress
	ok := false
	for !c.frozen.Load() {
		copies, i, s := c.probe(i1, i2, fp)
		if copies >= table.MaxSlotCopies || s == noSlot {
			break
		}
		p := i*t.BucketBits + s*t.FPBits
		if p&63+t.FPBits > 64 {
			break
		}
		if c.claim(p, fp) {
			if invariants.Enabled {
				// Widen the window between the claim and its count, which
				// Exclusive must wait out, so tests would see it if it did not.
				runtime.Gosched()
			}
			ok = true
			break
		}
	}
	if ok {
		tl.slots.Add(oneSlot - 1) // a slot more, the insert done
	} else {
		tl.slots.Add(-1)
	}
	return ok
}

// addSlow is Add when both buckets are full: move fingerprints to free a
// slot of one, then try again.
func (c *Table) addSlow(i1, fp, i2 uint64, kind AddKind) AddResult {
	sc := scratchPool.Get().(*table.Scratch)
	defer scratchPool.Put(sc)
	for {
		if !c.makeRoom(i1, i2, sc) {
			if !c.growing {
				return NoRoom
			}
			r, _ := c.addUnderLocks(i1, fp, i2, kind, true)
			return r
		}
		if r, done := c.addUnderLocks(i1, fp, i2, kind, false); done {
			return r
		}
	}
}

// addUnderLocks is addLocked with the stripes of i1 and i2 locked.
func (c *Table) addUnderLocks(i1, fp, i2 uint64, kind AddKind, overflow bool) (AddResult, bool) {
	a, b := c.lock2(i1, i2)
	defer unlock2(a, b)
	return c.addLocked(i1, fp, i2, kind, overflow)
}

// addLocked is one attempt of Add, with the stripes of i1 and i2 locked.
// It reports done false when both buckets are full and room must be made.
// overflow (addCopy only) counts the copy beside the table instead.
func (c *Table) addLocked(i1, fp, i2 uint64, kind AddKind, overflow bool) (AddResult, bool) {
	if c.state == Dropped || c.state == Sealed && kind != AddSealed {
		return Reroute, true
	}
	copies, i, s := c.probe(i1, i2, fp)
	switch {
	case kind == AddUnique && copies > 0:
		return Present, true
	case kind == AddSealed && copies == 0:
		return Reroute, true
	}
	home := c.stripeOf(min(i1, i2))
	pk := table.PairKey(i1, i2, fp)
	if copies >= table.MaxSlotCopies {
		home.dups.Add(pk)
		c.counted(1, 0)
		return Done, true
	}
	if !overflow && c.reserve() {
		if s == noSlot {
			c.release()
			return 0, false
		}
		if !c.fill(i, s, fp) {
			// A lock-free insert took the slot: look again.
			c.release()
			return c.addLocked(i1, fp, i2, kind, overflow)
		}
		c.counted(1, 1)
		return Done, true
	}
	if copies == 0 || !c.growing {
		return NoRoom, true
	}
	// A table of a growing filter with no room for a second slot copy of a
	// fingerprint it holds: count the copy beside it (see level.over). The
	// copy must not go to a newer table: a key's copies stay in one table.
	home.over.Add(pk)
	c.counted(1, 0)
	return Done, true
}

// noSlot is probe's "no empty slot".
const noSlot = ^uint64(0)

// probe reads buckets i1 and i2 for an insert: the copies of fp in both,
// and where a new copy goes: slot s of bucket i, the lowest empty slot of
// whichever bucket has more empty slots (i1 on a tie), as Table.Add
// places it; s is noSlot when both are full. The common shapes (a bucket
// in one window) read each bucket once, both loads issued together.
func (c *Table) probe(i1, i2, fp uint64) (copies, i, s uint64) {
	t := &c.t
	if t.Windows == 1 {
		w1, w2 := c.buckets(i1, i2)
		rep := fp * t.LaneLow
		copies = uint64(bits.OnesCount64(table.ZeroLanes(w1^rep, t.LaneRest, t.LaneHigh)) +
			bits.OnesCount64(table.ZeroLanes(w2^rep, t.LaneRest, t.LaneHigh)))
		z1, z2 := table.ZeroLanes(w1, t.LaneRest, t.LaneHigh), table.ZeroLanes(w2, t.LaneRest, t.LaneHigh)
		i, z := i1, z1
		if bits.OnesCount64(z2) > bits.OnesCount64(z1) {
			i, z = i2, z2
		}
		if z == 0 {
			return copies, i, noSlot
		}
		return copies, i, uint64(bits.TrailingZeros64(z)) * t.LaneRecip >> 16
	}
	copies = c.countIn(i1, fp) + c.countIn(i2, fp)
	i = i1
	if c.countIn(i2, 0) > c.countIn(i1, 0) {
		i = i2
	}
	if s, ok := c.findIn(i, 0); ok {
		return copies, i, s
	}
	return copies, i, noSlot
}

// reserve takes one of the slots the limit allows; release gives it back.
func (c *Table) reserve() bool {
	if !c.limited {
		return true
	}
	for {
		o := c.occ.Load()
		if o >= c.limit {
			return false
		}
		if c.occ.CompareAndSwap(o, o+1) {
			return true
		}
	}
}

func (c *Table) release() {
	if c.limited {
		c.occ.Add(^uint64(0))
	}
}

// counted records items and slots added (negative: removed) by the caller,
// which holds the stripe locks of the pair. It reports whether a sealed
// table is now empty.
func (c *Table) counted(items, slots int64) bool {
	tl := c.tallyOf()
	if items != slots {
		tl.copies.Add(items - slots)
	}
	if slots != 0 {
		tl.slots.Add(slots * oneSlot)
		if slots < 0 {
			c.release()
		}
	}
	return c.state == Sealed && c.live.Add(items) == 0
}

// DelResult is how a delete ended.
type DelResult uint8

const (
	Deleted  DelResult = iota
	NotFound           // the pair holds no copy
	Released           // Deleted, and the sealed table is now empty
	Gone               // the table was Released: rescan the chain
)

// Remove deletes one copy of h's fingerprint from its bucket pair: a
// counted copy first (overflow, then duplicates), so the slot copies they
// rely on stay while they last.
func (c *Table) Remove(h uint64) DelResult {
	i1, fp := c.t.Locate(h)
	i2 := c.t.AltIndex(i1, fp)
	a, b := c.lock2(i1, i2)
	defer unlock2(a, b)
	if c.state == Dropped {
		return Gone
	}
	home := c.stripeOf(min(i1, i2))
	pk := table.PairKey(i1, i2, fp)
	var slots int64
	switch {
	case home.over.Take(pk), home.dups.Take(pk):
	default:
		i, s, ok := i1, uint64(0), false
		if s, ok = c.findIn(i1, fp); !ok {
			i = i2
			if s, ok = c.findIn(i2, fp); !ok {
				return NotFound
			}
		}
		c.empty(i, s)
		slots = -1
	}
	if c.counted(-1, slots) {
		return Released
	}
	return Deleted
}

// Count returns the copies of h's fingerprint its bucket pair holds,
// counters included.
func (c *Table) Count(h uint64) uint64 {
	i1, fp := c.t.Locate(h)
	i2 := c.t.AltIndex(i1, fp)
	a, b := c.lock2(i1, i2)
	defer unlock2(a, b)
	home := c.stripeOf(min(i1, i2))
	pk := table.PairKey(i1, i2, fp)
	return c.countIn(i1, fp) + c.countIn(i2, fp) + home.dups[pk] + home.over[pk]
}

var scratchPool = sync.Pool{New: func() any {
	// Room for a typical search, so that a new scratch (the race detector
	// makes the pool drop some) does not grow step by step.
	return table.NewScratch(table.WalkLimit)
}}

// makeRoom searches, without locks, for the shortest chain of moves from
// bucket i1 or i2 to an empty slot (internal/table/search.go), and performs
// it hole first (see the type's doc). No random walk follows a failed search
// (see Displacement), so the search takes the walk's kicks too: its budget
// is table.Budget of 2*maxKicks, without a limit (4*maxKicks slots). It
// reports false when there is no such chain; true when it freed a slot, or
// when another writer got in the way and the insert should simply look
// again.
func (c *Table) makeRoom(i1, i2 uint64, sc *table.Scratch) bool {
	q, end, ok := sc.Room(c, i1, i2, table.Budget(2*c.maxKicks, math.MaxInt))
	if ok {
		c.shift(q, end)
	}
	return ok
}

// A Concurrent's table is the table.Kind of its writers' searches, which
// read it with atomic loads while other writers move its values.

func (c *Table) Shape() (slots, bucketBits uint64) { return c.t.Slots, c.t.BucketBits }

func (c *Table) Other(b, v uint64) (alt, altV uint64) { return c.t.AltIndex(b, v), v }

func (c *Table) Prefetch(lines []uint64) { prefetch.Shared(c.t.Words, lines) }

func (c *Table) AppendBucket(q []table.Node, b, n uint64, parent int32) []table.Node {
	for sl := range n {
		q = append(q, table.Node{Bucket: uint32(b), Tag: uint32(c.slotAt(b, sl)), Parent: parent})
	}
	return q
}

func (c *Table) HasRoom(b uint64) bool {
	_, ok := c.findIn(b, 0)
	return ok
}

// shift performs the chain ending at step k, last move first, stopping at
// the first move that another writer made impossible.
func (c *Table) shift(q []table.Node, k int) {
	for ; k >= 0; k = int(q[k].Parent) {
		if !c.move(uint64(q[k].Bucket), uint64(q[k].Tag)) {
			return
		}
	}
}

// move moves one copy of fp from bucket src to an empty slot of its other
// bucket, as a seqlock write on both buckets' stripes.
func (c *Table) move(src, fp uint64) bool {
	dst := c.t.AltIndex(src, fp)
	a, b := c.lock2(src, dst)
	defer unlock2(a, b)
	s, ok := c.findIn(src, fp)
	if !ok {
		return false
	}
	e, ok := c.findIn(dst, 0)
	if !ok {
		return false
	}
	va, vb := &c.vers[src&c.smask], &c.vers[dst&c.smask]
	va.Add(1)
	if vb != va {
		vb.Add(1)
	}
	// The copy comes before the clear. A lock-free insert may take the
	// empty slot first: then take another, if there is one.
	for !c.fill(dst, e, fp) {
		if e, ok = c.findIn(dst, 0); !ok {
			break
		}
	}
	if ok {
		c.empty(src, s)
		c.moves.Add(1)
	}
	va.Add(1)
	if vb != va {
		vb.Add(1)
	}
	return ok
}

// Seal makes the table take no new fingerprints (a newer table exists) and
// starts keeping its item count in live.
func (c *Table) Seal() {
	c.Exclusive()
	c.state = Sealed
	c.live.Store(int64(c.Items()))
	c.EndExclusive()
}

// Drop releases a sealed table that holds nothing, and reports whether it
// did.
func (c *Table) Drop() bool {
	c.Exclusive()
	defer c.EndExclusive()
	if c.state != Sealed || c.Items() != 0 {
		return false
	}
	c.state = Dropped
	return true
}

// Items returns the number of items, copies included.
func (c *Table) Items() uint64 {
	var n int64
	for i := range c.tallies {
		n += c.tallies[i].slots.Load()>>activeBits + c.tallies[i].copies.Load()
	}
	// A delete may be counted before the insert it overlapped.
	return uint64(max(n, 0))
}

// SlotsUsed returns the number of occupied slots.
func (c *Table) SlotsUsed() uint64 {
	var n int64
	for i := range c.tallies {
		n += c.tallies[i].slots.Load() >> activeBits
	}
	return uint64(max(n, 0))
}

// SnapshotBuffer returns memory for a snapshot's copy of the words, with
// its pages already touched, so that the copy made while writers wait is a
// plain memory copy and not a series of page faults.
func (c *Table) SnapshotBuffer() []uint64 {
	w := make([]uint64, len(c.t.Words))
	for i := 0; i < len(w); i += 512 { // one write per 4 KiB page
		w[i] = 1
	}
	return w
}

// SnapshotLocked copies the table, into words (from SnapshotBuffer), as a
// plain table with its duplicate counters (a Filter's), and its overflow
// counters; the caller holds every stripe lock, so no writer runs and
// plain reads of the words are ordered after every write.
func (c *Table) SnapshotLocked(words []uint64) (table.Multiset, table.Counters) {
	t := table.Layout(c.t.NumBuckets, c.t.Slots, c.t.FPBits, false)
	t.Segment(c.t.Segments)
	copy(words, c.t.Words)
	t.Words = words
	m := table.Multiset{T: t, Occupied: c.SlotsUsed()}
	m.Items = m.Occupied
	var over table.Counters
	for i := range c.stripes {
		st := &c.stripes[i]
		for k, v := range st.dups {
			m.Dups.Set(k, v)
			m.Items += v
		}
		for k, v := range st.over {
			over.Set(k, v)
		}
	}
	return m, over
}

// From builds a table around a decoded (validated) plain table and
// its overflow counters, taking its words: every counter goes to the
// stripe of its pair's lower bucket, every count to the first tally.
func From(m *table.Multiset, maxKicks int, over table.Counters, g Gen, state State) *Table {
	c := &Table{t: m.T, maxKicks: maxKicks}
	c.setUp(g)
	items := m.Items
	for k, v := range m.Dups {
		c.stripeOf(k>>32).dups.Set(k, v)
	}
	for k, v := range over {
		c.stripeOf(k>>32).over.Set(k, v)
	}
	for _, v := range over {
		items += v
	}
	c.tallies[0].slots.Store(int64(m.Occupied) * oneSlot)
	c.tallies[0].copies.Store(int64(items - m.Occupied))
	if c.limited {
		c.occ.Store(m.Occupied)
	}
	c.state = state
	if state == Sealed {
		c.live.Store(int64(c.Items()))
	}
	return c
}

// Reset empties the table in place.
func (c *Table) Reset() {
	c.Exclusive()
	defer c.EndExclusive()
	for i := range c.t.Words {
		atomic.StoreUint64(&c.t.Words[i], 0)
	}
	for i := range c.stripes {
		c.stripes[i].dups, c.stripes[i].over = nil, nil
	}
	for i := range c.tallies {
		c.tallies[i].slots.Store(0) // no insert is in progress: Exclusive waited
		c.tallies[i].copies.Store(0)
	}
	c.occ.Store(0)
	c.live.Store(0)
}

// Moves returns the number of fingerprints displacements have moved.
func (c *Table) Moves() uint64 { return c.moves.Load() }

// Bytes returns the memory the table holds: its words, stripes and tallies,
// and its counters (an estimate of the maps' size); it takes each stripe's
// lock in turn to read them.
func (c *Table) Bytes() uint64 {
	const perStripe, perDup = 72, 32
	n := uint64(len(c.t.Words))*8 + uint64(len(c.stripes))*perStripe + uint64(unsafe.Sizeof(*c.tallies))
	for i := range c.stripes {
		c.stripes[i].mu.Lock()
		n += uint64(len(c.stripes[i].dups)+len(c.stripes[i].over)) * perDup
		c.stripes[i].mu.Unlock()
	}
	return n
}

// ContainsBatch sets found[k] to Contains(hs[k]), table.BatchGroup keys at
// a time, the next group's buckets prefetched while the current group is
// probed.
func (c *Table) ContainsBatch(hs []uint64, found []bool) {
	var lines [2 * table.BatchGroup]uint64
	c.prefetchGroup(hs[:min(table.BatchGroup, len(hs))], &lines)
	for lo := 0; lo < len(hs); lo += table.BatchGroup {
		hi := min(lo+table.BatchGroup, len(hs))
		if hi < len(hs) {
			c.prefetchGroup(hs[hi:min(hi+table.BatchGroup, len(hs))], &lines)
		}
		for k := lo; k < hi; k++ {
			found[k] = c.Contains(hs[k])
		}
	}
}

// prefetchGroup prefetches the two buckets of up to table.BatchGroup hashes.
func (c *Table) prefetchGroup(hs []uint64, lines *[2 * table.BatchGroup]uint64) {
	hs = hs[:min(len(hs), table.BatchGroup)]
	for k, h := range hs {
		i1, fp := c.t.Locate(h)
		lines[2*k] = i1 * c.t.BucketBits >> 6
		lines[2*k+1] = c.t.AltIndex(i1, fp) * c.t.BucketBits >> 6
	}
	prefetch.Shared(c.t.Words, lines[:2*len(hs)])
}
