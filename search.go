package cuckoo

import "github.com/dedupkit/cuckoo/internal/addr"

// The breadth-first search for room, shared by every table: when both
// buckets of a key are full, find the shortest chain of moves that ends in
// an empty slot, before anything moves. A move takes a value (a
// fingerprint, or a growing table's tag) from its bucket to its other
// bucket, so the key's bucket gets a free slot once the chain's last value
// has gone to an empty slot and each earlier one into the slot the next one
// left. Moving the chain hole first keeps every value in one of its buckets
// at every moment.
//
// The search goes a level at a time: it locates the other bucket of every
// value of the level, prefetches them all, then examines them. In a table
// larger than the caches the level's misses overlap, where a random walk's
// are one after another; at the loads a filter reaches most searches end
// in the first or second level.
//
// Each table kind applies a found chain its own way: a single-threaded
// table with placeChain, a Concurrent's table with a seqlock move per link
// (ctable.shift).

// roomBudget is the one rule for how many slots a search for room
// examines: two for each displacement an insert may make (kicks, the
// filter's MaxKicks), and no more than the table kind's limit: walkLimit
// for a table whose failed search a random walk backs up, growSearch for a
// growing table, which splits a bucket pair instead, and none for a
// Concurrent's table, whose search is the only attempt and so is given
// the walk's kicks too (2·MaxKicks).
func roomBudget(kicks, limit int) int { return min(2*kicks, limit) }

// walkLimit bounds the search of a table that a random walk backs up:
// about four levels of 4-slot buckets. At the loads New sizes for, nearly
// every search ends in the first two; the random walk that follows a
// failed search handles the rare long paths.
const walkLimit = 256

// searchNode is a value reached by the search: moving tag from bucket to
// its other bucket alt (where a growing table's tag changes: searchKind.
// other gives it) would free its slot. parent is the node whose value would
// move into that slot (-1: a slot of the key's own buckets). Bucket indexes
// and values fit 32 bits (see table).
type searchNode struct {
	bucket, tag, alt uint32
	parent           int32
}

// searchNodeBytes is the memory a searchNode takes.
const searchNodeBytes = 16

// scratch is the working memory of a search, kept by its table between
// inserts (a Concurrent's is pooled) so that inserts allocate nothing once
// warm.
type scratch struct {
	q     []searchNode // the search's queue
	lines []uint64     // word indexes a level prefetches
}

// newScratch returns a scratch with room for a search of n slots.
func newScratch(n int) *scratch {
	return &scratch{q: make([]searchNode, 0, n), lines: make([]uint64, 0, n)}
}

// bytes is the memory the scratch holds.
func (sc *scratch) bytes() uint64 {
	return uint64(cap(sc.q))*searchNodeBytes + uint64(cap(sc.lines))*8
}

// room runs searchRoom in the scratch's memory, which it keeps, and
// returns the queue (valid until the next search) with the chain's end.
func (sc *scratch) room(s searchKind, i1, i2 uint64, budget int) (q []searchNode, end int, ok bool) {
	q, sc.lines, end, ok = searchRoom(s, sc.q, sc.lines, i1, i2, budget)
	sc.q, sc.lines = q[:0], sc.lines[:0]
	return q, end, ok
}

// searchKind is what the search needs of a kind of table: a Filter's
// table, a growing table (whose values are tags, and whose other bucket
// its geometry gives), a Concurrent's (read with atomic loads while its
// slots may change), a Window's (whose free slots include expired ones).
// The search calls it through an interface: it is the slow path of an
// insert, and the common shape (a plain table of one segment whose
// buckets never straddle words) is read inline instead.
type searchKind interface {
	// shape returns the slots of a bucket and the bits it takes.
	shape() (slots, bucketBits uint64)
	// appendBucket appends to q a node for each of the first n values of
	// bucket b (0: an empty slot), in slot order, with the given parent.
	appendBucket(q []searchNode, b, n uint64, parent int32) []searchNode
	// other returns the other bucket of value v in bucket b, and v there.
	other(b, v uint64) (alt, altV uint64)
	// hasRoom reports whether bucket b has a slot an insert may take.
	hasRoom(b uint64) bool
	// prefetch asks for the table words at the given indexes.
	prefetch(lines []uint64)
}

// chainKind is a searchKind that no other goroutine uses, whose chains
// placeChain performs.
type chainKind interface {
	searchKind
	// replace puts new in place of one copy of old in bucket b.
	replace(b, old, new uint64) bool
}

// A plain table is the searchKind of a Filter.

func (t *table) shape() (slots, bucketBits uint64) { return t.slots, t.bucketBits }

func (t *table) other(b, v uint64) (alt, altV uint64) { return t.altIndex(b, v), v }

func (t *table) prefetch(lines []uint64) { prefetch(t.words, lines) }

func (t *table) appendBucket(q []searchNode, b, n uint64, parent int32) []searchNode {
	node := func(v uint64) searchNode { return searchNode{bucket: uint32(b), tag: uint32(v), parent: parent} }
	switch {
	case t.semi:
		v := t.semiRead(b)
		for _, x := range v[:n] {
			q = append(q, node(x))
		}
	case t.windows == 1:
		var w uint64
		if t.aligned {
			w = t.alignedBucket(b)
		} else {
			w = t.window(b * t.bucketBits)
		}
		for sl := range n {
			q = append(q, node(w>>(sl*t.fpBits)&t.fpMask))
		}
	default:
		for sl := range n {
			q = append(q, node(t.plainGet(b, sl)))
		}
	}
	return q
}

