package cuckoo

import (
	"unsafe"

	"github.com/dedupkit/cuckoo/internal/hash"
)

// key is a key in one of the forms the methods take (bytes, a string, an
// integer, or the caller's own 64-bit hash), to be hashed with the seed of
// the state an operation works on: a Concurrent's state, seed included, may
// be replaced while an operation retries.
type key struct {
	p    *byte // the bytes of a bytes or string key
	n    int
	v    uint64 // an integer key, or a hash
	form keyForm
}

type keyForm uint8

const (
	keyBytes keyForm = iota
	keyUint64
	keyHash
)

func bytesKey(b []byte) key  { return key{p: unsafe.SliceData(b), n: len(b)} }
func stringKey(s string) key { return key{p: unsafe.StringData(s), n: len(s)} }
func uint64Key(v uint64) key { return key{v: v, form: keyUint64} }
func hashKey(h uint64) key   { return key{v: h, form: keyHash} }

// hash returns the key's hash for seed: XXH3-64 of its bytes (an integer's
// 8 little-endian bytes), or the caller's hash as it is.
func (k key) hash(seed uint64) uint64 {
	switch k.form {
	case keyUint64:
		return hash.Sum64Uint64(k.v, seed)
	case keyHash:
		return k.v
	}
	return hash.Sum64(unsafe.Slice(k.p, k.n), seed)
}
