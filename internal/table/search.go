package table

import (
	"github.com/dedupkit/cuckoo/internal/addr"
	"github.com/dedupkit/cuckoo/internal/prefetch"
)

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
// table with PlaceChain, a Concurrent's table with a seqlock move per link
// (concurrent.Table.shift).

// Budget is the one rule for how many slots a search for room
// examines: two for each displacement an insert may make (kicks, the
// filter's MaxKicks), and no more than the table kind's limit: WalkLimit
// for a table whose failed search a random walk backs up, growSearch for a
// growing table, which splits a bucket pair instead, and none for a
// Concurrent's table, whose search is the only attempt and so is given
// the walk's kicks too (2·MaxKicks).
func Budget(kicks, limit int) int { return min(2*kicks, limit) }

// WalkLimit bounds the search of a table that a random walk backs up:
// about four levels of 4-slot buckets. At the loads New sizes for, nearly
// every search ends in the first two; the random walk that follows a
// failed search handles the rare long paths.
const WalkLimit = 256

// Node is a value reached by the search: moving tag from bucket to
// its other bucket alt (where a growing table's tag changes: Kind.
// other gives it) would free its slot. parent is the node whose value would
// move into that slot (-1: a slot of the key's own buckets). Bucket indexes
// and values fit 32 bits (see table).
type Node struct {
	Bucket, Tag, Alt uint32
	Parent           int32
}

// NodeBytes is the memory a Node takes.
const searchNodeBytes = 16

// Scratch is the working memory of a search, kept by its table between
// inserts (a Concurrent's is pooled) so that inserts allocate nothing once
// warm.
type Scratch struct {
	q     []Node   // the search's queue
	lines []uint64 // word indexes a level prefetches
}

// NewScratch returns a scratch with room for a search of n slots.
func NewScratch(n int) *Scratch {
	return &Scratch{q: make([]Node, 0, n), lines: make([]uint64, 0, n)}
}

// Bytes is the memory the scratch holds.
func (sc *Scratch) Bytes() uint64 {
	return uint64(cap(sc.q))*searchNodeBytes + uint64(cap(sc.lines))*8
}

// Room runs Search in the scratch's memory, which it keeps, and
// returns the queue (valid until the next search) with the chain's end.
func (sc *Scratch) Room(s Kind, i1, i2 uint64, budget int) (q []Node, end int, ok bool) {
	q, sc.lines, end, ok = Search(s, sc.q, sc.lines, i1, i2, budget)
	sc.q, sc.lines = q[:0], sc.lines[:0]
	return q, end, ok
}

// Kind is what the search needs of a kind of table: a Filter's
// table, a growing table (whose values are tags, and whose other bucket
// its geometry gives), a Concurrent's (read with atomic loads while its
// slots may change), a Window's (whose free slots include expired ones).
// The search calls it through an interface: it is the slow path of an
// insert, and the common shape (a plain table of one segment whose
// buckets never straddle words) is read inline instead.
type Kind interface {
	// Shape returns the slots of a bucket and the bits it takes.
	Shape() (slots, bucketBits uint64)
	// AppendBucket appends to q a node for each of the first n values of
	// bucket b (0: an empty slot), in slot order, with the given parent.
	AppendBucket(q []Node, b, n uint64, parent int32) []Node
	// Other returns the other bucket of value v in bucket b, and v there.
	Other(b, v uint64) (alt, altV uint64)
	// HasRoom reports whether bucket b has a slot an insert may take.
	HasRoom(b uint64) bool
	// Prefetch asks for the table words at the given indexes.
	Prefetch(lines []uint64)
}

// ChainKind is a Kind that no other goroutine uses, whose chains
// PlaceChain performs.
type ChainKind interface {
	Kind
	// Replace puts new in place of one copy of old in bucket b.
	Replace(b, old, new uint64) bool
}

// A plain table is the Kind of a Filter.

func (t *Table) Shape() (slots, bucketBits uint64) { return t.Slots, t.BucketBits }

func (t *Table) Other(b, v uint64) (alt, altV uint64) { return t.AltIndex(b, v), v }

func (t *Table) Prefetch(lines []uint64) { prefetch.Words(t.Words, lines) }

func (t *Table) AppendBucket(q []Node, b, n uint64, parent int32) []Node {
	node := func(v uint64) Node { return Node{Bucket: uint32(b), Tag: uint32(v), Parent: parent} }
	switch {
	case t.Semi:
		v := t.semiRead(b)
		for _, x := range v[:n] {
			q = append(q, node(x))
		}
	case t.Windows == 1:
		var w uint64
		if t.Aligned {
			w = t.AlignedBucket(b)
		} else {
			w = t.Window(b * t.BucketBits)
		}
		for sl := range n {
			q = append(q, node(w>>(sl*t.FPBits)&t.FPMask))
		}
	case t.Windows == 2:
		w0, w1 := t.windowPair(b * t.BucketBits)
		f := t.FPBits & 63
		for sl := range min(n, t.Lanes) {
			q = append(q, node(w0>>(sl*f)&t.FPMask))
		}
		for sl := t.Lanes; sl < n; sl++ {
			q = append(q, node(w1>>((sl-t.Lanes)*f)&t.FPMask))
		}
	default:
		for sl := range n {
			q = append(q, node(t.plainGet(b, sl)))
		}
	}
	return q
}

