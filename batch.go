package cuckoo

import (
	"github.com/dedupkit/cuckoo/internal/hash"

	"github.com/dedupkit/cuckoo/internal/table"
)

// Batch operations overlap the memory accesses of many keys. A lookup in a
// table far larger than the CPU caches is two independent cache misses of
// about 100 ns each; one at a time, a core waits for each pair in turn. A
// batch works on groups of keys in a pipeline: it hashes the next group and
// asks the CPU to prefetch all its buckets (PREFETCHT0 in assembly on
// amd64; plain loads elsewhere) before it probes the current group, whose
// lines arrived meanwhile. Up to 2·batchGroup misses are in flight at once,
// and the hashing hides behind them. The bytes of the group after next are
// prefetched too, as keys are often scattered over the heap.

// batchGroup is how many keys a batch stages at once. With the pipeline,
// the prefetches of one group are in flight while the group before it is
// probed; larger groups' lines wait longer and start to leave L1 before
// they are used (bench/notes.md, item 16, has the measurements).
const batchGroup = 8

// batchChunk is how many keys the batch methods of a Scalable or a
// Concurrent hash at once; their buffers stay on the stack (about 3 KiB).
const batchChunk = 256

// batch holds one group's located keys.
type batch struct {
	n             int // keys staged
	h, i1, i2, fp [batchGroup]uint64
	lines         [2 * batchGroup]uint64 // word indexes to prefetch
}

// stage locates hash h as the k-th key of the group.
func (f *Filter) stage(b *batch, k int, h uint64) {
	k &= batchGroup - 1 // k < batchGroup already; the mask proves it to the compiler
	i1, fp := f.m.T.Locate(h)
	i2 := f.m.T.AltIndex(i1, fp)
	b.h[k], b.i1[k], b.i2[k], b.fp[k] = h, i1, i2, fp
	b.lines[2*k] = i1 * f.m.T.BucketBits >> 6
	b.lines[2*k+1] = i2 * f.m.T.BucketBits >> 6
}

// stageKeys hashes and locates up to batchGroup keys into b and prefetches
// their buckets. The table must not be empty.
func (f *Filter) stageKeys(b *batch, keys [][]byte) {
	b.n = len(keys)
	for k, key := range keys {
		f.stage(b, k, hash.Sum64(key, f.seed))
	}
	table.Prefetch(f.m.T.Words, b.lines[:2*b.n])
}

// stageHashes is stageKeys for hashes.
func (f *Filter) stageHashes(b *batch, hs []uint64) {
	b.n = len(hs)
	for k, h := range hs {
		f.stage(b, k, h)
	}
	table.Prefetch(f.m.T.Words, b.lines[:2*b.n])
}

// probe looks up the keys staged in b.
func (f *Filter) probe(b *batch, found []bool) {
	t := &f.m.T
	i1, i2, fp := b.i1[:b.n], b.i2[:b.n], b.fp[:b.n]
	found = found[:len(i1)]
	if t.Aligned {
		// The commonest shapes, inline as in ContainsHash.
		for k := range found {
			rep := fp[k] * t.LaneLow
			x := t.AlignedBucket(i1[k]) ^ rep
			y := t.AlignedBucket(i2[k]) ^ rep
			found[k] = table.ZeroLanes(x, t.LaneRest, t.LaneHigh)|table.ZeroLanes(y, t.LaneRest, t.LaneHigh) != 0
		}
		return
	}
	for k := range found {
		found[k] = t.HoldsEither(i1[k], fp[k], i2[k], fp[k])
	}
}

// ContainsBatch sets found[i] to f.Contains(keys[i]) for every key. On
// tables larger than the CPU caches it is about twice as fast per key as
// calling Contains in a loop. It allocates nothing and may run concurrently
// with other readers. It panics if found is shorter than keys.
func (f *Filter) ContainsBatch(keys [][]byte, found []bool) {
	if len(found) < len(keys) {
		panic("cuckoo: ContainsBatch: found is shorter than keys")
	}
	if f.m.T.NumBuckets == 0 {
		clear(found[:len(keys)])
		return
	}
	p := f.pipelineOf(keys, nil)
	for cur, start, ok := p.next(); ok; cur, start, ok = p.next() {
		f.probe(cur, found[start:])
	}
}

// ContainsHashBatch is [Filter.ContainsBatch] for keys' 64-bit hashes (see
// [Filter.AddHash]).
func (f *Filter) ContainsHashBatch(hashes []uint64, found []bool) {
	if len(found) < len(hashes) {
		panic("cuckoo: ContainsHashBatch: found is shorter than hashes")
	}
	if f.m.T.NumBuckets == 0 {
		clear(found[:len(hashes)])
		return
	}
	p := f.pipelineOf(nil, hashes)
	for cur, start, ok := p.next(); ok; cur, start, ok = p.next() {
		f.probe(cur, found[start:])
	}
}

// AddBatch adds every key, in order, as Add would, prefetching the buckets
// of a group of keys before inserting them. It stops at the first error
// ([ErrFull]) and returns how many keys it added before it; the key that
// failed and those after it are not added, and the filter holds exactly
// the keys added.
func (f *Filter) AddBatch(keys [][]byte) (added int, err error) {
	return f.addBatch(keys, nil, nil)
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
	return f.addBatch(keys, nil, added)
}

