package resp

import (
	"bytes"
	"errors"
	"io"
)

// Limits bound what one request may hold. A request past a limit is a
// protocol error, detected from its header before its data is read.
type Limits struct {
	// MaxBulk is the largest bulk string, in bytes (Redis:
	// proto-max-bulk-len, 512 MiB).
	MaxBulk int
	// MaxArray is the largest number of arguments of one command.
	MaxArray int
	// MaxInline is the longest inline command line, and the longest
	// header line of an array or bulk string, in bytes (Redis: 64 KiB).
	MaxInline int
	// MaxCommand is the most bytes one command may take on the wire,
	// headers included: the most a Reader ever buffers (Redis:
	// client-query-buffer-limit, 1 GiB). A command past it fails with
	// ErrQueryBufferLimit.
	MaxCommand int
}

// DefaultLimits are Redis's defaults, with at most 1,048,576 arguments per
// command.
var DefaultLimits = Limits{
	MaxBulk:    512 << 20,
	MaxArray:   1 << 20,
	MaxInline:  64 << 10,
	MaxCommand: 1 << 30,
}

const (
	initialBuffer = 16 << 10
	// maxIdleBuffer is the largest buffer an idle Reader keeps: one grown
	// for a big command is released once the command has been read.
	maxIdleBuffer = 1 << 20
)

// Reader reads commands from a stream of RESP arrays of bulk strings and
// inline lines. It buffers the stream, so a pipeline of commands arrives
// with few reads. A Reader is not safe for concurrent use.
//
// The arguments it returns point into its buffer: they stay valid until
// the next call of Next, Fill, ReadCommand or Release, and must be copied
// to be kept.
//
// Its buffer grows with the data that arrives, up to one command of
// Limits.MaxCommand, and shrinks back once a big command has been read;
// it comes from the Go heap, or from the Memory given to SetMemory.
//
// After a protocol error or a read error, every later call returns the
// same error.
type Reader struct {
	rd  io.Reader
	mem Memory // nil: the Go heap
	buf []byte // nil until the first Fill, and after Release
	r   int    // start of unread data (and of the partial command)
	w   int    // end of data
	lim Limits

	// A command whose array header has been read but not all its
	// arguments: argc > 0, pos is where parsing resumes and offs holds
	// the (start, end) of each argument read, all relative to r, so that
	// they survive the buffer moving.
	argc int
	pos  int
	offs []int
	// need is the length from r the partial command needs at least,
	// when a bulk header told it: Fill grows the buffer to hold it.
	need int

	args [][]byte
	err  error
}

// Memory provides a Reader's buffer, when the Go heap should not (a server
// that counts its clients' buffers, or returns a big one to the system as
// soon as it is given back). A Reader calls it only when its buffer must
// grow, shrink or go: never for a command that fits in the buffer it has.
type Memory interface {
	// Resize returns a buffer of at least size bytes whose first keep
	// bytes are buf's, and takes buf back (buf is nil for the first
	// buffer). With size 0 it takes buf back and returns nil. On an error
	// buf stays the caller's, unchanged. A Reader passes back exactly the
	// slices Resize returned it, and never uses one after passing it.
	Resize(buf []byte, keep, size int) ([]byte, error)
}

// errReleased is the sticky error of a Reader after Release.
var errReleased = errors.New("resp: Reader released")

// NewReader returns a Reader of rd with the given limits; zero fields of
// lim take the value of DefaultLimits. It allocates its buffer at its first
// read.
func NewReader(rd io.Reader, lim Limits) *Reader {
	r := &Reader{rd: rd}
	r.SetLimits(lim)
	return r
}

// SetMemory makes the Reader take its buffers from m (nil: the Go heap).
// It must be called before the first read.
func (r *Reader) SetMemory(m Memory) { r.mem = m }

// Release gives the Reader's buffer back, dropping what it holds; the
// arguments it returned are invalid from then on, and every later call
// fails, until Reset. A Reader whose buffers come from a Memory must be
// released once it is no longer needed.
func (r *Reader) Release() {
	r.resize(0, 0)
	r.Reset(nil)
	r.err = errReleased
}

// resize replaces the buffer by one of at least size bytes (none for 0)
// that begins with the first keep bytes of the current one.
func (r *Reader) resize(keep, size int) error {
	if r.mem != nil {
		if r.buf == nil && size == 0 {
			return nil
		}
		nb, err := r.mem.Resize(r.buf, keep, size)
		if err != nil {
			return err
		}
		r.buf = nb
		return nil
	}
	var nb []byte
	if size > 0 {
		nb = make([]byte, size)
		copy(nb, r.buf[:keep])
	}
	r.buf = nb
	return nil
}

// SetLimits changes the limits for the requests not yet parsed; zero fields
// take the value of DefaultLimits.
func (r *Reader) SetLimits(lim Limits) {
	if lim.MaxBulk <= 0 {
		lim.MaxBulk = DefaultLimits.MaxBulk
	}
	if lim.MaxArray <= 0 {
		lim.MaxArray = DefaultLimits.MaxArray
	}
	if lim.MaxInline <= 0 {
		lim.MaxInline = DefaultLimits.MaxInline
	}
	if lim.MaxCommand <= 0 {
		lim.MaxCommand = DefaultLimits.MaxCommand
	}
	r.lim = lim
}

