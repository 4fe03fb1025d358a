// Package ptytest opens pseudo-terminals for tests of what the command
// does on a terminal (the progress bar). It is imported by tests only.
package ptytest

import (
	"errors"
	"os"
	"testing"
)

// ErrUnsupported is returned by Open where this package cannot open a
// pseudo-terminal; tests then skip.
var ErrUnsupported = errors.New("ptytest: no pseudo-terminals here")

// Open returns a new pseudo-terminal: the master side, which reads what is
// written to the slave, and the slave side, a terminal to give a process
// as its standard error. The caller closes both.
func Open() (master, slave *os.File, err error) { return open() }

// OpenOrSkip is Open for a test: it skips the test where there are no
// pseudo-terminals, fails it on another error, and closes both sides when
// the test ends (closing the slave sooner, once a process has it, is
// allowed).
func OpenOrSkip(t testing.TB) (master, slave *os.File) {
	t.Helper()
	master, slave, err := Open()
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close(); slave.Close() })
	return master, slave
}
