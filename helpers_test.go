package cuckoo_test

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/dedupkit/cuckoo"
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
