package cuckoo

import (
	"testing"
	"unsafe"

	"github.com/dedupkit/cuckoo/internal/table"
)

// TestPadding checks, for every 8-byte aligned placement of a Concurrent,
// a cchain and a ctable relative to a cache line, that the lines holding
// the fields every lookup reads lie inside the struct, and so do the lines
// of the counters writers change (see table.CacheLine).
func TestPadding(t *testing.T) {
	var c Concurrent
	var ch cchain
	var ct ctable
	for _, x := range []struct {
		what     string
		size     uintptr
		from, to uintptr // the fields' bytes: [from, to)
	}{
		{"Concurrent.st", unsafe.Sizeof(c), unsafe.Offsetof(c.st), unsafe.Offsetof(c.st) + unsafe.Sizeof(c.st)},
		{"cchain tables..epoch", unsafe.Sizeof(ch), unsafe.Offsetof(ch.tables), unsafe.Offsetof(ch.epoch) + unsafe.Sizeof(ch.epoch)},
		{"ctable t..frozen", unsafe.Sizeof(ct), unsafe.Offsetof(ct.t), unsafe.Offsetof(ct.frozen) + unsafe.Sizeof(ct.frozen)},
		{"ctable occ..moves", unsafe.Sizeof(ct), unsafe.Offsetof(ct.occ), unsafe.Offsetof(ct.moves) + unsafe.Sizeof(ct.moves)},
	} {
		for a := uintptr(0); a < table.CacheLine; a += 8 {
			first := (a + x.from) &^ (table.CacheLine - 1)
			end := (a + x.to + table.CacheLine - 1) &^ (table.CacheLine - 1)
			if first < a || end > a+x.size {
				t.Errorf("%s placed at %d mod 64: lines [%d, %d) leave the struct [%d, %d)", x.what, a, first, end, a, a+x.size)
			}
		}
	}
	if unsafe.Offsetof(ct.occ) < unsafe.Offsetof(ct.frozen)+unsafe.Sizeof(ct.frozen)+table.CacheLine {
		t.Error("ctable's written counters are less than a line after the fields every operation reads")
	}
}

// TestPadded checks padded's slices: the length and capacity asked for,
// zeroed, and cut from a larger allocation (the padding lies outside the
// capacity, so an append cannot reach it).
func TestPadded(t *testing.T) {
	for _, n := range []uint64{0, 1, 7, 8, 9, 1000} {
		for _, extra := range []uint64{0, 3} {
			w := table.Padded[uint64](n, extra)
			if uint64(len(w)) != n || uint64(cap(w)) != n+extra {
				t.Fatalf("padded(%d, %d): len %d cap %d", n, extra, len(w), cap(w))
			}
			for _, v := range w[:cap(w)] {
				if v != 0 {
					t.Fatal("padded memory is not zero")
				}
			}
		}
	}
	p := table.Padded[*ctable](3, 0)
	if len(p) != 3 || cap(p) != 3 {
		t.Fatalf("padded pointers: len %d cap %d", len(p), cap(p))
	}
}
