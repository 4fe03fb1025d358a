package cuckoo

// Batch operations overlap the memory accesses of many keys. A lookup in a
// table far larger than the CPU caches is two independent cache misses of
// about 100 ns each; one at a time, a core waits for each pair in turn. A
// batch hashes a group of keys, asks the CPU to prefetch all their buckets
// at once (PREFETCHT0 in assembly on amd64; plain loads elsewhere), then
// probes them while the lines arrive, so up to 2·batchGroup misses are in
// flight together.

// batchGroup is how many keys a batch hashes and prefetches before it
// probes them: enough to keep a core's 10 to 12 line-fill buffers busy,
// few enough that the lines are still in L1 when probed.
const batchGroup = 16

// batch holds one group's located keys.
type batch struct {
	h, i1, i2, fp [batchGroup]uint64
	lines         [2 * batchGroup]uint64 // word indexes to prefetch
}

// stage locates hash h as the k-th key of the group.
func (f *Filter) stage(b *batch, k int, h uint64) {
	k &= batchGroup - 1 // k < batchGroup already; the mask proves it to the compiler
	i1, fp := f.locate(h)
	i2 := f.t.altIndex(i1, fp)
	b.h[k], b.i1[k], b.i2[k], b.fp[k] = h, i1, i2, fp
	b.lines[2*k] = i1 * f.t.bucketBits >> 6
	b.lines[2*k+1] = i2 * f.t.bucketBits >> 6
}

// ContainsBatch sets found[i] to f.Contains(keys[i]) for every key. On
// tables larger than the CPU caches it is about twice as fast per key as
// calling Contains in a loop. It allocates nothing and may run concurrently
// with other readers. It panics if found is shorter than keys.
func (f *Filter) ContainsBatch(keys [][]byte, found []bool) {
	if len(found) < len(keys) {
		panic("cuckoo: ContainsBatch: found is shorter than keys")
	}
	var hs [batchGroup]uint64
	for start := 0; start < len(keys); start += batchGroup {
		n := min(batchGroup, len(keys)-start)
		for k, key := range keys[start : start+n] {
			hs[k&(batchGroup-1)] = f.hasher.Sum64(key)
		}
		f.containsGroup(hs[:n], found[start:start+n])
	}
}

// ContainsHashBatch is [Filter.ContainsBatch] for keys' 64-bit hashes (see
// [Filter.AddHash]).
func (f *Filter) ContainsHashBatch(hashes []uint64, found []bool) {
	if len(found) < len(hashes) {
		panic("cuckoo: ContainsHashBatch: found is shorter than hashes")
	}
	for start := 0; start < len(hashes); start += batchGroup {
		n := min(batchGroup, len(hashes)-start)
		f.containsGroup(hashes[start:start+n], found[start:start+n])
	}
}

// containsGroup looks up at most batchGroup hashes: it locates them all,
// prefetches their buckets, then probes each.
func (f *Filter) containsGroup(hs []uint64, found []bool) {
	if f.t.numBuckets == 0 {
		clear(found)
		return
	}
	var b batch
	for k, h := range hs {
		f.stage(&b, k, h)
	}
	n := len(hs)
	prefetch(f.t.words, b.lines[:2*n])
	i1, i2, fp := b.i1[:n], b.i2[:n], b.fp[:n]
	found = found[:len(i1)]
	for k := range found {
		found[k] = f.t.has2(i1[k], i2[k], fp[k])
	}
}

// AddBatch adds every key, in order, as Add would, prefetching the buckets
// of a group of keys before inserting them. It stops at the first error
// ([ErrFull]) and returns how many keys it added before it; the key that
// failed and those after it are not added, and the filter holds exactly
// the keys added.
func (f *Filter) AddBatch(keys [][]byte) (added int, err error) {
	return f.addBatch(keys, nil)
}

// AddUniqueBatch is [Filter.AddUnique] for every key, in order: added[i]
// reports whether keys[i] was added (false when it, or an earlier key of
// the batch equal to it, was already reported present). It returns how
// many keys it processed, which is len(keys) unless Add failed with
// [ErrFull] on keys[processed]; entries of added past that are left as
// they were. It panics if added is shorter than keys.
func (f *Filter) AddUniqueBatch(keys [][]byte, added []bool) (processed int, err error) {
	if len(added) < len(keys) {
		panic("cuckoo: AddUniqueBatch: added is shorter than keys")
	}
	return f.addBatch(keys, added)
}

// addBatch adds keys in order, with set semantics when unique is not nil
// (recording there which keys were added). Keys are hashed and prefetched
// a group at a time but inserted one by one, so a key sees the effect of
// every key before it, as in a loop of single calls.
func (f *Filter) addBatch(keys [][]byte, unique []bool) (int, error) {
	var b batch
	for start := 0; start < len(keys); start += batchGroup {
		n := min(batchGroup, len(keys)-start)
		if f.t.numBuckets != 0 {
			for k, key := range keys[start : start+n] {
				f.stage(&b, k, f.hasher.Sum64(key))
			}
			prefetch(f.t.words, b.lines[:2*n])
		} else {
			for k, key := range keys[start : start+n] {
				b.h[k] = f.hasher.Sum64(key)
			}
		}
		for k := 0; k < n; k++ {
			if unique == nil {
				if err := f.AddHash(b.h[k]); err != nil {
					return start + k, err
				}
				continue
			}
			ok, err := f.addUniqueHash(b.h[k])
			if err != nil {
				return start + k, err
			}
			unique[start+k] = ok
		}
	}
	return len(keys), nil
}
