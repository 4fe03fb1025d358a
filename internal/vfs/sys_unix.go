//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package vfs

import (
	"os"
	"syscall"
)

// flockSupported says that flock(2) exists here.
const flockSupported = true

var errWouldBlock error = syscall.EWOULDBLOCK

// noLocks reports whether err says the file system has no flock (some
// network file systems).
func noLocks(err error) bool {
	return err == syscall.ENOLCK || err == syscall.EOPNOTSUPP || err == syscall.ENOTSUP
}

// flock takes an exclusive flock(2) lock on f, waiting for it when wait
// is set; without wait, it fails with EWOULDBLOCK when another open file
// holds it. EINTR (a signal while waiting) is retried.
func flock(f *os.File, wait bool) error {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

// mmapFile maps max bytes of f for reading (shared, so writes through
// the file show), or returns nil when it cannot.
func mmapFile(f *os.File, max int) []byte {
	if max <= 0 || uint64(max) > 1<<40 {
		return nil
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, max, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	return b
}

func munmapFile(b []byte) { syscall.Munmap(b) }
