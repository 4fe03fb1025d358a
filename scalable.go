package cuckoo

import (
	"errors"
	"fmt"

	"github.com/dedupkit/cuckoo/internal/hash"
	"github.com/dedupkit/cuckoo/internal/invariants"
	"github.com/dedupkit/cuckoo/internal/table"
	"github.com/dedupkit/cuckoo/internal/table/chain"
)

// DefaultScalableCapacity is the initial capacity of a zero [Scalable]
// that is added to without being built by NewScalable.
const DefaultScalableCapacity = 1024

// Scalable is a cuckoo filter that grows: for a set whose size is not known
// in advance. It is a chain of tables, each [WithGrowth] (2 by default)
// times the capacity of the one before. The newest grows in place, from a
// sixteenth of its size, as keys arrive; when it is full, Add starts the
// next. Nothing is ever rehashed (the keys are not kept) and nothing
// stored is ever lost. Add returns [ErrFull] only when the next table
// cannot be made: on a 32-bit platform, a table of more than 2 GiB (the
// largest slice there), which a chain of the default options needs at
// about 10^9 keys; the filter is then left as it was, as a full [Filter]
// is. On a 64-bit platform it never does.
//
// # False positives
//
// A key never added is a false positive if any table reports it, so each
// new table gets a few more fingerprint bits than the first (growth.go
// explains the schedule). The rate given with [WithFalsePositiveRate] is a
// bound: the filter's rate stays at or below it at every size
// ([Scalable.TargetFalsePositiveRate] returns it); the tables' own bounds
// add up to at most 15/16 of it, and the rate measured over a growth of
// 1000× stays below it (TestScalableRateIsABoundAtEverySize). The bound holds
// while the tables hold up to 2^36 (6.9·10^10) keys in all; NewScalable
// refuses a rate too small to keep that far with fingerprints of at most 32
// bits (with 4-slot buckets and the default growth, 1e-7 is kept from an
// initial capacity of 100 up; slower growth makes more tables, which need
// a larger rate). Given
// [WithFingerprintBits] instead, the first table has that width and the
// bound is twice the rate [New] gives it at capacity, or, for a width within
// a few bits of 32, the smallest bound the wider later tables can keep.
//
// # Memory
//
// A chain of tables each allocated whole would be, right after growing,
// half empty: its newest table as large as all the others together. So
// the newest table (after the first, whose size is the capacity asked for)
// starts at a sixteenth of its size, with 4 more bits per slot (fewer for
// fingerprints over 28 bits), and grows two buckets at a time by linear
// hashing, at a load of 0.8 (chain.Growing); each time it doubles, its slots
// drop a bit, and at full size it has dropped them all and fills like a
// Filter. Averaged over a growth of 1000× (sizes evenly spaced on a log
// scale) the tables take at most 1.6 × (log2(2/p) + 3) bits per item for a
// bound p (tested): measured 15.5, 19.6 and 22.9 bits per item for p = 1 %,
// 0.1 % and 0.01 % (docs/benchmarks.md has the figures at each size). The
// growing table costs inserts more than a new whole table would, as it keeps
// its load high.
//
// # Lookups
//
// Contains probes the tables newest (largest) first, so a present key is
// found after about two tables; an absent key probes all of them: 10
// tables at 1000 times the initial capacity with growth 2. The tables are
// probed in one loop over a small array of their geometry, each bucket
// read with one or two loads and compared with no branch, so that the
// CPU keeps the loads of several tables in flight (chain.Probe); still,
// each table costs about what a Filter's lookup costs, and an absent key
// pays for every table (docs/benchmarks.md has the figures). A larger
// [WithGrowth] makes fewer tables for the same growth, at some memory: 6
// tables instead of 10 at 1000× with growth 4, for 2 to 4 % more bits per
// key averaged over the growth. Add probes the tables too (see
// Duplicates), as a lookup does. The batch methods
// ([Scalable.ContainsBatch], [Scalable.AddUniqueBatch] and the others)
// probe each table for a chunk of keys at once, the buckets of the next
// keys prefetched while the current ones are compared, which pays in
// tables larger than the CPU caches.
//
// Keeping the tables apart is what lets them be added without the keys at
// the memory above. A single table that doubles in place (the InfiniFilter
// and Aleph designs) probes one table, but its tags lose a bit at each
// doubling, so every slot needs a marker of its tag's length, and a table
// that grows two buckets at a time cannot fill as a whole one does (its
// unsplit buckets take twice the keys): measured here, about 1.4 times a
// Filter's memory against this chain's 1.25, and more work per insert
// (bench/notes.md, item 25). The growing table borrows their idea of address bits kept in
// the slots, only until it is grown.
//
// # Duplicates and deletes
//
// A key's copies always sit in one table: Add puts a copy of a key into the
// oldest table that already reports it, and only a key no table reports
// goes into the newest. Delete removes a copy from the oldest table that
// reports the key, which is therefore the table that holds its copies:
// deleting a key that was added never removes another key's fingerprint,
// even when the other key collides with it in a newer table. Count is the
// count of that table. Deleting keys that were never added harms other
// keys as with a Filter. When the oldest table has no items left it is
// released.
//
// A table is closed when it first refuses a key, so it has almost no room
// left: a second copy of a key it holds goes into an empty slot of its two
// buckets if there is one (no fingerprint is moved to make room: that
// search would fail for most copies), and is otherwise counted beside it
// (a map entry of about 40 bytes, like the third and later copies of a key
// in a Filter). Use AddUnique where repeats need not
// be counted.
//
// # Concurrency and zero value
//
// Like a Filter (and a Go map), a Scalable may be read by many goroutines
// at once, but a mutation needs exclusive access; [Concurrent] with
// WithGrowth is the growing filter for concurrent writers. The zero
// Scalable is an empty filter: the first Add sets it up with the default
// options and an initial capacity of DefaultScalableCapacity, with a
// random seed.
type Scalable struct {
	// The tables, with the invariants of a chainState (growth.go).
	chainState
	// probe holds the plain tables of levels (all but a newest one that
	// grows in place), oldest first, as lookups read them (chain.Probe);
	// reprobe rebuilds it whenever levels changes.
	probe []chain.Probe
}

