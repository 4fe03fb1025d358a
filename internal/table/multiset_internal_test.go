package table

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/dedupkit/cuckoo/internal/hash"
)

// fuzzShapes are the shapes whose buckets are 8, 16, 32 or 64 bits: the
// one-word paths, and, where UnalignedLittleEndian holds, the fast lookup.
var fuzzShapes = [][2]uint64{{4, 8}, {4, 16}, {2, 16}, {2, 32}, {8, 8}, {2, 4}, {4, 4}, {2, 8}, {8, 4}}

// fuzzMultiset returns an empty table of the shape with room for about
// capacity keys at a load of 0.95.
func fuzzMultiset(capacity, slots, fpBits uint64) *Multiset {
	m := max(2, (capacity*100/(slots*95)+2)&^1)
	return &Multiset{T: New(m, slots, fpBits, false)}
}

// fuzzKey is the key of index i with the input's bytes after it.
func fuzzKey(i uint64, data []byte) []byte {
	return append(binary.LittleEndian.AppendUint64(nil, i), data...)
}

// FuzzFastPath compares Table.Contains's inlined path for the common
// shapes with the general one, on tables of every fast shape filled from
// the input, for present and absent hashes.
func FuzzFastPath(f *testing.F) {
	f.Add(uint8(0), uint16(100), []byte("seed"))
	f.Add(uint8(3), uint16(1000), []byte{0xff, 0x00, 0x13})
	f.Add(uint8(5), uint16(7), []byte{})
	f.Add(uint8(6), uint16(999), []byte("a"))
	f.Add(uint8(7), uint16(2), []byte("bb"))
	f.Add(uint8(8), uint16(4096), []byte("ccc"))
	f.Fuzz(func(t *testing.T, shape uint8, n uint16, data []byte) {
		sh := fuzzShapes[int(shape)%len(fuzzShapes)]
		capacity := uint64(n%5000) + 1
		m := fuzzMultiset(capacity, sh[0], sh[1])
		tb := &m.T
		// Buckets of 64 bits, and of 8, 16 and 32, read at their byte
		// offset where UnalignedLittleEndian holds.
		if want := sh[0]*sh[1] == 64 || UnalignedLittleEndian; tb.FastLookup != want {
			t.Fatalf("shape %v: FastLookup %v", sh, tb.FastLookup)
		}
		if !tb.FastLookup {
			return
		}
		seed := uint64(len(data))
		for i := range capacity * 9 / 10 {
			m.Add(hash.Sum64(fuzzKey(i, data), seed), 500)
		}
		for i := range uint64(4 * capacity) {
			h := hash.Sum64(fuzzKey(i, data), seed)
			fast := tb.Contains(h)
			tb.FastLookup = false
			general := tb.Contains(h)
			tb.FastLookup = true
			if fast != general {
				t.Fatalf("shape %v, hash %#x: fast path %v, general %v", sh, h, fast, general)
			}
			if i < capacity*9/10 && m.Count(h) > 0 && !fast {
				t.Fatalf("shape %v: key %d lost", sh, i)
			}
		}
	})
}

// FuzzAlignedTwin checks the one-word paths of tables whose buckets never
// straddle a word (Replace, plainGet, PlainSet, Add's store and the
// search's inline path) against the general ones. Two tables of one such
// shape, the twin told that its buckets may straddle words, go through the
// same adds (past capacity, so that walks, searches and refusals happen),
// counts and deletes, and must answer alike and stay equal bit for bit;
// and searches from the same buckets of the filled tables must find the
// same chains.
func FuzzAlignedTwin(f *testing.F) {
	f.Add(uint8(0), uint16(100), []byte("seed"))
	f.Add(uint8(1), uint16(1000), []byte{0xff, 0x00, 0x13})
	f.Add(uint8(4), uint16(7), []byte{})
	f.Add(uint8(6), uint16(999), []byte("a"))
	f.Add(uint8(8), uint16(4096), []byte("ccc"))
	f.Fuzz(func(t *testing.T, shape uint8, n uint16, data []byte) {
		sh := fuzzShapes[int(shape)%len(fuzzShapes)]
		capacity := uint64(n%5000) + 1
		seed := uint64(len(data))
		fl, twin := fuzzMultiset(capacity, sh[0], sh[1]), fuzzMultiset(capacity, sh[0], sh[1])
		if !fl.T.Aligned {
			t.Fatalf("shape %v is not aligned", sh)
		}
		twin.T.Aligned = false
		twin.T.SetFastLookup()
		key := func(i uint64) uint64 { return hash.Sum64(fuzzKey(i, data), seed) }
		same := func(op string, i uint64) {
			t.Helper()
			if !slices.Equal(fl.T.Words, twin.T.Words) || fl.Items != twin.Items {
				t.Fatalf("shape %v: tables differ after %s of key %d", sh, op, i)
			}
		}
		// 2·capacity adds of 1.25·capacity distinct keys: past capacity
		// (walks, searches and refusals), and the first keys twice (copies
		// in slots and in the counters).
		for i := range capacity * 2 {
			h := key(i % (capacity + capacity/4 + 1))
			if a1, a2 := fl.Add(h, 500), twin.Add(h, 500); a1 != a2 {
				t.Fatalf("shape %v, key %d: Add %v, twin %v", sh, i, a1, a2)
			}
			same("Add", i)
		}
		for i := range capacity * 2 {
			h := key(i)
			if c1, c2 := fl.Count(h), twin.Count(h); c1 != c2 {
				t.Fatalf("shape %v, key %d: Count %d, twin %d", sh, i, c1, c2)
			}
		}
		s1, s2 := &fl.T, &twin.T
		for i := range min(capacity, 200) {
			i1, i2, _ := fl.T.Pair(key(i + 1<<40))
			q1, _, end1, ok1 := Search(s1, nil, nil, i1, i2, WalkLimit)
			q2, _, end2, ok2 := Search(s2, nil, nil, i1, i2, WalkLimit)
			if ok1 != ok2 || end1 != end2 || !slices.Equal(q1, q2) {
				t.Fatalf("shape %v, buckets %d and %d: search found %v at %d (%d nodes), twin %v at %d (%d nodes)",
					sh, i1, i2, ok1, end1, len(q1), ok2, end2, len(q2))
			}
		}
		for i := range capacity * 2 {
			h := key(i)
			if d1, d2 := fl.Delete(h), twin.Delete(h); d1 != d2 {
				t.Fatalf("shape %v, key %d: Delete %v, twin %v", sh, i, d1, d2)
			}
			same("Delete", i)
		}
	})
}