func (t *table) hasRoom(b uint64) bool {
	if t.windows == 1 && !t.semi {
		var w uint64
		if t.aligned {
			w = t.alignedBucket(b)
		} else {
			w = t.window(b * t.bucketBits)
		}
		return zeroLanes(w, t.laneRest, t.laneHigh) != 0
	}
	return t.copies(b, 0) != 0
}

// searchRoom searches from the key's buckets i1 and i2 for the shortest
// chain of moves that ends in a bucket with an empty slot, examining up to
// budget slots. It returns the queue (q's memory, reused), the index of the
// chain's last node, and whether it found one; the chain is that node and
// its parents. A node whose slot reads empty (a Concurrent's table changes
// while it is searched) ends the chain at its parent, whose move needs no
// further room; end is then -1 for a root: the key's bucket has room.
// lines is scratch for the word indexes of a level, returned as it grew;
// with a capacity of budget the search allocates nothing.
func searchRoom(s searchKind, q []searchNode, lines []uint64, i1, i2 uint64, budget int) (_ []searchNode, _ []uint64, end int, ok bool) {
	// A plain table of one segment whose buckets never straddle words, that
	// no other goroutine uses (the common shapes of a Filter), is addressed
	// and read inline here, with its geometry in local variables: the
	// calls through searchKind cost more than the work itself when the
	// table is in the caches.
	slots, bucketBits := s.shape()
	t, direct := s.(*table)
	direct = direct && t.aligned && t.segments == 1
	var words []uint64
	var m, shift, fpBits, fpMask, rest, high uint64
	if direct {
		words, m, shift = t.words, t.numBuckets, t.bucketShift&63
		fpBits, fpMask, rest, high = t.fpBits&63, t.fpMask, t.laneRest, t.laneHigh
	}
	bucket := func(b uint64) uint64 { // alignedBucket
		p := b << shift
		return words[p>>6] >> (p & 63)
	}
	q = s.appendBucket(q[:0], i1, slots, -1)
	q = s.appendBucket(q, i2, slots, -1)
	for lo := 0; lo < len(q); {
		hi := len(q)
		lines = lines[:0]
		for k := lo; k < hi; k++ {
			n := &q[k]
			var alt uint64
			if direct {
				alt = addr.Alt(uint64(n.bucket), uint64(n.tag), m)
			} else {
				alt, _ = s.other(uint64(n.bucket), uint64(n.tag))
			}
			n.alt = uint32(alt)
			lines = append(lines, alt*bucketBits>>6)
		}
		s.prefetch(lines)
		for k := lo; k < hi; k++ {
			n := &q[k]
			switch {
			case n.tag == 0:
				return q, lines, int(n.parent), true
			case onChain(q, k, n.alt):
				// Moving into a bucket the chain uses would undo it: not
				// to be expanded.
				n.alt = n.bucket
			case direct:
				if zeroLanes(bucket(uint64(n.alt)), rest, high) != 0 {
					return q, lines, k, true
				}
			case s.hasRoom(uint64(n.alt)):
				return q, lines, k, true
			}
		}
		for k := lo; k < hi && len(q) < budget; k++ {
			alt := q[k].alt
			if alt == q[k].bucket {
				continue
			}
			if direct {
				w := bucket(uint64(alt))
				for range min(slots, uint64(budget-len(q))) {
					q = append(q, searchNode{bucket: alt, tag: uint32(w & fpMask), parent: int32(k)})
					w >>= fpBits
				}
				continue
			}
			q = s.appendBucket(q, uint64(alt), min(slots, uint64(budget-len(q))), int32(k))
		}
		lo = hi
	}
	return q, lines, -1, false
}

// onChain reports whether bucket b is one of the buckets on the chain from
// node k back to the key's buckets.
func onChain(q []searchNode, k int, b uint32) bool {
	for ; k >= 0; k = int(q[k].parent) {
		if q[k].bucket == b {
			return true
		}
	}
	return false
}

// placeChain performs the chain ending at node end of a table no other
// goroutine uses, hole first, and puts the key's value into the slot the
// chain freed: v1 when that slot is in the key's first bucket (the first
// b nodes of q are its slots), v2 in its second. end is >= 0: such a
// table's search starts from full buckets, so its chains have a node.
func placeChain(s chainKind, q []searchNode, end int, v1, v2 uint64) {
	slots, _ := s.shape()
	s.replace(uint64(q[end].alt), 0, moved(s, &q[end]))
	for j := end; ; {
		in, parent := v1, q[j].parent
		switch {
		case parent >= 0:
			in = moved(s, &q[parent])
		case uint64(j) >= slots:
			in = v2
		}
		s.replace(uint64(q[j].bucket), uint64(q[j].tag), in)
		if parent < 0 {
			return
		}
		j = int(parent)
	}
}

// moved returns node n's value as it is in its other bucket.
func moved(s searchKind, n *searchNode) uint64 {
	_, v := s.other(uint64(n.bucket), uint64(n.tag))
	return v
}
