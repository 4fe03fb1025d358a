package cuckoo

import "github.com/dedupkit/cuckoo/internal/hash"

// Batch operations of a Scalable. They hash a chunk of keys at once (with
// the key bytes of the next group prefetched while a group is hashed), then
// work table by table with the Filter's pipeline (batch.go), so that the
// cache misses of many keys overlap in every table.

// scalableChunk is how many keys a Scalable batch hashes at once; its
// buffers stay on the stack (about 3 KiB).
const scalableChunk = 256

// hashChunk hashes keys (at most scalableChunk) into hs, prefetching the
// key bytes of each group of keys while it hashes the group before.
func (s *Scalable) hashChunk(keys [][]byte, hs *[scalableChunk]uint64) []uint64 {
	prefetchKeys(keys[:min(batchGroup, len(keys))])
	for lo := 0; lo < len(keys); lo += batchGroup {
		hi := min(lo+batchGroup, len(keys))
		prefetchKeys(keys[hi:min(hi+batchGroup, len(keys))])
		for k, key := range keys[lo:hi] {
			hs[(lo+k)&(scalableChunk-1)] = hash.Sum64(key, s.seed)
		}
	}
	return hs[:len(keys)]
}

// ContainsBatch sets found[i] to s.Contains(keys[i]) for every key. It
// probes the tables newest first, each with [Filter.ContainsHashBatch]'s
// pipeline for the keys no newer table reported, so in tables larger than
// the CPU caches it is faster per key than Contains in a loop. It
// allocates nothing and may run concurrently with other readers. It panics
// if found is shorter than keys.
func (s *Scalable) ContainsBatch(keys [][]byte, found []bool) {
	if len(found) < len(keys) {
		panic("cuckoo: ContainsBatch: found is shorter than keys")
	}
	var hs [scalableChunk]uint64
	for lo := 0; lo < len(keys); lo += scalableChunk {
		hi := min(lo+scalableChunk, len(keys))
		s.containsChunk(s.hashChunk(keys[lo:hi], &hs), found[lo:hi])
	}
}

// ContainsHashBatch is [Scalable.ContainsBatch] for keys' 64-bit hashes
// (see [Filter.AddHash]).
func (s *Scalable) ContainsHashBatch(hashes []uint64, found []bool) {
	if len(found) < len(hashes) {
		panic("cuckoo: ContainsHashBatch: found is shorter than hashes")
	}
	for lo := 0; lo < len(hashes); lo += scalableChunk {
		hi := min(lo+scalableChunk, len(hashes))
		s.containsChunk(hashes[lo:hi], found[lo:hi])
	}
}

// containsChunk is ContainsHashBatch for at most scalableChunk hashes.
func (s *Scalable) containsChunk(hs []uint64, found []bool) {
	clear(found)
	var (
		rest [scalableChunk]uint64 // hashes no table has reported yet
		at   [scalableChunk]uint16 // their indexes in hs
		res  [scalableChunk]bool
	)
	n := copy(rest[:], hs)
	for k := range n {
		at[k] = uint16(k)
	}
	for i := len(s.levels) - 1; i >= 0 && n > 0; i-- {
		if lv := s.levels[i]; lv.grow != nil {
			lv.grow.containsBatch(rest[:n], res[:n])
		} else {
			lv.f.ContainsHashBatch(rest[:n], res[:n])
		}
		m := 0
		for k := range n {
			if res[k] {
				found[at[k]] = true
				continue
			}
			rest[m], at[m] = rest[k], at[k]
			m++
		}
		n = m
	}
}

// AddBatch adds every key, in order, as Add would, prefetching the buckets
// of a group of keys in the newest table before adding them. Like Add it
// never fails: it returns len(keys) and a nil error (the results are there
// so that a Scalable and a Filter can be used alike).
func (s *Scalable) AddBatch(keys [][]byte) (added int, err error) {
	s.addBatch(keys, nil)
	return len(keys), nil
}

// AddUniqueBatch is [Scalable.AddUnique] for every key, in order: added[i]
// reports whether keys[i] was added (false when it, or an earlier key of
// the batch equal to it, was already reported present). It returns
// len(keys) and a nil error, as AddUnique never fails. It panics if added
// is shorter than keys.
func (s *Scalable) AddUniqueBatch(keys [][]byte, added []bool) (processed int, err error) {
	if len(added) < len(keys) {
		panic("cuckoo: AddUniqueBatch: added is shorter than keys")
	}
	s.addBatch(keys, added)
	return len(keys), nil
}

// addBatch adds keys in order, with set semantics when unique is not nil
// (recording there which keys were added). Keys are hashed a chunk at a
// time and their buckets in the newest table prefetched a group at a time,
// but they are added one by one, so a key sees the effect of every key
// before it, as in a loop of single calls. (A table added meanwhile is not
// prefetched until the next chunk: the prefetches go to the table before
// it, which is harmless.)
func (s *Scalable) addBatch(keys [][]byte, unique []bool) {
	s.setUp()
	var hs [scalableChunk]uint64
	for lo := 0; lo < len(keys); lo += scalableChunk {
		hi := min(lo+scalableChunk, len(keys))
		hashes := s.hashChunk(keys[lo:hi], &hs)
		if s.levels[len(s.levels)-1].grow != nil {
			// A growing table locates its buckets its own way: prefetch
			// the next group's while adding the current one's, asking
			// again each group, as the table may have stopped growing.
			var js, tags [2 * batchGroup]uint64
			for g := 0; g < len(hashes); g += batchGroup {
				end := min(g+batchGroup, len(hashes))
				if lv := s.levels[len(s.levels)-1]; lv.grow != nil && end < len(hashes) {
					lv.grow.stage(hashes[end:], &js, &tags)
				}
				for k := g; k < end; k++ {
					if unique == nil {
						s.AddHash(hashes[k])
					} else {
						unique[lo+k] = s.addUniqueHash(hashes[k])
					}
				}
			}
			continue
		}
		newest := &s.levels[len(s.levels)-1].f
		p := newest.pipelineOf(nil, hashes)
		for cur, start, ok := p.next(); ok; cur, start, ok = p.next() {
			for k, h := range cur.h[:cur.n] {
				if unique == nil {
					s.AddHash(h)
					continue
				}
				unique[lo+start+k] = s.addUniqueHash(h)
			}
		}
	}
}
