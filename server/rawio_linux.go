//go:build !race

package server

import (
	"syscall"
	"unsafe"
)

// rawRead and rawWrite are the event loops' socket reads and writes, as
// raw system calls (loop_linux.go says why). Under the race detector they
// are syscall.Read and syscall.Write (rawio_race_linux.go), whose
// annotations tell it that a reply written here happens before the
// client reads it.

func rawRead(fd int, p []byte) (int, syscall.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	n, _, errno := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(n), errno
}

func rawWrite(fd int, p []byte) (int, syscall.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(n), errno
}
