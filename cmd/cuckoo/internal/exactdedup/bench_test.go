package exactdedup_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/exactdedup"
	"github.com/dedupkit/cuckoo/internal/urlgen"
)

// BenchmarkExact measures dedup --exact on 1M URL-like lines (30 %
// repeats): the pipeline, the scratch log and its index, on one goroutine
// and on several.
func BenchmarkExact(b *testing.B) {
	var in bytes.Buffer
	g := urlgen.New(1, 0.3)
	var line []byte
	for range 1_000_000 {
		line, _ = g.Append(line[:0])
		in.Write(line)
	}
	data := in.Bytes()
	for _, seq := range []bool{true, false} {
		b.Run(fmt.Sprintf("n=1M/sequential=%v", seq), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				d, err := exactdedup.New(io.Discard, exactdedup.Config{TempDir: b.TempDir(), Lines: 1_000_000, Sequential: seq})
				if err != nil {
					b.Fatal(err)
				}
				if err := d.Run(bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
				d.Flush()
				d.Close()
			}
		})
	}
}
