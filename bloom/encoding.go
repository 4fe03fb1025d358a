package bloom

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sync/atomic"

	"github.com/dedupkit/cuckoo/internal/codec"
	"github.com/dedupkit/cuckoo/internal/format"
	"github.com/dedupkit/cuckoo/internal/invariants"
)

// The encodings, format version 1. Integers are little-endian; rates and
// factors are IEEE-754 binary64 bit patterns. docs/format.md in the repository
// describes the same layouts for readers in other languages.
//
// Filter (kinds 1 and 2) and Counting (kind 3):
//
//	offset  size  field
//	     0     4  magic "BLMF"
//	     4     2  format version = 1
//	     6     1  kind: 1 blocked Filter, 2 classic Filter, 3 Counting
//	     7     1  k, bits or counters per key: 1..64
//	     8     1  bits per cell: 1 (kinds 1, 2) or 4 (kind 3)
//	     9     1  hash = 1: XXH3-64 of the key with the seed below
//	    10     6  reserved, zero
//	    16     8  seed
//	    24     8  capacity: 1..2^40
//	    32     8  target false-positive rate: [1e-15, 1)
//	    40     8  count (Len)
//	    48     8  W, number of table words: 1..2^37, a multiple of 8 for kind 1
//	    56    8W  table words: bit (or 4-bit counter) i is at bit
//	              (i mod 64/b)·b of word i/(64/b), for b bits per cell;
//	              kind 1: block j is words 8j..8j+7
//	     …     4  CRC-32C of every byte before it
//
// Scalable (kind 4):
//
//	offset  size  field
//	     0     4  magic "BLMF"
//	     4     2  format version = 1
//	     6     1  kind = 4
//	     7     1  hash = 1, as above
//	     8     8  seed
//	    16     8  capacity of the first layer: 1..2^40
//	    24     8  target false-positive rate: [1e-15, 1)
//	    32     8  growth factor: [1.25, 1024]
//	    40     8  tightening ratio: [0.5, 0.95]
//	    48     4  L, number of layers: 1..256
//	    52     4  reserved, zero
//	    56     …  L layers, oldest first, each:
//	                0   1  layout: 1 blocked, 2 classic
//	                1   1  k: 1..64
//	                2   6  reserved, zero
//	                8   8  capacity: the first layer's, then
//	                       ceil(previous·growth) capped at 2^40
//	               16   8  target rate of the layer: p·(1−r)·r^i for
//	                       target p, tightening r, layer i
//	               24   8  count (keys added to the layer)
//	               32   8  W, as above
//	               40  8W  table words, as above
//	     …     4  CRC-32C of every byte before it
//
// A reader must reject reserved bytes that are not zero. The values are
// frozen: a new layout gets a new version number, and decoders keep
// reading every version ever written. The first seven bytes (magic,
// version, kind) and the hash byte's values are internal/format's, which
// every filter file shares.
const (
	tableHeaderSize    = 56
	scalableHeaderSize = 56
	layerHeaderSize    = 40
	checksumSize       = 4
)

// kind returns the file kind of a Filter of layout l.
func (l layout) kind() format.Kind {
	if l == layoutBlocked {
		return format.BloomBlocked
	}
	return format.BloomClassic
}

// layoutOf returns the layout of a Filter of file kind k.
func layoutOf(k format.Kind) layout {
	if k == format.BloomBlocked {
		return layoutBlocked
	}
	return layoutClassic
}

// tableHeader is the header of kinds 1..3.
type tableHeader struct {
	kind     format.Kind
	k        uint8
	cellBits uint8
	seed     uint64
	capacity uint64
	fpr      float64
	count    uint64
	words    uint64
}

func (h *tableHeader) write(e *codec.Encoder) {
	format.WriteStart(e, h.kind)
	e.Uint8(h.k)
	e.Uint8(h.cellBits)
	e.Uint8(format.HashXXH3)
	for range 6 {
		e.Uint8(0)
	}
	e.Uint64(h.seed)
	e.Uint64(h.capacity)
	e.Uint64(math.Float64bits(h.fpr))
	e.Uint64(h.count)
	e.Uint64(h.words)
}

// corrupt records a validation failure in d, so that later reads stop.
func corrupt(d *codec.Decoder, format string, args ...any) {
	d.Fail(fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...))
}

