package store

import (
	"fmt"

	"github.com/dedupkit/cuckoo/internal/hash"
)

// The index: a bucketized cuckoo hash table in RAM that maps a key's hash
// to the location of its live record in the log. A slot is one uint64:
//
//	 63                              24  23   22                    0
//	+----------------------------------+-----+-----------------------+
//	| location (40 bits)               |which| fragment (23 bits)    |
//	+----------------------------------+-----+-----------------------+
//
// location is the record's log file slot (8 bits) and byte offset in that
// log file (32 bits); it is never 0 (a log file starts with its header), so
// the zero slot is empty. A key has two hashes: x1, its 64-bit hash, and
// x2 = x1 ^ D(x1), where D depends only on 12 bits of x1 that it leaves
// unchanged, so x1 = x2 ^ D(x2) (an involution). which says which of them
// placed the entry: 0 in bucket addr(x1), 1 in bucket addr(x2).
//
// # Growth without reading the log
//
// The table grows one bucket at a time by linear hashing: at level L with
// split pointer s it has 2^L + s buckets, and addr(x) is x mod 2^(L+1)
// when x mod 2^L < s, else x mod 2^L. So a bucket j knows the low K(j)
// bits of the hashes it holds: K = L+1 for split buckets (j < s) and
// their images (j ≥ 2^L), K = L for the rest. The fragment holds the next
// bits of the entry's hash, bits [K, top) of x_which: splitting bucket s
// moves the entries whose bit L is set to bucket s + 2^L and drops that
// bit from every fragment there. Moving an entry to its other bucket
// rebuilds bits [0, top) of its hash from the bucket number and the
// fragment. Neither needs the key.
//
// Each level costs the fragments a bit. Before a level would leave fewer
// than minFrag bits, the index is rebuilt from the keys in the log with a
// higher top (refresh): every fragBits−minFrag = 9 levels, that is at
// about 2.4·10^5 and 6·10^7 keys.
//
// # Tags
//
// A probe of bucket j for the hash x compares which and bits [K(j), top)
// of x with each slot: at least minFrag+1 = 15 bits. An absent key thus
// matches a slot of its two buckets with probability at most
// 16 · load / 2^15 < 0.05 %, and only a match costs a read of the log
// (TestIndexAbsentMatches and TestAbsentKeysReadNoLog count them).
//
// # Inserts
//
// An insert takes a slot of the emptier of its two buckets, or else moves
// one of their entries to a split bucket (which holds half as many as an
// unsplit one), or else moves entries along the shortest path to a free
// slot that a breadth-first search of maxSearch buckets finds, or else does a random walk of up to maxKicks
// moves; the entry the walk leaves without a slot goes to a small stash
// that lookups check too (it stays empty in practice below maxLoad: an
// insert into a growing table first finds no room at a load of about
// 0.95). An entry is never dropped.
//
// # Memory
//
// Buckets are 8 slots (64 bytes, a cache line); they live in chunks of
// 1024 buckets, so that growing never copies the table nor holds two
// copies of it. A split comes before an insert that would pass maxLoad:
// the table holds 8/maxLoad ≈ 8.9 bytes per key, plus at most one chunk
// (64 KiB) and the 32 KiB table of D.
//
// Invariants:
//   - 2^L ≤ n = 2^L + s < 2^(L+1); firstLevel ≤ L ≤ top − 1 − minFrag;
//     top − L ≤ fragBits.
//   - a slot is 0 (empty) or has location ≠ 0 and a fragment < 2^(top−K(j)).
//   - count is the number of non-empty slots.
//   - no key has two entries (the store checks before inserting).
type index struct {
	chunks [][]uint64
	// shared[i] says that chunks[i] is also held by a snapshot being
	// encoded for a checkpoint: a write copies it first (wbucket), so
	// the snapshot stays as it was taken. Chunks past len(shared) are
	// never shared.
	shared []bool
	level  uint   // L
	split  uint64 // s
	top    uint   // T
	count  uint64
	dmask  uint64 // bits of D: [0, top−dispBits)
	disp   *[1 << dispBits]uint64
	queue  []bfsNode // scratch of insert's search
	// stash holds the entries no search found room for, with their whole
	// hash; lookups check it too. It is retried after every split, and
	// kept below maxStash by splitting.
	stash []stashEntry
	rng   uint64 // walk's generator; never 0
}

