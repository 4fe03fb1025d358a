package concurrent

import (
	"testing"
	"unsafe"

	"github.com/dedupkit/cuckoo/internal/table"
)

// TestPadding checks, for every 8-byte aligned placement of a Table
// relative to a cache line, that the lines holding the fields every
// operation reads lie inside the struct, and so do the lines of the
// counters writers change (see table.CacheLine).
func TestPadding(t *testing.T) {
	var ct Table
	for _, x := range []struct {
		what     string
		size     uintptr
		from, to uintptr // the fields' bytes: [from, to)
	}{
		{"Table t..frozen", unsafe.Sizeof(ct), unsafe.Offsetof(ct.t), unsafe.Offsetof(ct.frozen) + unsafe.Sizeof(ct.frozen)},
		{"Table occ..moves", unsafe.Sizeof(ct), unsafe.Offsetof(ct.occ), unsafe.Offsetof(ct.moves) + unsafe.Sizeof(ct.moves)},
	} {
		if a, first, end, ok := table.LinesInside(x.size, x.from, x.to); !ok {
			t.Errorf("%s placed at %d mod 64: lines [%d, %d) leave the struct [%d, %d)", x.what, a, first, end, a, a+x.size)
		}
	}
	if unsafe.Offsetof(ct.occ) < unsafe.Offsetof(ct.frozen)+unsafe.Sizeof(ct.frozen)+table.CacheLine {
		t.Error("Table's written counters are less than a line after the fields every operation reads")
	}
}
