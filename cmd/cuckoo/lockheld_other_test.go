//go:build !unix

package main

import "os"

// lockHeld reports whether the lock file at path exists: without flock
// there is nothing more to ask.
func lockHeld(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