// stashEntry is an entry of the stash: bits [0, top) of its key's hash
// and its location.
type stashEntry struct{ x, loc uint64 }

// maxStash is the most entries the stash holds.
const maxStash = 16

// inStash is the bucket number of a slotRef to a stash entry.
const inStash = ^uint64(0)

const (
	slotsPerBucket = 8
	chunkShift     = 10
	chunkBuckets   = 1 << chunkShift
	chunkWords     = chunkBuckets * slotsPerBucket

	locShift = 24
	tagMask  = 1<<locShift - 1
	whichBit = 1 << fragBits
	fragBits = 23
	minFrag  = 14
	dispBits = 12

	firstLevel = 6
	// maxLoad (maxLoadNum/maxLoadDen) is the load past which an insert
	// first splits a bucket.
	maxLoadNum, maxLoadDen = 90, 100
	// maxSearch is the most buckets insert's breadth-first search visits.
	maxSearch = 64
	// maxKicks is the longest random walk of an insert.
	maxKicks = 500
)

// maxLocation is the largest location a slot holds.
const maxLocation = 1<<(64-locShift) - 1

func newIndex(seed uint64) *index {
	ix := &index{level: firstLevel, top: firstLevel + fragBits, rng: seed | 1, disp: newDisp(seed)}
	ix.setMask()
	ix.chunks = [][]uint64{make([]uint64, chunkWords)}
	return ix
}

// newDisp returns the table of D for a store's seed.
func newDisp(seed uint64) *[1 << dispBits]uint64 {
	d := new([1 << dispBits]uint64)
	for m := range d {
		d[m] = hash.Mix64(seed ^ hash.Mix64(uint64(m)+0x9e3779b97f4a7c15))
	}
	return d
}

func (ix *index) setMask() { ix.dmask = 1<<(ix.top-dispBits) - 1 }

// buckets returns the bucket count n.
func (ix *index) buckets() uint64 { return 1<<ix.level + ix.split }

// bytes returns the memory the table holds.
func (ix *index) bytes() uint64 {
	return uint64(len(ix.chunks))*chunkWords*8 + uint64(len(ix.disp))*8 + uint64(cap(ix.stash))*16
}

// alt returns the other hash of a key: x ^ D(x).
func (ix *index) alt(x uint64) uint64 {
	return x ^ ix.disp[(x>>(ix.top-dispBits))&(1<<dispBits-1)]&ix.dmask
}

// addr returns the bucket of hash x.
func (ix *index) addr(x uint64) uint64 {
	j := x & (1<<ix.level - 1)
	if j < ix.split {
		j = x & (1<<(ix.level+1) - 1)
	}
	return j
}

// known returns K(j): how many low bits of its hashes bucket j tells.
func (ix *index) known(j uint64) uint {
	if j < ix.split || j >= 1<<ix.level {
		return ix.level + 1
	}
	return ix.level
}

// tag returns the tag bits a slot of bucket j holds for hash x placed by
// which (0 or whichBit).
func (ix *index) tag(j, x, which uint64) uint64 {
	k := ix.known(j)
	return which | (x>>k)&(1<<(ix.top-k)-1)
}

// bucket returns the slots of bucket j, to read them.
func (ix *index) bucket(j uint64) []uint64 {
	c := ix.chunks[j>>chunkShift]
	o := (j & (chunkBuckets - 1)) * slotsPerBucket
	return c[o : o+slotsPerBucket : o+slotsPerBucket]
}

