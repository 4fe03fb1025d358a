// Package ptytest opens pseudo-terminals for tests of what the command
// does on a terminal (the progress bar). It is imported by tests only.
package ptytest

import (
	"errors"
	"os"
)

// ErrUnsupported is returned by Open where this package cannot open a
// pseudo-terminal; tests then skip.
var ErrUnsupported = errors.New("ptytest: no pseudo-terminals here")

// Open returns a new pseudo-terminal: the master side, which reads what is
// written to the slave, and the slave side, a terminal to give a process
// as its standard error. The caller closes both.
func Open() (master, slave *os.File, err error) { return open() }
