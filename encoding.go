package cuckoo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/dedupkit/cuckoo/internal/codec"
	"github.com/dedupkit/cuckoo/internal/format"
	"github.com/dedupkit/cuckoo/internal/table"
	"github.com/dedupkit/cuckoo/internal/table/chain"
)

// The formats of the module's cuckoo filters: the encoding of a table
// (kind 1: a Filter's, and each table of a chain's) and of a growing
// filter's chain (kind 2: a Scalable's, and a growing Concurrent's); a
// Window's (kind 3) is in window_encoding.go. Their headers are written
// and read by internal/format, the one place that knows the header's
// bytes and reads every format version. Each filter's methods that encode
// and decode go through them (filter_encoding.go, scalable_encoding.go,
// concurrent_encoding.go).

// The encoding of a Filter, format version 1. All integers are
// little-endian.
//
//	offset  size  field
//	     0     4  magic "CKOO"
//	     4     2  format version = 1
//	     6     1  kind = 1 (Filter)
//	     7     1  flags: bit 0 = semi-sorted buckets (b = 4); bit 1 = the
//	              table of a Scalable growing in place (only inside a
//	              Scalable's encoding); others 0
//	     8     1  bucket size b: 1 to 255
//	     9     1  fingerprint bits f: 4..32 (a growing table: its tag bits)
//	    10     1  hash = 1: XXH3-64 of the key with the seed below
//	    11     1  reserved = 0
//	    12     4  max kicks: 1..MaxMaxKicks
//	    16     8  seed
//	    24     8  capacity (> 0)
//	    32     8  number of buckets m (even, 2..2^32, m*b >= capacity)
//	    40     8  items, copies included (at most maxItems)
//	    48     8  W = number of table words = ceil(m*B/64), B = bits per
//	              bucket: b*f, or 4f-4 when semi-sorted
//	    56     8  D = number of duplicate counters
//	    64     4  S = number of segments: 1, or m/S a multiple of 64
//	    68     4  reserved = 0
//	    72    8W  table words: bucket i at bits [i*B, (i+1)*B) of the bit
//	              string, bit k in word k/64 at bit k%64; bits past m*B
//	              are zero. Plain buckets: slot s at bits [s*f, s*f+f).
//	              Semi-sorted buckets: see internal/table/semisort.go.
//	     …   16D  counters, by increasing key: key (bucket<<32 | fingerprint,
//	              bucket the lower of the pair), copies (> 0)
//	     …     4  CRC-32C of every byte before it
//
// A key's hash h = XXH3-64(key, seed) gives its first bucket ⌊(h>>32)·m /
// 2^32⌋ and its fingerprint ⌊(h mod 2^32)·(2^f−1) / 2^32⌋ + 1; its other
// bucket is Table.AltIndex of those (internal/table), within the key's segment of m/S
// buckets.
//
// docs/format.md describes the same layout for readers in other languages.
// The header's bytes (magic, version, kind, offsets, flags, hash) are
// internal/format's, which reads every version ever written and writes
// the latest. Files written before version 1 was frozen carry version 1
// too, with 0 in the hash byte (their hash is retired): decoders refuse
// them with format.ErrPreV1.
const (
	flagSemiSort = format.FlagSemiSort
	// flagGrowing marks the table of a Scalable that is growing in place
	// (chain.Growing): its slots hold tags of up to f+R bits, its buckets are
	// not a plain table's, so it is not a Filter; the Filter decoder
	// rejects it.
	flagGrowing  = format.FlagGrowing
	checksumSize = format.ChecksumSize
	dupEntrySize = format.TableCounterSize
)

// tableEncoding is the content of a table's encoding, the layout above:
// a Filter's, and each table of a Scalable's (flagGrowing marking one that
// grows in place). Encoding and decoding a table go through it, and each
// filter checks what its own invariants add (decodeFilter, decodeLevel).
type tableEncoding struct {
	m        table.Multiset // the table with its words, the items and the counters; Occupied is not encoded
	flags    uint8          // flagGrowing or 0; flagSemiSort follows the table
	seed     uint64
	capacity uint64
	maxKicks int
}

