//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package server

import "os"

// lockDir opens the lock file; on this system it is not locked, so two
// servers must not be given one data directory.
func lockDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o640)
}
