package table

import "fmt"

// MaxItems bounds the items of a Multiset, copies included: Add refuses to
// pass it, so that the items of a table, and every sum of such counts a
// filter keeps, fit in a uint64 with room for 3·2^62 more (far more than a
// program can add). Decoders refuse more, so every table Add built can be
// decoded.
const MaxItems = 1 << 62

// Multiset is a Table that one goroutine writes, with the copies counted
// beside it: the state of a Filter, and of each full table of a Scalable.
// It holds a fingerprint of f bits for each key in one of the key's two
// buckets; a key added n times is n copies, the first MaxSlotCopies of a
// fingerprint in its bucket pair in slots, the rest in Dups. The zero
// value has no table; New's table and a zero Items, Occupied and Dups are
// an empty one.
//
// Invariants:
//   - Items == Occupied + Σ Dups, Occupied the non-empty slots.
//   - for every (pair, fp) key in Dups: the value is > 0 and the pair's two
//     buckets hold at least MaxSlotCopies copies of fp, so Contains (which
//     only looks at slots) finds every key whose Count is non-zero.
//   - a fingerprint stored in bucket i belongs to a key whose buckets are i
//     and T.AltIndex(i, fp): displacement moves it only between these two.
type Multiset struct {
	T        Table
	Items    uint64   // copies in slots and counters
	Occupied uint64   // non-empty slots
	Dups     Counters // copies beyond MaxSlotCopies
	Ins      Inserts  // the scratch of its inserts
}

// Add inserts one copy of the key whose hash is h, moving at most maxKicks
// fingerprints on a random walk (and searching for room as Table.Add
// does), and reports false when no room could be made or the table holds
// MaxItems items: the table is then exactly as it was. It allocates
// nothing but for the counter of a third or later copy. The table must
// not be the zero one.
func (m *Multiset) Add(h uint64, maxKicks int) bool {
	if m.Items >= MaxItems {
		return false
	}
	t := &m.T
	i1, fp := t.Locate(h)
	i2 := t.AltIndex(i1, fp)
	switch t.Add(&m.Ins, i1, i2, fp, h, maxKicks) {
	case Full:
		return false
	case Crowded:
		m.Dups.Add(PairKey(i1, i2, fp))
		m.Items++
		return true
	}
	m.Items++
	m.Occupied++
	return true
}

// AddAbsent adds h as Add does unless the table holds h's fingerprint in
// one of its buckets, and reports how it ended: Stored, Present (the
// table holds it: unchanged) or Full (unchanged). It is Contains and then
// Add with the buckets read once (Table.AddAbsent).
func (m *Multiset) AddAbsent(h uint64, maxKicks int) Outcome {
	i1, i2, fp := m.T.Pair(h)
	return m.AddAbsentAt(h, i1, i2, fp, maxKicks)
}

// AddAbsentAt is AddAbsent for h already located: i1, i2 and fp are
// Table.Pair(h)'s (a Pipeline's Group holds them), so that a batch that
// located its keys to prefetch their buckets does not locate them again.
func (m *Multiset) AddAbsentAt(h, i1, i2, fp uint64, maxKicks int) Outcome {
	t := &m.T
	if m.Items >= MaxItems {
		if t.Contains(h) {
			return Present
		}
		return Full
	}
	o := t.AddAbsent(&m.Ins, i1, i2, fp, h, maxKicks)
	if o == Stored {
		m.Items++
		m.Occupied++
	}
	return o
}

// Place puts a slot copy of h into an empty slot of one of its buckets,
// moving nothing, and reports whether there was one: how a table too full
// to search for room takes a copy.
func (m *Multiset) Place(h uint64) bool {
	i1, i2, fp := m.T.Pair(h)
	if !m.T.Insert(i1, fp) && !m.T.Insert(i2, fp) {
		return false
	}
	m.Items++
	m.Occupied++
	return true
}

// Contains reports whether the table holds h's fingerprint (see
// Table.Contains).
func (m *Multiset) Contains(h uint64) bool { return m.T.Contains(h) }