// readPrologue reads the magic, the version and the kind
// (format.ReadStart), and checks the kind against want. The rest of every
// header is version 1's, the only version of the Bloom files so far: a new
// version adds its readers, chosen here by the start's version.
func readPrologue(d *codec.Decoder, want ...format.Kind) format.Kind {
	s, err := format.ReadStart(d, format.Bloom)
	if err == nil {
		err = format.ExpectKind(s, want...)
	}
	if err != nil {
		d.Fail(fmt.Errorf("%w: %w", ErrCorrupt, err))
		return 0
	}
	return s.Kind
}

// readHash reads the hash byte. Files written before format 1 was frozen
// have 0 there (their hash is retired).
func readHash(d *codec.Decoder) {
	switch h := d.Uint8(); {
	case d.Err() != nil:
	case h == 0:
		d.Fail(errPreV1)
	case h != format.HashXXH3:
		corrupt(d, "unknown hash %d", h)
	}
}

// errPreV1 is the error for an encoding written before format version 1
// was frozen.
var errPreV1 = fmt.Errorf("%w: %w", ErrCorrupt, format.ErrPreV1)

// readReserved reads n bytes that must be zero.
func readReserved(d *codec.Decoder, n int) {
	for range n {
		if d.Uint8() != 0 && d.Err() == nil {
			corrupt(d, "reserved byte is not zero")
		}
	}
}

// readTableHeader reads the rest of the header of kinds 1..3 after the
// prologue, and validates it.
func readTableHeader(d *codec.Decoder, kind format.Kind) tableHeader {
	h := tableHeader{kind: kind, k: d.Uint8(), cellBits: d.Uint8()}
	readHash(d)
	readReserved(d, 6)
	h.seed = d.Uint64()
	h.capacity = d.Uint64()
	h.fpr = math.Float64frombits(d.Uint64())
	h.count = d.Uint64()
	h.words = d.Uint64()
	if d.Err() != nil {
		return h
	}
	wantBits := uint8(1)
	if kind == format.BloomCounting {
		wantBits = counterBits
	}
	switch {
	case h.k < 1 || h.k > maxK:
		corrupt(d, "hash count %d outside [1, %d]", h.k, maxK)
	case h.cellBits != wantBits:
		corrupt(d, "%d bits per cell in %s", h.cellBits, kind)
	case h.capacity < 1 || h.capacity > MaxCapacity:
		corrupt(d, "capacity %d outside [1, %d]", h.capacity, uint64(MaxCapacity))
	case !validRate(h.fpr):
		corrupt(d, "target rate %v outside [%v, 1)", h.fpr, MinFalsePositiveRate)
	default:
		checkWords(d, layoutOf(kind), h.words)
		cells := h.words * 64
		if kind == format.BloomCounting {
			cells = h.words * countersPer
		}
		checkBacked(d, cells, h.capacity, h.fpr)
	}
	return h
}

// checkBacked fails the decoder unless a table of cells cells is at least
// the textbook optimum m = −n·ln p/ln²2 for its capacity and rate, which
// every filter built here exceeds: a header cannot claim a capacity that
// its payload does not back (a Scalable filter sizes its next layer from
// the last one's capacity).
func checkBacked(d *codec.Decoder, cells, capacity uint64, p float64) {
	if least := float64(capacity) * -math.Log(p) / (math.Ln2 * math.Ln2); float64(cells) < 0.99*least {
		corrupt(d, "%d cells cannot hold %d keys at rate %v", cells, capacity, p)
	}
}

// checkWords validates a table length for a layout (kinds 1..3).
func checkWords(d *codec.Decoder, l layout, words uint64) {
	switch {
	case words < 1 || words > maxWords:
		corrupt(d, "table of %d words outside [1, %d]", words, maxWords)
	case l == layoutBlocked && words%blockWords != 0:
		corrupt(d, "blocked table of %d words is not whole blocks", words)
	}
}

// writeWords writes a table, reading each word atomically so that encoding
// may run concurrently with Add.
func writeWords(e *codec.Encoder, words []uint64) {
	var buf [512]uint64
	for len(words) > 0 {
		n := min(len(words), len(buf))
		for i := range n {
			buf[i] = atomic.LoadUint64(&words[i])
		}
		e.Words(buf[:n])
		words = words[n:]
	}
}

