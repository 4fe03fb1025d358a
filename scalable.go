package cuckoo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/dedupkit/cuckoo/internal/addr"
	"github.com/dedupkit/cuckoo/internal/codec"
	"github.com/dedupkit/cuckoo/internal/hash"
	"github.com/dedupkit/cuckoo/internal/invariants"
)

// DefaultScalableCapacity is the initial capacity of a zero [Scalable]
// that is added to without being built by NewScalable.
const DefaultScalableCapacity = 1024

// Scalable is a cuckoo filter that grows: for a set whose size is not known
// in advance. It is a chain of tables, each [WithGrowth] (2 by default)
// times the capacity of the one before. The newest grows in place, from a
// sixteenth of its size, as keys arrive; when it is full, Add starts the
// next. Nothing is ever rehashed (the keys are not kept), nothing stored
// is ever lost, and Add never returns [ErrFull].
//
// # False positives
//
// A key never added is a false positive if any table reports it, so each
// new table gets a few more fingerprint bits than the first (growth.go
// explains the schedule). The rate given with [WithFalsePositiveRate] is a
// bound: the filter's rate stays at or below it at every size
// ([Scalable.TargetFalsePositiveRate] returns it); the tables' own bounds
// add up to at most 15/16 of it, and the rate measured over a growth of
// 1000× stays below 0.9 of it (TestIssue16ScalableRateIsABound). Given
// [WithFingerprintBits] instead, the first table has that width and the
// bound is twice the rate [New] gives it at capacity.
//
// # Memory
//
// A chain of tables each allocated whole would be, right after growing,
// half empty: its newest table as large as all the others together. So
// the newest table (after the first, whose size is the capacity asked for)
// starts at a sixteenth of its size, with 4 more bits per slot (fewer for
// fingerprints over 28 bits), and grows two buckets at a time by linear
// hashing, at a load of 0.8 (growtable.go); each time it doubles, its slots
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
// tables at 1000 times the initial capacity with growth 2, which costs
// about 4 to 5 times a plain Filter's lookup (BenchmarkScalable_Contains:
// 145 ns per absent key at 10^6 keys, 285 at 10^7; 41 and 82 per present
// key). Add probes the
// tables too (see Duplicates), as a lookup does. The batch methods
// ([Scalable.ContainsBatch], [Scalable.AddUniqueBatch] and the others)
// probe each table for a chunk of keys at once with a Filter's pipeline:
// at 10M keys grown 1000× a batch lookup costs 215 ns per absent key
// against 310 one at a time, 63 per present key against 106
// (BenchmarkScalable_Batch with CUCKOO_BENCH_HUGE=1); tables in the CPU
// caches gain little. Keeping the tables apart
// is what lets them be added without the keys; the InfiniFilter and Aleph
// designs probe one table instead, but give every slot a variable-length
// fingerprint (no word-at-a-time compare), rebuild the whole table at each
// doubling, and pay the doubling in memory. The growing table borrows
// their idea of address bits kept in the slots, only until it is grown.
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
// left: a second copy of a key it holds usually finds no slot there, and is
// counted beside it (a map entry of about 40 bytes, like the third and
// later copies of a key in a Filter). Use AddUnique where repeats need not
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
//
// Invariants:
//   - levels is oldest first; levels[k].gen == levels[0].gen+k, and each
//     table has the shape of its generation (growth.at), or, the newest
//     only, is growing toward it (level.grow, growtable.go).
//   - only the newest table receives fingerprints no table holds; an older
//     table gains only copies of fingerprints it holds (so a key matched by
//     no table never becomes matched by an older one).
//   - a table never holds more than its generation's limit of occupied
//     slots.
//   - overflow counters (copies a full table had no slot for) exist only
//     for (pair, fp) that have a slot copy in their table; extra is their
//     sum.
//   - with more than one table, the oldest holds at least one item.
type Scalable struct {
	levels   []*level
	g        growth
	seed     uint64
	maxKicks int
	extra    uint64 // Σ level.nOver
}

