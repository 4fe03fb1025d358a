package table

import (
	"github.com/dedupkit/cuckoo/internal/addr"
	"github.com/dedupkit/cuckoo/internal/hash"
	"github.com/dedupkit/cuckoo/internal/prefetch"
)

// Batch operations overlap the memory accesses of many keys. A lookup in a
// table far larger than the CPU caches is two independent cache misses of
// about 100 ns each; one at a time, a core waits for each pair in turn. A
// batch works on groups of keys in a pipeline: it hashes the next group and
// asks the CPU to prefetch all its buckets (PREFETCHT0 in assembly on
// amd64; plain loads elsewhere) before it probes the current group, whose
// lines arrived meanwhile. Up to 2·BatchGroup misses are in flight at once,
// and the hashing hides behind them. The bytes of the group after next are
// prefetched too, as keys are often scattered over the heap.

// BatchGroup is how many keys a batch stages at once. With the pipeline,
// the prefetches of one group are in flight while the group before it is
// probed; larger groups' lines wait longer and start to leave L1 before
// they are used (bench/notes.md, item 16, has the measurements).
const BatchGroup = 8

// BatchChunk is how many keys the batch methods of a chain of tables (a
// Scalable's, a Concurrent's) hash at once; their buffers stay on the
// stack (about 3 KiB).
const BatchChunk = 256

// Group is one group of located keys: their hashes, buckets and
// fingerprints.
type Group struct {
	N             int // keys staged
	H, I1, I2, FP [BatchGroup]uint64
	lines         [4 * BatchGroup]uint64 // word indexes to prefetch
}

// Locator is what a pipeline needs of a table to locate keys and prefetch
// their buckets: the addressing of a Table (Table.Locator), or of a table
// of another layout with the same addressing (a Window's).
type Locator struct {
	words      []uint64
	m, fpMask  uint64
	segBuckets uint64 // buckets per segment; 0: one segment
	bucketBits uint64
	// straddles is set for a Table whose buckets may straddle words: a
	// bucket's reads may then touch the line of LastReadWord too.
	straddles bool
}

// NewLocator returns the Locator of a table of one segment, numBuckets
// buckets of bucketBits bits in words, whose fingerprints are
// addr.Fingerprint(h, fpMask).
func NewLocator(words []uint64, numBuckets, fpMask, bucketBits uint64) Locator {
	return Locator{words: words, m: numBuckets, fpMask: fpMask, bucketBits: bucketBits}
}

// Locator returns the table's Locator.
func (t *Table) Locator() Locator {
	l := NewLocator(t.Words, t.NumBuckets, t.FPMask, t.BucketBits)
	l.straddles = !t.Aligned
	if t.Segments > 1 {
		l.segBuckets = t.segBuckets
	}
	return l
}

// Pipeline hands out keys (or hashes) a group at a time, in order, with
// the group after it already hashed and its buckets prefetched, and the
// key bytes of the group after that prefetched: the memory accesses of
// the next groups overlap the work on this one. (An iterator rather than
// a callback, so that its buffers stay on the caller's stack; for the
// same reason it locates keys with a Locator, a value, rather than
// through an interface.)
type Pipeline struct {
	loc    Locator
	seed   uint64
	keys   [][]byte // the keys, or nil for hashes
	hashes []uint64
	n      int
	bufs   [2]Group
	g      int // groups handed out
}

// NewPipeline returns a pipeline over keys, hashed with seed, or over
// hashes when keys is nil, with its first group staged. The table must not
// be empty.
func NewPipeline(loc Locator, seed uint64, keys [][]byte, hashes []uint64) Pipeline {
	p := Pipeline{loc: loc, seed: seed, keys: keys, hashes: hashes, n: len(hashes)}
	if keys != nil {
		p.n = len(keys)
	}
	p.stage(&p.bufs[0], 0)
	return p
}

