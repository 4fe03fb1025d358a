package exactdedup

import (
	"fmt"
	"testing"

	"github.com/dedupkit/cuckoo/internal/hash"
)

// TestScratchRebuildDoublesTheIndex: an index whose fragments are too
// short to double is rebuilt at twice its size, as a doubling makes it,
// with one entry a key, so that its RAM stays within 19 bytes per
// distinct line after it (docs/cli.md). (It was rebuilt for twice the
// keys plus the one being added, one more than twice the size holds: four
// times the size, 37.6 bytes a key: an --exact run of 16,000,000 lines
// from a pipe held a 512 MiB index, not 256 MiB. And the key being added
// was indexed twice.)
func TestScratchRebuildDoublesTheIndex(t *testing.T) {
	s := newTestScratch(t)
	s.ix.fragBits = minFrag // the fragments of an index doubled 11 times
	k, added := s.ix.k, make([]bool, 1)
	var i int
	key := func(i int) []byte { return []byte(fmt.Sprintf("key %d", i)) }
	for i = 0; s.ix.k == k; i++ {
		if _, err := s.AddUniqueBatch([][]byte{key(i)}, added); err != nil || !added[0] {
			t.Fatalf("key %d: added %v, %v", i, added[0], err)
		}
	}
	if s.ix.fragBits != maxFrag {
		t.Fatalf("fragments of %d bits after the index grew: not rebuilt", s.ix.fragBits)
	}
	if s.ix.k != k+1 {
		t.Errorf("rebuilt with 2^%d buckets from 2^%d: %.1f bytes of index per key, want twice the size", s.ix.k, k,
			float64(s.ix.bytes())/float64(s.keys))
	}
	if s.ix.count != s.keys {
		t.Errorf("%d entries for %d keys", s.ix.count, s.keys)
	}
	for j := range i + 100 {
		seen, err := s.seen(key(j), hash.Sum64(key(j), s.seed))
		if err != nil || seen != (j < i) {
			t.Fatalf("key %d: seen %v, %v", j, seen, err)
		}
	}
}