// level is one table of a Scalable.
type level struct {
	f     Filter
	gen   uint32
	limit uint64 // most occupied slots: generation.limit
	// over counts copies of (pair, fp) that belong in this table (it
	// already holds the fingerprint) when it had no room for a second slot
	// copy: they cannot go to a newer table without breaking the rule that
	// a key's copies sit in one table.
	over  counters
	nOver uint64
	// grow is the geometry of the table while it grows in place (f.t then
	// holds tags of f+R−d bits, growtable.go), nil once it is plain. Only
	// the newest table grows. While it does, the Filter's own locate and
	// fpRange are not used (grow locates); finishGrowing sets fpRange.
	grow *growTable
}

// contains reports whether the level's table reports h.
func (lv *level) contains(h uint64) bool {
	if lv.grow != nil {
		return lv.grow.contains(&lv.f.t, h)
	}
	return lv.f.ContainsHash(h)
}

// fpBits is the fingerprint width of the level's generation.
func (lv *level) fpBits() uint64 {
	if lv.grow != nil {
		return lv.grow.fpBits
	}
	return lv.f.t.fpBits
}

// finishGrowing makes the fully grown table plain.
func (lv *level) finishGrowing() {
	lv.f.fpRange = lv.f.t.fpMask
	lv.grow = nil
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
	if err != nil {
		return nil, err
	}
	s := &Scalable{g: g, seed: c.seed, maxKicks: c.maxKicks}
	s.levels = []*level{s.newLevel(g.at(0))}
	return s, nil
}