// stage hashes, locates and prefetches the group starting at lo into b,
// and prefetches the key bytes of the group after it. The key's buckets
// are Table.Locate's and Table.AltIndex's, written out: a call per key
// would cost a batch of a table in the caches more than the work.
func (p *Pipeline) stage(b *Group, lo int) {
	hi := min(lo+BatchGroup, p.n)
	b.N = hi - lo
	var keys [][]byte
	var hashes []uint64
	if p.keys != nil {
		prefetch.Keys(p.keys[hi:min(hi+BatchGroup, p.n)])
		keys = p.keys[lo:hi]
	} else {
		hashes = p.hashes[lo:hi]
	}
	l := &p.loc
	lines := 0
	for k := range b.N {
		k &= BatchGroup - 1 // k < BatchGroup already; the mask proves it to the compiler
		var h uint64
		if keys != nil {
			h = hash.Sum64(keys[k], p.seed)
		} else {
			h = hashes[k]
		}
		i1, fp := addr.Bucket(h, l.m), addr.Fingerprint(h, l.fpMask)
		var i2 uint64
		if l.segBuckets == 0 {
			i2 = addr.Alt(i1, fp, l.m)
		} else {
			base := i1 / l.segBuckets * l.segBuckets
			i2 = base + addr.Alt(i1-base, fp, l.segBuckets)
		}
		b.H[k], b.I1[k], b.I2[k], b.FP[k] = h, i1, i2, fp
		p1, p2 := i1*l.bucketBits, i2*l.bucketBits
		b.lines[lines&(4*BatchGroup-1)] = p1 >> 6
		b.lines[(lines+1)&(4*BatchGroup-1)] = p2 >> 6
		lines += 2
		if l.straddles {
			b.lines[lines&(4*BatchGroup-1)] = LastReadWord(p1, l.bucketBits)
			b.lines[(lines+1)&(4*BatchGroup-1)] = LastReadWord(p2, l.bucketBits)
			lines += 2
		}
	}
	prefetch.Words(l.words, b.lines[:lines])
}

// Next returns the next group and the index of its first key, or false
// when every key has been handed out.
func (p *Pipeline) Next() (cur *Group, start int, ok bool) {
	start = p.g * BatchGroup
	if start >= p.n {
		return nil, 0, false
	}
	cur, next := &p.bufs[p.g&1], &p.bufs[(p.g+1)&1]
	next.N = 0
	if lo := start + BatchGroup; lo < p.n {
		p.stage(next, lo)
	}
	p.g++
	return cur, start, true
}

// ContainsGroup sets found[k] to whether the table holds the fingerprint
// of the k-th key of group b, for each of its keys.
func (t *Table) ContainsGroup(b *Group, found []bool) {
	i1, i2, fp := b.I1[:b.N], b.I2[:b.N], b.FP[:b.N]
	found = found[:len(i1)]
	if t.Aligned {
		// The commonest shapes, inline as in Contains.
		for k := range found {
			rep := fp[k] * t.LaneLow
			x := t.AlignedBucket(i1[k]) ^ rep
			y := t.AlignedBucket(i2[k]) ^ rep
			found[k] = ZeroLanes(x, t.LaneRest, t.LaneHigh)|ZeroLanes(y, t.LaneRest, t.LaneHigh) != 0
		}
		return
	}
	for k := range found {
		found[k] = t.HoldsEither(i1[k], fp[k], i2[k], fp[k])
	}
}

// HashKeys hashes keys (at most BatchChunk) into hs with seed,
// prefetching the key bytes of each group of keys while it hashes the
// group before.
func HashKeys(keys [][]byte, seed uint64, hs *[BatchChunk]uint64) []uint64 {
	prefetch.Keys(keys[:min(BatchGroup, len(keys))])
	for lo := 0; lo < len(keys); lo += BatchGroup {
		hi := min(lo+BatchGroup, len(keys))
		prefetch.Keys(keys[hi:min(hi+BatchGroup, len(keys))])
		for k, key := range keys[lo:hi] {
			hs[(lo+k)&(BatchChunk-1)] = hash.Sum64(key, seed)
		}
	}
	return hs[:len(keys)]
}

// Pending is a batch lookup of hashes in a chain of tables probed newest
// first, as a Concurrent's batch lookups do: each table is asked only
// about the hashes no newer table reported. Its buffers take about 3 KiB,
// on the caller's stack. (The answers' slice is passed to Record, not
// kept, so that it does not escape.)
type Pending struct {
	rest [BatchChunk]uint64 // hashes no table has reported yet
	at   [BatchChunk]uint16 // their indexes in the caller's hashes
	res  [BatchChunk]bool
	n    int
}

// Start begins a lookup of hs (at most BatchChunk), whose answers go to
// found, cleared.
func (p *Pending) Start(hs []uint64, found []bool) {
	clear(found)
	p.n = copy(p.rest[:], hs)
	for k := range p.n {
		p.at[k] = uint16(k)
	}
}

// Next returns the hashes still to look up and where the next table's
// answers go, or false when none is left.
func (p *Pending) Next() (hs []uint64, res []bool, ok bool) {
	return p.rest[:p.n], p.res[:p.n], p.n > 0
}

// Record takes a table's answers: the hashes it reported are found (set
// in found, the slice Start was given), the others move to the front of
// the rest.
func (p *Pending) Record(found []bool) {
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
