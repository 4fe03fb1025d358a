package cuckoo

import (
	"github.com/dedupkit/cuckoo/internal/invariants"
	"github.com/dedupkit/cuckoo/internal/table"
	"github.com/dedupkit/cuckoo/internal/table/chain"
)

// Batch operations of a Scalable. They hash a chunk of keys at once (with
// the key bytes of the next group prefetched while a group is hashed).
// Lookups then ask the newest tables about the chunk one table at a time
// (containsChunk); adds go key by key, with the buckets of the next group
// of keys in the newest table prefetched meanwhile (table.Pipeline), so that the cache misses of many keys overlap.

// ContainsBatch sets found[i] to s.Contains(keys[i]) for every key, asking
// the newest tables about many keys at once, with the buckets of the next
// keys in the large tables prefetched while it compares the current ones,
// so in tables larger than the CPU caches it is faster per key than
// Contains in a loop. It allocates nothing and may run concurrently with
// other readers. It panics if found is shorter than keys.
func (s *Scalable) ContainsBatch(keys [][]byte, found []bool) {
	if len(found) < len(keys) {
		panic("cuckoo: ContainsBatch: found is shorter than keys")
	}
	var hs [table.BatchChunk]uint64
	for lo := 0; lo < len(keys); lo += table.BatchChunk {
		hi := min(lo+table.BatchChunk, len(keys))
		s.containsChunk(table.HashKeys(keys[lo:hi], s.seed, &hs), found[lo:hi])
	}
}

// ContainsHashBatch is [Scalable.ContainsBatch] for keys' 64-bit hashes
// (see [Filter.AddHash]).
func (s *Scalable) ContainsHashBatch(hashes []uint64, found []bool) {
	if len(found) < len(hashes) {
		panic("cuckoo: ContainsHashBatch: found is shorter than hashes")
	}
	for lo := 0; lo < len(hashes); lo += table.BatchChunk {
		hi := min(lo+table.BatchChunk, len(hashes))
		s.containsChunk(hashes[lo:hi], found[lo:hi])
	}
}

// containsChunk is ContainsHashBatch for at most table.BatchChunk hashes. It
// asks the newest tables one at a time, each about the whole chunk less
// the keys a newer table reported (chain.Probe.Pass): they hold most keys,
// so most present keys are answered there, a table's geometry stays in
// registers over its keys, and in the large tables the buckets of the
// next group of keys are prefetched while a group is compared, so that
// their cache misses overlap. The keys left (the absent ones, mostly) go
// through the other tables key by key (chain.Has), whose one loop costs
// fewer instructions per table where the buckets are in the caches.
func (s *Scalable) containsChunk(hs []uint64, found []bool) {
	var rest [table.BatchChunk]uint64
	var at [table.BatchChunk]uint16
	n := copy(rest[:], hs)
	for k := range n {
		at[k] = uint16(k)
	}
	clear(found[:n])
	if l := len(s.levels); l > len(s.probe) {
		n = s.levels[l-1].Grow.Pass(rest[:n], at[:n], found)
	}
	i := len(s.probe) - 1
	for ; i >= 0 && n > 0 && (s.probe[i].Large || len(s.probe)-i <= passTables); i-- {
		n = s.probe[i].Pass(rest[:n], at[:n], found)
	}
	for k, h := range rest[:n] {
		found[at[k]] = chain.Has(s.probe[:i+1], h)
	}
}

// passTables is how many of the newest plain tables a batch lookup asks
// one at a time even when they are small: with growth 2 the newest three
// tables and a growing one hold about 15/16 of the keys.
const passTables = 3

// AddBatch adds every key, in order, as Add would, prefetching the buckets
// of a group of keys in the newest table before adding them. It returns
// len(keys) and a nil error unless Add fails (with [ErrFull], only when
// the next table cannot be made: see [Scalable.Add]): it then stops there
// and returns how many keys it added before it; the key that failed and
// those after it are not added, as with [Filter.AddBatch].
func (s *Scalable) AddBatch(keys [][]byte) (added int, err error) {
	return s.addBatch(keys, nil)
}

// AddUniqueBatch is [Scalable.AddUnique] for every key, in order: added[i]
// reports whether keys[i] was added (false when it, or an earlier key of
// the batch equal to it, was already reported present). It returns how
// many keys it processed, which is len(keys) unless AddUnique failed with
// [ErrFull] on keys[processed] (only when the next table cannot be made:
// see [Scalable.Add]); entries of added from there on are left as they
// were. It panics if added is shorter than keys.
func (s *Scalable) AddUniqueBatch(keys [][]byte, added []bool) (processed int, err error) {
	if len(added) < len(keys) {
		panic("cuckoo: AddUniqueBatch: added is shorter than keys")
	}
	return s.addBatch(keys, added)
}