// newLevel returns an empty table of generation gen: growing in place
// from 1/2^R of its size when the chain does so, except for the
// first generation, whose size is the capacity asked for.
func (s *Scalable) newLevel(gen generation) *level {
	lv := &level{gen: gen.k, limit: gen.limit}
	if r := s.g.reserveOf(gen.fpBits); gen.k > 0 && r > 0 {
		g, t := newGrowTable(gen.numBuckets, s.g.slots, gen.fpBits, r, s.g.semi)
		lv.grow = g
		lv.f.init(t, s.seed, gen.capacity, s.maxKicks)
		return lv
	}
	lv.f.init(newTable(gen.numBuckets, s.g.slots, gen.fpBits, s.g.semi), s.seed, gen.capacity, s.maxKicks)
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
// It always returns nil (the result is there so that a Scalable and a
// Filter can be used alike). It allocates only when the growing table
// needs more memory (an eighth more at a time) or a table is added, and
// for the counters of a key added three times or more.
func (s *Scalable) Add(key []byte) error { s.setUp(); return s.AddHash(hash.Sum64(key, s.seed)) }

// AddString is [Scalable.Add] for a string key, without allocating.
func (s *Scalable) AddString(key string) error {
	s.setUp()
	return s.AddHash(hash.Sum64String(key, s.seed))
}

// AddUnique adds key unless Contains(key) already reports it, and says
// whether it did; the error is always nil. A false positive makes it skip
// a key that was never added: use it for set semantics (dedup), and Add
// for counting.
func (s *Scalable) AddUnique(key []byte) (added bool, err error) {
	s.setUp()
	return s.addUniqueHash(hash.Sum64(key, s.seed)), nil
}

// AddUniqueString is [Scalable.AddUnique] for a string key, without
// allocating.
func (s *Scalable) AddUniqueString(key string) (added bool, err error) {
	s.setUp()
	return s.addUniqueHash(hash.Sum64String(key, s.seed)), nil
}

func (s *Scalable) addUniqueHash(h uint64) bool {
	if s.ContainsHash(h) {
		return false
	}
	s.addNew(h)
	if invariants.Enabled {
		s.checkInvariants()
	}
	return true
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

// AddHash is [Scalable.Add] for a key's 64-bit hash (see [Filter.AddHash]).
func (s *Scalable) AddHash(h uint64) error {
	s.setUp()
	if i := s.home(h); i >= 0 {
		s.addCopy(s.levels[i], h)
	} else {
		s.addNew(h)
	}
	if invariants.Enabled {
		s.checkInvariants()
	}
	return nil
}

// home returns the index of the oldest table that reports h, or -1. That
// table holds every copy of a key added and not deleted (see the type's
// invariants): no older table reported the key when its first copy went
// in, and older tables never gain fingerprints they did not hold.
func (s *Scalable) home(h uint64) int {
	for i, lv := range s.levels {
		if lv.contains(h) {
			return i
		}
	}
	return -1
}

// addCopy adds a copy of h to lv, which reports h already: to the table's
// duplicate counters, or to a second slot, or, when the table has no room
// for that slot, to the level's overflow counters.
func (s *Scalable) addCopy(lv *level, h uint64) {
	f := &lv.f
	pk := lv.pairKeyOf(h)
	if lv.grow != nil {
		// A growing table keeps no counted copies of its own: those beyond
		// the slots go to the overflow counters, keyed by the final buckets.
		if lv.grow.slotCopies(&f.t, h) < maxSlotCopies && s.addGrowing(lv, h) {
			return
		}
	} else if f.CountHash(h)-f.dups[pk] >= maxSlotCopies || f.occupied < lv.limit {
		if f.AddHash(h) == nil {
			return
		}
	}
	lv.over.add(pk)
	lv.nOver++
	s.extra++
}

// addNew puts a fingerprint no table holds into the newest table, or into
// a new one when the newest is full.
func (s *Scalable) addNew(h uint64) {
	lv := s.levels[len(s.levels)-1]
	if lv.grow != nil {
		if s.addGrowing(lv, h) {
			return
		}
	} else if lv.f.occupied < lv.limit && lv.f.AddHash(h) == nil {
		return
	}
	lv = s.grow()
	if lv.grow != nil && s.addGrowing(lv, h) || lv.grow == nil && lv.f.AddHash(h) == nil {
		return
	}
	panic("cuckoo: a new table refused its first key")
}

// addGrowing puts a slot copy of h into lv's growing table. It splits a
// pair of buckets before the insert while the table is crowded, and after
// an insert that found no room; when the table reaches its full size it
// becomes plain and the Filter takes the key. It reports false when that
// plain table has no room (or is at its limit).
func (s *Scalable) addGrowing(lv *level, h uint64) bool {
	g, f := lv.grow, &lv.f
	for {
		if !g.crowded(&f.t, f.occupied) && g.insert(&f.t, h, s.maxKicks) {
			f.count++
			f.occupied++
			return true
		}
		if g.splitPair(&f.t) {
			lv.finishGrowing()
			return f.occupied < lv.limit && f.AddHash(h) == nil
		}
	}
}

// grow adds the next generation's table and returns it. The table it
// closes keeps no insertion scratch: it is reallocated if a copy ever
// needs a displacement there.
func (s *Scalable) grow() *level {
	last := s.levels[len(s.levels)-1]
	last.f.path, last.f.search = nil, nil
	if last.gen+1 >= maxGenerations {
		// Unreachable in practice: the tables reach 2^32 buckets long before.
		panic("cuckoo: Scalable has grown past the generation limit")
	}
	lv := s.newLevel(s.g.at(last.gen + 1))
	s.levels = append(s.levels, lv)
	return lv
}

// ContainsHash is [Scalable.Contains] for a key's 64-bit hash.
//
// Tables are probed newest (largest) first: the newest holds about half
// the keys, the one before a quarter, and so on. An absent key probes all
// of them; the CPU overlaps their independent loads by itself, so
// prefetching them explicitly first was measured to gain nothing.
func (s *Scalable) ContainsHash(h uint64) bool {
	for i := len(s.levels) - 1; i >= 0; i-- {
		if s.levels[i].contains(h) {
			return true
		}
	}
	return false
}

// DeleteHash is [Scalable.Delete] for a key's 64-bit hash.
func (s *Scalable) DeleteHash(h uint64) bool {
	i := s.home(h)
	if i < 0 {
		return false
	}
	lv := s.levels[i]
	if lv.nOver > 0 && lv.takeOver(h) {
		s.extra--
	} else if lv.grow != nil {
		if !lv.grow.remove(&lv.f.t, h) {
			panic("cuckoo: a growing table reports a key it cannot delete")
		}
		lv.f.count--
		lv.f.occupied--
	} else if !lv.f.DeleteHash(h) {
		panic("cuckoo: a table reports a key it cannot delete")
	}
	s.dropEmpty()
	if invariants.Enabled {
		s.checkInvariants()
	}
	return true
}

// takeOver removes one overflow copy of h, if there is one. Overflow
// copies go first, so the slot copy they rely on stays while they last.
func (lv *level) takeOver(h uint64) bool {
	if !lv.over.take(lv.pairKeyOf(h)) {
		return false
	}
	lv.nOver--
	return true
}

func (lv *level) pairKeyOf(h uint64) uint64 {
	if lv.grow != nil {
		return lv.grow.pairKey(h)
	}
	i1, fp := lv.f.locate(h)
	return pairKey(i1, lv.f.t.altIndex(i1, fp), fp)
}

// dropEmpty releases the oldest tables while they hold nothing (a window
// of keys deleted in the order they were added empties them one by one).
// The newest table always stays.
func (s *Scalable) dropEmpty() {
	n := 0
	for n < len(s.levels)-1 && s.levels[n].f.count == 0 && s.levels[n].nOver == 0 {
		n++
	}
	if n > 0 {
		s.levels = slices.Delete(s.levels, 0, n)
	}
}

// CountHash is [Scalable.Count] for a key's 64-bit hash.
func (s *Scalable) CountHash(h uint64) uint64 {
	i := s.home(h)
	if i < 0 {
		return 0
	}
	lv := s.levels[i]
	var n uint64
	if lv.grow != nil {
		n = lv.grow.slotCopies(&lv.f.t, h)
	} else {
		n = lv.f.CountHash(h)
	}
	if lv.nOver > 0 {
		n += lv.over[lv.pairKeyOf(h)]
	}
	return n
}

// Len returns the number of items stored, copies included.
func (s *Scalable) Len() uint64 {
	n := s.extra
	for _, lv := range s.levels {
		n += lv.f.count
	}
	return n
}

// Capacity returns the number of distinct keys the current tables are
// sized for, the growing one at its full size: Add starts a new table past
// it.
func (s *Scalable) Capacity() uint64 {
	var n uint64
	for _, lv := range s.levels {
		n += lv.f.capacity
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
		used += lv.f.occupied
		slots += lv.f.t.numBuckets * lv.f.t.slots
	}
	if slots == 0 {
		return 0
	}
	return float64(used) / float64(slots)
}

// FalsePositiveRate returns the expected probability that Contains reports
// a key never added, at the tables' current loads: 1 − Π(1 − rate of each
// table). It stays below twice the configured rate (see the type's doc).
func (s *Scalable) FalsePositiveRate() float64 {
	miss := 1.0
	for _, lv := range s.levels {
		miss *= 1 - lv.falsePositiveRate()
	}
	return 1 - miss
}

// falsePositiveRate is the level's expected rate at its load. A growing
// table's is that of the plain table it grows into, holding the same
// fingerprints (growtable.go shows why).
func (lv *level) falsePositiveRate() float64 {
	if g := lv.grow; g != nil {
		return expectedFPR(float64(lv.f.occupied)/float64(g.final*lv.f.t.slots), lv.f.t.slots, g.fpBits)
	}
	return lv.f.FalsePositiveRate()
}

// TargetFalsePositiveRate returns the bound the filter's false-positive
// rate stays at or below as it grows: the rate [WithFalsePositiveRate]
// gave, or, when [WithFingerprintBits] gave the first table's width
// instead, twice the rate [New] gives that width at capacity.
func (s *Scalable) TargetFalsePositiveRate() float64 { return s.g.bound }

// SizeInBytes returns the memory the filter holds: every table with its
// counters, and the fixed parts.
func (s *Scalable) SizeInBytes() uint64 {
	const fixed = 128
	const perOver = 32
	n := uint64(fixed)
	for _, lv := range s.levels {
		n += lv.f.SizeInBytes() + uint64(len(lv.over))*perOver + 64
		if lv.grow != nil {
			// The words allocated ahead of the splits, and the search queue.
			n += uint64(cap(lv.f.t.words)-len(lv.f.t.words))*8 + uint64(cap(lv.grow.queue))*searchNodeBytes
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
	if first := s.levels[0]; first.gen == 0 {
		first.f.Reset()
		first.over, first.nOver = nil, 0
		clear(s.levels[1:])
		s.levels = s.levels[:1]
	} else {
		s.levels = []*level{s.newLevel(s.g.at(0))}
	}
	s.extra = 0
}

// checkInvariants panics if a structural invariant is broken. It walks
// the overflow counters, so it runs in full only while they are few (the
// tests make them few on purpose), and checks the chain always.
func (s *Scalable) checkInvariants() {
	var err error
	if s.extra <= 64 {
		err = s.validate()
	} else {
		for i, lv := range s.levels {
			if lv.f.occupied > lv.limit || i > 0 && lv.gen != s.levels[i-1].gen+1 {
				err = fmt.Errorf("table %d breaks its generation", i)
			}
		}
	}
	if err != nil {
		panic("cuckoo: Scalable invariant broken: " + err.Error())
	}
}

// validate checks the chain's invariants; each table's own are checked by
// its Filter. The decoder shares it.
func (s *Scalable) validate() error {
	if len(s.levels) == 0 {
		return errors.New("no table")
	}
	var extra uint64
	for i, lv := range s.levels {
		if i > 0 && lv.gen != s.levels[i-1].gen+1 {
			return fmt.Errorf("table %d is generation %d after %d", i, lv.gen, s.levels[i-1].gen)
		}
		if lv.f.occupied > lv.limit {
			return fmt.Errorf("table %d holds %d slots, more than its limit %d", i, lv.f.occupied, lv.limit)
		}
		if lv.grow != nil && i != len(s.levels)-1 {
			return fmt.Errorf("table %d grows but is not the newest", i)
		}
		var n uint64
		// The counters are keyed by the plain table's buckets, also while
		// the table grows.
		m, fpRange := lv.f.t.numBuckets, lv.f.fpRange
		if lv.grow != nil {
			m, fpRange = lv.grow.final, lv.grow.fpRange
		}
		for pk, c := range lv.over {
			b, fp := pk>>32, pk&0xffffffff
			if c == 0 || b >= m || fp == 0 || fp > fpRange {
				return fmt.Errorf("table %d: overflow counter %#x: %d copies out of range", i, pk, c)
			}
			j := addr.Alt(b, fp, m)
			if j < b {
				return fmt.Errorf("table %d: overflow counter %#x not keyed by the lower bucket", i, pk)
			}
			if g := lv.grow; g != nil && !g.holds(&lv.f.t, b, fp) && !g.holds(&lv.f.t, j, fp) ||
				g == nil && !lv.f.t.holdsEither(b, fp, j, fp) {
				return fmt.Errorf("table %d: overflow counter %#x without a slot copy", i, pk)
			}
			if n+c < n {
				return fmt.Errorf("table %d: overflow counters overflow", i)
			}
			n += c
		}
		if n != lv.nOver {
			return fmt.Errorf("table %d: overflow counters sum to %d, recorded %d", i, n, lv.nOver)
		}
		if extra+n < extra {
			return errors.New("overflow counters overflow")
		}
		extra += n
	}
	if extra != s.extra {
		return fmt.Errorf("overflow copies %d, recorded %d", extra, s.extra)
	}
	if first := s.levels[0]; len(s.levels) > 1 && first.f.count == 0 && first.nOver == 0 {
		return errors.New("the oldest of several tables is empty")
	}
	return nil
}

// The encoding of a Scalable, format version 1: the header, each table as
// a whole Filter encoding (kind 1, so any one but a growing newest table
// can be cut out and loaded as a Filter), the overflow counters, and a
// CRC-32C over all of it. All integers are little-endian.
//
//	offset  size  field
//	     0     4  magic "CKOO"
//	     4     2  format version = 1
//	     6     1  kind = 2 (Scalable)
//	     7     1  flags: bit 0 = semi-sorted buckets (b = 4); others 0
//	     8     1  bucket size b: 2, 4 or 8
//	     9     1  fingerprint bits f0 of generation 0: 4..32
//	    10     1  hash = 1: XXH3-64 of the key with the seed below
//	    11     1  reserved = 0
//	    12     4  max kicks: 1..MaxMaxKicks
//	    16     8  seed
//	    24     8  initial capacity (capacity of generation 0)
//	    32     8  growth factor, IEEE-754 binary64: 1.25..16
//	    40     8  false-positive bound B, binary64: (0, 2) (growth.go)
//	    48     4  G = generation of the first table
//	    52     4  T = number of tables (>= 1), G+T <= 4096
//	    56     8  O = number of overflow counters
//	    64     …  T times: L (8 bytes), then L bytes: the table of
//	              generation G+k as a Filter encoding, whose shape must be
//	              the generation's (see growth.go); the newest table, if
//	              generation > 0, may be growing in place (flag bit 1 of
//	              its Filter header, growtable.go)
//	     …   24O  overflow counters by increasing (table, key): table index
//	              k < T (8), key = bucket<<32 | fingerprint as in the
//	              duplicate counters (8), copies > 0 (8)
//	     …     4  CRC-32C of every byte before it
//
// Items in all (Len) are at most maxItems. docs/format-scalable.md
// describes it for readers in other languages. Frozen, like the Filter's
// format.
const (
	kindScalable       = 2
	scalableHeaderSize = 64
	overEntrySize      = 24
	maxTableEncoding   = 1 << 62
)

// EncodedSize returns the exact number of bytes MarshalBinary and WriteTo
// produce for the filter's current state.
func (s *Scalable) EncodedSize() int64 {
	n := int64(scalableHeaderSize + checksumSize)
	for _, lv := range s.levels {
		n += 8 + lv.f.EncodedSize() + overEntrySize*int64(len(lv.over))
	}
	return n
}

// MarshalBinary encodes the filter: its parameters and every table, with a
// checksum. The same state always gives the same bytes, and they are what
// WriteTo writes.
func (s *Scalable) MarshalBinary() ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(int(s.EncodedSize()))
	if _, err := s.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteTo writes the encoding of the filter to w and returns the number of
// bytes written. It only reads the filter.
func (s *Scalable) WriteTo(w io.Writer) (int64, error) {
	if len(s.levels) == 0 {
		return 0, errors.New("cuckoo: the zero Scalable has no table to encode")
	}
	e := codec.NewEncoder(w, s.EncodedSize())
	e.Bytes([]byte(magic))
	e.Uint16(formatVersion)
	e.Uint8(kindScalable)
	var flags uint8
	if s.g.semi {
		flags |= flagSemiSort
	}
	e.Uint8(flags)
	e.Uint8(uint8(s.g.slots))
	e.Uint8(uint8(s.g.f0))
	e.Uint8(hashXXH3)
	e.Uint8(0)
	e.Uint32(uint32(s.maxKicks))
	e.Uint64(s.seed)
	e.Uint64(s.g.initial)
	e.Uint64(math.Float64bits(s.g.factor))
	e.Uint64(math.Float64bits(s.g.bound))
	e.Uint32(s.levels[0].gen)
	e.Uint32(uint32(len(s.levels)))
	var nOver uint64
	for _, lv := range s.levels {
		nOver += uint64(len(lv.over))
	}
	e.Uint64(nOver)
	for _, lv := range s.levels {
		e.Uint64(uint64(lv.f.EncodedSize()))
		var flags uint8
		if lv.grow != nil {
			flags = flagGrowing
		}
		lv.f.writeTo(encoderWriter{e}, flags) // errors stick in e
	}
	for k, lv := range s.levels {
		for _, pk := range lv.over.sortedKeys() {
			e.Uint64(uint64(k))
			e.Uint64(pk)
			e.Uint64(lv.over[pk])
		}
	}
	return e.Finish()
}

// encoderWriter lets a nested encoding write through an outer Encoder, so
// the outer checksum covers it. Write never fails: the Encoder keeps its
// first error for Finish.
type encoderWriter struct{ e *codec.Encoder }

func (w encoderWriter) Write(p []byte) (int, error) {
	w.e.Bytes(p)
	return len(p), nil
}

// UnmarshalBinary replaces the filter's state with the one encoded in data
// by MarshalBinary or WriteTo. Damaged, truncated or foreign data gives an
// error wrapping [ErrCorrupt] and leaves the filter unchanged.
func (s *Scalable) UnmarshalBinary(data []byte) error {
	d := codec.NewBytesDecoder(data)
	g, err := decodeScalable(d)
	if err == nil {
		err = d.ExpectEnd()
	}
	if err != nil {
		return corrupt(err)
	}
	*s = *g
	return nil
}

// ReadFrom replaces the filter's state with one read from r, as written by
// WriteTo, and returns the number of bytes read. It reads exactly the
// encoding. On error (wrapping [ErrCorrupt] when the data is bad) the
// filter is unchanged. Memory grows with the data actually read.
func (s *Scalable) ReadFrom(r io.Reader) (int64, error) {
	d := codec.NewDecoder(r)
	g, err := decodeScalable(d)
	if err != nil {
		return d.Read(), corrupt(err)
	}
	*s = *g
	return d.Read(), nil
}

// decodeScalable reads one encoded Scalable and checks it completely: the
// header, every table (against its generation's shape, and by the Filter
// decoder), the overflow counters and the checksum.
func decodeScalable(d *codec.Decoder) (*Scalable, error) {
	p, err := decodePrologue(d, kindScalable)
	if err != nil {
		return nil, err
	}
	if p.flags&^flagSemiSort != 0 {
		return nil, bad("unknown flags %#x", p.flags)
	}
	g := growth{slots: p.slots, f0: p.fpBits, semi: p.flags&flagSemiSort != 0}
	maxKicks := uint64(d.Uint32())
	seed := d.Uint64()
	g.initial = d.Uint64()
	g.factor = math.Float64frombits(d.Uint64())
	g.bound = math.Float64frombits(d.Uint64())
	first, nTables, nOver := d.Uint32(), d.Uint32(), d.Uint64()
	if err := d.Err(); err != nil {
		return nil, err
	}
	if err := g.check(); err != nil {
		return nil, bad("%v", err)
	}
	switch {
	case maxKicks < 1 || maxKicks > MaxMaxKicks:
		return nil, bad("max kicks %d", maxKicks)
	case nTables == 0 || uint64(first)+uint64(nTables) > maxGenerations:
		return nil, bad("%d tables from generation %d", nTables, first)
	}
	s := &Scalable{g: g, seed: seed, maxKicks: int(maxKicks)}
	gens := g.generations()
	for gens.cur.k < first {
		gens.next()
	}
	for k := uint32(0); k < nTables; k++ {
		if k > 0 {
			gens.next()
		}
		lv, err := decodeLevel(d, s, gens.cur, k == nTables-1)
		if err != nil {
			return nil, fmt.Errorf("table %d: %w", k, err)
		}
		s.levels = append(s.levels, lv)
	}
	// Each counter needs a slot copy of its fingerprint in its table.
	var slots uint64
	for _, lv := range s.levels {
		slots += lv.f.occupied
	}
	if nOver > slots {
		return nil, bad("%d overflow counters for %d occupied slots", nOver, slots)
	}
	if !d.Need(nOver*overEntrySize, nOver*overEntrySize) {
		return nil, d.Err()
	}
	prevK, prevKey := uint64(0), uint64(0)
	for n := uint64(0); n < nOver && d.Err() == nil; n++ {
		k, pk, c := d.Uint64(), d.Uint64(), d.Uint64()
		if k >= uint64(nTables) || n > 0 && (k < prevK || k == prevK && pk <= prevKey) {
			d.Fail(bad("overflow counters not in increasing order"))
			break
		}
		prevK, prevKey = k, pk
		lv := s.levels[k]
		lv.over.set(pk, c)
		// INVARIANT: each c and every partial sum stay at most maxItems,
		// so no sum below overflows.
		if c > maxItems || lv.nOver+c > maxItems || s.extra+c > maxItems {
			d.Fail(bad("overflow counters add up to more than %d items", uint64(maxItems)))
			break
		}
		lv.nOver += c
		s.extra += c
	}
	if d.Err() == nil {
		items := s.extra
		for _, lv := range s.levels {
			if items += lv.f.count; items > maxItems {
				return nil, bad("%d or more items, more than %d", items, uint64(maxItems))
			}
		}
	}
	if err := d.VerifyChecksum(); err != nil {
		return nil, err
	}
	if err := s.validate(); err != nil {
		return nil, bad("%v", err)
	}
	return s, nil
}

// decodeLevel reads one table (its length, then its Filter encoding) and
// checks that it has the shape of generation gen, or, for the newest table
// of a chain that grows in place, of a table growing to that shape.
func decodeLevel(d *codec.Decoder, s *Scalable, gen generation, newest bool) (*level, error) {
	n := d.Uint64()
	if !d.Need(n, maxTableEncoding) {
		return nil, d.Err()
	}
	sub := &sectionReader{d: d, n: n}
	f, growing, err := decodeTable(codec.NewDecoder(sub), newest && s.g.reserveOf(gen.fpBits) > 0 && gen.k > 0)
	if err != nil {
		return nil, err
	}
	if sub.n != 0 {
		return nil, bad("%d bytes after the table's encoding", sub.n)
	}
	if f.t.slots != s.g.slots || f.t.semi != s.g.semi || f.seed != s.seed || f.maxKicks != s.maxKicks {
		return nil, bad("table parameters differ from the filter's")
	}
	if growing {
		g, ok := growFrom(gen.numBuckets, f.t.numBuckets, gen.fpBits, s.g.reserveOf(gen.fpBits))
		switch {
		case !ok || f.t.fpBits != g.tagBits() || f.capacity != gen.capacity:
			return nil, bad("growing table of %d bits, capacity %d, %d buckets is not one of generation %d (%d bits, capacity %d, %d buckets)",
				f.t.fpBits, f.capacity, f.t.numBuckets, gen.k, gen.fpBits, gen.capacity, gen.numBuckets)
		case len(f.dups) != 0:
			return nil, bad("growing table with duplicate counters")
		}
		if j, ok := g.check(&f.t); !ok {
			return nil, bad("growing table: bucket %d holds a tag that does not belong there", j)
		}
		return &level{f: *f, gen: gen.k, limit: gen.limit, grow: g}, nil
	}
	switch {
	case f.t.fpBits != gen.fpBits || f.capacity != gen.capacity || f.t.numBuckets != gen.numBuckets:
		return nil, bad("table of %d bits, capacity %d, %d buckets is not generation %d (%d bits, capacity %d, %d buckets)",
			f.t.fpBits, f.capacity, f.t.numBuckets, gen.k, gen.fpBits, gen.capacity, gen.numBuckets)
	}
	return &level{f: *f, gen: gen.k, limit: gen.limit}, nil
}

// sectionReader reads the next n bytes of an outer Decoder, so that a
// nested encoding is decoded (and checksummed) on its own while the outer
// checksum covers it too.
type sectionReader struct {
	d   *codec.Decoder
	n   uint64
	buf [512]uint64
}

func (r *sectionReader) Read(p []byte) (int, error) {
	if err := r.d.Err(); err != nil {
		return 0, err
	}
	if r.n == 0 {
		return 0, io.EOF
	}
	p = p[:min(uint64(len(p)), r.n)]
	k := min(len(p)/8, len(r.buf))
	n := 8 * k
	if k == 0 {
		p[0] = r.d.Uint8()
		n = 1
	} else {
		r.d.Words(r.buf[:k])
		for i, w := range r.buf[:k] {
			binary.LittleEndian.PutUint64(p[8*i:], w)
		}
	}
	if err := r.d.Err(); err != nil {
		return 0, err
	}
	r.n -= uint64(n)
	return n, nil
}
