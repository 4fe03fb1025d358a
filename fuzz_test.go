package cuckoo_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/dedupkit/cuckoo"
)

// FuzzDecode feeds arbitrary bytes to both decoders. Neither may panic or
// allocate beyond the input's size; whatever decodes must re-encode to the
// very same bytes and pass the invariant check.
func FuzzDecode(f *testing.F) {
	for _, shape := range []struct{ b, bits int }{{4, 12}, {2, 7}, {8, 32}, {4, 16}, {1, 16}, {3, 12}, {16, 8}, {255, 5}} {
		data := mustMarshal(f, sample(f, shape.b, shape.bits))
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	f.Add(mustMarshal(f, sample(f, 4, 13, cuckoo.WithSemiSorting())))
	empty, _ := cuckoo.New(1, cuckoo.WithSeed(1))
	f.Add(mustMarshal(f, empty))
	f.Add([]byte("CKOO"))
	// A table of 32 GiB: on a 32-bit platform ReadFrom refuses it from the
	// header (TestReadFromRefusesTableLargerThanPlatformSliceBeforeReadingIt).
	f.Add(hugeFilterHeader(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		var g cuckoo.Filter
		err := g.UnmarshalBinary(data)
		var h cuckoo.Filter
		_, err2 := h.ReadFrom(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, cuckoo.ErrCorrupt) {
				t.Fatalf("UnmarshalBinary error %v does not wrap ErrCorrupt", err)
			}
			if err2 == nil && int64(len(data)) == h.EncodedSize() {
				t.Fatalf("ReadFrom accepted what UnmarshalBinary refused: %v", err)
			}
			return
		}
		if err2 != nil {
			t.Fatalf("UnmarshalBinary accepted what ReadFrom refused: %v", err2)
		}
		if again := mustMarshal(t, &g); !bytes.Equal(again, data) {
			t.Fatal("decoded filter re-encodes differently")
		}
		if err := g.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
		// A decoded filter must stay usable.
		g.AddString("fuzz")
		if !g.ContainsString("fuzz") && g.Len() < g.Capacity() {
			t.Fatal("decoded filter lost a fresh key")
		}
	})
}

// FuzzOperations interprets the input as a sequence of operations on a small
// filter and checks them against a model multiset after each one.
func FuzzOperations(f *testing.F) {
	f.Add(uint8(4), uint8(8), []byte{0, 1, 2, 3, 0x40, 0x41, 0x80, 0x81, 0xc0})
	f.Add(uint8(2), uint8(4), bytes.Repeat([]byte{0, 0x80, 7}, 50))
	f.Add(uint8(8), uint8(32), []byte("the quick brown fox jumps over the lazy dog"))
	f.Add(uint8(3), uint8(9), []byte("semi-sorted buckets: aaaa bbbb \x80\x81\xc0"))
	f.Fuzz(func(t *testing.T, bshape, bits uint8, ops []byte) {
		l := layouts[int(bshape)%len(layouts)]
		fb := 4 + int(bits)%29
		fl, err := cuckoo.New(16, l.opts(fb, cuckoo.WithSeed(uint64(bits)))...)
		if err != nil {
			t.Fatal(err)
		}
		applyOps(t, fl, ops)
	})
}

// applyOps interprets ops as operations on fl, checks them against a model
// multiset after each one, and checks fl's invariants at the end: a byte's
// top two bits choose Add (0, 1), Delete of a present key (2) or
// AddUnique (3), its low five bits the key.
func applyOps(t *testing.T, fl *cuckoo.Filter, ops []byte) {
	m := model{}
	for step, op := range ops {
		k := uint64(op & 0x1f)
		switch op >> 6 {
		case 0, 1:
			err := fl.Add(key(0, k))
			if err == nil {
				m[k]++
			} else if !errors.Is(err, cuckoo.ErrFull) {
				t.Fatal(err)
			}
		case 2:
			if m[k] > 0 {
				if !fl.Delete(key(0, k)) {
					t.Fatalf("step %d: Delete of a present key failed", step)
				}
				if m[k]--; m[k] == 0 {
					delete(m, k)
				}
			}
		case 3:
			added, err := fl.AddUnique(key(0, k))
			if added {
				m[k]++
			} else if err != nil && !errors.Is(err, cuckoo.ErrFull) {
				t.Fatal(err)
			}
		}
		checkSet(t, fl, m, step)
	}
	if err := fl.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
