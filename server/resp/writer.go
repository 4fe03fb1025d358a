package resp

import (
	"io"
)

// Writer buffers replies for one connection and sends them with Flush.
// Replies are shaped for the protocol version set with SetProtocol (2 by
// default). A Writer is not safe for concurrent use.
//
// Its error is sticky: once a write fails, or the buffered replies exceed
// the limit (ErrOutputLimit), the buffer is dropped, every later call does
// nothing, and Flush and Err return that error.
type Writer struct {
	w     io.Writer
	buf   []byte
	proto int
	limit int
	err   error
}

// maxKeptBuffer is the largest buffer a Writer keeps after a Flush; a
// larger one, grown by one big reply, is released.
const maxKeptBuffer = 1 << 20

// NewWriter returns a Writer to w that fails with ErrOutputLimit once more
// than limit bytes of replies are waiting for a Flush (0: no limit).
func NewWriter(w io.Writer, limit int) *Writer {
	return &Writer{w: w, buf: make([]byte, 0, 4096), proto: 2, limit: limit}
}

// SetProtocol selects RESP2 (2) or RESP3 (3) for the replies written after
// it. Any other value is taken as 2.
func (w *Writer) SetProtocol(version int) {
	if version != 3 {
		version = 2
	}
	w.proto = version
}

// Protocol returns the protocol version replies are written in.
func (w *Writer) Protocol() int { return w.proto }

// Buffered returns the number of bytes waiting for a Flush.
func (w *Writer) Buffered() int { return len(w.buf) }

// Err returns the sticky error, or nil.
func (w *Writer) Err() error { return w.err }

// Flush writes the buffered replies to the underlying writer in one call.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.w.Write(w.buf)
	if err != nil {
		w.fail(err)
		return err
	}
	if cap(w.buf) > maxKeptBuffer {
		w.buf = make([]byte, 0, 4096)
	} else {
		w.buf = w.buf[:0]
	}
	return nil
}

func (w *Writer) fail(err error) {
	w.err = err
	w.buf = nil
}

// check applies the output limit after an append.
func (w *Writer) check() {
	if w.limit > 0 && len(w.buf) > w.limit {
		w.fail(ErrOutputLimit)
	}
}

// Simple writes a simple string such as OK.
func (w *Writer) Simple(s string) {
	if w.err == nil {
		w.buf = AppendSimple(w.buf, s)
		w.check()
	}
}

// OK writes the simple string OK.
func (w *Writer) OK() { w.Simple("OK") }

// Error writes an error reply; msg should begin with a code such as ERR.
func (w *Writer) Error(msg string) {
	if w.err == nil {
		w.buf = AppendError(w.buf, msg)
		w.check()
	}
}

// Int writes an integer.
func (w *Writer) Int(n int64) {
	if w.err == nil {
		w.buf = AppendInt(w.buf, n)
		w.check()
	}
}

// Bulk writes a bulk string.
func (w *Writer) Bulk(b []byte) {
	if w.err == nil {
		w.buf = AppendBulk(w.buf, b)
		w.check()
	}
}

// BulkString writes a bulk string.
func (w *Writer) BulkString(s string) {
	if w.err == nil {
		w.buf = AppendBulkString(w.buf, s)
		w.check()
	}
}

// Null writes the null reply: $-1 in RESP2, _ in RESP3.
func (w *Writer) Null() {
	if w.err == nil {
		if w.proto == 3 {
			w.buf = AppendNull3(w.buf)
		} else {
			w.buf = AppendNull2(w.buf)
		}
		w.check()
	}
}

// Array writes the header of an array of n elements, which the caller then
// writes.
func (w *Writer) Array(n int) {
	if w.err == nil {
		w.buf = AppendArray(w.buf, n)
		w.check()
	}
}

// Map writes the header of a map of n key-value pairs, which the caller
// then writes key, value, key, value: a RESP3 map, or in RESP2 an array of
// 2n elements.
func (w *Writer) Map(n int) {
	if w.err == nil {
		if w.proto == 3 {
			w.buf = AppendMap(w.buf, n)
		} else {
			w.buf = AppendArray(w.buf, 2*n)
		}
		w.check()
	}
}

// Set writes the header of a set of n elements: a RESP3 set, or in RESP2
// an array.
func (w *Writer) Set(n int) {
	if w.err == nil {
		if w.proto == 3 {
			w.buf = AppendSet(w.buf, n)
		} else {
			w.buf = AppendArray(w.buf, n)
		}
		w.check()
	}
}

// Bool writes a boolean: #t or #f in RESP3, the integer 1 or 0 in RESP2.
func (w *Writer) Bool(b bool) {
	if w.err == nil {
		if w.proto == 3 {
			w.buf = AppendBool(w.buf, b)
		} else {
			n := int64(0)
			if b {
				n = 1
			}
			w.buf = AppendInt(w.buf, n)
		}
		w.check()
	}
}

// Double writes a floating-point number: a RESP3 double, or in RESP2 a bulk
// string of its shortest decimal form.
func (w *Writer) Double(f float64) {
	if w.err == nil {
		if w.proto == 3 {
			w.buf = AppendDouble(w.buf, f)
		} else {
			var tmp [32]byte
			w.buf = AppendBulk(w.buf, appendFloat(tmp[:0], f))
		}
		w.check()
	}
}

// Verbatim writes text meant for people (INFO's reply): a RESP3 verbatim
// string of format txt, or in RESP2 a bulk string.
func (w *Writer) Verbatim(s string) {
	if w.err == nil {
		if w.proto == 3 {
			w.buf = AppendVerbatim(w.buf, s)
		} else {
			w.buf = AppendBulkString(w.buf, s)
		}
		w.check()
	}
}

// Raw writes bytes already encoded as RESP.
func (w *Writer) Raw(b []byte) {
	if w.err == nil {
		w.buf = append(w.buf, b...)
		w.check()
	}
}
