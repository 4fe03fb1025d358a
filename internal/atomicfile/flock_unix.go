//go:build unix

package atomicfile

import (
	"os"
	"syscall"
)

const flockSupported = true

var errWouldBlock error = syscall.EWOULDBLOCK

// noLocks reports whether err says the file system has no flock (some
// network file systems): the writer then goes on without the lock.
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
