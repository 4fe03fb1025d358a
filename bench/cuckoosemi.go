package main

import "github.com/dedupkit/cuckoo"

// This project's semi-sorted cuckoo filter (WithSemiSorting): 13-bit
// fingerprints stored in 12 bits per slot, to compare with the plain 12-bit
// filter at the same memory.

func init() {
	register(spec{
		name: rowSemi, kind: kindCuckoo, ours: true, deletes: true,
		make: func(n, seed uint64) (filter, error) {
			f, err := cuckoo.New(n, cuckoo.WithFingerprintBits(13), cuckoo.WithBucketSize(4),
				cuckoo.WithSemiSorting(), cuckoo.WithSeed(seed))
			return &cuckooKeys{f}, err
		},
	})
}