func (t *Table) HasRoom(b uint64) bool {
	if t.Windows == 1 && !t.Semi {
		var w uint64
		if t.Aligned {
			w = t.AlignedBucket(b)
		} else {
			w = t.Window(b * t.BucketBits)
		}
		return ZeroLanes(w, t.LaneRest, t.LaneHigh) != 0
	}
	if t.Windows == 2 && !t.Semi {
		w0, w1 := t.windowPair(b * t.BucketBits)
		return ZeroLanes(w0, t.LaneRest, t.LaneHigh)|ZeroLanes(w1, t.LastRest, t.LastHigh) != 0
	}
	return t.Copies(b, 0) != 0
}

// Search searches from the key's buckets i1 and i2 for the shortest
// chain of moves that ends in a bucket with an empty slot, examining up to
// budget slots. It returns the queue (q's memory, reused), the index of the
// chain's last node, and whether it found one; the chain is that node and
// its parents. A node whose slot reads empty (a Concurrent's table changes
// while it is searched) ends the chain at its parent, whose move needs no
// further room; end is then -1 for a root: the key's bucket has room.
// lines is scratch for the word indexes of a level, returned as it grew
// (two a node for a Table whose buckets may straddle words); with a
// capacity of budget (2·budget for such a Table) the search allocates
// nothing.
func Search(s Kind, q []Node, lines []uint64, i1, i2 uint64, budget int) (_ []Node, _ []uint64, end int, ok bool) {
	// A plain table of one segment whose buckets never straddle words, that
	// no other goroutine uses (the common shapes of a Filter), is addressed
	// and read inline here, with its geometry in local variables: the
	// calls through Kind cost more than the work itself when the
	// table is in the caches.
	slots, bucketBits := s.Shape()
	t, isTable := s.(*Table)
	direct := isTable && t.Aligned && t.Segments == 1
	straddles := isTable && !t.Aligned // a read may touch LastReadWord's line too
	var words []uint64
	var m, shift, fpBits, fpMask, rest, high uint64
	if direct {
		words, m, shift = t.Words, t.NumBuckets, t.BucketShift&63
		fpBits, fpMask, rest, high = t.FPBits&63, t.FPMask, t.LaneRest, t.LaneHigh
	}
	bucket := func(b uint64) uint64 { // alignedBucket
		p := b << shift
		return words[p>>6] >> (p & 63)
	}
	q = s.AppendBucket(q[:0], i1, slots, -1)
	q = s.AppendBucket(q, i2, slots, -1)
	for lo := 0; lo < len(q); {
		hi := len(q)
		lines = lines[:0]
		for k := lo; k < hi; k++ {
			n := &q[k]
			var alt uint64
			if direct {
				alt = addr.Alt(uint64(n.Bucket), uint64(n.Tag), m)
			} else {
				alt, _ = s.Other(uint64(n.Bucket), uint64(n.Tag))
			}
			n.Alt = uint32(alt)
			lines = append(lines, alt*bucketBits>>6)
			if straddles {
				lines = append(lines, LastReadWord(alt*bucketBits, bucketBits))
			}
		}
		s.Prefetch(lines)
		for k := lo; k < hi; k++ {
			n := &q[k]
			switch {
			case n.Tag == 0:
				return q, lines, int(n.Parent), true
			case onChain(q, k, n.Alt):
				// Moving into a bucket the chain uses would undo it: not
				// to be expanded.
				n.Alt = n.Bucket
			case direct:
				if ZeroLanes(bucket(uint64(n.Alt)), rest, high) != 0 {
					return q, lines, k, true
				}
			case s.HasRoom(uint64(n.Alt)):
				return q, lines, k, true
			}
		}
		for k := lo; k < hi && len(q) < budget; k++ {
			alt := q[k].Alt
			if alt == q[k].Bucket {
				continue
			}
			if direct {
				w := bucket(uint64(alt))
				for range min(slots, uint64(budget-len(q))) {
					q = append(q, Node{Bucket: alt, Tag: uint32(w & fpMask), Parent: int32(k)})
					w >>= fpBits
				}
				continue
			}
			q = s.AppendBucket(q, uint64(alt), min(slots, uint64(budget-len(q))), int32(k))
		}
		lo = hi
	}
	return q, lines, -1, false
}

// onChain reports whether bucket b is one of the buckets on the chain from
// node k back to the key's buckets.
func onChain(q []Node, k int, b uint32) bool {
	for ; k >= 0; k = int(q[k].Parent) {
		if q[k].Bucket == b {
			return true
		}
	}
	return false
}

// PlaceChain performs the chain ending at node end of a table no other
// goroutine uses, hole first, and puts the key's value into the slot the
// chain freed: v1 when that slot is in the key's first bucket (the first
// b nodes of q are its slots), v2 in its second. end is >= 0: such a
// table's search starts from full buckets, so its chains have a node.
func PlaceChain(s ChainKind, q []Node, end int, v1, v2 uint64) {
	slots, _ := s.Shape()
	s.Replace(uint64(q[end].Alt), 0, moved(s, &q[end]))
	for j := end; ; {
		in, parent := v1, q[j].Parent
		switch {
		case parent >= 0:
			in = moved(s, &q[parent])
		case uint64(j) >= slots:
			in = v2
		}
		s.Replace(uint64(q[j].Bucket), uint64(q[j].Tag), in)
		if parent < 0 {
			return
		}
		j = int(parent)
	}
}

// moved returns node n's value as it is in its other bucket.
func moved(s Kind, n *Node) uint64 {
	_, v := s.Other(uint64(n.Bucket), uint64(n.Tag))
	return v
}
