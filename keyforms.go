package cuckoo

import "github.com/dedupkit/cuckoo/internal/hash"

// The key forms and batches that complete the set every filter offers
// (docs/api.md): each of Add, AddUnique, Contains, Delete and Count takes
// a []byte, a string, a uint64 or the caller's 64-bit hash, and the
// batches take []byte keys or hashes. The methods here are written over
// the single-key forms, with their semantics key by key; they allocate
// nothing.

// AddUniqueUint64 is [Filter.AddUnique] for an integer key (see
// [Filter.AddUint64]).
func (f *Filter) AddUniqueUint64(key uint64) (added bool, err error) {
	return f.addUniqueHash(hash.Sum64Uint64(key, f.Seed()))
}

// AddUniqueHash is [Filter.AddUnique] for a key's 64-bit hash (see
// [Filter.AddHash]).
func (f *Filter) AddUniqueHash(h uint64) (added bool, err error) { return f.addUniqueHash(h) }

// AddHashBatch is [Filter.AddBatch] for keys' 64-bit hashes (see
// [Filter.AddHash]): it adds every hash in order, stops at the first error
// ([ErrFull], or [ErrUninitialized] on the zero Filter) and returns how
// many it added before it; the filter holds exactly those.
func (f *Filter) AddHashBatch(hashes []uint64) (added int, err error) {
	return f.addBatch(nil, hashes, nil)
}

// AddUniqueHashBatch is [Filter.AddUniqueBatch] for keys' 64-bit hashes:
// added[i] reports whether hashes[i] was added. It returns how many hashes
// it processed, len(hashes) unless an insert failed on hashes[processed].
// It panics if added is shorter than hashes.
func (f *Filter) AddUniqueHashBatch(hashes []uint64, added []bool) (processed int, err error) {
	if len(added) < len(hashes) {
		panic("cuckoo: AddUniqueHashBatch: added is shorter than hashes")
	}
	return f.addBatch(nil, hashes, added)
}

// DeleteBatch sets deleted[i] to f.Delete(keys[i]) for every key, in
// order, so a key present twice in keys is deleted twice. It panics if
// deleted is shorter than keys.
func (f *Filter) DeleteBatch(keys [][]byte, deleted []bool) {
	deleteKeys("DeleteBatch", f.Delete, keys, deleted)
}

// DeleteHashBatch is [Filter.DeleteBatch] for keys' 64-bit hashes.
func (f *Filter) DeleteHashBatch(hashes []uint64, deleted []bool) {
	deleteKeys("DeleteHashBatch", f.DeleteHash, hashes, deleted)
}

// AddUniqueUint64 is [Scalable.AddUnique] for an integer key (see
// [Scalable.AddUint64]).
func (s *Scalable) AddUniqueUint64(key uint64) (added bool, err error) {
	s.setUp()
	return s.addUniqueHash(hash.Sum64Uint64(key, s.Seed()))
}

// AddUniqueHash is [Scalable.AddUnique] for a key's 64-bit hash (see
// [Scalable.AddHash]).
func (s *Scalable) AddUniqueHash(h uint64) (added bool, err error) {
	s.setUp()
	return s.addUniqueHash(h)
}

// AddHashBatch is [Scalable.AddBatch] for keys' 64-bit hashes: it adds
// every hash, in order, and returns len(hashes) and nil, or, stopping at
// the first hash Add refuses (with [ErrFull], only when the next table
// cannot be made: see [Scalable.Add]), how many it added and the error.
func (s *Scalable) AddHashBatch(hashes []uint64) (added int, err error) {
	return addHashes(s.AddHash, hashes)
}

// DeleteBatch is [Filter.DeleteBatch] for a Scalable.
func (s *Scalable) DeleteBatch(keys [][]byte, deleted []bool) {
	deleteKeys("DeleteBatch", s.Delete, keys, deleted)
}

// DeleteHashBatch is [Filter.DeleteHashBatch] for a Scalable.
func (s *Scalable) DeleteHashBatch(hashes []uint64, deleted []bool) {
	deleteKeys("DeleteHashBatch", s.DeleteHash, hashes, deleted)
}

// AddUniqueUint64 is [Concurrent.AddUnique] for an integer key (see
// [Filter.AddUint64]).
func (c *Concurrent) AddUniqueUint64(key uint64) (added bool, err error) {
	return c.addUniqueKey(uint64Key(key))
}

// AddUniqueHash is [Concurrent.AddUnique] for a key's 64-bit hash (see
// [Filter.AddHash]).
func (c *Concurrent) AddUniqueHash(h uint64) (added bool, err error) {
	return c.addUniqueKey(hashKey(h))
}

// AddHashBatch is [Concurrent.AddBatch] for keys' 64-bit hashes (see
// [Filter.AddHashBatch]). Each insert is atomic, the batch is not: other
// goroutines may see some of its keys before the others.
func (c *Concurrent) AddHashBatch(hashes []uint64) (added int, err error) {
	return addHashes(c.AddHash, hashes)
}

// AddUniqueHashBatch is [Concurrent.AddUniqueBatch] for keys' 64-bit
// hashes (see [Filter.AddUniqueHashBatch]). Each test-and-add is atomic,
// the batch is not.
func (c *Concurrent) AddUniqueHashBatch(hashes []uint64, added []bool) (processed int, err error) {
	return addUniqueHashes("AddUniqueHashBatch", c.AddUniqueHash, hashes, added)
}

// DeleteBatch is [Filter.DeleteBatch] for a Concurrent. Each delete is
// atomic, the batch is not.
func (c *Concurrent) DeleteBatch(keys [][]byte, deleted []bool) {
	deleteKeys("DeleteBatch", c.Delete, keys, deleted)
}

// DeleteHashBatch is [Concurrent.DeleteBatch] for keys' 64-bit hashes.
func (c *Concurrent) DeleteHashBatch(hashes []uint64, deleted []bool) {
	deleteKeys("DeleteHashBatch", c.DeleteHash, hashes, deleted)
}

// addHashes adds hashes in order with add, stopping at the first error.
func addHashes(add func(uint64) error, hashes []uint64) (int, error) {
	for i, h := range hashes {
		if err := add(h); err != nil {
			return i, err
		}
	}
	return len(hashes), nil
}

// addUniqueHashes runs addUnique over hashes in order, recording in added,
// and stops at the first error.
func addUniqueHashes(name string, addUnique func(uint64) (bool, error), hashes []uint64, added []bool) (int, error) {
	if len(added) < len(hashes) {
		panic("cuckoo: " + name + ": added is shorter than hashes")
	}
	for i, h := range hashes {
		a, err := addUnique(h)
		if err != nil {
			return i, err
		}
		added[i] = a
	}
	return len(hashes), nil
}

// deleteKeys runs del over keys in order, recording in deleted.
func deleteKeys[K any](name string, del func(K) bool, keys []K, deleted []bool) {
	if len(deleted) < len(keys) {
		panic("cuckoo: " + name + ": deleted is shorter than keys")
	}
	for i, k := range keys {
		deleted[i] = del(k)
	}
}

// DeleteBatch is [Filter.DeleteBatch] for a Window.
func (w *Window) DeleteBatch(keys [][]byte, deleted []bool) {
	deleteKeys("DeleteBatch", w.Delete, keys, deleted)
}

// DeleteHashBatch is [Filter.DeleteHashBatch] for a Window.
func (w *Window) DeleteHashBatch(hashes []uint64, deleted []bool) {
	deleteKeys("DeleteHashBatch", w.DeleteHash, hashes, deleted)
}
