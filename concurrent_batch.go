package cuckoo

import "github.com/dedupkit/cuckoo/internal/table"

// Batch operations of a Concurrent. Lookups probe the tables newest first
// for a chunk of keys at a time, each table with its next group's buckets
// prefetched while the current group is probed (as in table.Pipeline),
// so that the cache misses of many keys overlap. Inserts go one key at a
// time, in order, as a loop of single calls would; they are batched only
// for the hashing.

// ContainsBatch sets found[i] to c.Contains(keys[i]) for every key. Like
// Contains it takes no lock and may run alongside any other operation;
// each key's answer is right for some moment during the call. It
// allocates nothing. It panics if found is shorter than keys.
func (c *Concurrent) ContainsBatch(keys [][]byte, found []bool) {
	if len(found) < len(keys) {
		panic("cuckoo: ContainsBatch: found is shorter than keys")
	}
	ch := c.st.Load()
	if ch == nil {
		clear(found[:len(keys)])
		return
	}
	var hs [table.BatchChunk]uint64
	for lo := 0; lo < len(keys); lo += table.BatchChunk {
		hi := min(lo+table.BatchChunk, len(keys))
		ch.containsChunk(table.HashKeys(keys[lo:hi], ch.seed, &hs), found[lo:hi])
	}
}

// ContainsHashBatch is [Concurrent.ContainsBatch] for keys' 64-bit hashes
// (see [Filter.AddHash]).
func (c *Concurrent) ContainsHashBatch(hashes []uint64, found []bool) {
	if len(found) < len(hashes) {
		panic("cuckoo: ContainsHashBatch: found is shorter than hashes")
	}
	ch := c.st.Load()
	if ch == nil {
		clear(found[:len(hashes)])
		return
	}
	for lo := 0; lo < len(hashes); lo += table.BatchChunk {
		hi := min(lo+table.BatchChunk, len(hashes))
		ch.containsChunk(hashes[lo:hi], found[lo:hi])
	}
}

// containsChunk is ContainsHashBatch for at most table.BatchChunk hashes.
func (ch *cchain) containsChunk(hs []uint64, found []bool) {
	var p table.Pending
	p.Start(hs, found)
	for i := len(ch.tables) - 1; i >= 0; i-- {
		rest, res, ok := p.Next()
		if !ok {
			return
		}
		ch.tables[i].ContainsBatch(rest, res)
		p.Record(found)
	}
}

// AddBatch adds every key, in order, as Add would. It stops at the first
// error ([ErrFull]: for a growing filter, only when its next table cannot
// be made, see [Concurrent.Add]) and returns how many keys it added before
// it; the key that failed and those after it are not added. Other
// goroutines' operations may interleave with the batch's.
func (c *Concurrent) AddBatch(keys [][]byte) (added int, err error) {
	for i, key := range keys {
		if err := c.Add(key); err != nil {
			return i, err
		}
	}
	return len(keys), nil
}

// AddUniqueBatch is [Concurrent.AddUnique] for every key, in order:
// added[i] reports whether keys[i] was added. It returns how many keys it
// processed, which is len(keys) unless AddUnique failed with [ErrFull] on
// keys[processed]; entries of added past that are left as they were. It
// panics if added is shorter than keys.
func (c *Concurrent) AddUniqueBatch(keys [][]byte, added []bool) (processed int, err error) {
	if len(added) < len(keys) {
		panic("cuckoo: AddUniqueBatch: added is shorter than keys")
	}
	for i, key := range keys {
		ok, err := c.AddUnique(key)
		if err != nil {
			return i, err
		}
		added[i] = ok
	}
	return len(keys), nil
}