// wbucket returns the slots of bucket j, to write them: a chunk a
// snapshot shares is copied first (64 KiB). Every write of a slot goes
// through it; a slice it returns stays valid for writing until the next
// snapshot.
func (ix *index) wbucket(j uint64) []uint64 {
	if ci := j >> chunkShift; ci < uint64(len(ix.shared)) && ix.shared[ci] {
		ix.chunks[ci] = append(make([]uint64, 0, chunkWords), ix.chunks[ci]...)
		ix.shared[ci] = false
	}
	return ix.bucket(j)
}

// snapshot returns an index that shares the chunks of ix, as they are
// now, for a checkpoint to encode while ix goes on changing: ix copies a
// shared chunk before it first writes it. It costs O(chunks); unshare
// ends the sharing.
func (ix *index) snapshot() *index {
	sn := *ix
	sn.chunks = append([][]uint64(nil), ix.chunks...)
	sn.stash = append([]stashEntry(nil), ix.stash...)
	sn.shared, sn.queue = nil, nil
	ix.shared = make([]bool, len(ix.chunks))
	for i := range ix.shared {
		ix.shared[i] = true
	}
	return &sn
}

// unshare ends the sharing of a snapshot: the chunks ix did not copy are
// its own again.
func (ix *index) unshare() { ix.shared = nil }

// slotRef names one slot and what it held when found.
type slotRef struct {
	j   uint64 // bucket
	k   int    // slot in the bucket
	loc uint64
}

// probe is a key's two buckets and the tags that match it there.
type probe struct {
	j1, t1, j2, t2 uint64
}

func (ix *index) probeOf(x uint64) probe {
	x2 := ix.alt(x)
	j1, j2 := ix.addr(x), ix.addr(x2)
	return probe{j1, ix.tag(j1, x, 0), j2, ix.tag(j2, x2, whichBit)}
}

// candidates writes the slots whose tag matches x to out and returns how
// many: the only entries that can be x's. O(1), no allocation.
func (ix *index) candidates(x uint64, out *[maxCandidates]slotRef) int {
	p := ix.probeOf(x)
	n := 0
	for k, v := range ix.bucket(p.j1) {
		if v != 0 && v&tagMask == p.t1 {
			out[n] = slotRef{p.j1, k, v >> locShift}
			n++
		}
	}
	for k, v := range ix.bucket(p.j2) {
		if v != 0 && v&tagMask == p.t2 {
			out[n] = slotRef{p.j2, k, v >> locShift}
			n++
		}
	}
	for k, e := range ix.stash {
		if e.x == x&(1<<ix.top-1) && n < len(out) {
			out[n] = slotRef{inStash, k, e.loc}
			n++
		}
	}
	return n
}

// maxCandidates is the most slots candidates returns.
const maxCandidates = 2*slotsPerBucket + 4

// setLoc points the slot r at loc, keeping its tag.
func (ix *index) setLoc(r slotRef, loc uint64) {
	if r.j == inStash {
		ix.stash[r.k].loc = loc
		return
	}
	b := ix.wbucket(r.j)
	b[r.k] = loc<<locShift | b[r.k]&tagMask
}

// remove empties the slot r.
func (ix *index) remove(r slotRef) {
	ix.count--
	if r.j == inStash {
		ix.stash = append(ix.stash[:r.k], ix.stash[r.k+1:]...)
		return
	}
	ix.wbucket(r.j)[r.k] = 0
}

// full reports whether an insert must split a bucket first.
func (ix *index) full() bool {
	return (ix.count+1)*maxLoadDen > ix.buckets()*slotsPerBucket*maxLoadNum
}

// splitNeedsRefresh reports whether the next split completes a level
// whose successor would leave fragments too short.
func (ix *index) splitNeedsRefresh() bool {
	return ix.split+1 == 1<<ix.level && ix.level+1 > ix.top-1-minFrag
}

