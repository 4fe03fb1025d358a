package cuckoo

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/dedupkit/cuckoo/internal/table"
)

// FuzzFastPath compares Filter.ContainsHash's inlined path for the common
// shapes with the general one, on filters of every fast shape filled from
// the input, for present and absent hashes.
func FuzzFastPath(f *testing.F) {
	f.Add(uint8(0), uint16(100), []byte("seed"))
	f.Add(uint8(3), uint16(1000), []byte{0xff, 0x00, 0x13})
	f.Add(uint8(5), uint16(7), []byte{})
	f.Add(uint8(6), uint16(999), []byte("a"))
	f.Add(uint8(7), uint16(2), []byte("bb"))
	f.Add(uint8(8), uint16(4096), []byte("ccc"))
	// Buckets of 64 bits, and of 8, 16 and 32, read at their byte offset
	// where table.UnalignedLittleEndian holds.
	shapes := [][2]uint64{{4, 8}, {4, 16}, {2, 16}, {2, 32}, {8, 8}, {2, 4}, {4, 4}, {2, 8}, {8, 4}}
	f.Fuzz(func(t *testing.T, shape uint8, n uint16, data []byte) {
		sh := shapes[int(shape)%len(shapes)]
		capacity := uint64(n%5000) + 1
		fl, err := New(capacity, WithBucketSize(int(sh[0])), WithFingerprintBits(int(sh[1])), WithSeed(uint64(len(data))))
		if err != nil {
			t.Fatal(err)
		}
		if want := sh[0]*sh[1] == 64 || table.UnalignedLittleEndian; fl.t.FastLookup != want {
			t.Fatalf("shape %v: fastLookup %v", sh, fl.t.FastLookup)
		}
		if !fl.t.FastLookup {
			return
		}
		var buf [8]byte
		for i := range capacity * 9 / 10 {
			binary.LittleEndian.PutUint64(buf[:], i)
			fl.Add(append(buf[:], data...))
		}
		for i := range uint64(4 * capacity) {
			binary.LittleEndian.PutUint64(buf[:], i)
			h := fl.hashOf(append(buf[:], data...))
			fast := fl.ContainsHash(h)
			fl.t.FastLookup = false
			general := fl.ContainsHash(h)
			fl.t.FastLookup = true
			if fast != general {
				t.Fatalf("shape %v, hash %#x: fast path %v, general %v", sh, h, fast, general)
			}
			if i < capacity*9/10 && !fast {
				t.Fatalf("shape %v: key %d lost", sh, i)
			}
		}
	})
}

func (f *Filter) hashOf(key []byte) uint64 { return bytesKey(key).hash(f.seed) }

// FuzzAlignedTwin checks the one-word paths of tables whose buckets never
// straddle a word (replace, plainGet, plainSet, AddHash's store and the
// search's inline path) against the general ones. Two filters of one such
// shape and seed, the twin told that its buckets may straddle words, go
// through the same adds (past capacity, so that walks, searches and
// refusals happen), counts and deletes, and must answer alike and keep
// tables equal bit for bit; and searches from the same buckets of the
// filled tables must find the same chains.
func FuzzAlignedTwin(f *testing.F) {
	f.Add(uint8(0), uint16(100), []byte("seed"))
	f.Add(uint8(1), uint16(1000), []byte{0xff, 0x00, 0x13})
	f.Add(uint8(4), uint16(7), []byte{})
	f.Add(uint8(6), uint16(999), []byte("a"))
	f.Add(uint8(8), uint16(4096), []byte("ccc"))
	// Every shape whose buckets are 8, 16, 32 or 64 bits.
	shapes := [][2]uint64{{4, 8}, {4, 16}, {2, 16}, {2, 32}, {8, 8}, {2, 4}, {4, 4}, {2, 8}, {8, 4}}
	f.Fuzz(func(t *testing.T, shape uint8, n uint16, data []byte) {
		sh := shapes[int(shape)%len(shapes)]
		capacity := uint64(n%5000) + 1
		newFilter := func() *Filter {
			fl, err := New(capacity, WithBucketSize(int(sh[0])), WithFingerprintBits(int(sh[1])), WithSeed(uint64(len(data))))
			if err != nil {
				t.Fatal(err)
			}
			return fl
		}
		fl, twin := newFilter(), newFilter()
		if !fl.t.Aligned {
			t.Fatalf("shape %v is not aligned", sh)
		}
		twin.t.Aligned = false
		twin.t.SetFastLookup()
		key := func(i uint64) []byte {
			return append(binary.LittleEndian.AppendUint64(nil, i), data...)
		}
		same := func(op string, i uint64) {
			t.Helper()
			if !slices.Equal(fl.t.Words, twin.t.Words) || fl.count != twin.count {
				t.Fatalf("shape %v: tables differ after %s of key %d", sh, op, i)
			}
		}
		// 2·capacity adds of 1.25·capacity distinct keys: past capacity
		// (walks, searches and refusals), and the first keys twice (copies
		// in slots and in the counters).
		for i := range capacity * 2 {
			k := key(i % (capacity + capacity/4 + 1))
			if e1, e2 := fl.Add(k), twin.Add(k); e1 != e2 {
				t.Fatalf("shape %v, key %d: Add %v, twin %v", sh, i, e1, e2)
			}
			same("Add", i)
		}
		for i := range capacity * 2 {
			k := key(i)
			if c1, c2 := fl.Count(k), twin.Count(k); c1 != c2 {
				t.Fatalf("shape %v, key %d: Count %d, twin %d", sh, i, c1, c2)
			}
		}
		s1, s2 := &fl.t, &twin.t
		for i := range min(capacity, 200) {
			h := fl.hashOf(key(i + 1<<40))
			i1, fp := fl.locate(h)
			i2 := fl.t.AltIndex(i1, fp)
			q1, _, end1, ok1 := table.Search(s1, nil, nil, i1, i2, table.WalkLimit)
			q2, _, end2, ok2 := table.Search(s2, nil, nil, i1, i2, table.WalkLimit)
			if ok1 != ok2 || end1 != end2 || !slices.Equal(q1, q2) {
				t.Fatalf("shape %v, buckets %d and %d: search found %v at %d (%d nodes), twin %v at %d (%d nodes)",
					sh, i1, i2, ok1, end1, len(q1), ok2, end2, len(q2))
			}
		}
		for i := range capacity * 2 {
			k := key(i)
			if d1, d2 := fl.Delete(k), twin.Delete(k); d1 != d2 {
				t.Fatalf("shape %v, key %d: Delete %v, twin %v", sh, i, d1, d2)
			}
			same("Delete", i)
		}
	})
}
