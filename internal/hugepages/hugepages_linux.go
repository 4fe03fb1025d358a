package hugepages

import (
	"syscall"
	"unsafe"
)

// hugePageSize is the size of a transparent huge page on x86-64 and arm64.
const hugePageSize = 2 << 20

// hugePagesMin is the table size from which Advise asks for huge pages. A
// table of a few megabytes already outgrows what a core's TLB maps in 4
// KiB pages (a second level of 1,536 to 2,048 entries on current x86-64
// cores, shared with the rest of the process), so its lookups miss the
// TLB as well as the caches, and under a hypervisor each such miss walks
// two page tables; a 2 MiB page covers 512 times the memory of a 4 KiB
// one. A huge page is resident whole once touched, but the random keys of
// a cuckoo table touch every 4 KiB page of one this large within a few
// thousand inserts anyway. Below 4 MiB a table holds at most one whole
// aligned huge page.
const hugePagesMin = 4 << 20

// Enabled can be switched off by tests and benchmarks to measure the
// difference.
var Enabled = true

// Advise asks Linux to back the whole 2 MiB pages inside words, a
// table of at least 4 MiB, with transparent huge pages (madvise
// MADV_HUGEPAGE). It is a hint: with
// THP disabled, or on memory already touched, it may do nothing, and its
// error is ignored. Memory the Go runtime hands out for a large slice is
// usually fresh and untouched, so the pages fault in huge.
func Advise(words []uint64) {
	if !Enabled || len(words)*8 < hugePagesMin {
		return
	}
	mem := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*8)
	// Trim to whole huge pages: madvise wants a page-aligned start.
	skip := (hugePageSize - int(uintptr(unsafe.Pointer(&mem[0]))%hugePageSize)) % hugePageSize
	if skip >= len(mem) {
		return
	}
	mem = mem[skip:]
	mem = mem[:len(mem)&^(hugePageSize-1)]
	if len(mem) > 0 {
		_ = syscall.Madvise(mem, syscall.MADV_HUGEPAGE)
	}
}

// Words returns n zeroed words that start on a 2 MiB boundary,
// advised for huge pages, for a table of a few 2 MiB chunks (which
// Advise, given memory at the Go allocator's 8 KiB alignment,
// would mostly leave in 4 KiB pages). It asks the allocator for up to
// 2 MiB more, which stays untouched and so not resident while the memory
// is fresh from the system. Below 2 MiB, or with Enabled off, it is
// make([]uint64, n).
func Words(n int) []uint64 {
	if !Enabled || n*8 < hugePageSize {
		return make([]uint64, n)
	}
	w := make([]uint64, n+hugePageSize/8)
	skip := (hugePageSize - int(uintptr(unsafe.Pointer(unsafe.SliceData(w)))%hugePageSize)) % hugePageSize / 8
	w = w[skip : skip+n : skip+n]
	mem := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), n*8&^(hugePageSize-1))
	_ = syscall.Madvise(mem, syscall.MADV_HUGEPAGE)
	return w
}
