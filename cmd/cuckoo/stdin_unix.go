//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// stdinClosed reports whether f, the standard input, was closed when the
// process started ('cuckoo store put DIR KEY <&-'). The Go runtime puts
// /dev/null, opened for reading and writing, in the place of a closed
// standard descriptor, so a read finds no data where cat and sort report
// an error; a shell's '</dev/null' opens it for reading only. (A process
// that daemon(3) started sees the same /dev/null: it has no input either.)
func stdinClosed(f *os.File) bool {
	if f == nil {
		return false
	}
	fd := int(f.Fd())
	var st, null unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return true
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Stat(os.DevNull, &null) != nil || st.Rdev != null.Rdev {
		return false
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	return err == nil && fl&unix.O_ACCMODE == unix.O_RDWR
}
