// Package codec holds the framing the filters' encodings and the server's
// snapshots share: explicit little-endian fields, a CRC-32C (Castagnoli)
// over every byte written, and a decoder that never allocates more than
// the input can back. Its checksum also guards the server's log records
// and redisfilter's filter files; the store frames its own files.
//
// A format built on this package looks like:
//
//	+-------+---------+----------------------------+----------+
//	| magic | version | parameters, payload ...    | checksum |
//	| 4 B   | 2 B     | (defined by the structure) | 4 B      |
//	+-------+---------+----------------------------+----------+
//
// The checksum is the CRC-32C of every byte before it, little-endian. The
// magic, version and layout of each structure are documented beside its
// encoder (and in docs/format.md); this package only moves bytes.
package codec

import (
	"encoding/binary"
	"errors"
	"hash"
	"hash/crc32"
	"io"
)

var (
	// ErrTruncated means the input ended before the structure did.
	ErrTruncated = errors.New("input is truncated")
	// ErrChecksum means the stored checksum does not match the bytes read.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrTooLarge means a length in the header exceeds what the input holds
	// or what the structure allows.
	ErrTooLarge = errors.New("length in header is too large")
	// ErrTrailing means a byte-slice input holds more bytes after the
	// checksum: it is not exactly one structure.
	ErrTrailing = errors.New("trailing bytes after the checksum")
)

// castagnoli returns the CRC-32C table, which hash/crc32 makes once, on
// the first call: a program that never checks a checksum never makes it.
func castagnoli() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) }

// NewChecksum returns a running CRC-32C, the checksum of Checksum, for a
// stream written or read through it.
func NewChecksum() hash.Hash32 { return crc32.New(castagnoli()) }

// Checksum returns the CRC-32C of p, the checksum the encoder appends.
func Checksum(p []byte) uint32 { return crc32.Checksum(p, castagnoli()) }

// AppendChecksum appends the trailer an Encoder's Finish writes, the
// CRC-32C of p, to p: the framing of an encoding built in memory.
func AppendChecksum(p []byte) []byte { return binary.LittleEndian.AppendUint32(p, Checksum(p)) }

// UpdateChecksum returns the CRC-32C of the bytes whose CRC-32C is crc
// followed by p: UpdateChecksum(Checksum(a), b) is Checksum(a+b), and
// UpdateChecksum(0, p) is Checksum(p).
func UpdateChecksum(crc uint32, p []byte) uint32 { return crc32.Update(crc, castagnoli(), p) }

// encoderBufSize is the staging buffer of an Encoder: large enough that a
// table is written in few calls, small enough to be cheap for tiny filters.
const encoderBufSize = 64 << 10

// Encoder writes little-endian fields to an io.Writer through a staging
// buffer, keeping a running CRC-32C. Its error is sticky: after the first
// failed write every method does nothing and [Encoder.Finish] returns that
// error.
type Encoder struct {
	w   io.Writer
	buf []byte
	crc uint32
	n   int64
	err error
}

// NewEncoder returns an Encoder that writes to w. When size > 0 it is the
// exact number of bytes the caller will write, and the staging buffer is no
// larger than that.
func NewEncoder(w io.Writer, size int64) *Encoder {
	c := int64(encoderBufSize)
	if size > 0 && size < c {
		c = size
	}
	return &Encoder{w: w, buf: make([]byte, 0, c)}
}

func (e *Encoder) flush() {
	if e.err != nil || len(e.buf) == 0 {
		return
	}
	e.crc = crc32.Update(e.crc, castagnoli(), e.buf)
	n, err := e.w.Write(e.buf)
	e.n += int64(n)
	if err == nil && n != len(e.buf) {
		err = io.ErrShortWrite
	}
	e.err = err
	e.buf = e.buf[:0]
}

func (e *Encoder) room(n int) {
	if cap(e.buf)-len(e.buf) < n {
		e.flush()
	}
}

// Uint8 writes v.
func (e *Encoder) Uint8(v uint8) { e.room(1); e.buf = append(e.buf, v) }

// Uint16 writes v, little-endian.
func (e *Encoder) Uint16(v uint16) { e.room(2); e.buf = binary.LittleEndian.AppendUint16(e.buf, v) }

