package cuckoo_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/dedupkit/cuckoo"
)

// allForms is every key form and batch the three counting filters share.
type allForms interface {
	cuckoo.Counter
	cuckoo.Batcher
	AddUint64(key uint64) error
	ContainsUint64(key uint64) bool
	CountUint64(key uint64) uint64
	DeleteUint64(key uint64) bool
}

// TestInterfaceSymmetric runs the same operations through one interface
// on a Filter, a Scalable and a Concurrent: an integer key is the same key
// as its 8 little-endian bytes, and the batch methods answer as loops of
// single calls do, for every type.
func TestInterfaceSymmetric(t *testing.T) {
	r := testRand(t)
	seed := r.Uint64()
	f, _ := cuckoo.New(5000, cuckoo.WithSeed(seed))
	s, _ := cuckoo.NewScalable(100, cuckoo.WithSeed(seed))
	c, _ := cuckoo.NewConcurrent(5000, cuckoo.WithSeed(seed))
	for _, x := range []allForms{f, s, c} {
		t.Run(fmt.Sprintf("%T", x), func(t *testing.T) {
			var b [8]byte
			for i := uint64(0); i < 2000; i++ {
				if err := x.AddUint64(i); err != nil {
					t.Fatal(err)
				}
			}
			for i := uint64(0); i < 2000; i++ {
				binary.LittleEndian.PutUint64(b[:], i)
				if !x.Contains(b[:]) || !x.ContainsUint64(i) || x.Count(b[:]) != x.CountUint64(i) {
					t.Fatalf("key %d: an integer key is not its 8 bytes", i)
				}
			}
			keys := make([][]byte, 3000)
			for i := range keys {
				keys[i] = key(0, uint64(i)%1000) // repeats within the batch
			}
			added := make([]bool, len(keys))
			if n, err := x.AddUniqueBatch(keys, added); err != nil || n != len(keys) {
				t.Fatalf("AddUniqueBatch = %d, %v", n, err)
			}
			for i := range keys {
				if i >= 1000 && added[i] {
					t.Fatalf("repeat %d added again", i)
				}
				if !x.Contains(keys[i]) {
					t.Fatalf("key %d lost", i)
				}
			}
			probe := make([][]byte, 2000)
			for i := range probe {
				probe[i] = key(uint64(i%2), uint64(i))
			}
			found := make([]bool, len(probe))
			x.ContainsBatch(probe, found)
			for i, k := range probe {
				if found[i] != x.Contains(k) {
					t.Fatalf("ContainsBatch[%d] = %v, Contains = %v", i, found[i], !found[i])
				}
			}
			if n, err := x.AddBatch(keys[:10]); err != nil || n != 10 {
				t.Fatalf("AddBatch = %d, %v", n, err)
			}
			binary.LittleEndian.PutUint64(b[:], 5)
			before := x.Count(b[:])
			if !x.DeleteUint64(5) || x.Count(b[:]) != before-1 {
				t.Fatalf("DeleteUint64(5): count %d, then %d", before, x.Count(b[:]))
			}
		})
	}
}
