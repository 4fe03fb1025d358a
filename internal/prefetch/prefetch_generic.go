//go:build !amd64 || purego

package prefetch

import "sync/atomic"

// Words is the portable twin of the amd64 assembly: Go has no prefetch
// instruction, so it loads one word of each line. The loads are
// independent, so the CPU overlaps their misses, which keeps part of the
// benefit. Every i in idx must be a valid index of words.
//
//go:noinline
func Words(words []uint64, idx []uint64) uint64 {
	var sink uint64
	for _, i := range idx {
		sink |= words[i]
	}
	return sink
}

// Keys loads the first byte of every non-empty key (see Words).
//
//go:noinline
func Keys(keys [][]byte) uint64 {
	var sink uint64
	for _, k := range keys {
		if len(k) > 0 {
			sink |= uint64(k[0])
		}
	}
	return sink
}

// Shared is Words for the words of a table that other
// goroutines write with atomic operations (a Concurrent's): the loads are
// atomic, so that the race detector sees no race.
//
//go:noinline
func Shared(words []uint64, idx []uint64) uint64 {
	var sink uint64
	for _, i := range idx {
		sink |= atomic.LoadUint64(&words[i])
	}
	return sink
}
