//go:build !race

package bloom_test

// raceEnabled reports whether the race detector is on: timing-heavy
// statistical cases shrink then (never their bounds).
const raceEnabled = false