// splitNeedsChunk reports whether the next split's image bucket lies in a
// chunk not yet allocated.
func (ix *index) splitNeedsChunk() bool {
	return (1<<ix.level+ix.split)>>chunkShift >= uint64(len(ix.chunks))
}

// addChunk appends a chunk, allocated by the caller (possibly outside any
// lock readers wait for).
func (ix *index) addChunk(c []uint64) { ix.chunks = append(ix.chunks, c) }

// splitBucket adds bucket 2^L + s and moves to it the entries of bucket s
// whose hash has bit L set. The caller has made sure that the split needs
// neither a refresh nor a chunk it has not added.
func (ix *index) splitBucket() {
	if ix.splitNeedsChunk() {
		ix.addChunk(make([]uint64, chunkWords))
	}
	// Copying the source's chunk cannot move the image's: when both
	// are in one chunk, the second call finds it copied.
	src := ix.wbucket(ix.split)
	dst := ix.wbucket(1<<ix.level + ix.split)
	n := 0
	for k, v := range src {
		if v == 0 {
			continue
		}
		// The fragment's lowest bit is bit L of the hash; the bucket
		// will tell it from now on.
		frag := v & (whichBit - 1)
		nv := v&^(whichBit-1) | frag>>1
		if frag&1 != 0 {
			dst[n] = nv
			n++
			src[k] = 0
		} else {
			src[k] = nv
		}
	}
	ix.split++
	if ix.split == 1<<ix.level {
		ix.level++
		ix.split = 0
	}
	if len(ix.stash) > 0 {
		st := ix.stash
		ix.stash = nil
		ix.count -= uint64(len(st))
		for _, e := range st {
			ix.add(e.x, e.loc)
		}
	}
}

// add inserts an entry, into the stash when no search finds room, and
// reports whether the stash is now full: the caller must then split.
func (ix *index) add(x, loc uint64) (stashFull bool) {
	if !ix.insert(x, loc) {
		ix.walk(x, loc)
	}
	return len(ix.stash) >= maxStash
}

// walk inserts an entry by a random walk: it takes a random slot of one
// of the entry's buckets, and moves the entry it held to that entry's
// other bucket, and so on, for up to maxKicks moves; the entry left
// without a slot then goes to the stash. No entry is ever dropped.
func (ix *index) walk(x, loc uint64) {
	p := ix.probeOf(x)
	j, v := p.j1, loc<<locShift|p.t1
	if ix.rnd()&1 != 0 {
		j, v = p.j2, loc<<locShift|p.t2
	}
	ix.count++
	for range maxKicks {
		b := ix.wbucket(j)
		k := ix.rnd() % slotsPerBucket
		b[k], v = v, b[k]
		j, v = ix.moved(j, v)
		if ix.put(j, v) {
			return
		}
	}
	// v is as it would be in bucket j: keep bits [0, top) of its hash.
	x2 := ix.hashOf(j, v)
	if v&whichBit != 0 {
		x2 = ix.alt(x2)
	}
	ix.stash = append(ix.stash, stashEntry{x2, v >> locShift})
}

// rnd returns the next number of an xorshift generator (for walk).
func (ix *index) rnd() uint64 {
	ix.rng ^= ix.rng << 13
	ix.rng ^= ix.rng >> 7
	ix.rng ^= ix.rng << 17
	return ix.rng
}

// hashOf rebuilds bits [0, top) of the hash that placed slot value v in
// bucket j.
func (ix *index) hashOf(j, v uint64) uint64 {
	return j | (v&(whichBit-1))<<ix.known(j)
}

// moved returns the bucket and slot value of the entry v of bucket j
// moved to its other bucket.
func (ix *index) moved(j, v uint64) (uint64, uint64) {
	x := ix.alt(ix.hashOf(j, v))
	j2 := ix.addr(x)
	which := v&whichBit ^ whichBit
	return j2, v&^tagMask | ix.tag(j2, x, which)
}

