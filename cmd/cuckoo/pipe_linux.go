package main

import "golang.org/x/sys/unix"

// setPipeSize asks Linux for a pipe buffer of n bytes on fd; an error (a
// limit lower than n) leaves it as it was.
func setPipeSize(fd, n int) { _, _ = unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, n) }
