package fields

import (
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestKeyOfALongLineAllocatesItsSizeOnce: the key of fields of a long
// line (several fields, or CSV) is built in one buffer of about its size
// (or the line's, when the key is shorter),
// not in a scratch buffer grown by appending, which copies the key so far
// at each growth and holds the old and the new buffer at once (a line of
// 100 MiB with --key 1-1048576 peaked at 4.5 times its size). The keys
// are those of the encoding Key documents, byte for byte.
func TestKeyOfALongLineAllocatesItsSizeOnce(t *testing.T) {
	const n = 4 << 20
	half, eighth := strings.Repeat("x", n/2), strings.Repeat("y", n/8)
	for _, c := range []struct {
		name, spec, delim string
		csv               bool
		line, want        string
	}{
		{"two-halves", "1,2", "", false, half + " " + half, enc(half, half)},
		{"eight-fields", "1-", ",", false, strings.Repeat(eighth+",", 7) + eighth, enc(slices.Repeat([]string{eighth}, 8)...)},
		{"huge-range", "1-1048576", "/", false, half + "/" + half, enc(half, half) + strings.Repeat("\x00", 1<<20-2)},
		{"csv-quoted", "1,2", ",", true, `"` + half + `",` + half, enc(half, half)},
		{"csv-escaped", "2,3", ",", true, `a,"` + strings.Repeat(`""`, n/4) + `",` + half, enc(strings.Repeat(`"`, n/4), half)},
		{"csv-single-escaped", "2", ",", true, `a,"` + strings.Repeat(`""`, n/4) + `",` + half, strings.Repeat(`"`, n/4)},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseSpec(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			k := NewKeyExtractor(s, c.delim, c.csv)
			line := []byte(c.line)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			key := k.Key(line)
			runtime.ReadMemStats(&after)
			if string(key) != c.want {
				t.Fatalf("a key of %d bytes, not the %d of the encoding", len(key), len(c.want))
			}
			if got, size := after.TotalAlloc-before.TotalAlloc, max(len(key), len(line)); got > uint64(size+size/16) {
				t.Errorf("a key of %.1f MiB allocated %.1f MiB", float64(len(key))/(1<<20), float64(got)/(1<<20))
			}
		})
	}
}
