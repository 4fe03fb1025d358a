package redisfilter

import (
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/addr"
	"github.com/dedupkit/cuckoo/internal/hash"
)

// geometry is the layout of a filter's segments: each is segment s of the
// library's segmented table (docs/format.md), its bytes the segment's
// little-endian words, so bit k of the segment's string is bit k%8 of byte
// k/8. Bucket i of a segment is the b·s-bit field starting at bit i·b·s,
// where a slot of s bits holds a fingerprint of f bits: s = f in a cuckoo
// filter, f + the stamp's bits in a window (the stamp in the slot's low
// bits, docs/window.md).
type geometry struct {
	b, f         uint64 // slots per bucket, bits per fingerprint
	slotBits     uint64 // s
	slotMask     uint64 // 2^s − 1
	bucketBits   uint64 // b·s
	buckets      uint64 // buckets of the whole table
	segments     uint64
	perSegment   uint64 // buckets of one segment
	segmentBytes uint64 // bytes of one segment's table: its words·8
	strLen       uint64 // bytes of one segment's string: the table, then a window's trailer
	fpMax        uint64 // 2^f − 1
	seed         uint64
}

func newGeometry(m *meta) geometry {
	g := geometry{
		b: uint64(m.b), f: uint64(m.f), buckets: m.buckets, segments: uint64(m.segments), seed: m.seed,
	}
	g.slotBits = g.f
	if m.kind == "window" {
		g.slotBits += cuckoo.WindowStampBits
	}
	g.slotMask = 1<<g.slotBits - 1
	g.bucketBits = g.b * g.slotBits
	g.perSegment = g.buckets / g.segments
	g.segmentBytes = segmentTableBytes(g.buckets, g.bucketBits, g.segments)
	g.strLen = g.segmentBytes
	if m.kind == "window" {
		g.strLen += trailerBytes
	}
	g.fpMax = 1<<g.f - 1
	return g
}

// segmentTableBytes is the bytes of each segment's table in a table of
// buckets buckets of bucketBits bits: the table's words, split evenly (a
// segment of a multiple of 64 buckets is a whole number of words, and a
// single segment holds the last partial word too).
func segmentTableBytes(buckets, bucketBits, segments uint64) uint64 {
	return (buckets*bucketBits + 63) / 64 / segments * 8
}

// locate returns the segment of a key's hash, its first bucket counted
// from the segment's first bucket, its fingerprint and its other bucket.
func (g *geometry) locate(h uint64) (segment int, i1, i2, fp uint64) {
	s := addr.Segment(h, g.segments)
	i1 = addr.Bucket(h, g.buckets) - s*g.perSegment
	fp = addr.Fingerprint(h, g.fpMax)
	return int(s), i1, addr.Alt(i1, fp, g.perSegment), fp
}

func (g *geometry) locateKey(key []byte) (segment int, i1, i2, fp uint64) {
	return g.locate(hash.Sum64(key, g.seed))
}

// locateHash is locateKey that also returns the key's hash.
func (g *geometry) locateHash(key []byte) (segment int, i1, i2, fp, h uint64) {
	h = hash.Sum64(key, g.seed)
	segment, i1, i2, fp = g.locate(h)
	return segment, i1, i2, fp, h
}

// alt returns the other bucket of fp in bucket i of a segment.
func (g *geometry) alt(i, fp uint64) uint64 { return addr.Alt(i, fp, g.perSegment) }

// occupied returns the non-empty slots of a segment's table.
func (g *geometry) occupied(table []byte) uint64 {
	var n uint64
	for i := range g.perSegment {
		lo, c, sh := g.span(i)
		for j := range g.b {
			if g.slot(table[lo:lo+c], sh, j) != 0 {
				n++
			}
		}
	}
	return n
}

// span returns the bytes that hold bucket i: the first, how many, and the
// bucket's first bit within the first.
func (g *geometry) span(i uint64) (lo, n uint64, shift uint) {
	p := i * g.bucketBits
	lo, shift = p/8, uint(p%8)
	n = (uint64(shift) + g.bucketBits + 7) / 8
	return lo, n, shift
}

