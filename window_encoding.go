package cuckoo

import (
	"errors"
	"io"

	"github.com/dedupkit/cuckoo/internal/codec"
	"github.com/dedupkit/cuckoo/internal/format"
	"github.com/dedupkit/cuckoo/internal/table/stamped"
)

// The encoding of a Window, format version 1. All integers are
// little-endian; its first 12 bytes are the prologue every encoding of
// this package shares, and its header is written and read by
// internal/format (format.WindowHeader).
//
//	offset  size  field
//	     0     4  magic "CKOO"
//	     4     2  format version = 1
//	     6     1  kind = 3 (Window)
//	     7     1  flags = 0
//	     8     1  bucket size b: 2, 4 or 8
//	     9     1  fingerprint bits f: 4..28
//	    10     1  hash = 1: XXH3-64 of the key with the seed below
//	    11     1  reserved = 0
//	    12     1  stamp bits = 4
//	    13     1  epochs per window = 14
//	    14     2  reserved = 0
//	    16     4  max kicks: 1..MaxMaxKicks
//	    20     4  reserved = 0
//	    24     8  seed
//	    32     8  keys per window (> 0)
//	    40     8  window in ns: 1..2^62; the epoch length g = ⌈window/14⌉
//	    48     8  epoch of the latest write (int64): ⌊Unix ns / g⌋, its
//	              |epoch·g| ≤ 2^62
//	    56     8  sweep cursor: 0..m
//	    64     8  number of buckets m (even, 2..2^32)
//	    72     8  W = number of table words = ceil(m·b·(f+4)/64)
//	    80    8W  table words: bucket i at bits [i·B, (i+1)·B), B =
//	              b·(f+4), of the bit string, bit k in word k/64 at bit
//	              k%64; slot s at bits [s·(f+4), s·(f+4)+f+4) of its
//	              bucket: the stamp (epoch mod 16) in its low 4 bits, the
//	              fingerprint above; bits past m·B are zero
//	     …     4  CRC-32C of every byte before it
//
// docs/format.md describes the same layout. The values are frozen: a new
// layout gets a new version number, and decoders keep reading every
// version ever written.
// EncodedSize returns the exact number of bytes MarshalBinary and WriteTo
// produce.
func (w *Window) EncodedSize() int64 {
	return format.WindowHeaderSize + 8*int64(w.t.PayloadWords()) + checksumSize
}

