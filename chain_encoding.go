package cuckoo

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/dedupkit/cuckoo/internal/codec"
	"github.com/dedupkit/cuckoo/internal/table"
	"github.com/dedupkit/cuckoo/internal/table/chain"
)

// The encoding of a growing filter's chain (a Scalable's, and a
// Concurrent's with WithGrowth), format version 1: the header, each table as
// a whole Filter encoding (kind 1, so any one but a growing newest table
// can be cut out and loaded as a Filter), the overflow counters, and a
// CRC-32C over all of it. All integers are little-endian.
//
//	offset  size  field
//	     0     4  magic "CKOO"
//	     4     2  format version = 1
//	     6     1  kind = 2 (Scalable)
//	     7     1  flags: bit 0 = semi-sorted buckets (b = 4); others 0
//	     8     1  bucket size b: 1 to 255
//	     9     1  fingerprint bits f0 of generation 0: 4..32
//	    10     1  hash = 1: XXH3-64 of the key with the seed below
//	    11     1  reserved = 0
//	    12     4  max kicks: 1..MaxMaxKicks
//	    16     8  seed
//	    24     8  initial capacity (capacity of generation 0)
//	    32     8  growth factor, IEEE-754 binary64: 1.25..16
//	    40     8  false-positive bound B, binary64: (0, 2) (growth.go)
//	    48     4  G = generation of the first table
//	    52     4  T = number of tables (>= 1), G+T <= 4096
//	    56     8  O = number of overflow counters
//	    64     …  T times: L (8 bytes), then L bytes: the table of
//	              generation G+k as a Filter encoding, whose shape must be
//	              the generation's (see growth.go); the newest table, if
//	              generation > 0, may be growing in place (flag bit 1 of
//	              its Filter header, growtable.go)
//	     …   24O  overflow counters by increasing (table, key): table index
//	              k < T (8), key = bucket<<32 | fingerprint as in the
//	              duplicate counters (8), copies > 0 (8)
//	     …     4  CRC-32C of every byte before it
//
// Items in all (Len) are at most maxItems. docs/format-scalable.md
// describes it for readers in other languages. Frozen, like the Filter's
// format.
const (
	scalableHeaderSize = 64
	overEntrySize      = 24
	maxTableEncoding   = 1 << 62
)

// encodedSize returns the exact number of bytes writeTo writes.
func (s *chainState) encodedSize() int64 {
	n := int64(scalableHeaderSize + checksumSize)
	for _, lv := range s.levels {
		e := s.levelEncoding(lv)
		n += 8 + e.size() + overEntrySize*int64(len(lv.Over))
	}
	return n
}

// writeTo writes the encoding of the chain, which has a table, to w and
// returns the number of bytes written. The same state always gives the
// same bytes.
func (s *chainState) writeTo(w io.Writer) (int64, error) {
	e := codec.NewEncoder(w, s.encodedSize())
	e.Bytes([]byte(magic))
	e.Uint16(formatVersion)
	e.Uint8(kindScalable)
	var flags uint8
	if s.g.semi {
		flags |= flagSemiSort
	}
	e.Uint8(flags)
	e.Uint8(uint8(s.g.slots))
	e.Uint8(uint8(s.g.f0))
	e.Uint8(hashXXH3)
	e.Uint8(0)
	e.Uint32(uint32(s.maxKicks))
	e.Uint64(s.seed)
	e.Uint64(s.g.initial)
	e.Uint64(math.Float64bits(s.g.factor))
	e.Uint64(math.Float64bits(s.g.bound))
	e.Uint32(s.levels[0].Gen)
	e.Uint32(uint32(len(s.levels)))
	var nOver uint64
	for _, lv := range s.levels {
		nOver += uint64(len(lv.Over))
	}
	e.Uint64(nOver)
	for _, lv := range s.levels {
		le := s.levelEncoding(lv)
		e.Uint64(uint64(le.size()))
		le.writeTo(encoderWriter{e}) // errors stick in e
	}
	for k, lv := range s.levels {
		for _, pk := range lv.Over.SortedKeys() {
			e.Uint64(uint64(k))
			e.Uint64(pk)
			e.Uint64(lv.Over[pk])
		}
	}
	return e.Finish()
}

