package dedup

import (
	"bytes"
	"io"
	"strconv"
	"sync"
	"testing"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
	"github.com/dedupkit/cuckoo/internal/urlgen"
)

// urlInput returns n URL-like lines with 30 % repeats, built once per n.
var urlInput = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	g := urlgen.New(1, 0.3)
	line := make([]byte, 0, 128)
	for range 1_000_000 {
		line, _ = g.Append(line[:0])
		b.Write(line)
	}
	return b.Bytes()
})

// BenchmarkDedup measures the whole engine on 1M URL-like lines (30 %
// repeats): splitting, hashing, the filter and the output buffer.
func BenchmarkDedup(b *testing.B) {
	data := urlInput()
	for _, fpr := range []float64{1e-4, 1e-7} {
		b.Run("n=1M/fpr="+strconv.FormatFloat(fpr, 'g', -1, 64), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			r := bytes.NewReader(data)
			for b.Loop() {
				seen, err := filterfile.New(filterfile.Spec{Kind: filterfile.Cuckoo, Capacity: 1_000_000, FPR: fpr, Seed: 1, SeedSet: true})
				if err != nil {
					b.Fatal(err)
				}
				d := New(seen, io.Discard, Config{})
				r.Reset(data)
				if err := d.Run(r); err != nil {
					b.Fatal(err)
				}
				d.Flush()
			}
		})
	}
}

// BenchmarkLineReader measures splitting alone.
func BenchmarkLineReader(b *testing.B) {
	data := urlInput()
	b.Run("n=1M", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		r := bytes.NewReader(data)
		l := NewLineReader(r, 0)
		for b.Loop() {
			r.Reset(data)
			l.Reset(r)
			for _, ok := l.Next(); ok; _, ok = l.Next() {
			}
		}
	})
}