// NewScalable returns an empty growing filter whose first table holds
// initialCapacity distinct keys. It takes the options of [New] (the false
// positive rate or fingerprint width, bucket size, semi-sorting, kicks,
// seed) and [WithGrowth]. It returns an error wrapping
// [ErrInvalidParameter], and no filter, when a parameter is out of range.
func NewScalable(initialCapacity uint64, opts ...Option) (*Scalable, error) {
	c, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	if _, err := plan(initialCapacity, c); err != nil {
		return nil, err
	}
	g, err := newGrowth(initialCapacity, c)
	if err == nil {
		err = g.checkFirstTable()
	}
	if err != nil {
		return nil, err
	}
	s := &Scalable{chainState: chainState{g: g, seed: c.seed, maxKicks: c.maxKicks}}
	s.levels = []*chain.Level{s.newLevel(g.at(0))}
	s.reprobe()
	return s, nil
}

// reprobe rebuilds probe from levels.
func (s *Scalable) reprobe() {
	s.probe = s.probe[:0]
	bytes := s.plainBytes()
	for _, lv := range s.levels {
		if lv.Grow == nil {
			s.probe = append(s.probe, chain.NewProbe(&lv.Plain.T, bytes))
		}
	}
}

// plainBytes returns the memory of the plain tables' words.
func (s *Scalable) plainBytes() uint64 {
	var n uint64
	for _, lv := range s.levels {
		if lv.Grow == nil {
			n += uint64(len(lv.Plain.T.Words)) * 8
		}
	}
	return n
}

