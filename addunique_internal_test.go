package cuckoo

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/dedupkit/cuckoo/internal/addr"
)

// uniqueAdder is what the set-semantics batch tests drive: a Filter or a
// Scalable.
type uniqueAdder interface {
	AddUniqueHashBatch(hashes []uint64, added []bool) (int, error)
	ContainsHash(h uint64) bool
	AddHash(h uint64) error
	MarshalBinary() ([]byte, error)
}

// newestShape returns the bucket count and fingerprint range of the
// table f adds to now: the Filter's, or the Scalable's newest
// generation's (a growing table's final shape).
func newestShape(f uniqueAdder) (m, fpMax uint64) {
	switch f := f.(type) {
	case *Filter:
		return f.m.T.NumBuckets, f.m.T.FPMask
	case *Scalable:
		lv := f.levels[len(f.levels)-1]
		if lv.Grow != nil {
			return lv.Grow.Final(), 1<<lv.Grow.FPBits() - 1
		}
		return lv.Plain.T.NumBuckets, lv.Plain.T.FPMask
	}
	panic("unknown filter")
}

// pairTwins returns hashes other than h whose key has h's fingerprint and
// bucket pair in the table f adds to now: with the pair's buckets in the
// same order (the next value of the hash's high half, which maps to the
// same bucket unless it crosses a bucket boundary), and swapped (the
// first bucket h's second one).
func pairTwins(f uniqueAdder, h uint64) []uint64 {
	m, fpMax := newestShape(f)
	fp := addr.Fingerprint(h, fpMax)
	i2 := addr.Alt(addr.Bucket(h, m), fp, m)
	hi := (i2<<32 + m - 1) / m // the least high half in bucket i2
	return []uint64{h + 1<<32, hi<<32 | h&0xffffffff}
}

// TestAddUniqueHashBatchSamePairKeys: AddUniqueHashBatch reports and
// builds, byte for byte, what ContainsHash and then AddHash do key by
// key, on hashes crafted so that a chunk holds keys of the same bucket
// pair and fingerprint as earlier keys of the chunk (in either order of
// the buckets) and exact repeats, in filters that fill to their bound
// (a Filter, stopping at ErrFull) or grow many tables in the middle of
// chunks (a Scalable from a capacity of 200), with buckets of one window
// and of two.
func TestAddUniqueHashBatchSamePairKeys(t *testing.T) {
	type maker func() (uniqueAdder, error)
	cases := map[string]maker{
		"Filter/f=18": func() (uniqueAdder, error) { return New(3000, WithFingerprintBits(18), WithSeed(3)) },
		"Filter/f=12": func() (uniqueAdder, error) { return New(3000, WithFingerprintBits(12), WithSeed(3)) },
		"Filter/b=8/f=12": func() (uniqueAdder, error) {
			return New(3000, WithBucketSize(8), WithFingerprintBits(12), WithSeed(3))
		},
		"Filter/semi": func() (uniqueAdder, error) { return New(3000, WithSemiSorting(), WithSeed(3)) },
		"Scalable/rate=1e-4": func() (uniqueAdder, error) {
			return NewScalable(200, WithFalsePositiveRate(1e-4), WithSeed(3))
		},
		"Scalable/f=12": func() (uniqueAdder, error) { return NewScalable(200, WithFingerprintBits(12), WithSeed(3)) },
		"Scalable/b=2/f=20": func() (uniqueAdder, error) {
			return NewScalable(200, WithBucketSize(2), WithFingerprintBits(20), WithSeed(3))
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			batch, err := mk()
			if err != nil {
				t.Fatal(err)
			}
			ref, _ := mk()
			r := rand.New(rand.NewPCG(7, uint64(len(name))))
			var hashes []uint64
			twins := map[uint64]bool{}
			full, twinsKept := false, 0
			for round := 0; round < 40 && !full; round++ {
				// A batch of 1000 hashes (four chunks but the last): fresh
				// ones, each followed now and then, a few keys later, by a
				// twin of its bucket pair or by itself.
				hashes = hashes[:0]
				for len(hashes) < 1000 {
					h := r.Uint64()
					hashes = append(hashes, h)
					if r.IntN(4) == 0 {
						later := h
						if tw := pairTwins(batch, h); r.IntN(3) != 0 {
							later = tw[r.IntN(2)]
							twins[later] = true
						}
						for range r.IntN(5) {
							hashes = append(hashes, r.Uint64())
						}
						hashes = append(hashes, later)
					}
				}
				added := make([]bool, len(hashes))
				n, batchErr := batch.AddUniqueHashBatch(hashes, added)
				for i, h := range hashes[:n] {
					want := !ref.ContainsHash(h)
					if want {
						if err := ref.AddHash(h); err != nil {
							t.Fatalf("round %d key %d: the reference failed: %v", round, i, err)
						}
					}
					if added[i] != want {
						t.Fatalf("round %d key %d (hash %#x): batch added %v, ContainsHash then AddHash %v", round, i, h, added[i], want)
					}
					if twins[h] && !added[i] {
						twinsKept++
					}
				}
				if batchErr != nil {
					// Only a Filter fails, when full; the reference fails on
					// the same key.
					full = true
					if h := hashes[n]; ref.ContainsHash(h) || ref.AddHash(h) == nil {
						t.Fatalf("the batch failed on key %d (%v), the reference did not", n, batchErr)
					}
				}
				a, _ := batch.MarshalBinary()
				b, _ := ref.MarshalBinary()
				if !bytes.Equal(a, b) {
					t.Fatalf("round %d: the batch built a different filter", round)
				}
			}
			// The twins tested the re-check: nearly all found their pair
			// taken (not those of a key the filter had reported present
			// by chance, nor those that came after the Filter was full).
			if twinsKept < 300 || twinsKept*10 < len(twins)*8 {
				t.Fatalf("%d of %d twins were reported present", twinsKept, len(twins))
			}
			if s, ok := batch.(*Scalable); ok && len(s.levels) < 5 {
				t.Fatalf("%d tables: the test does not test growth", len(s.levels))
			}
			if _, ok := batch.(*Filter); ok && !full {
				t.Fatal("the Filter never filled: the test does not test a full table")
			}
		})
	}
}
