package table

import (
	"testing"
	"unsafe"
)

// TestSearchNodeBytes: the size SizeInBytes counts for a search node.
func TestSearchNodeBytes(t *testing.T) {
	if got := unsafe.Sizeof(Node{}); got != searchNodeBytes {
		t.Fatalf("searchNode takes %d bytes, searchNodeBytes says %d", got, searchNodeBytes)
	}
}
