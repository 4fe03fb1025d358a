package resp_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/dedupkit/cuckoo/server/resp"
)

func TestWriterReplies(t *testing.T) {
	for _, tc := range []struct {
		name       string
		write      func(w *resp.Writer)
		resp2, rs3 string
	}{
		{"simple", func(w *resp.Writer) { w.OK() }, "+OK\r\n", "+OK\r\n"},
		{"simple-newlines", func(w *resp.Writer) { w.Simple("a\r\nb") }, "+a  b\r\n", "+a  b\r\n"},
		{"error", func(w *resp.Writer) { w.Error("ERR not found") }, "-ERR not found\r\n", "-ERR not found\r\n"},
		{"error-newlines", func(w *resp.Writer) { w.Error("ERR a\nb") }, "-ERR a b\r\n", "-ERR a b\r\n"},
		{"int", func(w *resp.Writer) { w.Int(-12) }, ":-12\r\n", ":-12\r\n"},
		{"bulk", func(w *resp.Writer) { w.Bulk([]byte("a\r\nb")) }, "$4\r\na\r\nb\r\n", "$4\r\na\r\nb\r\n"},
		{"bulk-empty", func(w *resp.Writer) { w.BulkString("") }, "$0\r\n\r\n", "$0\r\n\r\n"},
		{"null", func(w *resp.Writer) { w.Null() }, "$-1\r\n", "_\r\n"},
		{"array", func(w *resp.Writer) { w.Array(2); w.Int(1); w.Null() }, "*2\r\n:1\r\n$-1\r\n", "*2\r\n:1\r\n_\r\n"},
		{"map", func(w *resp.Writer) { w.Map(1); w.Simple("a"); w.Int(1) }, "*2\r\n+a\r\n:1\r\n", "%1\r\n+a\r\n:1\r\n"},
		{"set", func(w *resp.Writer) { w.Set(1); w.BulkString("x") }, "*1\r\n$1\r\nx\r\n", "~1\r\n$1\r\nx\r\n"},
		{"bool", func(w *resp.Writer) { w.Bool(true); w.Bool(false) }, ":1\r\n:0\r\n", "#t\r\n#f\r\n"},
		{"double", func(w *resp.Writer) { w.Double(0.001) }, "$5\r\n0.001\r\n", ",0.001\r\n"},
		{"double-inf", func(w *resp.Writer) { w.Double(math.Inf(-1)) }, "$4\r\n-inf\r\n", ",-inf\r\n"},
		{"verbatim", func(w *resp.Writer) { w.Verbatim("# Server\r\n") }, "$10\r\n# Server\r\n\r\n", "=14\r\ntxt:# Server\r\n\r\n"},
		{"raw", func(w *resp.Writer) { w.Raw([]byte(":1\r\n")) }, ":1\r\n", ":1\r\n"},
	} {
		for _, proto := range []int{2, 3} {
			var out bytes.Buffer
			w := resp.NewWriter(&out, 0)
			w.SetProtocol(proto)
			tc.write(w)
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			want := tc.resp2
			if proto == 3 {
				want = tc.rs3
			}
			if out.String() != want {
				t.Errorf("%s, RESP%d: %q, want %q", tc.name, proto, out.String(), want)
			}
		}
	}
}

func TestWriterOutputLimit(t *testing.T) {
	var out bytes.Buffer
	w := resp.NewWriter(&out, 10)
	w.Int(1)            // 4 bytes
	w.BulkString("abc") // 9 more: past the limit
	w.Int(2)            // ignored
	if err := w.Flush(); !errors.Is(err, resp.ErrOutputLimit) {
		t.Fatalf("Flush: %v, want ErrOutputLimit", err)
	}
	if out.Len() != 0 || w.Err() != resp.ErrOutputLimit {
		t.Fatalf("wrote %q, Err %v: want nothing written and a sticky error", out.String(), w.Err())
	}
}

type failWriter struct{}

var errBroken = errors.New("broken pipe")

func (failWriter) Write(p []byte) (int, error) { return 0, errBroken }

func TestWriterStickyWriteError(t *testing.T) {
	w := resp.NewWriter(failWriter{}, 0)
	w.OK()
	if err := w.Flush(); err != errBroken {
		t.Fatalf("Flush: %v", err)
	}
	w.OK()
	if w.Buffered() != 0 || w.Flush() != errBroken {
		t.Fatal("the write error is not sticky")
	}
}

func TestWriterAllocs(t *testing.T) {
	w := resp.NewWriter(discard{}, 0)
	allocs := testing.AllocsPerRun(100, func() {
		w.Array(3)
		w.Int(1)
		w.Bool(true)
		w.BulkString("abc")
		w.Null()
		w.Double(1.5)
		w.Flush()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per batch of replies, want 0", allocs)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