// encoderWriter lets a nested encoding write through an outer Encoder, so
// the outer checksum covers it. Write never fails: the Encoder keeps its
// first error for Finish.
type encoderWriter struct{ e *codec.Encoder }

func (w encoderWriter) Write(p []byte) (int, error) {
	w.e.Bytes(p)
	return len(p), nil
}

// decodeChainState reads one encoded chain and checks it completely: the
// header, every table (against its generation's shape, and as a table
// encoding), the overflow counters, the checksum and the chain's
// invariants.
func decodeChainState(d *codec.Decoder) (*chainState, error) {
	p, err := decodePrologue(d, kindScalable)
	if err != nil {
		return nil, err
	}
	if p.flags&^flagSemiSort != 0 {
		return nil, bad("unknown flags %#x", p.flags)
	}
	g := schedule{slots: p.slots, f0: p.fpBits, semi: p.flags&flagSemiSort != 0}
	maxKicks := uint64(d.Uint32())
	seed := d.Uint64()
	g.initial = d.Uint64()
	g.factor = math.Float64frombits(d.Uint64())
	g.bound = math.Float64frombits(d.Uint64())
	first, nTables, nOver := d.Uint32(), d.Uint32(), d.Uint64()
	if err := d.Err(); err != nil {
		return nil, err
	}
	if err := g.check(); err != nil {
		return nil, bad("%v", err)
	}
	switch {
	case maxKicks < 1 || maxKicks > MaxMaxKicks:
		return nil, bad("max kicks %d", maxKicks)
	case nTables == 0 || uint64(first)+uint64(nTables) > maxGenerations:
		return nil, bad("%d tables from generation %d", nTables, first)
	}
	s := &chainState{g: g, seed: seed, maxKicks: int(maxKicks)}
	gens := g.generations()
	for gens.cur.k < first {
		gens.next()
	}
	for k := uint32(0); k < nTables; k++ {
		if k > 0 {
			gens.next()
		}
		lv, err := decodeLevel(d, s, gens.cur, k == nTables-1)
		if err != nil {
			return nil, fmt.Errorf("table %d: %w", k, err)
		}
		s.levels = append(s.levels, lv)
	}
	// Each counter needs a slot copy of its fingerprint in its table.
	var slots uint64
	for _, lv := range s.levels {
		slots += lv.Occupied()
	}
	if nOver > slots {
		return nil, bad("%d overflow counters for %d occupied slots", nOver, slots)
	}
	if !d.Need(nOver*overEntrySize, nOver*overEntrySize) {
		return nil, d.Err()
	}
	prevK, prevKey := uint64(0), uint64(0)
	for n := uint64(0); n < nOver && d.Err() == nil; n++ {
		k, pk, c := d.Uint64(), d.Uint64(), d.Uint64()
		if k >= uint64(nTables) || n > 0 && (k < prevK || k == prevK && pk <= prevKey) {
			d.Fail(bad("overflow counters not in increasing order"))
			break
		}
		prevK, prevKey = k, pk
		lv := s.levels[k]
		lv.Over.Set(pk, c)
		// INVARIANT: each c and every partial sum stay at most maxItems,
		// so no sum below overflows.
		if c > maxItems || lv.NOver+c > maxItems || s.extra+c > maxItems {
			d.Fail(bad("overflow counters add up to more than %d items", uint64(maxItems)))
			break
		}
		lv.NOver += c
		s.extra += c
	}
	if d.Err() == nil {
		items := s.extra
		for _, lv := range s.levels {
			if items += lv.Items(); items > maxItems {
				return nil, bad("%d or more items, more than %d", items, uint64(maxItems))
			}
		}
	}
	if err := d.VerifyChecksum(); err != nil {
		return nil, err
	}
	if err := s.validate(); err != nil {
		return nil, bad("%v", err)
	}
	return s, nil
}

// levelEncoding returns the table encoding of a table of the chain: its
// plain table's, or, for a growing table, its tags marked flagGrowing
// (chain.Growing), with the generation's capacity and the tags' count.
func (s *chainState) levelEncoding(lv *chain.Level) tableEncoding {
	if g := lv.Grow; g != nil {
		return tableEncoding{m: table.Multiset{T: g.T, Items: g.Occupied}, flags: flagGrowing, seed: s.seed, capacity: lv.Capacity, maxKicks: s.maxKicks}
	}
	return tableEncoding{m: lv.Plain, seed: s.seed, capacity: lv.Capacity, maxKicks: s.maxKicks}
}

