package main

import (
	"unsafe"

	"github.com/FastFilter/xorfilter"
	"github.com/cespare/xxhash/v2"
)

// github.com/FastFilter/xorfilter binary fuse filters with 8- and 16-bit
// fingerprints: static filters, built once from all keys, no inserts after
// and no deletes. The space reference. "Add" time is hashing each key
// (xxhash) plus the construction, per key.

func init() {
	register(spec{
		name: "xorfilter BinaryFuse8 (static)", module: "github.com/FastFilter/xorfilter",
		kind: kindStatic,
		make: func(n, _ uint64) (filter, error) { return &fuse[uint8]{hashes: make([]uint64, 0, n)}, nil },
	})
	register(spec{
		name: "xorfilter BinaryFuse16 (static)", module: "github.com/FastFilter/xorfilter",
		kind: kindStatic,
		make: func(n, _ uint64) (filter, error) { return &fuse[uint16]{hashes: make([]uint64, 0, n)}, nil },
	})
}

type fuse[T uint8 | uint16] struct {
	hashes []uint64 // collected by add, dropped by seal
	f      *xorfilter.BinaryFuse[T]
}

func (a *fuse[T]) add(keys [][]byte) (failed int) {
	a.hashes = appendHashes(a.hashes, keys)
	return 0
}

func (a *fuse[T]) seal() error {
	f, err := xorfilter.NewBinaryFuse[T](a.hashes)
	a.f, a.hashes = f, nil
	return err
}

func (a *fuse[T]) contains(keys [][]byte) (found int) {
	f := a.f
	for _, k := range keys {
		if f.Contains(xxhash.Sum64(k)) {
			found++
		}
	}
	return found
}

func (a *fuse[T]) remove([][]byte) int { panic("bench: static filter") }

func (a *fuse[T]) reportedBytes() int64 {
	var t T
	return int64(len(a.f.Fingerprints)) * int64(unsafe.Sizeof(t))
}
