//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package store

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f without waiting.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLockHeld
	}
	return err
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