type bfsNode struct {
	j      uint64
	parent int32 // index in the queue, −1 for a root
	slot   int8  // the slot of the parent's bucket whose entry moves here
}

// insert adds an entry for hash x at loc, displacing entries along the
// shortest path to a free slot among maxSearch buckets. It returns false,
// changing nothing, when there is none; the caller then splits a bucket
// and tries again. The caller has checked that x has no entry.
func (ix *index) insert(x, loc uint64) bool {
	p := ix.probeOf(x)
	// The emptier of the two buckets (two choices keep buckets from
	// filling, so that searches are rare).
	b1, b2 := ix.bucket(p.j1), ix.bucket(p.j2)
	n1, n2 := emptySlots(b1), emptySlots(b2)
	if n1 > 0 && n1 >= n2 {
		ix.wbucket(p.j1)[free(b1)] = loc<<locShift | p.t1
		ix.count++
		return true
	}
	if n2 > 0 {
		ix.wbucket(p.j2)[free(b2)] = loc<<locShift | p.t2
		ix.count++
		return true
	}
	// One move to a split bucket (or an image), which holds half the
	// entries of an unsplit one and so has room far more often: the
	// usual way out when both buckets are full unsplit ones.
	for r, b := range [2][]uint64{b1, b2} {
		j := p.j1
		if r == 1 {
			j = p.j2
		}
		for k, v := range b {
			dj, nv := ix.moved(j, v)
			if ix.known(dj) == ix.level || dj == j {
				continue
			}
			if db := ix.bucket(dj); free(db) >= 0 {
				ix.wbucket(dj)[free(db)] = nv
				t := p.t1
				if r == 1 {
					t = p.t2
				}
				ix.wbucket(j)[k] = loc<<locShift | t
				ix.count++
				return true
			}
		}
	}
	q := append(ix.queue[:0], bfsNode{p.j1, -1, 0}, bfsNode{p.j2, -1, 0})
	defer func() { ix.queue = q[:0] }()
	for i := 0; i < len(q) && len(q) < maxSearch; i++ {
		b := ix.bucket(q[i].j)
		for k, v := range b {
			j2, _ := ix.moved(q[i].j, v)
			if ix.onPath(q, i, j2) {
				continue
			}
			q = append(q, bfsNode{j2, int32(i), int8(k)})
			if free(ix.bucket(j2)) < 0 {
				continue
			}
			// Move each entry of the path one step, from the free end.
			for n := len(q) - 1; q[n].parent >= 0; n = int(q[n].parent) {
				from := q[q[n].parent].j
				fb := ix.wbucket(from)
				dj, nv := ix.moved(from, fb[q[n].slot])
				db := ix.wbucket(dj) // may copy another chunk, never fb's again
				db[free(db)] = nv
				fb[q[n].slot] = 0
			}
			root := q[len(q)-1]
			for root.parent >= 0 {
				root = q[root.parent]
			}
			t := p.t1
			if root.j != p.j1 {
				t = p.t2
			}
			if !ix.put(root.j, loc<<locShift|t) {
				panic("store: cuckoo path left no free slot")
			}
			ix.count++
			return true
		}
	}
	return false
}

// onPath reports whether bucket j is node i or one of its ancestors.
func (ix *index) onPath(q []bfsNode, i int, j uint64) bool {
	for n := i; n >= 0; n = int(q[n].parent) {
		if q[n].j == j {
			return true
		}
	}
	return false
}

// free returns the first empty slot of b, or −1.
func free(b []uint64) int {
	for k, v := range b {
		if v == 0 {
			return k
		}
	}
	return -1
}

// emptySlots counts the empty slots of b.
func emptySlots(b []uint64) int {
	n := 0
	for _, v := range b {
		if v == 0 {
			n++
		}
	}
	return n
}