// Uint32 writes v, little-endian.
func (e *Encoder) Uint32(v uint32) { e.room(4); e.buf = binary.LittleEndian.AppendUint32(e.buf, v) }

// Uint64 writes v, little-endian.
func (e *Encoder) Uint64(v uint64) { e.room(8); e.buf = binary.LittleEndian.AppendUint64(e.buf, v) }

// Bytes writes p as it is.
func (e *Encoder) Bytes(p []byte) {
	for len(p) > 0 && e.err == nil {
		e.room(1)
		k := min(len(p), cap(e.buf)-len(e.buf))
		e.buf = append(e.buf, p[:k]...)
		p = p[k:]
	}
}

// Words writes every word of ws, little-endian.
func (e *Encoder) Words(ws []uint64) {
	for _, w := range ws {
		if cap(e.buf)-len(e.buf) < 8 {
			e.flush()
			if e.err != nil {
				return
			}
		}
		e.buf = binary.LittleEndian.AppendUint64(e.buf, w)
	}
}

// Finish appends the checksum of everything written, flushes, and returns
// the number of bytes written to the underlying writer and the first error.
func (e *Encoder) Finish() (int64, error) {
	e.flush()
	if e.err == nil {
		var sum [4]byte
		binary.LittleEndian.PutUint32(sum[:], e.crc)
		n, err := e.w.Write(sum[:])
		e.n += int64(n)
		e.err = err
	}
	return e.n, e.err
}

// decoderChunk bounds every allocation the Decoder makes ahead of the data:
// a payload is read in pieces of at most this size, so a header that lies
// about a length costs at most one chunk more than the input holds.
const decoderChunk = 1 << 20

// Decoder reads little-endian fields from an io.Reader, keeping a running
// CRC-32C of everything read. Its error is sticky: after the first failure
// every read returns zero values and [Decoder.Err] reports the failure.
type Decoder struct {
	r       io.Reader
	crc     uint32
	n       int64
	limit   int64 // bytes the input holds, or -1 when unknown (a stream)
	err     error
	scratch [8]byte
	chunk   []byte
}

// NewDecoder returns a Decoder that reads from the stream r. It never reads
// past the end of the structure, so r may hold more data after it.
func NewDecoder(r io.Reader) *Decoder { return &Decoder{r: r, limit: -1} }

// NewBytesDecoder returns a Decoder over p. Lengths are checked against
// len(p) before anything is allocated.
func NewBytesDecoder(p []byte) *Decoder {
	return &Decoder{r: &sliceReader{p: p}, limit: int64(len(p))}
}

type sliceReader struct{ p []byte }

func (s *sliceReader) Read(b []byte) (int, error) {
	if len(s.p) == 0 {
		return 0, io.EOF
	}
	n := copy(b, s.p)
	s.p = s.p[n:]
	return n, nil
}

// Err returns the first error the Decoder met, or nil.
func (d *Decoder) Err() error { return d.err }

// Fail records err (when no error is recorded yet), so that a caller's
// validation failure stops later reads like an I/O error would.
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// Read returns the number of bytes consumed so far.
func (d *Decoder) Read() int64 { return d.n }

// Remaining returns how many bytes are left when the input is a byte slice,
// and false for a stream.
func (d *Decoder) Remaining() (int64, bool) {
	if d.limit < 0 {
		return 0, false
	}
	return d.limit - d.n, true
}

// Need fails the decoder with ErrTooLarge unless n more bytes may be read:
// against the input length when it is known, and against max in any case.
// It reports whether reading may go on.
func (d *Decoder) Need(n, max uint64) bool {
	if d.err != nil {
		return false
	}
	if n > max {
		d.err = ErrTooLarge
		return false
	}
	if rem, ok := d.Remaining(); ok && n > uint64(rem) {
		d.err = ErrTruncated
		return false
	}
	return true
}

func (d *Decoder) fill(p []byte) bool {
	if d.err != nil {
		clear(p)
		return false
	}
	n, err := io.ReadFull(d.r, p)
	d.n += int64(n)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = ErrTruncated
		}
		d.err = err
		clear(p)
		return false
	}
	d.crc = crc32.Update(d.crc, castagnoli(), p)
	return true
}

// Uint8 reads one byte.
func (d *Decoder) Uint8() uint8 {
	d.fill(d.scratch[:1])
	return d.scratch[0]
}

