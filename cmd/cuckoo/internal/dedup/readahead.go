package dedup

import (
	"bytes"
	"io"
	"time"
)

// Read-ahead bounds of an input of unknown size (a pipe).
const (
	// ReadAheadBytes is the most bytes ReadAhead holds: an input that ends
	// within them is counted exactly, as a file of that size is.
	ReadAheadBytes = 8 << 20
	// ReadAheadTime is the longest ReadAhead waits in all, and
	// ReadAheadIdle the longest it waits for the next bytes: a stream that
	// comes slowly (a log being written) is not held back, it is only not
	// counted.
	ReadAheadTime = time.Second
	ReadAheadIdle = 100 * time.Millisecond
)

// Ahead is the start of an input read ahead of its lines, to size a
// filter from; its Reader gives the whole input back, those bytes first.
type Ahead struct {
	r    io.Reader
	buf  []byte // read ahead and not yet given back: buf[off:]
	off  int
	done bool  // the read-ahead reached the end of the input or an error
	err  error // that error, nil at the end (given back after buf)
	// pending is a Read of r into buf[len(buf):cap(buf)] still under way
	// when the read-ahead stopped; Read waits for it after buf.
	pending chan aheadRead
	lines   uint64
}

type aheadRead struct {
	n   int
	err error
}

// ReadAhead reads the start of r, up to limit bytes (ReadAheadBytes when
// limit <= 0), and stops early when r ends, fails, gives nothing for idle,
// or after total in all (ReadAheadIdle and ReadAheadTime when 0). A Read
// still waiting when it stops is not abandoned: the Ahead's Reader waits
// for its bytes in turn, so nothing of r is lost or reordered.
func ReadAhead(r io.Reader, limit int, total, idle time.Duration) *Ahead {
	if limit <= 0 {
		limit = ReadAheadBytes
	}
	if total <= 0 {
		total = ReadAheadTime
	}
	if idle <= 0 {
		idle = ReadAheadIdle
	}
	a := &Ahead{r: r, buf: make([]byte, 0, limit)}
	end := time.Now().Add(total)
	timer := time.NewTimer(min(idle, total))
	defer timer.Stop()
	for len(a.buf) < limit {
		res := make(chan aheadRead, 1)
		go func(p []byte) {
			n, err := r.Read(p)
			res <- aheadRead{n, err}
		}(a.buf[len(a.buf):limit])
		select {
		case got := <-res:
			a.buf = a.buf[:len(a.buf)+got.n]
			if got.err != nil {
				a.finish(got.err)
				return a.count()
			}
		case <-timer.C:
			a.pending = res
			return a.count()
		}
		left := time.Until(end)
		if left <= 0 {
			return a.count()
		}
		timer.Reset(min(idle, left))
	}
	return a.count()
}

// finish records the error that ended the input: io.EOF, or a failure.
func (a *Ahead) finish(err error) {
	a.done = true
	if err != io.EOF {
		a.err = err
	}
}

// count counts the lines read ahead.
func (a *Ahead) count() *Ahead {
	a.lines = uint64(bytes.Count(a.buf, []byte{'\n'}))
	if a.Complete() && len(a.buf) > 0 && a.buf[len(a.buf)-1] != '\n' {
		a.lines++
	}
	return a
}

// Complete reports whether the read-ahead holds the whole input: it
// reached its end without an error.
func (a *Ahead) Complete() bool { return a.done && a.err == nil }

// Full reports whether the read-ahead stopped at its limit of bytes.
func (a *Ahead) Full() bool { return !a.done && a.pending == nil && len(a.buf) == cap(a.buf) }

// Lines returns the lines read ahead (a last one without '\n' counts
// when the input ended there).
func (a *Ahead) Lines() uint64 { return a.lines }

// Bytes returns how many bytes were read ahead.
func (a *Ahead) Bytes() int { return len(a.buf) }

// Read gives back the input: the bytes read ahead, then the rest of it.
func (a *Ahead) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if a.off == len(a.buf) && a.pending != nil {
		got := <-a.pending
		a.pending = nil
		a.buf = a.buf[:len(a.buf)+got.n]
		if got.err != nil {
			a.finish(got.err)
		}
	}
	if a.off < len(a.buf) {
		n := copy(p, a.buf[a.off:])
		a.off += n
		if a.off == len(a.buf) && a.pending == nil {
			a.buf, a.off = a.buf[:0:0], 0 // the bytes are given back: free them
		}
		return n, nil
	}
	if a.done {
		if a.err != nil {
			return 0, a.err
		}
		return 0, io.EOF
	}
	return a.r.Read(p)
}