// put stores v in a free slot of bucket j, if there is one.
func (ix *index) put(j, v uint64) bool {
	if k := free(ix.bucket(j)); k >= 0 {
		ix.wbucket(j)[k] = v
		return true
	}
	return false
}

// each calls fn for every entry, bucket by bucket, then the stash's.
func (ix *index) each(fn func(r slotRef) error) error {
	n := ix.buckets()
	for j := uint64(0); j < n; j++ {
		for k, v := range ix.bucket(j) {
			if v != 0 {
				if err := fn(slotRef{j, k, v >> locShift}); err != nil {
					return err
				}
			}
		}
	}
	for k, e := range ix.stash {
		if err := fn(slotRef{inStash, k, e.loc}); err != nil {
			return err
		}
	}
	return nil
}

// holds reports whether the entry in slot r can be one that hash y
// placed: y, or its other hash, gives r's bucket and the tag r holds (in
// the stash: y's bits [0, top)). An entry that points at the record of
// a key for which it does not is damage (a checkpoint that a bug wrote,
// or memory): a correct index reaches the record of another key only
// through a tag that the two keys share by chance.
func (ix *index) holds(r slotRef, y uint64) bool {
	if r.j == inStash {
		return ix.stash[r.k].x == y&(1<<ix.top-1)
	}
	v := ix.bucket(r.j)[r.k]
	which := v & whichBit
	if which != 0 {
		y = ix.alt(y)
	}
	return ix.addr(y) == r.j && ix.tag(r.j, y, which) == v&tagMask
}

// rebuilt returns a new index of the same geometry with top = L +
// fragBits, holding the entries of ix, whose keys' hashes hashAt gives.
// ix is left as it was, so readers go on using it meanwhile.
func (ix *index) rebuilt(seedDisp *[1 << dispBits]uint64, hashAt func(loc uint64) (uint64, error)) (*index, error) {
	nx := &index{level: ix.level, split: ix.split, top: ix.level + fragBits, disp: seedDisp, rng: ix.rng}
	nx.setMask()
	nx.chunks = make([][]uint64, len(ix.chunks))
	for i := range nx.chunks {
		nx.chunks[i] = make([]uint64, chunkWords)
	}
	err := ix.each(func(r slotRef) error {
		x, err := hashAt(r.loc)
		if err != nil {
			return err
		}
		// A split retries the stash, so the test after it is of the
		// stash, not another add of x.
		for full := nx.add(x, r.loc); full; full = len(nx.stash) >= maxStash {
			nx.splitBucket()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return nx, nil
}

// check verifies the structural invariants, for tests and the invariants
// build.
func (ix *index) check() error {
	if ix.level < firstLevel || ix.level > ix.top-1-minFrag || ix.top-ix.level > fragBits {
		return fmt.Errorf("store: index level %d, top %d", ix.level, ix.top)
	}
	if ix.split >= 1<<ix.level {
		return fmt.Errorf("store: index split %d at level %d", ix.split, ix.level)
	}
	n := ix.buckets()
	if uint64(len(ix.chunks))*chunkBuckets < n {
		return fmt.Errorf("store: index has %d chunks for %d buckets", len(ix.chunks), n)
	}
	var count uint64
	for j := uint64(0); j < n; j++ {
		w := ix.top - ix.known(j)
		for _, v := range ix.bucket(j) {
			if v == 0 {
				continue
			}
			count++
			if v>>locShift == 0 || v&(whichBit-1) >= 1<<w {
				return fmt.Errorf("store: index bucket %d holds %#x (fragment of %d bits)", j, v, w)
			}
		}
	}
	count += uint64(len(ix.stash))
	if len(ix.stash) > maxStash {
		return fmt.Errorf("store: index stash holds %d entries", len(ix.stash))
	}
	if count != ix.count {
		return fmt.Errorf("store: index counts %d entries, holds %d", ix.count, count)
	}
	return nil
}
