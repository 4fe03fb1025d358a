//go:build !purego

package prefetch

// Words asks the CPU to start loading the cache lines of words[i] for
// every i in idx into all cache levels, and returns at once. Prefetching is
// a hint: it never faults and changes nothing visible. Every i must be a
// valid index of words.
func Words(words []uint64, idx []uint64) uint64 {
	if len(idx) > 0 && len(words) > 0 {
		prefetchWords(&words[0], &idx[0], len(idx))
	}
	return 0
}

// prefetchWords issues PREFETCHT0 for base[idx[k]], k < n.
//
//go:noescape
func prefetchWords(base *uint64, idx *uint64, n int)

// Keys asks the CPU to start loading the first cache line of every
// key's bytes. An empty key's data pointer may be nil; prefetching it is
// harmless.
func Keys(keys [][]byte) uint64 {
	if len(keys) > 0 {
		prefetchKeyData(&keys[0], len(keys))
	}
	return 0
}

// prefetchKeyData issues PREFETCHT0 for the data pointer of keys[k], k < n.
//
//go:noescape
func prefetchKeyData(keys *[]byte, n int)

// Shared is Words for the words of a table that other
// goroutines write with atomic operations (a Concurrent's). A prefetch
// instruction reads nothing the program sees, so it needs no atomic load
// and races with nothing.
func Shared(words []uint64, idx []uint64) uint64 { return Words(words, idx) }
