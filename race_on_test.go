//go:build race

package cuckoo_test

// raceEnabled is true under the race detector, which slows memory accesses
// ten to twenty times: the heaviest tests shrink their sizes (never their
// bounds) then.
const raceEnabled = true
