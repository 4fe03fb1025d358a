package cuckoo

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"unsafe"
)

// TestConcurrentPadding checks, for every 8-byte aligned placement of a
// Concurrent and of a ctable relative to a cache line, that the lines
// holding the fields every lookup reads lie inside the struct, and so do
// the lines of the counters writers change (see cacheLine).
func TestConcurrentPadding(t *testing.T) {
	var c Concurrent
	var ct ctable
	for _, x := range []struct {
		what     string
		size     uintptr
		from, to uintptr // the fields' bytes: [from, to)
	}{
		{"Concurrent.st", unsafe.Sizeof(c), unsafe.Offsetof(c.st), unsafe.Offsetof(c.st) + unsafe.Sizeof(c.st)},
		{"ctable f..frozen", unsafe.Sizeof(ct), unsafe.Offsetof(ct.f), unsafe.Offsetof(ct.frozen) + unsafe.Sizeof(ct.frozen)},
		{"ctable occ..moves", unsafe.Sizeof(ct), unsafe.Offsetof(ct.occ), unsafe.Offsetof(ct.moves) + unsafe.Sizeof(ct.moves)},
	} {
		for a := uintptr(0); a < cacheLine; a += 8 {
			first := (a + x.from) &^ (cacheLine - 1)
			end := (a + x.to + cacheLine - 1) &^ (cacheLine - 1)
			if first < a || end > a+x.size {
				t.Errorf("%s placed at %d mod 64: lines [%d, %d) leave the struct [%d, %d)", x.what, a, first, end, a, a+x.size)
			}
		}
	}
	if unsafe.Offsetof(ct.occ) < unsafe.Offsetof(ct.frozen)+unsafe.Sizeof(ct.frozen)+cacheLine {
		t.Error("ctable's written counters are less than a line after the fields every operation reads")
	}
}

// TestConcurrentReadPathOwnsItsLines checks what cacheLine relies on for
// the rest of the data a lookup reads: the allocator puts an allocation of
// whole lines on a line boundary, for new, grown and decoded filters of
// any size. It fails if the Go allocator stops doing so.
func TestConcurrentReadPathOwnsItsLines(t *testing.T) {
	check := func(t *testing.T, what string, p unsafe.Pointer, size uintptr) {
		t.Helper()
		if uintptr(p)%cacheLine != 0 || size%cacheLine != 0 {
			t.Errorf("%s at %#x, %d bytes: not whole 64-byte lines", what, uintptr(p), size)
		}
	}
	checkAll := func(t *testing.T, c *Concurrent) {
		t.Helper()
		ch := c.st.Load()
		check(t, "cchain", unsafe.Pointer(ch), unsafe.Sizeof(*ch))
		check(t, "table list", unsafe.Pointer(unsafe.SliceData(ch.tables)), uintptr(cap(ch.tables))*unsafe.Sizeof(ch.tables[0]))
		for i, ct := range ch.tables {
			check(t, fmt.Sprintf("table %d versions", i), unsafe.Pointer(unsafe.SliceData(ct.vers)), uintptr(cap(ct.vers))*unsafe.Sizeof(ct.vers[0]))
			check(t, fmt.Sprintf("table %d words", i), unsafe.Pointer(unsafe.SliceData(ct.f.t.words)), uintptr(cap(ct.f.t.words))*8)
		}
	}
	for _, capacity := range []uint64{1, 10, 100, 1000, 100_000} {
		t.Run(fmt.Sprint("capacity=", capacity), func(t *testing.T) {
			for _, opts := range [][]Option{nil, {WithGrowth(2)}, {WithFingerprintBits(12)}} {
				c, err := NewConcurrent(capacity, opts...)
				if err != nil {
					t.Fatal(err)
				}
				checkAll(t, c)
				var key [8]byte
				for i := range 4 * capacity { // a growing filter grows; a fixed one fills
					binary.LittleEndian.PutUint64(key[:], i)
					if c.Add(key[:]) != nil {
						break
					}
				}
				checkAll(t, c)
				var buf bytes.Buffer
				if _, err := c.WriteTo(&buf); err != nil {
					t.Fatal(err)
				}
				d := new(Concurrent)
				if _, err := d.ReadFrom(bytes.NewReader(buf.Bytes())); err != nil {
					t.Fatal(err)
				}
				checkAll(t, d)
				u := new(Concurrent)
				if err := u.UnmarshalBinary(buf.Bytes()); err != nil {
					t.Fatal(err)
				}
				checkAll(t, u)
			}
		})
	}
}