// addBatch adds keys (or hashes, when keys is nil) in order, with set
// semantics when unique is not nil (recording there which keys were
// added). Keys are hashed and prefetched a group at a time but inserted
// one by one, so a key sees the effect of every key before it, as in a
// loop of single calls.
func (f *Filter) addBatch(keys [][]byte, hashes []uint64, unique []bool) (int, error) {
	n := len(hashes)
	if keys != nil {
		n = len(keys)
	}
	if f.m.T.NumBuckets == 0 {
		if n == 0 {
			return 0, nil
		}
		return 0, errZeroFilter
	}
	p := f.pipelineOf(keys, hashes)
	for cur, start, ok := p.next(); ok; cur, start, ok = p.next() {
		for k, h := range cur.h[:cur.n] {
			if unique == nil {
				if err := f.AddHash(h); err != nil {
					return start + k, err
				}
				continue
			}
			ok, err := f.addUniqueHash(h)
			if err != nil {
				return start + k, err
			}
			unique[start+k] = ok
		}
	}
	return n, nil
}

// pipeline hands out keys (or hashes) a group at a time, in order, with
// the group after it already hashed and its buckets prefetched, and the key
// bytes of the group after that prefetched: the memory accesses of the next
// groups overlap the work on this one. (An iterator rather than a
// callback, so that its buffers stay on the caller's stack; for the same
// reason it calls its filter, a Filter or a Window, directly rather than
// through an interface.)
type pipeline struct {
	f      *Filter // the filter staged for, or nil for w
	w      *Window
	keys   [][]byte // the keys, or nil for hashes
	hashes []uint64
	n      int
	bufs   [2]batch
	g      int // groups handed out
}

// pipelineOf returns a pipeline over keys, or over hashes when keys is
// nil, with its first group staged. The table must not be empty.
func (f *Filter) pipelineOf(keys [][]byte, hashes []uint64) pipeline {
	return newPipeline(pipeline{f: f, keys: keys, hashes: hashes})
}

// newPipeline completes p, whose filter and keys are set, and stages its
// first group.
func newPipeline(p pipeline) pipeline {
	p.n = len(p.hashes)
	if p.keys != nil {
		p.n = len(p.keys)
	}
	p.stage(&p.bufs[0], 0)
	return p
}

// stage hashes, locates and prefetches the group starting at lo into b,
// and prefetches the key bytes of the group after it.
func (p *pipeline) stage(b *batch, lo int) {
	hi := min(lo+batchGroup, p.n)
	var keys [][]byte
	var hashes []uint64
	if p.keys != nil {
		table.PrefetchKeys(p.keys[hi:min(hi+batchGroup, p.n)])
		keys = p.keys[lo:hi]
	} else {
		hashes = p.hashes[lo:hi]
	}
	switch {
	case p.w != nil:
		p.w.stage(b, keys, hashes)
	case keys != nil:
		p.f.stageKeys(b, keys)
	default:
		p.f.stageHashes(b, hashes)
	}
}

// next returns the next group and the index of its first key, or false
// when every key has been handed out.
func (p *pipeline) next() (cur *batch, start int, ok bool) {
	start = p.g * batchGroup
	if start >= p.n {
		return nil, 0, false
	}
	cur, next := &p.bufs[p.g&1], &p.bufs[(p.g+1)&1]
	next.n = 0
	if lo := start + batchGroup; lo < p.n {
		p.stage(next, lo)
	}
	p.g++
	return cur, start, true
}

// hashKeys hashes keys (at most batchChunk) into hs with seed,
// prefetching the key bytes of each group of keys while it hashes the
// group before.
func hashKeys(keys [][]byte, seed uint64, hs *[batchChunk]uint64) []uint64 {
	table.PrefetchKeys(keys[:min(batchGroup, len(keys))])
	for lo := 0; lo < len(keys); lo += batchGroup {
		hi := min(lo+batchGroup, len(keys))
		table.PrefetchKeys(keys[hi:min(hi+batchGroup, len(keys))])
		for k, key := range keys[lo:hi] {
			hs[(lo+k)&(batchChunk-1)] = hash.Sum64(key, seed)
		}
	}
	return hs[:len(keys)]
}

// chainProbe looks hashes up in a chain of tables probed newest first, as
// a Scalable's or a Concurrent's batch lookups do: each table is asked
// only about the hashes no newer table reported. Its buffers take about
// 3 KiB, on the caller's stack. (The answers' slice is passed to record,
// not kept, so that it does not escape.)
type chainProbe struct {
	rest [batchChunk]uint64 // hashes no table has reported yet
	at   [batchChunk]uint16 // their indexes in the caller's hashes
	res  [batchChunk]bool
	n    int
}

// start begins a lookup of hs (at most batchChunk), whose answers go to
// found, cleared.
func (p *chainProbe) start(hs []uint64, found []bool) {
	clear(found)
	p.n = copy(p.rest[:], hs)
	for k := range p.n {
		p.at[k] = uint16(k)
	}
}

// next returns the hashes still to look up and where the next table's
// answers go, or false when none is left.
func (p *chainProbe) next() (hs []uint64, res []bool, ok bool) {
	return p.rest[:p.n], p.res[:p.n], p.n > 0
}

// record takes a table's answers: the hashes it reported are found (set
// in found, the slice start was given), the others move to the front of
// rest.
func (p *chainProbe) record(found []bool) {
	m := 0
	for k := range p.n {
		if p.res[k] {
			found[p.at[k]] = true
			continue
		}
		p.rest[m], p.at[m] = p.rest[k], p.at[k]
		m++
	}
	p.n = m
}