// Delete removes one copy of h's fingerprint and reports whether there was
// one. A counted copy goes first: the slot copies must stay while any
// counted copy remains (see the invariants).
func (m *Multiset) Delete(h uint64) bool {
	t := &m.T
	if t.NumBuckets == 0 {
		return false
	}
	i1, fp := t.Locate(h)
	i2 := t.AltIndex(i1, fp)
	if len(m.Dups) != 0 && m.Dups.Take(PairKey(i1, i2, fp)) {
		m.Items--
		return true
	}
	if !t.ReplaceEither(i1, i2, fp, 0) {
		return false
	}
	m.Items--
	m.Occupied--
	return true
}

// Count returns the copies of h's fingerprint its bucket pair holds, in
// slots and counters.
func (m *Multiset) Count(h uint64) uint64 {
	t := &m.T
	if t.NumBuckets == 0 {
		return 0
	}
	i1, fp := t.Locate(h)
	i2 := t.AltIndex(i1, fp)
	n := t.Copies(i1, fp) + t.Copies(i2, fp)
	if len(m.Dups) != 0 {
		n += m.Dups[PairKey(i1, i2, fp)]
	}
	return n
}

// SlotCopies returns the copies of h's fingerprint in the slots of its
// bucket pair.
func (m *Multiset) SlotCopies(h uint64) uint64 {
	i1, i2, fp := m.T.Pair(h)
	return m.T.Copies(i1, fp) + m.T.Copies(i2, fp)
}

// Bytes returns the memory the table holds: its words, its counters (an
// estimate of the map's size: an entry of two words, with the map's
// overhead) and its inserts' scratch.
func (m *Multiset) Bytes() uint64 {
	const perDup = 32
	return uint64(len(m.T.Words))*8 + uint64(len(m.Dups))*perDup + m.Ins.Bytes()
}

// Reset removes every item, keeping the table's memory.
func (m *Multiset) Reset() {
	m.T.Reset()
	m.Dups = nil
	m.Items, m.Occupied = 0, 0
}

// Check panics if an invariant is broken: the check the builds with
// invariants (internal/invariants) make after each write. It scans the
// whole table only when it is small (the tests build those on purpose),
// and checks the counters always.
func (m *Multiset) Check() {
	if err := m.Validate(len(m.T.Words) <= 256); err != nil {
		panic("cuckoo: invariant broken: " + err.Error())
	}
}

// Validate checks the invariants; full adds the O(table) ones. Decoders
// share it: they must reject any state the operations cannot reach.
func (m *Multiset) Validate(full bool) error {
	t := &m.T
	var dupSum uint64
	for k, c := range m.Dups {
		i, fp := k>>32, k&0xffffffff
		if c == 0 {
			return fmt.Errorf("duplicate counter for bucket %d fingerprint %#x is zero", i, fp)
		}
		if i >= t.NumBuckets || fp == 0 || fp > t.FPMask {
			return fmt.Errorf("duplicate counter for bucket %d fingerprint %#x is out of range", i, fp)
		}
		j := t.AltIndex(i, fp)
		if j < i {
			return fmt.Errorf("duplicate counter for bucket %d fingerprint %#x is not keyed by the lower bucket", i, fp)
		}
		if t.Copies(i, fp)+t.Copies(j, fp) < MaxSlotCopies {
			return fmt.Errorf("duplicate counter for bucket %d fingerprint %#x without %d slot copies", i, fp, MaxSlotCopies)
		}
		if dupSum+c < dupSum {
			return fmt.Errorf("duplicate counters overflow")
		}
		dupSum += c
	}
	if m.Occupied+dupSum != m.Items || m.Occupied+dupSum < dupSum {
		return fmt.Errorf("item count %d != %d slots + %d counted copies", m.Items, m.Occupied, dupSum)
	}
	if used := t.NumBuckets * t.BucketBits; used%64 != 0 && t.Words[used/64]>>(used%64) != 0 {
		return fmt.Errorf("bits past the last bucket are set")
	}
	if t.Words[len(t.Words)-1] != 0 {
		return fmt.Errorf("padding word is not zero")
	}
	if full {
		if t.Semi {
			for i := uint64(0); i < t.NumBuckets; i++ {
				if !t.SemiValid(i) {
					return fmt.Errorf("semi-sorted bucket %d is not in canonical form", i)
				}
			}
		}
		if n := t.OccupiedSlots(); n != m.Occupied {
			return fmt.Errorf("%d slots occupied, %d recorded", n, m.Occupied)
		}
	}
	return nil
}