// decodeLevel reads one table (its length, then its table encoding) and
// checks that it has the shape of generation gen, or, for the newest table
// of a chain that grows in place, of a table growing to that shape.
func decodeLevel(d *codec.Decoder, s *chainState, gen generation, newest bool) (*chain.Level, error) {
	n := d.Uint64()
	if !d.Need(n, maxTableEncoding) {
		return nil, d.Err()
	}
	sub := &sectionReader{d: d, n: n}
	e, err := decodeTableEncoding(codec.NewDecoder(sub))
	if err != nil {
		return nil, err
	}
	if sub.n != 0 {
		return nil, bad("%d bytes after the table's encoding", sub.n)
	}
	t := &e.m.T
	switch {
	case t.Slots != s.g.slots || t.Semi != s.g.semi || e.seed != s.seed || e.maxKicks != s.maxKicks:
		return nil, bad("table parameters differ from the filter's")
	case t.Segments != 1:
		return nil, bad("a table of %d segments in a Scalable", t.Segments)
	case e.capacity != gen.capacity:
		return nil, bad("table of capacity %d is not generation %d (capacity %d)", e.capacity, gen.k, gen.capacity)
	}
	lv := &chain.Level{Gen: gen.k, Capacity: gen.capacity, Limit: gen.limit}
	if e.flags&flagGrowing != 0 {
		r := s.g.reserveOf(gen.fpBits)
		if !newest || r == 0 || gen.k == 0 {
			return nil, bad("a growing table that is not the newest of a generation after the first")
		}
		g, ok := chain.GrowingFrom(gen.numBuckets, t.NumBuckets, gen.fpBits, r)
		switch {
		case !ok || t.FPBits != g.TagBits():
			return nil, bad("growing table of %d bits, %d buckets is not one of generation %d (%d bits, %d buckets)",
				t.FPBits, t.NumBuckets, gen.k, gen.fpBits, gen.numBuckets)
		case len(e.m.Dups) != 0:
			return nil, bad("growing table with duplicate counters")
		}
		g.Load(e.m.T)
		switch {
		case g.Occupied != e.m.Items:
			return nil, bad("growing table: %d items, %d slots occupied", e.m.Items, g.Occupied)
		case g.CrowdedPast():
			return nil, bad("growing table: %d of %d slots occupied, past its load", g.Occupied, g.T.NumBuckets*g.T.Slots)
		}
		if j, ok := g.Check(); !ok {
			return nil, bad("growing table: bucket %d holds a tag that does not belong there", j)
		}
		lv.Grow = g
		return lv, nil
	}
	if t.FPBits != gen.fpBits || t.NumBuckets != gen.numBuckets {
		return nil, bad("table of %d bits, %d buckets is not generation %d (%d bits, %d buckets)",
			t.FPBits, t.NumBuckets, gen.k, gen.fpBits, gen.numBuckets)
	}
	if err := e.checkPlain(); err != nil {
		return nil, err
	}
	lv.Plain = e.m
	return lv, nil
}

// sectionReader reads the next n bytes of an outer Decoder, so that a
// nested encoding is decoded (and checksummed) on its own while the outer
// checksum covers it too.
type sectionReader struct {
	d   *codec.Decoder
	n   uint64
	buf [512]uint64
}

func (r *sectionReader) Read(p []byte) (int, error) {
	if err := r.d.Err(); err != nil {
		return 0, err
	}
	if r.n == 0 {
		return 0, io.EOF
	}
	p = p[:min(uint64(len(p)), r.n)]
	k := min(len(p)/8, len(r.buf))
	n := 8 * k
	if k == 0 {
		p[0] = r.d.Uint8()
		n = 1
	} else {
		r.d.Words(r.buf[:k])
		for i, w := range r.buf[:k] {
			binary.LittleEndian.PutUint64(p[8*i:], w)
		}
	}
	if err := r.d.Err(); err != nil {
		return 0, err
	}
	r.n -= uint64(n)
	return n, nil
}