// maxItems bounds the items of an encoded filter, copies included:
// decoders refuse counts above it, so Len and every sum of counters of a
// decoded filter fit in a uint64 (see table.MaxItems, which every insert
// keeps to).
const maxItems = table.MaxItems

// size returns the exact number of bytes of the encoding.
func (e *tableEncoding) size() int64 {
	w := int64(len(e.m.T.Words))
	if w > 0 {
		w-- // the padding word is not written
	}
	return format.TableHeaderSize + 8*w + dupEntrySize*int64(len(e.m.Dups)) + checksumSize
}

// writeTo writes the encoding to w.
func (e *tableEncoding) writeTo(w io.Writer) (int64, error) {
	t := &e.m.T
	enc := codec.NewEncoder(w, e.size())
	flags := e.flags
	if t.Semi {
		flags |= flagSemiSort
	}
	words := t.Words
	if len(words) > 0 {
		words = words[:len(words)-1]
	}
	h := format.TableHeader{Flags: flags, Slots: uint8(t.Slots), FPBits: uint8(t.FPBits), MaxKicks: uint32(e.maxKicks),
		Seed: e.seed, Capacity: e.capacity, Buckets: t.NumBuckets, Items: e.m.Items, Words: uint64(len(words)),
		Counters: uint64(len(e.m.Dups)), Segments: uint32(t.Segments)}
	h.Write(enc)
	enc.Words(words)
	for _, k := range e.m.Dups.SortedKeys() {
		enc.Uint64(k)
		enc.Uint64(e.m.Dups[k])
	}
	return enc.Finish()
}

// maxEncodingBytes bounds the encodings MarshalBinary builds in memory:
// one []byte, whose length must fit an int, 2 GiB on a 32-bit platform,
// where a growing filter's tables may add up to more. Only tests lower it
// (SetMaxEncodingBytes).
var maxEncodingBytes uint64 = math.MaxInt

// encodingBuffer returns an empty buffer with room for an encoding of size
// bytes, or an error when it would pass maxEncodingBytes (bytes.Buffer
// would panic): WriteTo, which needs no such buffer, writes it all the
// same.
func encodingBuffer(size int64) (*bytes.Buffer, error) {
	if uint64(size) > maxEncodingBytes {
		return nil, fmt.Errorf("cuckoo: an encoding of %d bytes is larger than this platform's largest slice: write it with WriteTo", size)
	}
	buf := new(bytes.Buffer)
	buf.Grow(int(size))
	return buf, nil
}

