//go:build unix

package main

import (
	"os"
	"syscall"
)

// lockHeld reports whether another process holds the flock(2) lock on the
// lock file at path, as internal/vfs takes it: the file may exist
// a moment before its holder has locked it. The probe takes the lock for
// an instant when it is free; a writer that tries then waits that instant
// and goes on.
func lockHeld(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err {
	case nil:
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false
	case syscall.EWOULDBLOCK:
		return true
	default:
		// No flock on this file system: the writers do not lock either,
		// and the lock file existing is all there is.
		return true
	}
}