// newLevel returns an empty table of generation gen: growing in place
// from 1/2^R of its size when the chain does so, except for the
// first generation, whose size is the capacity asked for.
func (s *Scalable) newLevel(gen generation) *chain.Level {
	lv := &chain.Level{Gen: gen.k, Capacity: gen.capacity, Limit: gen.limit}
	if r := s.g.reserveOf(gen.fpBits); gen.k > 0 && r > 0 {
		lv.Grow = chain.NewGrowing(gen.numBuckets, s.g.slots, gen.fpBits, r, s.g.semi)
		return lv
	}
	lv.Plain.T = table.New(gen.numBuckets, s.g.slots, gen.fpBits, s.g.semi)
	return lv
}

// setUp gives a zero Scalable its default shape.
func (s *Scalable) setUp() {
	if s.levels == nil {
		z, err := NewScalable(DefaultScalableCapacity)
		if err != nil {
			panic("cuckoo: default Scalable: " + err.Error())
		}
		*s = *z
	}
}

// Add inserts one copy of key, adding a table when the newest is full.
// It returns nil, or, when the newest table is full and the next one
// cannot be made (on a 32-bit platform, a table of more than 2 GiB: see
// the type's doc), an error wrapping [ErrFull] that leaves the filter as
// it was: the key is not added, nothing stored is lost, and copies of keys
// the filter holds still go in. On a 64-bit platform it always returns
// nil. It allocates only when the growing table needs more memory (an
// eighth more at a time) or a table is added, and for the counters of a
// key added three times or more.
func (s *Scalable) Add(key []byte) error { s.setUp(); return s.AddHash(hash.Sum64(key, s.seed)) }

// AddString is [Scalable.Add] for a string key, without allocating.
func (s *Scalable) AddString(key string) error {
	s.setUp()
	return s.AddHash(hash.Sum64String(key, s.seed))
}

// AddUnique adds key unless Contains(key) already reports it, and says
// whether it did. Its error is that of [Scalable.Add]: nil, or, for a key
// not reported when the next table cannot be made, one wrapping [ErrFull]
// (with added false and the filter as it was). A false positive makes it
// skip a key that was never added: use it for set semantics (dedup), and
// Add for counting.
func (s *Scalable) AddUnique(key []byte) (added bool, err error) {
	s.setUp()
	return s.addUniqueHash(hash.Sum64(key, s.seed))
}

// AddUniqueString is [Scalable.AddUnique] for a string key, without
// allocating.
func (s *Scalable) AddUniqueString(key string) (added bool, err error) {
	s.setUp()
	return s.addUniqueHash(hash.Sum64String(key, s.seed))
}

func (s *Scalable) addUniqueHash(h uint64) (bool, error) {
	if s.ContainsHash(h) {
		return false, nil
	}
	if err := s.addNew(h); err != nil {
		return false, err
	}
	if invariants.Enabled {
		s.checkInvariants()
	}
	return true, nil
}

// Contains reports whether key may be in the filter: always true for a key
// added and not deleted, true with a small probability for any other key.
// It probes the tables newest first and allocates nothing.
func (s *Scalable) Contains(key []byte) bool { return s.ContainsHash(hash.Sum64(key, s.seed)) }

// ContainsString is [Scalable.Contains] for a string key, without
// allocating.
func (s *Scalable) ContainsString(key string) bool {
	return s.ContainsHash(hash.Sum64String(key, s.seed))
}

// Delete removes one copy of key and reports whether there was one. Delete
// only keys you added (see [Filter.Delete]).
func (s *Scalable) Delete(key []byte) bool { return s.DeleteHash(hash.Sum64(key, s.seed)) }

// DeleteString is [Scalable.Delete] for a string key, without allocating.
func (s *Scalable) DeleteString(key string) bool { return s.DeleteHash(hash.Sum64String(key, s.seed)) }

// Count returns how many copies of key's fingerprint the table holding the
// key's copies has: never less than the number of times key was added and
// not deleted.
func (s *Scalable) Count(key []byte) uint64 { return s.CountHash(hash.Sum64(key, s.seed)) }

