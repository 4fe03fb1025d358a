package main

import (
	"syscall"
	"unsafe"
)

// threadCPU returns the CPU time (user and system) the calling OS thread
// has used, from clock_gettime(CLOCK_THREAD_CPUTIME_ID), to the
// nanosecond, and true.
func threadCPU() (ns int64, ok bool) {
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, false
	}
	return ts.Nano(), true
}
