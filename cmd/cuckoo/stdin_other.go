//go:build !unix

package main

import "os"

// stdinClosed reports whether the standard input was closed when the
// process started; only Unix systems tell.
func stdinClosed(*os.File) bool { return false }
