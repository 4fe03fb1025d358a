package cuckoo_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/dedupkit/cuckoo"
)

// scalableBatchKeys returns n keys of which about a third repeat an
// earlier one, in one group of 8 and across groups and chunks.
func scalableBatchKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		k := uint64(i)
		if i%3 == 2 {
			k = uint64(i * 7 % (i + 1)) // an earlier key
		}
		keys[i] = key(5, k)
	}
	return keys
}

// TestScalableBatchMatchesLoop: AddBatch and AddUniqueBatch build, byte
// for byte, the filter a loop of Add or AddUnique builds, through many
// tables of growth and for every layout; AddUniqueBatch reports what
// AddUnique did; ContainsBatch and ContainsHashBatch answer what Contains
// and ContainsHash do, for present and absent keys.
func TestScalableBatchMatchesLoop(t *testing.T) {
	t.Parallel()
	keys := scalableBatchKeys(size(20_000, 20_000, 5_000))
	for _, l := range layouts {
		t.Run(l.String(), func(t *testing.T) {
			newScalable := func() *cuckoo.Scalable {
				s, err := cuckoo.NewScalable(100, l.opts(12, cuckoo.WithSeed(8))...)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			loop, batch := newScalable(), newScalable()
			for _, k := range keys {
				loop.Add(k)
			}
			if n, err := batch.AddBatch(keys); n != len(keys) || err != nil {
				t.Fatalf("AddBatch = %d, %v", n, err)
			}
			if !bytes.Equal(mustMarshal(t, loop), mustMarshal(t, batch)) {
				t.Fatal("AddBatch built a different filter from a loop of Add")
			}

			loop, batch = newScalable(), newScalable()
			added := make([]bool, len(keys))
			if n, err := batch.AddUniqueBatch(keys, added); n != len(keys) || err != nil {
				t.Fatalf("AddUniqueBatch = %d, %v", n, err)
			}
			for i, k := range keys {
				if want, _ := loop.AddUnique(k); added[i] != want {
					t.Fatalf("key %d: batch added %v, AddUnique %v", i, added[i], want)
				}
			}
			if !bytes.Equal(mustMarshal(t, loop), mustMarshal(t, batch)) {
				t.Fatal("AddUniqueBatch built a different filter from a loop of AddUnique")
			}
			if batch.NumTables() < 5 {
				t.Fatalf("%d tables: the test does not test growth", batch.NumTables())
			}

			for _, n := range []int{0, 1, 7, 8, 9, 255, 256, 257, 1000} {
				probe := make([][]byte, n)
				hashes := make([]uint64, n)
				for i := range probe {
					probe[i] = key(uint64(5+i%2), uint64(i*13)) // present and absent
					hashes[i] = uint64(i) * 0x9e3779b97f4a7c15
				}
				found := make([]bool, n+1)
				found[n] = true // past the keys: must be left alone
				batch.ContainsBatch(probe, found)
				for i, k := range probe {
					if found[i] != batch.Contains(k) {
						t.Fatalf("n=%d: found[%d] = %v, Contains = %v", n, i, found[i], batch.Contains(k))
					}
				}
				batch.ContainsHashBatch(hashes, found)
				for i, h := range hashes {
					if found[i] != batch.ContainsHash(h) {
						t.Fatalf("n=%d: hash batch differs from ContainsHash at %d", n, i)
					}
				}
				if !found[n] {
					t.Fatal("a batch wrote past its keys")
				}
			}
		})
	}
}

// TestScalableBatchZeroValue: the zero Scalable finds nothing, and its
// batch inserts set it up as Add does.
func TestScalableBatchZeroValue(t *testing.T) {
	var s cuckoo.Scalable
	found := []bool{true, true}
	s.ContainsBatch([][]byte{{1}, {2}}, found)
	if found[0] || found[1] {
		t.Fatal("the zero Scalable found keys")
	}
	added := make([]bool, 3)
	if n, err := s.AddUniqueBatch([][]byte{{1}, {2}, {1}}, added); n != 3 || err != nil || !added[0] || !added[1] || added[2] {
		t.Fatalf("AddUniqueBatch on the zero Scalable = %d, %v, %v", n, err, added)
	}
	s.ContainsBatch([][]byte{{1}, {2}}, found)
	if !found[0] || !found[1] || s.Len() != 2 {
		t.Fatalf("after the batch: found %v, Len %d", found, s.Len())
	}
}

// BenchmarkScalable_Batch compares one-at-a-time Contains with
// ContainsBatch per key on a filter grown 1000×, for absent keys (which
// probe every table) and present ones. Each iteration looks up 1024 keys;
// ns/key is what to compare.
func BenchmarkScalable_Batch(b *testing.B) {
	const batchKeys = 1024
	for _, n := range scalableSizes() {
		for _, hit := range []bool{true, false} {
			for _, mode := range []string{"single", "batch"} {
				b.Run(fmt.Sprintf("n=%s/growth=1000x/hit=%v/mode=%s", human(n), hit, mode), func(b *testing.B) {
					s := grownScalable(b, n)
					all := cachedKeys(0, n)
					if !hit {
						all = cachedKeys(1, n)
					}
					found := make([]bool, batchKeys)
					hits, lo := 0, 0
					b.ReportAllocs()
					for b.Loop() {
						if lo+batchKeys > len(all) {
							lo = 0
						}
						keys := all[lo : lo+batchKeys]
						lo += batchKeys
						if mode == "single" {
							for i, k := range keys {
								found[i] = s.Contains(k)
							}
						} else {
							s.ContainsBatch(keys, found)
						}
						for _, ok := range found {
							if ok {
								hits++
							}
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batchKeys), "ns/key")
					if hit && hits != b.N*batchKeys {
						b.Fatalf("%d of %d present keys found", hits, b.N*batchKeys)
					}
				})
			}
		}
	}
}

// FuzzScalableBatch interprets the input as batches of keys (a byte 0xff
// ends a batch; the low six bits of the others choose the key) for
// AddBatch (a batch of even length) or AddUniqueBatch (odd), and checks
// after each batch that the filter is the one a loop of Add or AddUnique
// builds, and that ContainsBatch answers as Contains.
func FuzzScalableBatch(f *testing.F) {
	f.Add(uint8(1), uint8(5), []byte{0, 1, 2, 3, 0xff, 1, 1, 4, 0xff, 5, 6})
	f.Fuzz(func(t *testing.T, shape, bits uint8, ops []byte) {
		l := layouts[int(shape)%len(layouts)]
		opts := l.opts(4+int(bits)%29, cuckoo.WithSeed(uint64(bits)), cuckoo.WithGrowth(1.25+float64(shape%8)))
		batch, err := cuckoo.NewScalable(2, opts...)
		if err != nil {
			t.Fatal(err)
		}
		loop, _ := cuckoo.NewScalable(2, opts...)
		probe := make([][]byte, 64)
		for k := range probe {
			probe[k] = key(0, uint64(k))
		}
		found := make([]bool, len(probe))
		for len(ops) > 0 {
			n := bytes.IndexByte(ops, 0xff)
			if n < 0 {
				n = len(ops)
			}
			keys := make([][]byte, n)
			for i, op := range ops[:n] {
				keys[i] = probe[op&0x3f]
			}
			ops = ops[min(n+1, len(ops)):]
			if n%2 == 0 {
				batch.AddBatch(keys)
				for _, k := range keys {
					loop.Add(k)
				}
			} else {
				added := make([]bool, n)
				batch.AddUniqueBatch(keys, added)
				for i, k := range keys {
					if want, _ := loop.AddUnique(k); added[i] != want {
						t.Fatalf("key %d of the batch: added %v, AddUnique %v", i, added[i], want)
					}
				}
			}
			if !bytes.Equal(mustMarshal(t, batch), mustMarshal(t, loop)) {
				t.Fatal("the batch built a different filter from the loop")
			}
			batch.ContainsBatch(probe, found)
			for k, p := range probe {
				if found[k] != loop.Contains(p) {
					t.Fatalf("key %d: ContainsBatch %v, Contains %v", k, found[k], loop.Contains(p))
				}
			}
		}
		if err := batch.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	})
}
