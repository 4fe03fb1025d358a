package cuckoo

import (
	"encoding/binary"
	"testing"
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
	// where unalignedLittleEndian holds.
	shapes := [][2]uint64{{4, 8}, {4, 16}, {2, 16}, {2, 32}, {8, 8}, {2, 4}, {4, 4}, {2, 8}, {8, 4}}
	f.Fuzz(func(t *testing.T, shape uint8, n uint16, data []byte) {
		sh := shapes[int(shape)%len(shapes)]
		capacity := uint64(n%5000) + 1
		fl, err := New(capacity, WithBucketSize(int(sh[0])), WithFingerprintBits(int(sh[1])), WithSeed(uint64(len(data))))
		if err != nil {
			t.Fatal(err)
		}
		if want := sh[0]*sh[1] == 64 || unalignedLittleEndian; fl.t.fastLookup != want {
			t.Fatalf("shape %v: fastLookup %v", sh, fl.t.fastLookup)
		}
		if !fl.t.fastLookup {
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
			fl.t.fastLookup = false
			general := fl.ContainsHash(h)
			fl.t.fastLookup = true
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
