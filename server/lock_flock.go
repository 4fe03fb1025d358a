//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package server

import (
	"errors"
	"os"
	"syscall"
)

// lockDir takes an exclusive lock on the file at path, so that two
// servers never share a data directory. The lock is released when the
// returned file is closed, or when the process ends.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrDirInUse
		}
		return nil, err
	}
	return f, nil
}