// CountString is [Scalable.Count] for a string key, without allocating.
func (s *Scalable) CountString(key string) uint64 { return s.CountHash(hash.Sum64String(key, s.seed)) }

// AddUint64 is [Scalable.Add] for an integer key: the same as Add of its
// 8 little-endian bytes, computed without building them.
func (s *Scalable) AddUint64(key uint64) error {
	s.setUp()
	return s.AddHash(hash.Sum64Uint64(key, s.seed))
}

// ContainsUint64 is [Scalable.Contains] for an integer key (see
// [Scalable.AddUint64]).
func (s *Scalable) ContainsUint64(key uint64) bool {
	return s.ContainsHash(hash.Sum64Uint64(key, s.seed))
}

// DeleteUint64 is [Scalable.Delete] for an integer key (see
// [Scalable.AddUint64]).
func (s *Scalable) DeleteUint64(key uint64) bool {
	return s.DeleteHash(hash.Sum64Uint64(key, s.seed))
}

// CountUint64 is [Scalable.Count] for an integer key (see
// [Scalable.AddUint64]).
func (s *Scalable) CountUint64(key uint64) uint64 {
	return s.CountHash(hash.Sum64Uint64(key, s.seed))
}

// AddHash is [Scalable.Add] for a key's 64-bit hash (see [Filter.AddHash]).
func (s *Scalable) AddHash(h uint64) error {
	s.setUp()
	var err error
	if i := s.home(h); i >= 0 {
		s.addCopy(s.levels[i], h)
	} else {
		err = s.addNew(h)
	}
	if invariants.Enabled {
		s.checkInvariants()
	}
	return err
}

// home returns the index of the oldest table that reports h, or -1. That
// table holds every copy of a key added and not deleted (see the type's
// invariants): no older table reported the key when its first copy went
// in, and older tables never gain fingerprints they did not hold.
func (s *Scalable) home(h uint64) int {
	g := s.growing()
	if g == nil {
		return chain.First(s.probe, h)
	}
	j1, tag1, j2, tag2 := g.Locate(h, s.probe)
	if i := chain.Find(s.probe, h, false); i >= 0 {
		return i // the plain tables are the first of levels
	}
	if g.Holds(j1, tag1, j2, tag2) {
		return len(s.levels) - 1
	}
	return -1
}

// growing returns the newest table if it grows in place, or nil.
func (s *Scalable) growing() *chain.Growing {
	if n := len(s.levels); n > len(s.probe) {
		return s.levels[n-1].Grow
	}
	return nil
}

// addCopy adds a copy of h to lv, which reports h already: to the table's
// duplicate counters, or to a second slot, or, when the table has no room
// for that slot, to the level's overflow counters.
//
// A table the chain has closed (any but the newest) refused a key once:
// it is so full that a search for room by moving fingerprints (up to
// maxKicks moves and a breadth-first search, undone when they fail) would
// fail for most copies, at the cost of hundreds of moves each. A copy goes
// there only into an empty slot of its two buckets, else to the counters.
func (s *Scalable) addCopy(lv *chain.Level, h uint64) {
	if lv.Grow != nil {
		// A growing table keeps no counted copies of its own: those beyond
		// the slots go to the overflow counters, keyed by the final buckets.
		if lv.Grow.SlotCopies(h) < table.MaxSlotCopies && s.addGrowing(lv, h) {
			return
		}
	} else if copies := lv.SlotCopies(h); copies >= table.MaxSlotCopies || lv.Plain.Occupied < lv.Limit {
		if copies < table.MaxSlotCopies && lv != s.levels[len(s.levels)-1] {
			if lv.Plain.Place(h) {
				return
			}
		} else if s.addPlain(lv, h) {
			return
		}
	}
	lv.AddOver(h)
	s.extra++
}