// finishDecode verifies the checksum (and, for a byte slice, that nothing
// follows) and turns the decoder's error into the package's.
func finishDecode(d *codec.Decoder, bytes bool) error {
	err := d.VerifyChecksum()
	if err == nil && bytes {
		err = d.ExpectEnd()
	}
	return decodeError(err)
}

// decodeError wraps a decoding failure: damage to the input becomes
// ErrCorrupt, a failure of the reader stays itself.
func decodeError(err error) error {
	switch {
	case err == nil || errors.Is(err, ErrCorrupt):
		return err
	case errors.Is(err, codec.ErrTruncated), errors.Is(err, codec.ErrChecksum),
		errors.Is(err, codec.ErrTooLarge), errors.Is(err, codec.ErrTrailing):
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return fmt.Errorf("bloom: reading the encoding: %w", err)
}

// appendWriter appends everything written to it to a byte slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// EncodedSize returns the exact number of bytes MarshalBinary and WriteTo
// produce for f.
func (f *Filter) EncodedSize() int64 {
	return tableHeaderSize + 8*int64(len(f.words)) + checksumSize
}

// MarshalBinary encodes f: parameters, seed, count and bits, with a
// checksum. The same state always gives the same bytes, and they are what
// WriteTo writes. It returns an error for the zero Filter.
func (f *Filter) MarshalBinary() ([]byte, error) {
	return f.AppendBinary(make([]byte, 0, f.EncodedSize()))
}

// AppendBinary appends the encoding of f (see [Filter.MarshalBinary]) to b.
func (f *Filter) AppendBinary(b []byte) ([]byte, error) {
	w := appendWriter{b}
	_, err := f.WriteTo(&w)
	return w.b, err
}

// WriteTo writes the encoding of f (see [Filter.MarshalBinary]) to w and
// returns the number of bytes written. It may run concurrently with Add:
// the encoding then holds every key whose Add returned before WriteTo
// started, and perhaps some added meanwhile. Wrap files in a bufio.Writer
// or not: WriteTo writes in chunks of up to 64 KiB.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	if len(f.words) == 0 {
		return 0, errors.New("bloom: the zero Filter has no table to encode")
	}
	e := codec.NewEncoder(w, f.EncodedSize())
	h := tableHeader{kind: f.layout.kind(), k: uint8(f.k), cellBits: 1, seed: f.seed,
		capacity: f.capacity, fpr: f.fpr, count: f.count.Load(), words: uint64(len(f.words))}
	h.write(e)
	writeWords(e, f.words)
	return e.Finish()
}

// UnmarshalBinary replaces f with the filter encoded in data, which must be
// exactly one encoding of a Filter. Damaged, truncated or foreign input
// gives an error wrapping [ErrCorrupt]; then f is unchanged. It allocates
// no more than data justifies, and needs exclusive access to f.
func (f *Filter) UnmarshalBinary(data []byte) error {
	g, err := decodeFilter(codec.NewBytesDecoder(data), true)
	if err != nil {
		return err
	}
	f.set(g)
	return nil
}

// ReadFrom replaces f with the filter encoded at the start of r, reading
// exactly the encoding and nothing after it, and returns the number of
// bytes read. Errors are as for [Filter.UnmarshalBinary], except that a
// failure of r is returned wrapped as it is. Memory grows with the data
// actually read, so a lying header cannot make it allocate much.
func (f *Filter) ReadFrom(r io.Reader) (int64, error) {
	d := codec.NewDecoder(r)
	g, err := decodeFilter(d, false)
	if err != nil {
		return d.Read(), err
	}
	f.set(g)
	return d.Read(), nil
}

// set moves g's state into f.
func (f *Filter) set(g *Filter) {
	f.words, f.cells, f.k, f.layout = g.words, g.cells, g.k, g.layout
	f.seed, f.capacity, f.fpr = g.seed, g.capacity, g.fpr
	f.count.Store(g.count.Load())
}

func decodeFilter(d *codec.Decoder, bytes bool) (*Filter, error) {
	kind := readPrologue(d, format.BloomBlocked, format.BloomClassic)
	h := readTableHeader(d, kind)
	words := d.WordsGrow(h.words, 0, maxWords)
	if err := finishDecode(d, bytes); err != nil {
		return nil, err
	}
	f := &Filter{table: table{words: words, k: uint32(h.k), seed: h.seed, capacity: h.capacity, fpr: h.fpr}, layout: layoutOf(kind)}
	f.cells = cellsOf(f.layout, h.words)
	f.count.Store(h.count)
	if invariants.Enabled {
		f.checkInvariants()
	}
	return f, nil
}

