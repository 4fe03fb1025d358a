package cuckoo_test

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
)

// testRand returns a generator for a randomized test and logs its seed so a
// failure can be replayed with -seed.
func testRand(t testing.TB) *rand.Rand { return testseed.Rand(t) }

// key returns the 16-byte key number i of a family: family 0 holds the keys
// tests add, other families hold keys never added.
func key(family, i uint64) []byte {
	var b [16]byte
	putKey(&b, family, i)
	return b[:]
}

// putKey writes key(family, i) into b, for loops that must not allocate.
func putKey(b *[16]byte, family, i uint64) {
	binary.LittleEndian.PutUint64(b[:8], i)
	binary.LittleEndian.PutUint64(b[8:], family*0x9e3779b97f4a7c15+0x1234)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32c(p []byte) uint32 { return crc32.Checksum(p, castagnoli) }

// layout is a bucket layout the shape tests run through: b-slot plain
// buckets, or 4-slot semi-sorted ones.
type layout struct {
	b    int
	semi bool
}

var layouts = []layout{{2, false}, {4, false}, {8, false}, {4, true}}

// opts returns the options of the layout with fingerprint bits, then more.
func (l layout) opts(bits int, more ...cuckoo.Option) []cuckoo.Option {
	o := []cuckoo.Option{cuckoo.WithBucketSize(l.b), cuckoo.WithFingerprintBits(bits)}
	if l.semi {
		o = append(o, cuckoo.WithSemiSorting())
	}
	return append(o, more...)
}

func (l layout) String() string {
	if l.semi {
		return fmt.Sprintf("b=%d/semi", l.b)
	}
	return fmt.Sprintf("b=%d", l.b)
}

// slotBits is what one slot costs in the layout.
func (l layout) slotBits(bits int) int {
	if l.semi {
		return bits - 1
	}
	return bits
}

// size picks a test's size: normal, in -short mode, or under the race
// detector (which also compiles in the invariant checks). Sizes shrink;
// bounds never loosen.
func size(normal, short, race int) int {
	switch {
	case testlong.RaceEnabled:
		return race
	case testing.Short():
		return short
	}
	return normal
}

// sized picks the size of a test that has a long version: the long
// checks' (CUCKOO_LONG=1, internal/testlong), the quick run's (README's
// `go test ./...`), -short's, or the race detector's. Sizes shrink;
// bounds never loosen.
func sized(long, quick, short, race int) int {
	switch {
	case testlong.RaceEnabled:
		return race
	case testing.Short():
		return short
	case testlong.Enabled():
		return long
	}
	return quick
}

// longRun reports whether a test runs its long version: when the long
// checks run (CUCKOO_LONG=1), outside -short and the race detector.
func longRun() bool { return testlong.Enabled() && !testing.Short() && !testlong.RaceEnabled }

var update = flag.Bool("update", false, "rewrite the golden files of the current format version and the fuzz seed corpus (review the diff)")

// mustMarshal returns the encoding of a Filter, Scalable or Concurrent.
func mustMarshal(t testing.TB, f interface{ MarshalBinary() ([]byte, error) }) []byte {
	data, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// reseal recomputes the checksum of an encoding edited by a test, so that
// the decoder's structural checks (not the checksum) must catch the edit.
func reseal(data []byte) []byte {
	body := data[:len(data)-4]
	return binary.LittleEndian.AppendUint32(bytes.Clone(body), crc32c(body))
}

// golden returns the bytes of testdata/name, first writing want there
// under -update.
func golden(t *testing.T, name string, want []byte) []byte {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update && want != nil {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// writeCorpus writes the seed files of a fuzz target under -update: each
// entry is one input, as `go test` writes a crasher.
func writeCorpus(t *testing.T, target string, entries map[string][]any) {
	if !*update {
		return
	}
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, values := range entries {
		var b bytes.Buffer
		b.WriteString("go test fuzz v1\n")
		for _, v := range values {
			switch v := v.(type) {
			case []byte:
				fmt.Fprintf(&b, "[]byte(%q)\n", v)
			case uint8:
				fmt.Fprintf(&b, "byte(%q)\n", v)
			default:
				t.Fatalf("corpus value of type %T", v)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fixture returns the shared value of the name, building it the first time.
func fixture[T any](name string, build func() T) T {
	fixtures.Lock()
	defer fixtures.Unlock()
	if v, ok := fixtures.m[name]; ok {
		return v.(T)
	}
	if fixtures.m == nil {
		fixtures.m = map[string]any{}
	}
	v := build()
	fixtures.m[name] = v
	return v
}
