package dedup

import (
	"bytes"
	"io"
	"runtime/debug"
)

// DefaultBufferSize is the read buffer of a LineReader made with size 0.
const DefaultBufferSize = 256 << 10

// maxKeptLong is the largest assembly buffer for long lines a LineReader
// keeps between lines; a larger one (left by a rare huge line) is dropped
// so memory returns to the buffer size.
const maxKeptLong = 16 << 20

// LineReader splits a stream into lines without allocating per line. A
// line ends after '\n'; the last line of a stream may have no '\n'. Lines
// may hold any bytes (NUL, invalid UTF-8, '\r') and be of any length: a
// line longer than the buffer is read into pieces, each a full buffer
// that a new one replaces, and joined once into a slice of its exact size
// (kept for the next long line up to maxKeptLong). Growing one slice by
// appending would copy the line again at each growth, and hold the old
// and the new slice at once, near twice and a quarter the line at the
// last growth, plus the garbage of the growths before it; the pieces and
// the joined line cost the line's size twice, briefly, and once after.
//
// It reads with few large Reads, straight into its buffer, and finds line
// ends with bytes.IndexByte: the cost per line is a few nanoseconds plus
// the scan.
type LineReader struct {
	r        io.Reader
	buf      []byte
	pos, end int      // buf[pos:end] is read and not yet returned
	long     []byte   // the last long line, joined from its pieces
	pieces   [][]byte // the full buffers of the long line being read
	err      error    // the first error of r, io.EOF at the end
	read     uint64   // bytes read from r
	onRead   func(chunk []byte)
}

// NewLineReader returns a LineReader on r with a buffer of size bytes
// (DefaultBufferSize when size <= 0).
func NewLineReader(r io.Reader, size int) *LineReader {
	if size <= 0 {
		size = DefaultBufferSize
	}
	return &LineReader{r: r, buf: make([]byte, size)}
}

// Reset makes l read from r, keeping its buffers: lines never span two
// streams, as in awk.
func (l *LineReader) Reset(r io.Reader) {
	l.r, l.pos, l.end, l.err, l.read = r, 0, 0, nil, 0
}

// OnRead sets a function called after every Read from the underlying
// reader with the bytes it returned (valid only during the call): a cheap
// hook for progress reports, called once per buffer fill, not per line.
func (l *LineReader) OnRead(fn func(chunk []byte)) { l.onRead = fn }

// Next returns the next line, with its terminating '\n' if it has one.
// The slice points into l's buffers and is valid only until the next call.
// At the end of the stream, or after a read error, it returns ok = false;
// Err then tells which.
func (l *LineReader) Next() (line []byte, ok bool) {
	if i := bytes.IndexByte(l.buf[l.pos:l.end], '\n'); i >= 0 {
		line = l.buf[l.pos : l.pos+i+1]
		l.pos += i + 1
		return line, true
	}
	return l.next()
}

// NextBatch fills lines with the next lines, up to len(lines), and
// returns how many it filled: 0 only at the end of the stream (see Err).
// It returns the complete lines already in the buffer, or, when there is
// none, one line as Next does (reading as needed). The slices stay valid
// until the next call of Next or NextBatch, so a batch can be processed
// as a whole.
func (l *LineReader) NextBatch(lines [][]byte) int {
	n := 0
	for n < len(lines) {
		i := bytes.IndexByte(l.buf[l.pos:l.end], '\n')
		if i < 0 {
			break
		}
		lines[n] = l.buf[l.pos : l.pos+i+1]
		l.pos += i + 1
		n++
	}
	if n > 0 || len(lines) == 0 {
		return n
	}
	line, ok := l.next()
	if !ok {
		return 0
	}
	lines[0] = line
	return 1
}

// next is the slow path of Next: the buffer holds no complete line.
func (l *LineReader) next() ([]byte, bool) {
	if cap(l.long) > maxKeptLong {
		l.long = nil
	}
	empty := 0
	for {
		if l.err != nil {
			rest := l.buf[l.pos:l.end]
			l.pos = l.end
			if len(l.pieces) > 0 {
				return l.join(rest), true
			}
			return rest, len(rest) > 0
		}
		// INVARIANT: buf[pos:end] holds no '\n'. Move it to the front, or,
		// when it fills the whole buffer, make the buffer a piece of a long
		// line and read on into a new one.
		if l.pos > 0 {
			l.end = copy(l.buf, l.buf[l.pos:l.end])
			l.pos = 0
		}
		if l.end == len(l.buf) {
			l.pieces = append(l.pieces, l.buf)
			l.buf = make([]byte, len(l.buf))
			l.end = 0
		}
		old := l.end
		n, err := l.r.Read(l.buf[l.end:])
		if n < 0 || n > len(l.buf)-l.end {
			n, err = 0, io.ErrNoProgress // a broken Reader; never trust its count
		}
		l.end += n
		l.read += uint64(n)
		if l.onRead != nil && n > 0 {
			l.onRead(l.buf[old:l.end])
		}
		if err != nil {
			l.err = err
		} else if n == 0 {
			if empty++; empty >= 100 {
				l.err = io.ErrNoProgress
			}
		}
		if i := bytes.IndexByte(l.buf[old:l.end], '\n'); i >= 0 {
			e := old + i + 1
			l.pos = e
			if len(l.pieces) > 0 {
				return l.join(l.buf[:e]), true
			}
			return l.buf[:e], true
		}
	}
}

