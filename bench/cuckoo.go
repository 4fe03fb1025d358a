package main

import (
	"fmt"

	"github.com/cespare/xxhash/v2"
	"github.com/dedupkit/cuckoo"
)

// This project's cuckoo filter: cuckoo.New with 4-slot buckets and 8-, 12-
// and 16-bit fingerprints, the pre-hashed API, and the batch API.

func init() {
	for _, bits := range []int{8, 12, 16} {
		name := fmt.Sprintf("cuckoo f=%d", bits)
		if bits == cuckoo.DefaultFingerprintBits {
			name += " (default)"
		}
		register(spec{
			name: name, kind: kindCuckoo, ours: true, deletes: true,
			make: func(n, seed uint64) (filter, error) {
				f, err := newCuckoo(n, seed, bits)
				return &cuckooKeys{f}, err
			},
		})
	}
	register(spec{
		name: "cuckoo f=16 AddHash/ContainsHash (pre-hashed)", kind: kindCuckoo, ours: true, deletes: true, variant: true,
		make: func(n, seed uint64) (filter, error) {
			f, err := newCuckoo(n, seed, 16)
			return &cuckooHashed{f: f}, err
		},
	})
	for _, bits := range []int{8, 16} {
		register(spec{
			name: fmt.Sprintf("cuckoo f=%d ContainsBatch/AddBatch", bits), kind: kindCuckoo, ours: true, deletes: true, variant: true,
			make: func(n, seed uint64) (filter, error) {
				f, err := newCuckoo(n, seed, bits)
				return &cuckooBatch{f: f}, err
			},
		})
	}
}

func newCuckoo(n, seed uint64, bits int) (*cuckoo.Filter, error) {
	return cuckoo.New(n, cuckoo.WithFingerprintBits(bits), cuckoo.WithBucketSize(4), cuckoo.WithSeed(seed))
}

// cuckooKeys measures the plain []byte API, one key per call.
type cuckooKeys struct{ f *cuckoo.Filter }

func (a *cuckooKeys) add(keys [][]byte) (failed int) {
	f := a.f
	for _, k := range keys {
		if f.Add(k) != nil {
			failed++
		}
	}
	return failed
}

func (a *cuckooKeys) contains(keys [][]byte) (found int) {
	f := a.f
	for _, k := range keys {
		if f.Contains(k) {
			found++
		}
	}
	return found
}

func (a *cuckooKeys) remove(keys [][]byte) (failed int) {
	f := a.f
	for _, k := range keys {
		if !f.Delete(k) {
			failed++
		}
	}
	return failed
}

func (a *cuckooKeys) seal() error          { return nil }
func (a *cuckooKeys) reportedBytes() int64 { return int64(a.f.SizeInBytes()) }

// cuckooHashed measures AddHash/ContainsHash/DeleteHash for a caller that
// already holds a 64-bit hash of each key: the hashes (xxhash, as such a
// caller might use) are computed untimed by prepare.
type cuckooHashed struct {
	f      *cuckoo.Filter
	hashes []uint64
}

func (a *cuckooHashed) prepare(keys [][]byte) {
	a.hashes = appendHashes(a.hashes[:0], keys)
}

func (a *cuckooHashed) add(keys [][]byte) (failed int) {
	f := a.f
	for _, h := range a.hashes[:len(keys)] {
		if f.AddHash(h) != nil {
			failed++
		}
	}
	return failed
}

func (a *cuckooHashed) contains(keys [][]byte) (found int) {
	f := a.f
	for _, h := range a.hashes[:len(keys)] {
		if f.ContainsHash(h) {
			found++
		}
	}
	return found
}

func (a *cuckooHashed) remove(keys [][]byte) (failed int) {
	f := a.f
	for _, h := range a.hashes[:len(keys)] {
		if !f.DeleteHash(h) {
			failed++
		}
	}
	return failed
}

func (a *cuckooHashed) seal() error          { return nil }
func (a *cuckooHashed) scratchBytes() int64  { return int64(cap(a.hashes)) * 8 }
func (a *cuckooHashed) reportedBytes() int64 { return int64(a.f.SizeInBytes()) }

// appendHashes appends the xxhash of every key to dst.
func appendHashes(dst []uint64, keys [][]byte) []uint64 {
	for _, k := range keys {
		dst = append(dst, xxhash.Sum64(k))
	}
	return dst
}

// batchLen is the number of keys per batch call: what a caller streaming
// keys would hand over at a time.
const batchLen = 1024

// cuckooBatch measures ContainsBatch and AddBatch (cuckoo.Batcher), in
// calls of batchLen keys.
type cuckooBatch struct {
	f     *cuckoo.Filter
	found [batchLen]bool
}

func (a *cuckooBatch) add(keys [][]byte) (failed int) {
	// AddBatch stops at the first refused key: count it, go on after it.
	for len(keys) > 0 {
		n := min(len(keys), batchLen)
		added, err := a.f.AddBatch(keys[:n])
		if err != nil && added < n {
			failed++
			n = added + 1
		}
		keys = keys[n:]
	}
	return failed
}

func (a *cuckooBatch) contains(keys [][]byte) (found int) {
	for len(keys) > 0 {
		n := min(len(keys), batchLen)
		out := a.found[:n]
		a.f.ContainsBatch(keys[:n], out)
		for _, ok := range out {
			if ok {
				found++
			}
		}
		keys = keys[n:]
	}
	return found
}

func (a *cuckooBatch) remove(keys [][]byte) (failed int) {
	return (&cuckooKeys{a.f}).remove(keys)
}

func (a *cuckooBatch) seal() error          { return nil }
func (a *cuckooBatch) reportedBytes() int64 { return int64(a.f.SizeInBytes()) }
