package chain

import (
	"fmt"

	"github.com/dedupkit/cuckoo/internal/addr"
	"github.com/dedupkit/cuckoo/internal/table"
)

// Level is one table of a growing filter's chain: a plain table, or, the
// newest only, a table growing in place toward its generation's shape.
// Each method below is the one place an operation chooses between the
// two. Which table takes a key, and when the chain adds one, is its
// owner's (a Scalable's) to decide.
type Level struct {
	// Plain is the table once it is plain; while the table grows it is
	// the zero Multiset and Grow holds the table.
	Plain    table.Multiset
	Grow     *Growing
	Gen      uint32 // the generation
	Capacity uint64 // the generation's capacity
	Limit    uint64 // most occupied slots the generation's bound allows
	// Over counts copies of (pair, fp) that belong in this table (it
	// already holds the fingerprint) when it had no room for a second slot
	// copy: they cannot go to a newer table without breaking the rule that
	// a key's copies sit in one table. NOver is their sum.
	Over  table.Counters
	NOver uint64
}

// Contains reports whether the level's table reports h.
func (lv *Level) Contains(h uint64) bool {
	if lv.Grow != nil {
		return lv.Grow.Contains(h)
	}
	return lv.Plain.Contains(h)
}

// Table returns the level's table.
func (lv *Level) Table() *table.Table {
	if lv.Grow != nil {
		return &lv.Grow.T
	}
	return &lv.Plain.T
}

// FPBits is the fingerprint width of the level's generation.
func (lv *Level) FPBits() uint64 {
	if lv.Grow != nil {
		return lv.Grow.fpBits
	}
	return lv.Plain.T.FPBits
}

// Occupied returns the number of non-empty slots.
func (lv *Level) Occupied() uint64 {
	if lv.Grow != nil {
		return lv.Grow.Occupied
	}
	return lv.Plain.Occupied
}

// Items returns the copies the table holds, in slots and in its duplicate
// counters (a growing table has none); the overflow counters are apart.
func (lv *Level) Items() uint64 {
	if lv.Grow != nil {
		return lv.Grow.Occupied
	}
	return lv.Plain.Items
}

// SlotCopies returns how many slots hold h's fingerprint.
func (lv *Level) SlotCopies(h uint64) uint64 {
	if lv.Grow != nil {
		return lv.Grow.SlotCopies(h)
	}
	return lv.Plain.SlotCopies(h)
}

// Count returns the copies of h's fingerprint the level holds: in slots,
// in the duplicate counters and in the overflow counters.
func (lv *Level) Count(h uint64) uint64 {
	var n uint64
	if lv.Grow != nil {
		n = lv.Grow.SlotCopies(h)
	} else {
		n = lv.Plain.Count(h)
	}
	if lv.NOver > 0 {
		n += lv.Over[lv.PairKey(h)]
	}
	return n
}

// PairKey is the key of h's counters: table.PairKey of its buckets in the
// plain table, also while the table grows.
func (lv *Level) PairKey(h uint64) uint64 {
	if lv.Grow != nil {
		return lv.Grow.pairKey(h)
	}
	i1, i2, fp := lv.Plain.T.Pair(h)
	return table.PairKey(i1, i2, fp)
}

// AddOver counts a copy of h beside the table, in the overflow counters.
func (lv *Level) AddOver(h uint64) {
	lv.Over.Add(lv.PairKey(h))
	lv.NOver++
}

// TakeOver removes one overflow copy of h, if there is one. Overflow
// copies go first, so the slot copy they rely on stays while they last.
func (lv *Level) TakeOver(h uint64) bool {
	if !lv.Over.Take(lv.PairKey(h)) {
		return false
	}
	lv.NOver--
	return true
}

// Remove deletes one copy of h's fingerprint from the table (its slots or
// its duplicate counters), and reports whether there was one.
func (lv *Level) Remove(h uint64) bool {
	if lv.Grow != nil {
		return lv.Grow.remove(h)
	}
	return lv.Plain.Delete(h)
}

// AddGrowing puts a slot copy of h into the level's growing table. It
// splits a pair of buckets before the insert while the table is crowded,
// and after an insert that found no room (a split is cheaper than a longer
// search); when the table reaches its full size it becomes plain and that
// table takes the key. It reports whether h was added, and whether the
// table became plain (finished), which the chain's lookups must learn. It
// does not add h when the plain table has no room or is at its limit, and
// when the growing table reaches the limit first: 1-slot buckets, which
// fill less than the growing table's load, reach it before the table has
// its full size, and the generation's bound holds while its table grows
// too. The table then takes that size at once, and the caller a new one.
func (lv *Level) AddGrowing(h uint64, maxKicks int) (added, finished bool) {
	g := lv.Grow
	for {
		if g.Occupied >= lv.Limit {
			lv.GrowToFull()
			return false, true
		}
		if !g.crowded() && g.Insert(h, maxKicks) {
			return true, false
		}
		if g.splitPair() {
			lv.finish()
			return lv.Plain.Occupied < lv.Limit && lv.Plain.Add(h, maxKicks), true
		}
	}
}

// GrowToFull makes a growing table its generation's plain table at once.
// Splits only move tags, so it cannot fail.
func (lv *Level) GrowToFull() {
	lv.Grow.growToFull()
	lv.finish()
}

// finish makes the fully grown table the level's plain one.
func (lv *Level) finish() {
	g := lv.Grow
	lv.Plain = table.Multiset{T: g.T, Items: g.Occupied, Occupied: g.Occupied}
	lv.Grow = nil
}

// CheckOver checks the overflow counters: each in range, keyed by the
// lower bucket of its pair in the plain table (also while the table
// grows), with a slot copy of its fingerprint in the table, and summing
// to NOver.
func (lv *Level) CheckOver() error {
	m, fpRange := lv.Plain.T.NumBuckets, lv.Plain.T.FPMask
	if g := lv.Grow; g != nil {
		m, fpRange = g.final, g.fpRange
	}
	var n uint64
	for pk, c := range lv.Over {
		b, fp := pk>>32, pk&0xffffffff
		if c == 0 || b >= m || fp == 0 || fp > fpRange {
			return fmt.Errorf("overflow counter %#x: %d copies out of range", pk, c)
		}
		j := addr.Alt(b, fp, m)
		if j < b {
			return fmt.Errorf("overflow counter %#x not keyed by the lower bucket", pk)
		}
		if g := lv.Grow; g != nil && !g.holdsFinal(b, fp) && !g.holdsFinal(j, fp) ||
			g == nil && !lv.Plain.T.HoldsEither(b, fp, j, fp) {
			return fmt.Errorf("overflow counter %#x without a slot copy", pk)
		}
		if n+c < n {
			return fmt.Errorf("overflow counters overflow")
		}
		n += c
	}
	if n != lv.NOver {
		return fmt.Errorf("overflow counters sum to %d, recorded %d", n, lv.NOver)
	}
	return nil
}
