package hugepages_test

import (
	"testing"
	"unsafe"

	"github.com/dedupkit/cuckoo/internal/hugepages"
)

// TestWordsAreZeroedAndBounded: the words are n, zero, and end
// at their capacity (an append cannot run into the memory skipped for
// alignment); from 2 MiB on Linux they start on a 2 MiB boundary.
func TestWordsAreZeroedAndBounded(t *testing.T) {
	for _, n := range []int{0, 1, 1000, 2 << 20 / 8, 3 << 20 / 8, 4<<20/8 + 5} {
		w := hugepages.Words(n)
		if len(w) != n || cap(w) != n {
			t.Fatalf("n %d: len %d, cap %d", n, len(w), cap(w))
		}
		for i, x := range w {
			if x != 0 {
				t.Fatalf("n %d: word %d is %#x", n, i, x)
			}
		}
		if hugepages.Enabled && hugePagesAligned && n*8 >= 2<<20 {
			if at := uintptr(unsafe.Pointer(&w[0])); at%(2<<20) != 0 {
				t.Fatalf("n %d: starts at %#x, not on a 2 MiB boundary", n, at)
			}
		}
	}
}
