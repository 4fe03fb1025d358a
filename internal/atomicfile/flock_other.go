//go:build !unix

package atomicfile

import (
	"errors"
	"os"
)

// flockSupported is false: there is no lock, and each writer names its
// temporary file at random.
const flockSupported = false

var errWouldBlock = errors.New("would block")

func noLocks(error) bool { return true }

func flock(*os.File, bool) error { return nil }
