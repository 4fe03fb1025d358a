//go:build !purego

package cuckoo

// prefetch asks the CPU to start loading the cache lines of words[i] for
// every i in idx into all cache levels, and returns at once. Prefetching is
// a hint: it never faults and changes nothing visible. Every i must be a
// valid index of words.
func prefetch(words []uint64, idx []uint64) uint64 {
	if len(idx) > 0 && len(words) > 0 {
		prefetchWords(&words[0], &idx[0], len(idx))
	}
	return 0
}

// prefetchWords issues PREFETCHT0 for base[idx[k]], k < n.
//
//go:noescape
func prefetchWords(base *uint64, idx *uint64, n int)