// MarshalBinary encodes the Window: parameters, seed, times and table,
// with a checksum. The same state always gives the same bytes, and they
// are what WriteTo writes. docs/format.md describes the format.
func (w *Window) MarshalBinary() ([]byte, error) {
	buf, err := encodingBuffer(w.EncodedSize())
	if err != nil {
		return nil, err
	}
	if _, err := w.WriteTo(buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteTo writes the encoding of the Window to w and returns the number of
// bytes written. It only reads the Window, so concurrent readers may go
// on.
func (w *Window) WriteTo(out io.Writer) (int64, error) {
	t := &w.t
	if t.NumBuckets() == 0 {
		return 0, errors.New("cuckoo: the zero Window has no table to encode")
	}
	enc := codec.NewEncoder(out, w.EncodedSize())
	words := t.Words()[:len(t.Words())-1]
	h := format.WindowHeader{Slots: uint8(t.Slots()), FPBits: uint8(t.FPBits()), StampBits: stamped.AgeBits, Epochs: WindowEpochs,
		MaxKicks: uint32(w.maxKicks), Seed: w.seed, PerWindow: w.perWindow, Window: w.window, Epoch: w.epoch,
		Cursor: w.cursor, Buckets: t.NumBuckets(), Words: uint64(len(words))}
	h.Write(enc)
	enc.Words(words)
	return enc.Finish()
}

// UnmarshalBinary replaces the Window's state with the one encoded in data
// by MarshalBinary or WriteTo; the Window keeps its clock (the default
// clock for the zero Window). Its time is then the later of the encoded
// one and its clock's: entries that expired meanwhile read as absent.
// Damaged, truncated or foreign data gives an error wrapping [ErrCorrupt]
// and leaves the Window unchanged. A header that claims more than data
// holds is rejected before anything is allocated.
func (w *Window) UnmarshalBinary(data []byte) error {
	d := codec.NewBytesDecoder(data)
	g, err := decodeWindow(d)
	if err == nil {
		err = d.ExpectEnd()
	}
	if err != nil {
		return asDecodeError(err)
	}
	w.adopt(g)
	return nil
}

// ReadFrom replaces the Window's state with one read from r, as written by
// WriteTo, and returns the number of bytes read; it reads exactly the
// encoding. Otherwise it is [Window.UnmarshalBinary], except that a table
// larger than this platform's largest slice (on a 32-bit platform, 2 GiB)
// is refused after its header, before anything is allocated for it, with
// an error wrapping [ErrInvalidParameter] (see [Filter.ReadFrom]).
func (w *Window) ReadFrom(r io.Reader) (int64, error) {
	d := codec.NewDecoder(r)
	g, err := decodeWindow(d)
	if err != nil {
		return d.Read(), asDecodeError(err)
	}
	w.adopt(g)
	return d.Read(), nil
}

// adopt takes a decoded state, keeping w's clock.
func (w *Window) adopt(g *Window) {
	old := w.coarse
	g.clock, g.fake = w.clock, w.fake
	*w = *g
	w.setCoarse(old)
	w.anchor()
}

// decodeWindow reads one encoded Window and checks it completely:
// checksum, parameter ranges, table size, and every invariant the
// operations keep.
func decodeWindow(d *codec.Decoder) (*Window, error) {
	h, err := format.ReadWindowHeader(d)
	if err != nil {
		return nil, err
	}
	ageBits, epochs, maxKicks, seed := h.StampBits, h.Epochs, uint64(h.MaxKicks), h.Seed
	perWindow, window, epoch, cursor := h.PerWindow, h.Window, h.Epoch, h.Cursor
	numBuckets, nWords := h.Buckets, h.Words
	slots, fpBits := uint64(h.Slots), uint64(h.FPBits)
	switch {
	case slots != 2 && slots != 4 && slots != 8:
		return nil, bad("bucket size %d", slots)
	case fpBits < MinFingerprintBits || fpBits > MaxWindowFingerprintBits:
		return nil, bad("fingerprint bits %d", fpBits)
	case ageBits != stamped.AgeBits || epochs != WindowEpochs:
		return nil, bad("%d stamp bits and %d epochs a window, not %d and %d", ageBits, epochs, stamped.AgeBits, WindowEpochs)
	case maxKicks < 1 || maxKicks > MaxMaxKicks:
		return nil, bad("max kicks %d", maxKicks)
	case window < 1 || window > windowLimitNanos:
		return nil, bad("window of %d ns", window)
	case numBuckets < 2 || numBuckets > maxBuckets || numBuckets%2 != 0:
		return nil, bad("bucket count %d", numBuckets)
	case cursor > numBuckets:
		return nil, bad("sweep cursor %d past %d buckets", cursor, numBuckets)
	}
	if least, ok := windowLeastBuckets(perWindow, slots, fpBits); !ok || numBuckets < least {
		return nil, bad("%d buckets for %d keys a window, fewer than NewWindow plans", numBuckets, perWindow)
	}
	w := &Window{perWindow: perWindow, seed: seed, maxKicks: int(maxKicks)}
	w.setWindow(window)
	if limit := windowLimitNanos / w.gran; epoch > limit || epoch < -limit-1 {
		return nil, bad("epoch %d out of range", epoch)
	}
	t := stamped.Layout(numBuckets, slots, fpBits)
	if nWords != t.PayloadWords() {
		return nil, bad("table of %d words, want %d", nWords, t.PayloadWords())
	}
	// The table is the one large allocation: WordsGrow grows it with the
	// data of a stream, so what the input holds and what this platform can
	// make are checked first (see decodeTableEncoding).
	if !d.Need(nWords*8, nWords*8) {
		return nil, d.Err()
	}
	if err := checkTableBytes((nWords + 1) * 8); err != nil {
		return nil, err
	}
	words := d.WordsGrow(nWords, 1, nWords)
	if err := d.VerifyChecksum(); err != nil {
		return nil, err
	}
	// The stamp counts, then every invariant against them.
	t.Load(words)
	w.t = t
	w.setEpoch(epoch)
	w.cursor = cursor
	if err := w.validate(true); err != nil {
		return nil, bad("%v", err)
	}
	return w, nil
}
