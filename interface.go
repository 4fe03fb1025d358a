package cuckoo

import (
	"encoding"
	"io"
)

// Interface is what [Filter], [Scalable] and [Concurrent] have in common,
// for code that should work with any of them: a dedup loop that takes a
// fixed filter in one program and a growing one in another, say. Each
// method means what it means on each type; their differences are in the
// types' documentation (a Scalable's Add never returns ErrFull; only a
// Concurrent may be written by several goroutines at once).
type Interface interface {
	Add(key []byte) error
	AddString(key string) error
	AddUint64(key uint64) error
	AddHash(h uint64) error
	AddUnique(key []byte) (added bool, err error)
	AddUniqueString(key string) (added bool, err error)
	AddBatch(keys [][]byte) (added int, err error)
	AddUniqueBatch(keys [][]byte, added []bool) (processed int, err error)

	Contains(key []byte) bool
	ContainsString(key string) bool
	ContainsUint64(key uint64) bool
	ContainsHash(h uint64) bool
	ContainsBatch(keys [][]byte, found []bool)
	ContainsHashBatch(hashes []uint64, found []bool)

	Delete(key []byte) bool
	DeleteString(key string) bool
	DeleteUint64(key uint64) bool
	DeleteHash(h uint64) bool

	Count(key []byte) uint64
	CountString(key string) uint64
	CountUint64(key uint64) uint64
	CountHash(h uint64) uint64

	Len() uint64
	Capacity() uint64
	LoadFactor() float64
	FalsePositiveRate() float64
	SizeInBytes() uint64
	FingerprintBits() int
	BucketSize() int
	Seed() uint64
	Reset()

	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
	io.WriterTo
	io.ReaderFrom
}

var (
	_ Interface = (*Filter)(nil)
	_ Interface = (*Scalable)(nil)
	_ Interface = (*Concurrent)(nil)
)
