package dedup

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
)

// TestLongLineKeyOfFieldsCostsItsSizeOnce: the key of a line longer than
// a block, built from several of its fields (--key 1,2, --csv), costs
// its size once, beside the line joined into one slice: the preparer
// hands the block the key it built rather than a copy of it, and keeps
// no buffer of that size for the lines after it. (The key was copied out
// of the extractor's scratch buffer, which kept its size for the rest of
// the run: a line of 100 MiB with --key 1,2 peaked at 5 times its size.)
// For a set that takes hashes, and for one that takes keys.
func TestLongLineKeyOfFieldsCostsItsSizeOnce(t *testing.T) {
	const n, size = 8 << 20, 4096
	input := append(bytes.Repeat([]byte("x"), n), " y\n"...)
	spec, err := ParseFieldSpec("1,2")
	if err != nil {
		t.Fatal(err)
	}
	for _, needs := range []Needs{{Hash: true, Seed: 1, Repeats: true}, {Keys: true}} {
		t.Run(fmt.Sprintf("keys=%v", needs.Keys), func(t *testing.T) {
			p := newPreparer(needs, NewKeyExtractor(spec, "", false), size)
			br := &blockReader{r: bytes.NewReader(input)}
			b := newBlock(size, needs)
			br.start(b)
			if !br.fill(b) || b.long == nil {
				t.Fatal("the line is not read as a long one")
			}
			var before, after, held runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			p.prepare(b)
			runtime.ReadMemStats(&after)
			if needs.Keys && len(b.Keys()[0]) < n {
				t.Fatalf("a key of %d bytes, want the first field's %d and more", len(b.Keys()[0]), n)
			}
			// The line joined, and its key: twice its size.
			if got := after.TotalAlloc - before.TotalAlloc; got > 2*n+n/4 {
				t.Errorf("preparing a line of %d MiB allocated %.1f MiB, over twice its size", n>>20, float64(got)/(1<<20))
			}
			// The block released, as the writer does: the memory of the
			// line and its key goes with it.
			clear(b.long[:cap(b.long)])
			b.long = nil
			if b.keys != nil {
				b.keys[0] = nil
			}
			runtime.GC()
			runtime.ReadMemStats(&held)
			if kept := int64(held.HeapAlloc) - int64(before.HeapAlloc) + n; kept > n/4 {
				t.Errorf("%.1f MiB still held once the block of the line is released", float64(kept)/(1<<20))
			}
			runtime.KeepAlive(p)
		})
	}
}