// asDecodeError gives a decoding error its final form: errors about the data wrap
// ErrCorrupt; a valid encoding the receiver cannot take (a table larger
// than this platform's largest slice: checkTableBytes) wraps
// ErrInvalidParameter; a failure of the reader itself (which says nothing
// about the data) is passed on with context.
func asDecodeError(err error) error {
	switch {
	case errors.Is(err, ErrCorrupt), errors.Is(err, ErrInvalidParameter):
		return err
	case errors.Is(err, format.ErrHeader), errors.Is(err, codec.ErrTruncated), errors.Is(err, codec.ErrChecksum),
		errors.Is(err, codec.ErrTooLarge), errors.Is(err, codec.ErrTrailing):
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return fmt.Errorf("cuckoo: reading filter: %w", err)
}

// bad returns a validation error about the data.
func bad(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// decodeFilter reads one encoded Filter and checks it completely: checksum,
// parameter ranges, table size, and every invariant the operations keep, so
// that a decoded filter behaves exactly like one built by operations.
func decodeFilter(d *codec.Decoder) (*tableEncoding, error) {
	e, err := decodeTableEncoding(d, math.MaxUint64, 0)
	if err != nil {
		return nil, err
	}
	if e.flags&flagGrowing != 0 {
		return nil, bad("the table of a growing Scalable, not a Filter")
	}
	// The capacity guarantee needs at least the buckets New plans for the
	// capacity and shape. More are fine: a Scalable's tables round their
	// bucket counts up, and each loads as a Filter.
	t := &e.m.T
	m, ok := bucketsFor(e.capacity, t.Slots, t.FPBits)
	if t.Segments > 1 {
		m, ok = segmentedBuckets(e.capacity, t.Segments, t.Slots, t.FPBits)
	}
	if !ok || t.NumBuckets < m {
		return nil, bad("%d buckets for capacity %d, fewer than the %d New plans", t.NumBuckets, e.capacity, m)
	}
	if err := e.checkPlain(); err != nil {
		return nil, err
	}
	return e, nil
}

// checkPlain checks what the invariants of a plain table (a Filter's, or
// a full table of a Scalable) add to a decoded table encoding, and counts
// its occupied slots.
func (e *tableEncoding) checkPlain() error {
	t := &e.m.T
	if e.capacity > t.NumBuckets*t.Slots {
		return bad("capacity %d for %d slots", e.capacity, t.NumBuckets*t.Slots)
	}
	e.m.Occupied = t.OccupiedSlots()
	if err := e.m.Validate(false); err != nil {
		return bad("%v", err)
	}
	return nil
}

// decodeTableEncoding reads one table encoding and checks what the format
// alone says: the header's ranges, the table's size against its shape (and,
// before allocating, against room, the bytes the input has for the
// encoding, against the input when its length is known, and against this
// platform's largest slice), the counters' order, canonical semi-sorted
// buckets, the checksum. A table flagged growing is checked against
// growWords too, the most words it will hold as it grows (chain.MostWords;
// 0 where none may grow). What a table's items must add up to is its
// filter's to check.
//
// A table too large for this platform fails with ErrInvalidParameter
// (checkTableBytes), not ErrCorrupt: the encoding may be sound, as a
// 64-bit platform reads it. Input known to be shorter than the table fails
// first, with ErrCorrupt: a byte slice on a 32-bit platform never holds
// such a table, so only a stream gets that far.
func decodeTableEncoding(d *codec.Decoder, room, growWords uint64) (*tableEncoding, error) {
	h, err := format.ReadTableHeader(d)
	if err != nil {
		return nil, err
	}
	flags := h.Flags
	growing := flags&flagGrowing != 0
	semi := flags&flagSemiSort != 0
	slots, fpBits := uint64(h.Slots), uint64(h.FPBits)
	maxKicks, seed, capacity, numBuckets := uint64(h.MaxKicks), h.Seed, h.Capacity, h.Buckets
	count, nWords, nDups, segments := h.Items, h.Words, h.Counters, uint64(h.Segments)
	switch {
	case !validBucketSize(slots):
		return nil, bad("bucket size %d", slots)
	case fpBits < MinFingerprintBits || fpBits > MaxFingerprintBits || validBucketSize(slots) && fpBits < minFingerprintBits(slots):
		return nil, bad("fingerprint bits %d", fpBits)
	case maxKicks < 1 || maxKicks > MaxMaxKicks:
		return nil, bad("max kicks %d", maxKicks)
	case numBuckets < 2 || numBuckets > maxBuckets || numBuckets%2 != 0:
		return nil, bad("bucket count %d", numBuckets)
	case segments < 1 || segments > MaxSegments ||
		segments > 1 && (growing || numBuckets%(segments*segmentAlign) != 0):
		return nil, bad("%d segments of %d buckets", segments, numBuckets)
	case count > maxItems:
		return nil, bad("%d items, more than %d", count, uint64(maxItems))
	case capacity == 0:
		return nil, bad("capacity 0")
	case semi && slots != 4:
		return nil, bad("semi-sorted buckets of %d slots", slots)
	}
	t := table.Layout(numBuckets, slots, fpBits, semi)
	switch {
	case nWords != t.PayloadWords():
		return nil, bad("table of %d words, want %d", nWords, t.PayloadWords())
	case nDups > numBuckets*slots/table.MaxSlotCopies:
		return nil, bad("%d duplicate counters for %d slots", nDups, numBuckets*slots)
	}
	// The table is the one large allocation: WordsGrow grows it with the
	// data of a stream, so what the input holds and what this platform can
	// make are checked first.
	if !d.Need(nWords*8, room) {
		return nil, d.Err()
	}
	most := nWords + 1
	if growing {
		most = max(most, growWords)
	}
	if err := checkTableBytes(most * 8); err != nil {
		return nil, err
	}
	words := d.WordsGrow(nWords, 1, nWords)
	if !d.Need(nDups*dupEntrySize, nDups*dupEntrySize) {
		return nil, d.Err()
	}
	var dups table.Counters
	if nDups > 0 {
		dups = make(table.Counters, min(nDups, 1<<16))
	}
	var prev uint64
	for n := uint64(0); n < nDups && d.Err() == nil; n++ {
		k, c := d.Uint64(), d.Uint64()
		if n > 0 && k <= prev {
			d.Fail(bad("duplicate counters not in increasing order"))
		}
		prev = k
		dups[k] = c
	}
	if err := d.VerifyChecksum(); err != nil {
		return nil, err
	}
	t.Words = words
	t.Segment(segments)
	if used := numBuckets * t.BucketBits; used%64 != 0 && words[used/64]>>(used%64) != 0 {
		return nil, bad("bits past the last bucket are set")
	}
	if semi {
		// Every bucket must be canonical: a code naming a multiset (the
		// lookup table has no entry for others) and sorted pairs, so that
		// the filter behaves and re-encodes like one built by operations.
		for i := uint64(0); i < numBuckets; i++ {
			if !t.SemiValid(i) {
				return nil, bad("semi-sorted bucket %d is not canonical", i)
			}
		}
	}
	return &tableEncoding{m: table.Multiset{T: t, Items: count, Dups: dups}, flags: flags & flagGrowing,
		seed: seed, capacity: capacity, maxKicks: int(maxKicks)}, nil
}

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
//	              its Filter header, chain.Growing)
//	     …   24O  overflow counters by increasing (table, key): table index
//	              k < T (8), key = bucket<<32 | fingerprint as in the
//	              duplicate counters (8), copies > 0 (8)
//	     …     4  CRC-32C of every byte before it
//
// Items in all (Len) are at most maxItems. docs/format-scalable.md
// describes it for readers in other languages. Frozen, like the Filter's
// format.
const (
	overEntrySize    = 24
	maxTableEncoding = 1 << 62
)

// encodedSize returns the exact number of bytes writeTo writes.
func (s *chainState) encodedSize() int64 {
	n := int64(format.ChainHeaderSize + checksumSize)
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
	var flags uint8
	if s.g.semi {
		flags |= flagSemiSort
	}
	var nOver uint64
	for _, lv := range s.levels {
		nOver += uint64(len(lv.Over))
	}
	h := format.ChainHeader{Flags: flags, Slots: uint8(s.g.slots), FPBits: uint8(s.g.f0), MaxKicks: uint32(s.maxKicks),
		Seed: s.seed, Initial: s.g.initial, Factor: s.g.factor, Bound: s.g.bound,
		First: s.levels[0].Gen, Tables: uint32(len(s.levels)), Overflow: nOver}
	h.Write(e)
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
	h, err := format.ReadChainHeader(d)
	if err != nil {
		return nil, err
	}
	g := schedule{slots: uint64(h.Slots), f0: uint64(h.FPBits), semi: h.Flags&flagSemiSort != 0,
		initial: h.Initial, factor: h.Factor, bound: h.Bound}
	maxKicks, seed := uint64(h.MaxKicks), h.Seed
	first, nTables, nOver := h.First, h.Tables, h.Overflow
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
	var growWords uint64
	if newest {
		// Only the newest table may be growing (checked below); it will
		// grow to its generation's size, which this platform must hold.
		growWords = s.g.tableWords(gen, true)
	}
	e, err := decodeTableEncoding(codec.NewDecoder(sub), n, growWords)
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