// Reset discards all state and makes the Reader read from rd, keeping its
// buffer and limits.
func (r *Reader) Reset(rd io.Reader) {
	r.rd = rd
	r.r, r.w, r.argc, r.pos, r.need = 0, 0, 0, 0, 0
	r.offs = r.offs[:0]
	r.err = nil
}

// Buffered returns the number of bytes read from the stream and not yet
// returned as commands.
func (r *Reader) Buffered() int { return r.w - r.r }

// ReadCommand returns the next command, reading from the stream as needed.
// It returns io.EOF when the stream ends between commands and
// io.ErrUnexpectedEOF when it ends inside one.
func (r *Reader) ReadCommand() ([][]byte, error) {
	for {
		args, err := r.Next()
		if args != nil || err != nil {
			return args, err
		}
		if err := r.Fill(); err != nil {
			return nil, err
		}
	}
}

// Next returns the next command if the buffered data holds all of it, and
// (nil, nil) if it does not: then Fill must read more. It never reads from
// the stream. Empty commands (a blank inline line, an array of length 0 or
// -1) are skipped, as Redis skips them.
func (r *Reader) Next() ([][]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	for {
		if r.argc == 0 {
			if r.r == r.w {
				return nil, nil
			}
			if r.buf[r.r] != '*' {
				args, ok, err := r.inline()
				if err != nil || !ok {
					return nil, r.setErr(err)
				}
				if len(args) == 0 {
					continue
				}
				return args, nil
			}
			ok, err := r.arrayHeader()
			if err != nil || !ok {
				return nil, r.setErr(err)
			}
			if r.argc == 0 {
				continue // *0 or *-1: nothing to run
			}
		}
		ok, err := r.bulks()
		if err != nil || !ok {
			return nil, r.setErr(err)
		}
		r.args = r.args[:0]
		for i := 0; i < len(r.offs); i += 2 {
			s, e := r.r+r.offs[i], r.r+r.offs[i+1]
			r.args = append(r.args, r.buf[s:e:e])
		}
		r.r += r.pos
		r.argc, r.pos, r.need = 0, 0, 0
		r.offs = r.offs[:0]
		return r.args, nil
	}
}

func (r *Reader) setErr(err error) error {
	if err != nil {
		r.err = err
	}
	return err
}

// line returns the end (the index of '\n') of the line that starts at from,
// or -1 if the buffer has no '\n' after from yet.
func (r *Reader) line(from int) int {
	i := bytes.IndexByte(r.buf[from:r.w], '\n')
	if i < 0 {
		return -1
	}
	return from + i
}

// tooLong reports whether the line that starts at from and ends at nl (-1:
// not yet) is, or will be, longer than MaxInline bytes before its "\r\n".
func (r *Reader) tooLong(from, nl int) bool {
	if nl < 0 {
		n := r.w - from
		return n > r.lim.MaxInline+1 || n == r.lim.MaxInline+1 && r.buf[r.w-1] != '\r'
	}
	n := nl - from
	if n > 0 && r.buf[nl-1] == '\r' {
		n--
	}
	return n > r.lim.MaxInline
}

// arrayHeader parses "*<n>\r\n" at r.r and sets argc and pos.
func (r *Reader) arrayHeader() (bool, error) {
	nl := r.line(r.r)
	if r.tooLong(r.r, nl) {
		return false, errBigMultibulk
	}
	if nl < 0 {
		return false, nil
	}
	if r.buf[nl-1] != '\r' {
		return false, errInvalidMultibulk
	}
	n, ok := parseLen(r.buf[r.r+1 : nl-1])
	if !ok {
		return false, errInvalidMultibulk
	}
	if n > int64(r.lim.MaxArray) {
		return false, ErrArrayTooLong
	}
	if n <= 0 {
		r.r = nl + 1
		return true, nil
	}
	r.argc = int(n)
	r.pos = nl + 1 - r.r
	return true, nil
}

// bulks parses the bulk strings of the current command from pos on. It
// reports false when the buffer ends first.
func (r *Reader) bulks() (bool, error) {
	for len(r.offs)/2 < r.argc {
		p := r.r + r.pos
		if p >= r.w {
			return false, nil
		}
		if r.buf[p] != '$' {
			return false, &ProtocolError{"expected '$', got '" + string(r.buf[p]) + "'"}
		}
		nl := r.line(p)
		if r.tooLong(p, nl) {
			return false, errBigBulkCount
		}
		if nl < 0 {
			return false, nil
		}
		if r.buf[nl-1] != '\r' {
			return false, errInvalidBulk
		}
		n, ok := parseLen(r.buf[p+1 : nl-1])
		if !ok || n < 0 {
			return false, errInvalidBulk
		}
		if n > int64(r.lim.MaxBulk) {
			return false, ErrBulkTooLong
		}
		start := nl + 1
		end := start + int(n)
		if end+2-r.r > r.lim.MaxCommand {
			return false, ErrQueryBufferLimit
		}
		if end+2 > r.w {
			r.need = end + 2 - r.r
			return false, nil
		}
		if r.buf[end] != '\r' || r.buf[end+1] != '\n' {
			return false, errBulkCRLF
		}
		r.offs = append(r.offs, start-r.r, end-r.r)
		r.pos = end + 2 - r.r
	}
	return true, nil
}

