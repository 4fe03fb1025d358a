package resp_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/dedupkit/cuckoo/server/resp"
)

// pipeline returns n CF.ADD commands as a client pipelines them.
func pipeline(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		item := fmt.Sprintf("key:%012d", i)
		fmt.Fprintf(&b, "*3\r\n$6\r\nCF.ADD\r\n$2\r\ncf\r\n$%d\r\n%s\r\n", len(item), item)
	}
	return b.Bytes()
}

// BenchmarkReader reads pipelines of CF.ADD commands.
func BenchmarkReader(b *testing.B) {
	for _, n := range []int{1, 16} {
		data := pipeline(n)
		src := bytes.NewReader(data)
		b.Run(fmt.Sprintf("pipeline=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			rd := resp.NewReader(src, resp.Limits{})
			for b.Loop() {
				src.Reset(data)
				for range n {
					if _, err := rd.ReadCommand(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkWriter writes 16 integer replies and flushes them.
func BenchmarkWriter(b *testing.B) {
	b.ReportAllocs()
	w := resp.NewWriter(io.Discard, 0)
	for b.Loop() {
		for i := range 16 {
			w.Int(int64(i & 1))
		}
		w.Flush()
	}
}

// BenchmarkAppend encodes one reply element of each kind the server sends
// most, into a buffer with room: the encoders every reply goes through.
func BenchmarkAppend(b *testing.B) {
	value := bytes.Repeat([]byte("v"), 64)
	for _, bc := range []struct {
		name   string
		encode func(dst []byte) []byte
	}{
		{"kind=simple", func(dst []byte) []byte { return resp.AppendSimple(dst, "OK") }},
		{"kind=error", func(dst []byte) []byte { return resp.AppendError(dst, "ERR not found") }},
		{"kind=int/n=1", func(dst []byte) []byte { return resp.AppendInt(dst, 1) }},
		{"kind=int/n=123456789", func(dst []byte) []byte { return resp.AppendInt(dst, 123456789) }},
		{"kind=bulk/len=64", func(dst []byte) []byte { return resp.AppendBulk(dst, value) }},
		{"kind=bulkstring/len=5", func(dst []byte) []byte { return resp.AppendBulkString(dst, "hello") }},
		{"kind=array/n=16", func(dst []byte) []byte { return resp.AppendArray(dst, 16) }},
		{"kind=null2", resp.AppendNull2},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			dst := make([]byte, 0, 4096)
			for b.Loop() {
				dst = dst[:0]
				for range 16 {
					dst = bc.encode(dst)
				}
			}
		})
	}
}
