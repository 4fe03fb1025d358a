package server

import (
	"os"

	"golang.org/x/sys/unix"
)

// On Linux the big query buffers are anonymous mappings (clientbuf.go
// says why): mremap grows one by moving page table entries, not data,
// and munmap returns its memory to the system at once.
const systemBuffers = true

var pageSize = os.Getpagesize()

// sysAlloc maps a buffer of at least size bytes.
func sysAlloc(size int) ([]byte, error) {
	return unix.Mmap(-1, 0, roundToPage(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
}

// sysResize changes the size of a buffer sysAlloc or sysResize returned,
// keeping its bytes; b must not be used after.
func sysResize(b []byte, size int) ([]byte, error) {
	return unix.Mremap(b, roundToPage(size), unix.MREMAP_MAYMOVE)
}

// sysFree unmaps a buffer sysAlloc or sysResize returned.
func sysFree(b []byte) error { return unix.Munmap(b) }

func roundToPage(n int) int { return (n + pageSize - 1) &^ (pageSize - 1) }