// addBatch adds keys in order, with set semantics when unique is not nil
// (recording there which keys were added). Keys are hashed a chunk at a
// time and their buckets in the newest table prefetched a group at a time,
// but they are added one by one, so a key sees the effect of every key
// before it, as in a loop of single calls. (A table added meanwhile is not
// prefetched until the next chunk: the prefetches go to the table before
// it, which is harmless.) It stops at the first key that fails and returns
// its index and the error, or len(keys) and nil.
func (s *Scalable) addBatch(keys [][]byte, unique []bool) (int, error) {
	s.setUp()
	var hs [table.BatchChunk]uint64
	for lo := 0; lo < len(keys); lo += table.BatchChunk {
		hi := min(lo+table.BatchChunk, len(keys))
		hashes := table.HashKeys(keys[lo:hi], s.seed, &hs)
		if unique != nil {
			if n, err := s.addUniqueChunk(hashes, unique[lo:hi]); err != nil {
				return lo + n, err
			}
			continue
		}
		if s.levels[len(s.levels)-1].Grow != nil {
			// A growing table locates its buckets its own way: prefetch
			// the next group's while adding the current one's, asking
			// again each group, as the table may have stopped growing.
			var js, tags [2 * table.BatchGroup]uint64
			for g := 0; g < len(hashes); g += table.BatchGroup {
				end := min(g+table.BatchGroup, len(hashes))
				if lv := s.levels[len(s.levels)-1]; lv.Grow != nil && end < len(hashes) {
					lv.Grow.Stage(hashes[end:], &js, &tags)
				}
				for k := g; k < end; k++ {
					if err := s.AddHash(hashes[k]); err != nil {
						return lo + k, err
					}
				}
			}
			continue
		}
		p := table.NewPipeline(s.levels[len(s.levels)-1].Plain.T.Locator(), s.seed, nil, hashes)
		for cur, start, ok := p.Next(); ok; cur, start, ok = p.Next() {
			for k, h := range cur.H[:cur.N] {
				if err := s.AddHash(h); err != nil {
					return lo + start + k, err
				}
			}
		}
	}
	return len(keys), nil
}

// addUniqueChunk is addUniqueHash for each of hs (at most table.BatchChunk), in
// order, recording in added which it added. With one plain table it is
// addUniqueChunkOneTable. Else it first asks every table
// about the whole chunk with the batch lookup (containsChunk), whose
// misses overlap; then, key by key, only the tables that may have gained
// fingerprints since (the newest at the start and any added after it:
// AddUnique puts fingerprints nowhere else), so each key sees the keys
// before it as in a loop of single calls. The newest table is asked by
// the insert itself (addAbsent), which reads the key's buckets once to
// learn both whether they hold its fingerprint and where it goes. It stops
// at the first hash that fails and returns its index and the error, or
// len(hs) and nil.
func (s *Scalable) addUniqueChunk(hs []uint64, added []bool) (int, error) {
	if len(s.levels) == 1 && s.levels[0].Grow == nil {
		return s.addUniqueChunkOneTable(hs, added)
	}
	var before [table.BatchChunk]bool
	known := before[:len(hs)]
	s.containsChunk(hs, known)
	first := len(s.levels) - 1
	for k, h := range hs {
		a := false
		if !known[k] && !s.reportsBelowNewest(first, h) {
			var err error
			if a, err = s.addAbsent(h); err != nil {
				return k, err
			}
		}
		added[k] = a
		if invariants.Enabled && a {
			s.checkInvariants()
		}
	}
	return len(hs), nil
}

// addUniqueChunkOneTable is addUniqueChunk for a chain of one plain
// table, the whole chain of a Scalable sized for its keys: there the
// insert alone answers (addAbsent reads the key's buckets once, to learn
// both whether they hold its fingerprint and where it goes), so a batch
// lookup first would read every bucket twice. Instead the buckets of the
// next group of keys are prefetched while a group is added, as a Filter's
// batches do. A table added meanwhile (the first one full) leaves the
// first one below it, which reportsBelowNewest asks about every later
// key. It stops as addUniqueChunk does.
func (s *Scalable) addUniqueChunkOneTable(hs []uint64, added []bool) (int, error) {
	p := table.NewPipeline(s.levels[0].Plain.T.Locator(), s.seed, nil, hs)
	for cur, start, ok := p.Next(); ok; cur, start, ok = p.Next() {
		for k, h := range cur.H[:cur.N] {
			var a bool
			var err error
			if lv := s.levels[0]; len(s.levels) == 1 && takesAbsent(lv) {
				// Still the only table, and the one the pipeline located
				// the keys in.
				a, err = s.addAbsentPlain(lv, h, cur.I1[k], cur.I2[k], cur.FP[k])
			} else if !s.reportsBelowNewest(0, h) {
				a, err = s.addAbsent(h)
			}
			if err != nil {
				return start + k, err
			}
			added[start+k] = a
			if invariants.Enabled && a {
				s.checkInvariants()
			}
		}
	}
	return len(hs), nil
}

// reportsBelowNewest reports whether any of the tables from levels[first]
// on, the newest excepted, reports h.
func (s *Scalable) reportsBelowNewest(first int, h uint64) bool {
	for _, lv := range s.levels[first : len(s.levels)-1] {
		if lv.Contains(h) {
			return true
		}
	}
	return false
}

// AddUniqueHashBatch is [Scalable.AddUniqueBatch] for keys' 64-bit hashes
// (see [Filter.AddUniqueHashBatch]): it asks the tables about a chunk of
// hashes at once and then adds them in order, as AddUniqueBatch does, so
// a caller that hashes its keys elsewhere (on another goroutine) gets the
// same overlapped cache misses.
func (s *Scalable) AddUniqueHashBatch(hashes []uint64, added []bool) (processed int, err error) {
	if len(added) < len(hashes) {
		panic("cuckoo: AddUniqueHashBatch: added is shorter than hashes")
	}
	s.setUp()
	for lo := 0; lo < len(hashes); lo += table.BatchChunk {
		hi := min(lo+table.BatchChunk, len(hashes))
		if n, err := s.addUniqueChunk(hashes[lo:hi], added[lo:hi]); err != nil {
			return lo + n, err
		}
	}
	return len(hashes), nil
}
