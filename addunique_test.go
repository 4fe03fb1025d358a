package cuckoo_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/dedupkit/cuckoo"
)

// setAdder is the set-semantics API a Filter and a Scalable share.
type setAdder interface {
	Contains(key []byte) bool
	Add(key []byte) error
	AddUniqueBatch(keys [][]byte, added []bool) (int, error)
	MarshalBinary() ([]byte, error)
}

// goLinesWithNearMisses returns short lines of Go's source tree, each
// followed by two of its near misses and, every third line, by the line
// before it again: keys one edit apart, and repeats a few keys apart.
func goLinesWithNearMisses(t *testing.T, n int) [][]byte {
	lines := goSourceLines(t, 60, 16)
	set := make(map[string]bool, len(lines))
	for _, l := range lines {
		set[l] = true
	}
	var keys [][]byte
	for i, l := range lines {
		if len(keys) >= n {
			break
		}
		keys = append(keys, []byte(l))
		misses := 0
		nearMisses(l, set, func(k string) {
			if misses < 2 {
				keys = append(keys, []byte(k))
				misses++
			}
		})
		if i%3 == 2 {
			keys = append(keys, []byte(lines[i-1]))
		}
	}
	return keys
}

// TestAddUniqueBatchMatchesContainsThenAdd: AddUniqueBatch reports and
// builds, byte for byte, what Contains and then Add build key by key, on
// `seq`'s lines, on lines of Go's source with their near misses and
// repeats, and on lines of which 60 % repeat, in blocks of 4,096 as
// dedup hands them over: for Filters and for Scalables sized for the
// keys or grown from a thousandth of them (tables added in the middle
// of a block), at dedup's rate (buckets of two windows) and at 12-bit
// fingerprints (one).
func TestAddUniqueBatchMatchesContainsThenAdd(t *testing.T) {
	t.Parallel()
	n := sized(50_000, 15_000, 30_000, 20_000)
	keySets := map[string][][]byte{
		"seq":     dedupKeys("seq", uint64(n)),
		"repeats": dedupKeys("repeats", uint64(n)),
		"go":      goLinesWithNearMisses(t, n),
	}
	type maker func(n uint64, opts []cuckoo.Option) (setAdder, error)
	filters := map[string]maker{
		"Filter": func(n uint64, opts []cuckoo.Option) (setAdder, error) { return cuckoo.New(2*n, opts...) },
		"Scalable/sized": func(n uint64, opts []cuckoo.Option) (setAdder, error) {
			return cuckoo.NewScalable(n, opts...)
		},
		"Scalable/grown": func(n uint64, opts []cuckoo.Option) (setAdder, error) {
			return cuckoo.NewScalable(n/1000, opts...)
		},
	}
	for keysName, keys := range keySets {
		for filterName, mk := range filters {
			for _, shape := range uniqueShapes {
				name := fmt.Sprintf("%s/%s/%s", keysName, filterName, shape.name)
				batch, err := mk(uint64(len(keys)), shape.opts)
				if err != nil {
					t.Fatal(err)
				}
				ref, _ := mk(uint64(len(keys)), shape.opts)
				added := make([]bool, uniqueBlock)
				for lo := 0; lo < len(keys); lo += uniqueBlock {
					block := keys[lo:min(lo+uniqueBlock, len(keys))]
					if n, err := batch.AddUniqueBatch(block, added); n != len(block) || err != nil {
						t.Fatalf("%s: AddUniqueBatch = %d, %v", name, n, err)
					}
					for i, k := range block {
						want := !ref.Contains(k)
						if want {
							if err := ref.Add(k); err != nil {
								t.Fatalf("%s: the reference failed: %v", name, err)
							}
						}
						if added[i] != want {
							t.Fatalf("%s: key %d (%q): batch added %v, Contains then Add %v", name, lo+i, k, added[i], want)
						}
					}
				}
				if !bytes.Equal(mustMarshal(t, batch), mustMarshal(t, ref)) {
					t.Fatalf("%s: AddUniqueBatch built a different filter from Contains and then Add", name)
				}
			}
		}
	}
}

// TestAddUniqueBatchModel checks AddUniqueBatch against a Go map on
// lines of which 60 % repeat: a key the map holds is never added again,
// every key added is found afterwards (no false negatives), and the new
// keys reported present (false positives) are no more than chance allows
// at the filter's bound: the Poisson count that the expected number,
// new keys × bound, exceeds with probability below 10^-9.
func TestAddUniqueBatchModel(t *testing.T) {
	t.Parallel()
	n := size(300_000, 60_000, 20_000)
	keys := dedupKeys("repeats", uint64(n))
	const rate = 1e-3
	for name, f := range map[string]setAdder{
		"Filter":         must(cuckoo.New(uint64(n), cuckoo.WithFalsePositiveRate(rate), cuckoo.WithSeed(11))),
		"Scalable/grown": must(cuckoo.NewScalable(uint64(n/1000), cuckoo.WithFalsePositiveRate(rate), cuckoo.WithSeed(11))),
	} {
		wasAdded := map[string]bool{} // every key offered: whether it was added
		added := make([]bool, uniqueBlock)
		for lo := 0; lo < len(keys); lo += uniqueBlock {
			block := keys[lo:min(lo+uniqueBlock, len(keys))]
			if _, err := f.AddUniqueBatch(block, added); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for i, k := range block {
				if wasAdded[string(k)] && added[i] {
					t.Fatalf("%s: key %d (%q) added a second time", name, lo+i, k)
				}
				wasAdded[string(k)] = wasAdded[string(k)] || added[i]
			}
		}
		dropped := 0
		for k, ok := range wasAdded {
			if ok && !f.Contains([]byte(k)) {
				t.Fatalf("%s: %q was added and is not found", name, k)
			}
			if !ok {
				dropped++
			}
		}
		distinct := len(wasAdded)
		if most := poissonQuantile(float64(distinct)*rate, 1e-9); dropped > most {
			t.Fatalf("%s: %d of %d new keys reported present, chance allows %d", name, dropped, distinct, most)
		}
	}
}

// must returns v, panicking on an error (for constructors in tables).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
