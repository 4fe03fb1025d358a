package cuckoo

import (
	"errors"
	"strconv"
	"testing"
)

// On a 32-bit platform a growing filter whose next table would pass 2 GiB
// cannot add it: the schedule says so with ErrFull, against the real bound
// (platformTableBytes), which the insert that needed the table returns
// instead of panicking in the allocation. On a 64-bit platform the same
// table is added. (The schedule allocates nothing: the first table here,
// of 2^27 keys, is not built.)
func TestNextTableLargerThanPlatformSliceIsErrFull(t *testing.T) {
	if maxTableBytes != platformTableBytes {
		t.Fatalf("the table bound is %d, not this platform's %d", maxTableBytes, uint64(platformTableBytes))
	}
	c, err := resolve([]Option{WithGrowth(16)})
	if err != nil {
		t.Fatal(err)
	}
	g, err := newGrowth(1<<27, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.checkFirstTable(); err != nil {
		t.Fatalf("a first table of 2^27 keys: %v", err)
	}
	for _, inPlace := range []bool{true, false} { // a Scalable's, a Concurrent's
		gen, err := g.nextTable(0, inPlace)
		bytes := g.tableWords(g.at(1), inPlace) * 8
		if bytes <= 1<<31 {
			t.Fatalf("the next table takes %d bytes, not more than 2 GiB", bytes)
		}
		if strconv.IntSize == 64 {
			if err != nil || gen != g.at(1) {
				t.Errorf("in place %v: nextTable = %+v, %v; want generation 1", inPlace, gen, err)
			}
			continue
		}
		if !errors.Is(err, ErrFull) || !errors.Is(err, errNextTableTooLarge) {
			t.Errorf("in place %v: a next table of %d bytes on a 32-bit platform: %v, want ErrFull", inPlace, bytes, err)
		}
	}
	if _, err := g.nextTable(maxGenerations-1, false); !errors.Is(err, ErrFull) {
		t.Errorf("past the last generation: %v, want ErrFull", err)
	}
}