// join joins the pieces of a long line and its end, last, into l.long,
// and drops the pieces.
func (l *LineReader) join(last []byte) []byte {
	size := len(last)
	for _, p := range l.pieces {
		size += len(p)
	}
	if cap(l.long) < size {
		l.long = nil // not copied into the new one
		l.long = make([]byte, 0, size)
	}
	l.long = l.long[:0]
	for _, p := range l.pieces {
		l.long = append(l.long, p...)
	}
	l.long = append(l.long, last...)
	clear(l.pieces)
	l.pieces = l.pieces[:0]
	if size > bigLine {
		// The pieces are garbage, and would stay resident beside the
		// line and what is made of it next (a key of several fields, as
		// long again): collect them, and give their memory back.
		debug.FreeOSMemory()
	}
	return l.long
}

// Keep reports whether line, the line Next or NextBatch returned last,
// may be kept past the next call: whether it is a long line, joined into
// a slice of its own, which the reader then forgets and never reuses. A
// caller that must hold a line until later (a batch waiting for a reply)
// so takes a long one rather than copying it; a line in the read buffer
// it must copy.
func (l *LineReader) Keep(line []byte) bool {
	if len(line) == 0 || len(l.long) == 0 || &line[0] != &l.long[0] {
		return false
	}
	l.long = nil
	return true
}

// Err returns the error that ended the stream, or nil at a clean end.
func (l *LineReader) Err() error {
	if l.err == io.EOF {
		return nil
	}
	return l.err
}

// BytesRead returns the number of bytes read from the current stream.
func (l *LineReader) BytesRead() uint64 { return l.read }

// Content returns line without its terminator: a trailing "\n", and a
// "\r" before it (or a lone trailing "\r" of an unterminated last line),
// so that "a\r\n", "a\n" and "a" have the same content.
func Content(line []byte) []byte {
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
	}
	if n > 0 && line[n-1] == '\r' {
		n--
	}
	return line[:n]
}

// KeyReader reads lines and the key of each: the line's content, or the
// fields a KeyExtractor selects. It is the loop every command that reads
// keys shares.
type KeyReader struct {
	lr    *LineReader
	keyer *KeyExtractor
	line  uint64
	arena []byte // NextBatch's copies of keys built in the keyer's scratch
}

// NewKeyReader returns a KeyReader with a read buffer of size bytes
// (DefaultBufferSize when size <= 0) that keys lines with keyer (nil: the
// whole content). Call Reset before the first Next.
func NewKeyReader(keyer *KeyExtractor, size int) *KeyReader {
	return &KeyReader{lr: NewLineReader(nil, size), keyer: keyer}
}

// Reset makes k read from r, from line 1.
func (k *KeyReader) Reset(r io.Reader) {
	k.lr.Reset(r)
	k.line = 0
}

// OnRead sets the LineReader's hook (see LineReader.OnRead).
func (k *KeyReader) OnRead(fn func(chunk []byte)) { k.lr.OnRead(fn) }

// Next returns the next line (with its terminator, if any) and its key;
// both are valid until the next call. ok is false at the end (see Err).
func (k *KeyReader) Next() (line, key []byte, ok bool) {
	line, ok = k.lr.Next()
	if !ok {
		return nil, nil, false
	}
	k.line++
	key = Content(line)
	if k.keyer != nil {
		key = k.keyer.Key(key)
	}
	return line, key, true
}

// MaxBatch is the most lines KeyReader.NextBatch returns at once.
const MaxBatch = 256

// NextBatch fills lines and keys with the next lines and their keys, up to
// len(lines) and MaxBatch (keys must be as long), and returns how many: 0
// only at the end (see Err). All of them stay valid until the next call of
// Next or NextBatch (see LineReader.NextBatch).
func (k *KeyReader) NextBatch(lines, keys [][]byte) int {
	n := k.lr.NextBatch(lines[:min(len(lines), MaxBatch)])
	k.line += uint64(n)
	keys = keys[:n]
	if k.keyer == nil {
		for i := range keys {
			keys[i] = Content(lines[i])
		}
		return n
	}
	if k.keyer.SlicesContent() {
		for i := range keys {
			keys[i] = k.keyer.Key(Content(lines[i]))
		}
		return n
	}
	// The key may be built in the keyer's scratch buffer, which the next
	// key overwrites: copy each into the arena, then slice it.
	k.arena = k.arena[:0]
	var ends [MaxBatch]int
	for i := range keys {
		k.arena = append(k.arena, k.keyer.Key(Content(lines[i]))...)
		ends[i] = len(k.arena)
	}
	start := 0
	for i := range keys {
		keys[i] = k.arena[start:ends[i]:ends[i]]
		start = ends[i]
	}
	return n
}

// Keep is LineReader.Keep, for a line NextBatch or Next returned last.
func (k *KeyReader) Keep(line []byte) bool { return k.lr.Keep(line) }

// Line returns the number of the line Next returned last, from 1.
func (k *KeyReader) Line() uint64 { return k.line }

// Err returns the error that ended the stream, or nil at a clean end.
func (k *KeyReader) Err() error { return k.lr.Err() }
