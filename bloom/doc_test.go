package bloom_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/bloom"
)

// TestDocSizingTable checks the table of bits per key in doc.go against the
// constructors, so that it cannot go stale (sizing_gen.go regenerates it).
// The 1000× column of NewScalable, which needs 10^6 adds per row, is
// checked with CUCKOO_LONG=1 (and then neither with -short nor -race).
func TestDocSizingTable(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	const capacity = 1_000_000
	rows, in := 0, false
	for _, line := range strings.Split(string(src), "\n") {
		f := strings.Fields(strings.TrimPrefix(line, "//"))
		if !in {
			in = strings.Join(f, " ") == "bits/key k bits/key k bits/key 1× 1000×"
			continue
		}
		if len(f) == 0 {
			break
		}
		if len(f) != 9 || f[1] != "%" {
			t.Fatalf("doc.go: unexpected row in the sizing table: %q", line)
		}
		num := func(i int) float64 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				t.Fatalf("doc.go row %q: %v", line, err)
			}
			return v
		}
		p := num(0) / 100
		rows++
		perKey := func(bytes uint64, keys uint64) string {
			return fmt.Sprintf("%.2f", float64(bytes*8)/float64(keys))
		}
		b, _ := bloom.New(capacity, bloom.WithFalsePositiveRate(p), bloom.WithSeed(1))
		c, _ := bloom.NewClassic(capacity, bloom.WithFalsePositiveRate(p), bloom.WithSeed(1))
		n, _ := bloom.NewCounting(capacity, bloom.WithFalsePositiveRate(p), bloom.WithSeed(1))
		s, _ := bloom.NewScalable(capacity, bloom.WithFalsePositiveRate(p), bloom.WithSeed(1))
		want := []string{
			perKey(b.SizeInBytes(), capacity), strconv.Itoa(b.HashCount()),
			perKey(c.SizeInBytes(), capacity), strconv.Itoa(c.HashCount()),
			perKey(n.SizeInBytes(), capacity), perKey(s.SizeInBytes(), capacity),
		}
		for i, w := range want {
			if f[i+2] != w {
				t.Errorf("doc.go row %g: column %d says %s, the constructors give %s: run go run sizing_gen.go", p, i+2, f[i+2], w)
			}
		}
		if !full() {
			continue
		}
		g, _ := bloom.NewScalable(1000, bloom.WithFalsePositiveRate(p), bloom.WithSeed(1))
		var kb [8]byte
		for i := uint64(0); g.Len() < 1000*1000; i++ {
			for j := range kb {
				kb[j] = byte(i >> (8 * j))
			}
			g.Add(kb[:])
		}
		if got := perKey(g.SizeInBytes(), g.Len()); f[8] != got {
			t.Errorf("doc.go row %g: the 1000× column says %s, a grown filter gives %s", p, f[8], got)
		}
	}
	if rows != 7 {
		t.Errorf("found %d rows of the sizing table in doc.go, want 7", rows)
	}
}