// addNew puts a fingerprint no table holds into the newest table, or into
// a new one when the newest is full. When the chain cannot add that table
// it returns the error of addToNext, with h not added and every table
// holding what it held (a refused insert moves nothing: table.Multiset.Add,
// chain.Level.AddGrowing).
func (s *Scalable) addNew(h uint64) error {
	lv := s.levels[len(s.levels)-1]
	if lv.Grow != nil {
		if s.addGrowing(lv, h) {
			return nil
		}
	} else if lv.Plain.Occupied < lv.Limit && s.addPlain(lv, h) {
		return nil
	}
	return s.addToNext(h)
}

// addToNext adds the next generation's table and a copy of h to it, or,
// when the chain cannot add that table (schedule.nextTable), returns the
// error, an ErrFull, and changes nothing.
func (s *Scalable) addToNext(h uint64) error {
	lv, err := s.grow()
	if err != nil {
		return err
	}
	if lv.Grow != nil && s.addGrowing(lv, h) || lv.Grow == nil && s.addPlain(lv, h) {
		return nil
	}
	panic("cuckoo: a new table refused its first key")
}

// addAbsent adds h, as addNew does, unless the newest table reports it,
// and reports whether it added it; its error is addNew's. A plain table
// below its limit answers and takes h in one read of h's buckets
// (table.Multiset.AddAbsent).
func (s *Scalable) addAbsent(h uint64) (bool, error) {
	lv := s.levels[len(s.levels)-1]
	if !takesAbsent(lv) {
		if lv.Contains(h) {
			return false, nil
		}
		if err := s.addNew(h); err != nil {
			return false, err
		}
		return true, nil
	}
	i1, i2, fp := lv.Plain.T.Pair(h)
	return s.addAbsentPlain(lv, h, i1, i2, fp)
}

// takesAbsent reports whether lv, the newest table, answers and takes a
// key in one read of its buckets (addAbsentPlain): a plain table below
// its limit.
func takesAbsent(lv *chain.Level) bool { return lv.Grow == nil && lv.Plain.Occupied < lv.Limit }

// addAbsentPlain is addAbsent where the newest table, lv, takes absent
// keys (takesAbsent), with h located in it (i1, i2 and fp as
// table.Table.Pair gives them).
func (s *Scalable) addAbsentPlain(lv *chain.Level, h, i1, i2, fp uint64) (bool, error) {
	switch lv.Plain.AddAbsentAt(h, i1, i2, fp, s.maxKicks) {
	case table.Present:
		return false, nil
	case table.Stored:
		if invariants.Enabled {
			lv.Plain.Check()
		}
		return true, nil
	}
	if err := s.addToNext(h); err != nil { // Full: the table is as it was
		return false, err
	}
	return true, nil
}

// addPlain adds a copy of h to lv's plain table, and reports whether it
// did; the builds with invariants check that table after it.
func (s *Scalable) addPlain(lv *chain.Level, h uint64) bool {
	if !lv.Plain.Add(h, s.maxKicks) {
		return false
	}
	if invariants.Enabled {
		lv.Plain.Check()
	}
	return true
}

// addGrowing puts a slot copy of h into lv's growing table
// (chain.Level.AddGrowing), and reports whether it did; when the table
// becomes plain, the lookups read it as a plain table from then on.
func (s *Scalable) addGrowing(lv *chain.Level, h uint64) bool {
	added, finished := lv.AddGrowing(h, s.maxKicks)
	if finished {
		s.reprobe()
	}
	return added
}

// grow adds the next generation's table and returns it, or, when the
// chain cannot add it (schedule.nextTable: on a 32-bit platform, a table
// that would grow past 2 GiB), returns the error and changes nothing. The
// table it closes keeps no insertion scratch: it is reallocated if a copy
// ever needs a displacement there.
func (s *Scalable) grow() (*chain.Level, error) {
	last := s.levels[len(s.levels)-1]
	gen, err := s.g.nextTable(last.Gen, true)
	if err != nil {
		return nil, err
	}
	last.Plain.Ins = table.Inserts{}
	lv := s.newLevel(gen)
	s.levels = append(s.levels, lv)
	s.reprobe()
	return lv, nil
}

