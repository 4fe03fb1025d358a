package cuckoo

import (
	"testing"
	"unsafe"

	"github.com/dedupkit/cuckoo/internal/table"
)

// TestPadding checks, for every 8-byte aligned placement of a Concurrent
// and a cchain relative to a cache line, that the lines holding the fields
// every lookup reads lie inside the struct (see table.CacheLine; the
// engine's concurrent table has its own test).
func TestPadding(t *testing.T) {
	var c Concurrent
	var ch cchain
	for _, x := range []struct {
		what     string
		size     uintptr
		from, to uintptr // the fields' bytes: [from, to)
	}{
		{"Concurrent.st", unsafe.Sizeof(c), unsafe.Offsetof(c.st), unsafe.Offsetof(c.st) + unsafe.Sizeof(c.st)},
		{"cchain tables..epoch", unsafe.Sizeof(ch), unsafe.Offsetof(ch.tables), unsafe.Offsetof(ch.epoch) + unsafe.Sizeof(ch.epoch)},
	} {
		if a, first, end, ok := table.LinesInside(x.size, x.from, x.to); !ok {
			t.Errorf("%s placed at %d mod 64: lines [%d, %d) leave the struct [%d, %d)", x.what, a, first, end, a, a+x.size)
		}
	}
}
