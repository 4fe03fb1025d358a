package server

import (
	"os"
	"syscall"
	"unsafe"
)

// writeLog writes b to the log file f. On Linux the write is a raw system
// call, as the event loops' socket writes are (loop_linux.go): an ordinary
// one tells the scheduler the thread may block, and when the runtime's
// monitor thread sees a thread in a system call for more than 20 µs (a
// write the kernel preempted), it takes the thread's P, and then wakes
// every 20 µs for a while; with a log write each round, often enough to
// cost the loop a tenth of its time. A write to a file's page cache
// blocks only when the kernel throttles dirty pages, and then the writer
// must wait anyway: Redis's event loop makes the same write.
func writeLog(f *os.File, b []byte) (int, error) {
	fd := f.Fd() // a regular file: no poller to leave, and no allocation
	written := 0
	for written < len(b) {
		n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[written])), uintptr(len(b)-written))
		switch {
		case errno == syscall.EINTR:
			continue
		case errno != 0:
			return written, &os.PathError{Op: "write", Path: f.Name(), Err: errno}
		case n == 0:
			return written, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.EIO}
		}
		written += int(n)
	}
	return written, nil
}