// fieldTypes names the BITFIELD types that read n whole bytes (n = 1..8):
// unsigned up to 7 bytes; 8 bytes are read signed (BITFIELD has no u64)
// and reinterpreted. They are held as interface values so that appending
// one to a command's arguments does not allocate.
var fieldTypes = [9]any{"", "u8", "u16", "u24", "u32", "u40", "u48", "u56", "i64"}

// appendFields appends to args the BITFIELD_RO GET fields that read the
// bytes of bucket i: one per 8 bytes, each at a byte-aligned offset.
func (g *geometry) appendFields(args []any, i uint64) []any {
	lo, n, _ := g.span(i)
	for off := uint64(0); off < n; off += 8 {
		c := min(n-off, 8)
		args = append(args, "GET", fieldTypes[c], int64(8*(lo+off)))
	}
	return args
}

// fields returns the number of GET fields appendFields appends for
// bucket i.
func (g *geometry) fields(i uint64) int {
	_, n, _ := g.span(i)
	return int((n + 7) / 8)
}

// maxBucketBytes is the most bytes a bucket spans: 7 bits of the byte it
// starts in, then MaxBucketSize slots of 32 bits.
const maxBucketBytes = (7 + cuckoo.MaxBucketSize*32 + 7) / 8

// bucketBytes turns the replies to bucket i's fields (the front of vals)
// back into the bucket's bytes, which it writes to dst (at least
// maxBucketBytes long), and returns them with the bucket's first bit and the replies
// left. BITFIELD reads a field most significant bit first: a field of c
// bytes is their big-endian value.
func (g *geometry) bucketBytes(dst []byte, vals []int64, i uint64) ([]byte, uint, []int64) {
	_, n, shift := g.span(i)
	var be [8]byte
	for off := uint64(0); off < n; off += 8 {
		c := min(n-off, 8)
		binary.BigEndian.PutUint64(be[:], uint64(vals[0])<<(64-8*c))
		copy(dst[off:off+c], be[:c])
		vals = vals[1:]
	}
	return dst[:n], shift, vals
}

// slot returns slot j of a bucket whose bytes are bb and whose first bit
// is bit shift of bb[0]. A slot spans at most 5 bytes (7 + 32 bits).
func (g *geometry) slot(bb []byte, shift uint, j uint64) uint64 {
	o := uint64(shift) + j*g.slotBits
	k, r := o/8, o%8
	var w uint64
	for q := min(k+(r+g.slotBits+7)/8, uint64(len(bb))); q > k; q-- {
		w = w<<8 | uint64(bb[q-1])
	}
	return w >> r & g.slotMask
}

// has reports whether a bucket holds fp.
func (g *geometry) has(bb []byte, shift uint, fp uint64) bool {
	for j := range g.b {
		if g.slot(bb, shift, j) == fp {
			return true
		}
	}
	return false
}

// count returns how many slots of a bucket hold fp.
func (g *geometry) count(bb []byte, shift uint, fp uint64) uint64 {
	var n uint64
	for j := range g.b {
		if g.slot(bb, shift, j) == fp {
			n++
		}
	}
	return n
}

// counterField names the duplicate counter of fp in the pair of buckets
// i1, i2 (local to the segment), as the Lua side does.
func counterField(i1, i2, fp uint64) string {
	b := strconv.AppendUint(make([]byte, 0, 24), min(i1, i2), 10)
	b = append(b, ':')
	return string(strconv.AppendUint(b, fp, 10))
}

// parseCounterField is the inverse of counterField.
func parseCounterField(s string) (bucket, fp uint64, ok bool) {
	a, b, found := strings.Cut(s, ":")
	if !found {
		return 0, 0, false
	}
	bucket, err1 := strconv.ParseUint(a, 10, 64)
	fp, err2 := strconv.ParseUint(b, 10, 64)
	return bucket, fp, err1 == nil && err2 == nil
}