// EncodedSize returns the exact number of bytes MarshalBinary and WriteTo
// produce for f.
func (f *Counting) EncodedSize() int64 {
	return tableHeaderSize + 8*int64(len(f.words)) + checksumSize
}

// MarshalBinary encodes f: parameters, seed, count and counters, with a
// checksum. The same state always gives the same bytes, and they are what
// WriteTo writes. It returns an error for the zero Counting.
func (f *Counting) MarshalBinary() ([]byte, error) {
	return f.AppendBinary(make([]byte, 0, f.EncodedSize()))
}

// AppendBinary appends the encoding of f to b.
func (f *Counting) AppendBinary(b []byte) ([]byte, error) {
	w := appendWriter{b}
	_, err := f.WriteTo(&w)
	return w.b, err
}

// WriteTo writes the encoding of f to w and returns the number of bytes
// written.
func (f *Counting) WriteTo(w io.Writer) (int64, error) {
	if len(f.words) == 0 {
		return 0, errors.New("bloom: the zero Counting has no table to encode")
	}
	e := codec.NewEncoder(w, f.EncodedSize())
	h := tableHeader{kind: format.BloomCounting, k: uint8(f.k), cellBits: counterBits, seed: f.seed,
		capacity: f.capacity, fpr: f.fpr, count: f.count, words: uint64(len(f.words))}
	h.write(e)
	e.Words(f.words)
	return e.Finish()
}

// UnmarshalBinary replaces f with the counting filter encoded in data, as
// [Filter.UnmarshalBinary] does.
func (f *Counting) UnmarshalBinary(data []byte) error {
	g, err := decodeCounting(codec.NewBytesDecoder(data), true)
	if err != nil {
		return err
	}
	*f = *g
	return nil
}

// ReadFrom replaces f with the counting filter encoded at the start of r,
// as [Filter.ReadFrom] does.
func (f *Counting) ReadFrom(r io.Reader) (int64, error) {
	d := codec.NewDecoder(r)
	g, err := decodeCounting(d, false)
	if err != nil {
		return d.Read(), err
	}
	*f = *g
	return d.Read(), nil
}

func decodeCounting(d *codec.Decoder, bytes bool) (*Counting, error) {
	readPrologue(d, format.BloomCounting)
	h := readTableHeader(d, format.BloomCounting)
	words := d.WordsGrow(h.words, 0, maxWords)
	if err := finishDecode(d, bytes); err != nil {
		return nil, err
	}
	f := &Counting{table: table{words: words, cells: h.words * countersPer, k: uint32(h.k), seed: h.seed,
		capacity: h.capacity, fpr: h.fpr}, count: h.count}
	if invariants.Enabled {
		f.checkInvariants()
	}
	return f, nil
}

// EncodedSize returns the exact number of bytes MarshalBinary and WriteTo
// produce for s.
func (s *Scalable) EncodedSize() int64 {
	n := int64(scalableHeaderSize + checksumSize)
	for _, l := range s.layers {
		n += layerHeaderSize + 8*int64(len(l.words))
	}
	return n
}

// MarshalBinary encodes s: parameters, seed and every layer, with one
// checksum. The same state always gives the same bytes, and they are what
// WriteTo writes. It returns an error for the zero Scalable.
func (s *Scalable) MarshalBinary() ([]byte, error) {
	return s.AppendBinary(make([]byte, 0, s.EncodedSize()))
}

// AppendBinary appends the encoding of s to b.
func (s *Scalable) AppendBinary(b []byte) ([]byte, error) {
	w := appendWriter{b}
	_, err := s.WriteTo(&w)
	return w.b, err
}

// WriteTo writes the encoding of s to w and returns the number of bytes
// written.
func (s *Scalable) WriteTo(w io.Writer) (int64, error) {
	if len(s.layers) == 0 {
		return 0, errors.New("bloom: the zero Scalable has no layer to encode")
	}
	e := codec.NewEncoder(w, s.EncodedSize())
	format.WriteStart(e, format.BloomScalable)
	e.Uint8(format.HashXXH3)
	e.Uint64(s.seed)
	e.Uint64(s.capacity)
	e.Uint64(math.Float64bits(s.fpr))
	e.Uint64(math.Float64bits(s.growth))
	e.Uint64(math.Float64bits(s.tightening))
	e.Uint32(uint32(len(s.layers)))
	e.Uint32(0)
	for _, l := range s.layers {
		e.Uint8(uint8(l.layout))
		e.Uint8(uint8(l.k))
		for range 6 {
			e.Uint8(0)
		}
		e.Uint64(l.capacity)
		e.Uint64(math.Float64bits(l.fpr))
		e.Uint64(l.count.Load())
		e.Uint64(uint64(len(l.words)))
		writeWords(e, l.words)
	}
	return e.Finish()
}