// parseLen parses a length as Redis does: an optional '-' and decimal
// digits, no sign '+', no leading zeros, no spaces, at most 18 digits.
func parseLen(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// inline parses an inline command line at r.r, splitting it into words in
// place as Redis's sdssplitargs does: words are separated by blanks;
// "double quotes" take the escapes \n \r \t \b \a \xHH and \<c> for c;
// 'single quotes' take \' only; a closing quote must end the word.
func (r *Reader) inline() ([][]byte, bool, error) {
	nl := r.line(r.r)
	if r.tooLong(r.r, nl) {
		return nil, false, errBigInline
	}
	if nl < 0 {
		return nil, false, nil
	}
	line := r.buf[r.r:nl]
	r.r = nl + 1
	args, err := splitInline(line, r.args[:0])
	if err != nil {
		return nil, false, err
	}
	if len(args) > r.lim.MaxArray {
		return nil, false, ErrArrayTooLong
	}
	r.args = args
	return args, true, nil
}

func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// splitInline splits line into words, unescaping them in place (a word is
// never longer than its source), and appends them to args.
func splitInline(line []byte, args [][]byte) ([][]byte, error) {
	i := 0
	for {
		for i < len(line) && isBlank(line[i]) {
			i++
		}
		if i == len(line) {
			return args, nil
		}
		start := i // the word is written from here, in place
		o := i
		var quote byte // the open quote, or 0
	word:
		for {
			if i == len(line) {
				if quote != 0 {
					return nil, errUnbalanced
				}
				break
			}
			c := line[i]
			switch {
			case quote == 0 && isBlank(c):
				break word
			case quote == 0 && (c == '"' || c == '\''):
				quote = c
				i++
				continue
			case quote != 0 && c == quote:
				i++
				if i < len(line) && !isBlank(line[i]) {
					return nil, errUnbalanced
				}
				break word
			case quote == '"' && c == '\\' && i+3 < len(line) && line[i+1] == 'x':
				hi, ok1 := hexVal(line[i+2])
				lo, ok2 := hexVal(line[i+3])
				if ok1 && ok2 {
					c, i = hi<<4|lo, i+3
				} else {
					c, i = 'x', i+1
				}
			case quote == '"' && c == '\\' && i+1 < len(line):
				i++
				c = line[i]
				switch c {
				case 'n':
					c = '\n'
				case 'r':
					c = '\r'
				case 't':
					c = '\t'
				case 'b':
					c = '\b'
				case 'a':
					c = '\a'
				}
			case quote == '\'' && c == '\\' && i+1 < len(line) && line[i+1] == '\'':
				c, i = '\'', i+1
			}
			line[o] = c
			o++
			i++
		}
		args = append(args, line[start:o:o])
	}
}

// Fill reads once from the stream into the buffer, first making room: it
// moves the unread data to the front, and when one command fills the whole
// buffer it doubles it. The buffer grows with the data that arrives, never
// with what a header announces, so a 1 GB length header with no data
// behind it costs nothing; and once a command that made it grow has been
// read, the buffer goes back to its first size.
func (r *Reader) Fill() error {
	if r.err != nil {
		return r.err
	}
	if r.r == r.w {
		r.r, r.w = 0, 0
	}
	switch {
	case r.buf == nil:
		if err := r.resize(0, initialBuffer); err != nil {
			return r.setErr(err)
		}
	case len(r.buf) > maxIdleBuffer && r.argc == 0 && r.w-r.r <= initialBuffer/2:
		// A big command has been read, and what follows it is small.
		copy(r.buf, r.buf[r.r:r.w])
		r.w -= r.r
		r.r = 0
		if err := r.resize(r.w, initialBuffer); err != nil {
			return r.setErr(err)
		}
	}
	if r.w == len(r.buf) {
		if r.r > 0 {
			copy(r.buf, r.buf[r.r:r.w])
			r.w -= r.r
			r.r = 0
		} else {
			// bulks() refuses a command past MaxCommand from its headers;
			// the inline headers of the next one may follow it.
			limit := r.lim.MaxCommand + r.lim.MaxInline
			if len(r.buf) >= limit {
				return r.setErr(ErrQueryBufferLimit)
			}
			size := 2 * len(r.buf)
			if r.need > r.w && size > r.need {
				size = r.need // the command's exact size is known
			}
			if err := r.resize(r.w, min(size, limit)); err != nil {
				return r.setErr(err)
			}
		}
	}
	n, err := r.rd.Read(r.buf[r.w:])
	r.w += n
	if err != nil && n == 0 {
		if err == io.EOF && (r.w > r.r || r.argc > 0) {
			err = io.ErrUnexpectedEOF
		}
		return r.setErr(err)
	}
	return nil
}
