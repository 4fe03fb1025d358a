//go:build race

package main

// raceEnabled is true under the race detector: the binary the end-to-end
// tests run is then built with -race too.
const raceEnabled = true