// ContainsHash is [Scalable.Contains] for a key's 64-bit hash.
//
// Tables are probed newest (largest) first: the newest holds about half
// the keys, the one before a quarter, and so on. An absent key probes all
// of them, in one loop (chain.Has) that lets the CPU overlap their
// independent loads. In a chain large enough to miss the caches, the
// buckets of the growing table and of the large plain tables are
// prefetched before any is compared (chain.Growing.Locate,
// chain.PrefetchFar).
func (s *Scalable) ContainsHash(h uint64) bool {
	g := s.growing()
	if g == nil {
		return chain.Has(s.probe, h)
	}
	j1, tag1, j2, tag2 := g.Locate(h, s.probe)
	return g.Holds(j1, tag1, j2, tag2) || chain.Find(s.probe, h, true) >= 0
}

// DeleteHash is [Scalable.Delete] for a key's 64-bit hash.
func (s *Scalable) DeleteHash(h uint64) bool {
	i := s.home(h)
	if i < 0 {
		return false
	}
	lv := s.levels[i]
	if lv.NOver > 0 && lv.TakeOver(h) {
		s.extra--
	} else if !lv.Remove(h) {
		panic("cuckoo: a table reports a key it cannot delete")
	} else if invariants.Enabled && lv.Grow == nil {
		lv.Plain.Check()
	}
	s.dropEmpty()
	if invariants.Enabled {
		s.checkInvariants()
	}
	return true
}

// dropEmpty releases the oldest tables while they hold nothing
// (chainState.dropEmpty).
func (s *Scalable) dropEmpty() {
	if s.chainState.dropEmpty() {
		s.reprobe()
	}
}

// CountHash is [Scalable.Count] for a key's 64-bit hash.
func (s *Scalable) CountHash(h uint64) uint64 {
	i := s.home(h)
	if i < 0 {
		return 0
	}
	return s.levels[i].Count(h)
}

// Len returns the number of items stored, copies included.
func (s *Scalable) Len() uint64 {
	n := s.extra
	for _, lv := range s.levels {
		n += lv.Items()
	}
	return n
}

// Capacity returns the number of distinct keys the current tables are
// sized for, the growing one at its full size: Add starts a new table past
// it.
func (s *Scalable) Capacity() uint64 {
	var n uint64
	for _, lv := range s.levels {
		n += lv.Capacity
	}
	return n
}

// InitialCapacity returns the capacity of the first table.
func (s *Scalable) InitialCapacity() uint64 { return s.g.initial }

// LoadFactor returns the fraction of all tables' slots that hold a
// fingerprint.
func (s *Scalable) LoadFactor() float64 {
	var used, slots uint64
	for _, lv := range s.levels {
		t := lv.Table()
		used += lv.Occupied()
		slots += t.NumBuckets * t.Slots
	}
	if slots == 0 {
		return 0
	}
	return float64(used) / float64(slots)
}

// FalsePositiveRate returns the expected probability that Contains reports
// a key never added, at the tables' current loads: 1 − Π(1 − rate of each
// table). It stays at or below TargetFalsePositiveRate (see the type's doc).
func (s *Scalable) FalsePositiveRate() float64 {
	miss := 1.0
	for _, lv := range s.levels {
		miss *= 1 - levelRate(lv)
	}
	return 1 - miss
}

// levelRate is the expected false-positive rate of a table at its load.
// A growing table's is that of the plain table it grows into, holding the
// same fingerprints (chain/growing.go shows why).
func levelRate(lv *chain.Level) float64 {
	t, m := lv.Table(), lv.Table().NumBuckets
	if g := lv.Grow; g != nil {
		m = g.Final()
	}
	return expectedFPR(float64(lv.Occupied())/float64(m*t.Slots), t.Slots, lv.FPBits())
}