// UnmarshalBinary replaces s with the scalable filter encoded in data, as
// [Filter.UnmarshalBinary] does.
func (s *Scalable) UnmarshalBinary(data []byte) error {
	g, err := decodeScalable(codec.NewBytesDecoder(data), true)
	if err != nil {
		return err
	}
	*s = *g
	return nil
}

// ReadFrom replaces s with the scalable filter encoded at the start of r,
// as [Filter.ReadFrom] does.
func (s *Scalable) ReadFrom(r io.Reader) (int64, error) {
	d := codec.NewDecoder(r)
	g, err := decodeScalable(d, false)
	if err != nil {
		return d.Read(), err
	}
	*s = *g
	return d.Read(), nil
}

func decodeScalable(d *codec.Decoder, bytes bool) (*Scalable, error) {
	readPrologue(d, format.BloomScalable)
	readHash(d)
	s := &Scalable{seed: d.Uint64(), capacity: d.Uint64()}
	s.fpr = math.Float64frombits(d.Uint64())
	s.growth = math.Float64frombits(d.Uint64())
	s.tightening = math.Float64frombits(d.Uint64())
	n := d.Uint32()
	readReserved(d, 4)
	if d.Err() == nil {
		switch {
		case s.capacity < 1 || s.capacity > MaxCapacity:
			corrupt(d, "capacity %d outside [1, %d]", s.capacity, uint64(MaxCapacity))
		case !validRate(s.fpr):
			corrupt(d, "target rate %v outside [%v, 1)", s.fpr, MinFalsePositiveRate)
		case !(s.growth >= MinGrowth && s.growth <= MaxGrowth):
			corrupt(d, "growth factor %v outside [%v, %v]", s.growth, MinGrowth, MaxGrowth)
		case !(s.tightening >= MinTightening && s.tightening <= MaxTightening):
			corrupt(d, "tightening ratio %v outside [%v, %v]", s.tightening, MinTightening, MaxTightening)
		case n < 1 || n > maxLayers:
			corrupt(d, "%d layers outside [1, %d]", n, maxLayers)
		}
	}
	wantCap := s.capacity
	for i := 0; i < int(n) && d.Err() == nil; i++ {
		l := &Filter{layout: layout(d.Uint8()), table: table{k: uint32(d.Uint8()), seed: s.seed}}
		readReserved(d, 6)
		l.capacity = d.Uint64()
		l.fpr = math.Float64frombits(d.Uint64())
		count := d.Uint64()
		words := d.Uint64()
		if d.Err() != nil {
			break
		}
		switch {
		case l.layout != layoutBlocked && l.layout != layoutClassic:
			corrupt(d, "layer %d has layout %d", i, l.layout)
		case l.k < 1 || l.k > maxK:
			corrupt(d, "layer %d: hash count %d outside [1, %d]", i, l.k, maxK)
		case l.capacity != wantCap:
			corrupt(d, "layer %d: capacity %d, the growth schedule says %d", i, l.capacity, wantCap)
		case !(l.fpr > 0 && math.Abs(l.fpr/s.layerRate(i)-1) < 1e-9):
			corrupt(d, "layer %d: target rate %v, the tightening schedule says %v", i, l.fpr, s.layerRate(i))
		default:
			checkWords(d, l.layout, words)
			checkBacked(d, cellsOf(l.layout, words)*blockBitsOf(l.layout), l.capacity, l.fpr)
		}
		l.words = d.WordsGrow(words, 0, maxWords)
		l.cells = cellsOf(l.layout, words)
		l.count.Store(count)
		s.count += count
		s.layers = append(s.layers, l)
		wantCap = s.nextCapacity(wantCap)
	}
	if err := finishDecode(d, bytes); err != nil {
		return nil, err
	}
	s.setLast()
	if invariants.Enabled {
		s.checkInvariants()
	}
	return s, nil
}
