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

// SkipQuickRun skips t in the quick run (README's go test ./..., with
// neither the long checks nor -short): for a check whose quick size still
// costs seconds of a server's, a process's or a disk's time, which the
// quick run leaves out so that a newcomer's first run ends within its
// budget (docs/testing.md). The check loses nothing: the long run runs it
// at its full size, and CI's instrumented runs (-race, -tags invariants,
// -tags purego, all with -short) at its quick size.
func SkipQuickRun(t testing.TB) {
	t.Helper()
	if !Enabled() && !testing.Short() {
		t.Skip("left out of the quick run: it runs with " + Env + "=1 and with -short")
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