// TargetFalsePositiveRate returns the bound the filter's false-positive
// rate stays at or below as it grows: the rate [WithFalsePositiveRate]
// gave, or, when [WithFingerprintBits] gave the first table's width
// instead, twice the rate [New] gives that width at capacity (raised, for a
// width within a few bits of 32, to what the later tables can keep).
func (s *Scalable) TargetFalsePositiveRate() float64 { return s.g.bound }

// SizeInBytes returns the memory the filter holds: every table with its
// counters, and the fixed parts.
func (s *Scalable) SizeInBytes() uint64 {
	const fixed = 128
	const perLevel = 64  // a level's struct
	const perPlain = 256 // a plain table's headers, as a Filter's
	const perOver = 32   // an overflow counter: a map entry of two words, with the map's overhead
	n := uint64(fixed)
	for _, lv := range s.levels {
		n += uint64(len(lv.Over))*perOver + perLevel
		if g := lv.Grow; g != nil {
			// The words allocated ahead of the splits, and the search queue.
			n += g.Bytes()
		} else {
			n += lv.Plain.Bytes() + perPlain
		}
	}
	return n
}

// NumTables returns the number of tables: the tables a lookup of an absent
// key probes.
func (s *Scalable) NumTables() int { return len(s.levels) }

// Growth returns the capacity ratio of successive tables.
func (s *Scalable) Growth() float64 { return s.g.factor }

// FingerprintBits returns the fingerprint width of the first table; later
// tables have wider ones.
func (s *Scalable) FingerprintBits() int { return int(s.g.f0) }

// BucketSize returns the number of slots per bucket.
func (s *Scalable) BucketSize() int { return int(s.g.slots) }

// SemiSorted reports whether the buckets are semi-sorted ([WithSemiSorting]).
func (s *Scalable) SemiSorted() bool { return s.g.semi }

// Seed returns the hash seed, shared by every table.
func (s *Scalable) Seed() uint64 { return s.seed }

// MaxKicks returns the bound on displacements per insert.
func (s *Scalable) MaxKicks() int { return s.maxKicks }

// Reset removes every item and returns the filter to one table of the
// initial capacity, keeping the parameters and the seed.
func (s *Scalable) Reset() {
	if s.levels == nil {
		return
	}
	if first := s.levels[0]; first.Gen == 0 {
		first.Plain.Reset()
		first.Over, first.NOver = nil, 0
		clear(s.levels[1:])
		s.levels = s.levels[:1]
	} else {
		s.levels = []*chain.Level{s.newLevel(s.g.at(0))}
	}
	s.extra = 0
	s.reprobe()
}

// checkInvariants panics if a structural invariant is broken. It walks
// the overflow counters, so it runs in full only while they are few (the
// tests make them few on purpose), and checks the chain always (each
// plain table is checked on its own when written: addPlain).
func (s *Scalable) checkInvariants() {
	var err error
	if s.extra <= 64 {
		err = s.validate()
	} else {
		for i, lv := range s.levels {
			if lv.Occupied() > lv.Limit || i > 0 && lv.Gen != s.levels[i-1].Gen+1 {
				err = fmt.Errorf("table %d breaks its generation", i)
			}
		}
	}
	if err != nil {
		panic("cuckoo: Scalable invariant broken: " + err.Error())
	}
}

// validate checks the chain's invariants (chainState.validate) and that
// the lookups' probe is the plain tables'.
func (s *Scalable) validate() error {
	if err := s.chainState.validate(); err != nil {
		return err
	}
	k, bytes := 0, s.plainBytes()
	for _, lv := range s.levels {
		if lv.Grow != nil {
			continue
		}
		if k >= len(s.probe) || s.probe[k] != chain.NewProbe(&lv.Plain.T, bytes) {
			return fmt.Errorf("the probe of table %d is not the table's", k)
		}
		k++
	}
	if k != len(s.probe) {
		return errors.New("probes for tables that are not there")
	}
	return nil
}
