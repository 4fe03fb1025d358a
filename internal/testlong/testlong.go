// Package testlong is the one switch for the module's long checks: the
// tests that take more than a few seconds (10^7-key end-to-end runs, full
// growth at every rate, statistical rates over many seeds, crash loops,
// stalls of a real server). README's `go test ./...` skips them; setting
// CUCKOO_LONG=1 runs them, and CI does (.ci/run). Only tests import it.
package testlong

import (
	"os"
	"testing"
)

// Env is the environment variable that turns the long checks on.
const Env = "CUCKOO_LONG"

// Enabled reports whether the long checks run: CUCKOO_LONG is set to a
// value other than "" or "0".
func Enabled() bool {
	v := os.Getenv(Env)
	return v != "" && v != "0"
}

// Skip skips t unless the long checks run, saying how to run it.
func Skip(t testing.TB) {
	t.Helper()
	if !Enabled() {
		t.Skip("a long check: set " + Env + "=1 to run it")
	}
}

// SkipUnderRace skips t under the race detector: for a heavy test of one
// goroutine (statistics, big tables), in which the detector finds nothing
// and which it makes five to twenty times slower. The runs without -race
// (the quick run, the long checks) check it.
func SkipUnderRace(t testing.TB) {
	t.Helper()
	if RaceEnabled {
		t.Skip("one goroutine's work, in which the race detector finds nothing: the runs without -race check it")
	}
}
