//go:build race

package testlong

// RaceEnabled reports whether the race detector is compiled in. It slows
// memory accesses five to twenty times and finds nothing in a test of one
// goroutine: such tests, when heavy (statistics, big tables, long model
// runs), shrink or skip under it; the quick run and the long checks run
// them in full. Tests of concurrency always run under it.
const RaceEnabled = true