// Uint16 reads a little-endian uint16.
func (d *Decoder) Uint16() uint16 {
	d.fill(d.scratch[:2])
	return binary.LittleEndian.Uint16(d.scratch[:])
}

// Uint32 reads a little-endian uint32.
func (d *Decoder) Uint32() uint32 {
	d.fill(d.scratch[:4])
	return binary.LittleEndian.Uint32(d.scratch[:])
}

// Uint64 reads a little-endian uint64.
func (d *Decoder) Uint64() uint64 {
	d.fill(d.scratch[:8])
	return binary.LittleEndian.Uint64(d.scratch[:])
}

// Bytes reads n bytes into a new slice. The slice grows as the data arrives,
// so a stream that ends early costs no more memory than it delivered. It
// returns nil after an error.
func (d *Decoder) Bytes(n uint64, max uint64) []byte {
	if !d.Need(n, max) {
		return nil
	}
	out := make([]byte, 0, min(n, decoderChunk))
	for uint64(len(out)) < n {
		k := min(n-uint64(len(out)), decoderChunk)
		start := len(out)
		out = append(out, make([]byte, k)...)
		if !d.fill(out[start:]) {
			return nil
		}
	}
	return out
}

// Words reads n little-endian words into dst[:n], which the caller sized
// (after checking n with [Decoder.Need] or against a bound of its own).
// For a stream whose length is unknown use [Decoder.WordsGrow].
func (d *Decoder) Words(dst []uint64) {
	if want := min(uint64(len(dst))*8, decoderChunk); uint64(len(d.chunk)) < want {
		d.chunk = make([]byte, want)
	}
	for len(dst) > 0 && d.err == nil {
		k := min(len(dst), len(d.chunk)/8)
		b := d.chunk[:k*8]
		if !d.fill(b) {
			return
		}
		for i := range dst[:k] {
			dst[i] = binary.LittleEndian.Uint64(b[i*8:])
		}
		dst = dst[k:]
	}
}

// WordsGrow reads n little-endian words into a new slice of length n+extra
// (the extra words are zero: room for padding the caller keeps after the
// payload). The slice grows as the data arrives, a chunk (1 MiB) at a
// time, so a header that claims more words than the stream holds costs at
// most about twice the bytes the stream delivered, or two chunks. The slice's capacity is a whole number of 64-byte
// cache lines, so that no other object shares its first and last lines
// (the cuckoo package's cacheLine explains why). It returns nil after an
// error.
func (d *Decoder) WordsGrow(n, extra, max uint64) []uint64 {
	if n > max {
		d.Fail(ErrTooLarge)
		return nil
	}
	if !d.Need(n*8, max*8) {
		return nil
	}
	if _, known := d.Remaining(); known {
		out := make([]uint64, n+extra, wholeLines(n+extra))
		d.Words(out[:n])
		if d.err != nil {
			return nil
		}
		return out
	}
	out := make([]uint64, 0, wholeLines(min(n+extra, decoderChunk/8)))
	for uint64(len(out)) < n {
		k := min(n-uint64(len(out)), decoderChunk/8)
		start := len(out)
		out = append(out, make([]uint64, k)...)
		d.Words(out[start:])
		if d.err != nil {
			return nil
		}
	}
	out = append(out, make([]uint64, extra)...)
	return out
}

// wholeLines rounds a number of words up to whole 64-byte lines.
func wholeLines(n uint64) uint64 { return (n + 7) &^ 7 }

// VerifyChecksum reads the 4-byte trailer and compares it with the CRC-32C
// of everything read before it. It returns the Decoder's error, ErrChecksum,
// or nil.
func (d *Decoder) VerifyChecksum() error {
	want := d.crc
	got := d.Uint32()
	if d.err != nil {
		return d.err
	}
	if got != want {
		d.err = ErrChecksum
	}
	return d.err
}

// ExpectEnd fails with ErrTooLarge unless a byte-slice input has been read
// to its end: trailing bytes after the checksum mean the input is not one
// structure. For streams it does nothing.
func (d *Decoder) ExpectEnd() error {
	if rem, ok := d.Remaining(); ok && rem != 0 && d.err == nil {
		d.err = ErrTrailing
	}
	return d.err
}
