package table

import "unsafe"

// CacheLine is the size of a CPU cache line (64 bytes on amd64 and arm64).
//
// A Concurrent's lookups read data that other cores' writers may sit next
// to: its struct, its chain, the table list, each table
// (internal/table/concurrent), the version counters and the table words. If another object shared a cache
// line with them and a core wrote it often, every such write would take
// the line away from the reading cores (false sharing): two goroutines
// doing nothing but lookups then run at one goroutine's speed. So each of
// them has a line of padding on both sides inside its own allocation,
// struct fields or padded slices, and no other object can share its lines
// wherever the allocator places it. (TestPadding checks the structs.)
const CacheLine = 64

// Padded returns n zero values of T, with capacity for extra more, in an
// allocation with at least a cache line of padding on each side of them
// (see CacheLine).
func Padded[T any](n, extra uint64) []T {
	pad := uint64((CacheLine + unsafe.Sizeof(*new(T)) - 1) / unsafe.Sizeof(*new(T)))
	buf := make([]T, pad+n+extra+pad)
	return buf[pad : pad+n : pad+n+extra]
}

// PaddedCopy returns a copy of ts in a padded allocation (see padded).
func PaddedCopy[T any](ts []T) []T {
	out := Padded[T](uint64(len(ts)), 0)
	copy(out, ts)
	return out
}

// LinesInside reports whether, wherever the allocator places a struct of
// size bytes (at any 8-byte aligned address), the cache lines that hold
// its bytes [from, to) lie inside it, and if not, the first placement (the
// struct's address mod CacheLine) that breaks it and the lines there: what
// the padding of the structs that lookups read must keep (their tests ask
// it).
func LinesInside(size, from, to uintptr) (at, first, end uintptr, ok bool) {
	for a := uintptr(0); a < CacheLine; a += 8 {
		first = (a + from) &^ (CacheLine - 1)
		end = (a + to + CacheLine - 1) &^ (CacheLine - 1)
		if first < a || end > a+size {
			return a, first, end, false
		}
	}
	return 0, 0, 0, true
}
