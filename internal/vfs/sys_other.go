//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package vfs

import (
	"errors"
	"os"
)

// flockSupported is false: nothing is locked, and each writer of a file
// names its temporary file at random.
const flockSupported = false

var errWouldBlock = errors.New("would block")

func noLocks(error) bool { return true }

func flock(*os.File, bool) error { return nil }

// mmapFile returns nil: reads go through ReadAt.
func mmapFile(*os.File, int) []byte { return nil }

func munmapFile([]byte) {}
