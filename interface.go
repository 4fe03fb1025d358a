package cuckoo

import (
	"encoding"
	"io"
)

// The small interfaces below are what code needs that should work with
// more than one filter type: a dedup loop that takes a fixed filter in one
// program and a growing one in another, a server that keeps either under
// a key. Each method means what it means on each type; the differences are
// in the types' documentation (a Scalable's Add returns ErrFull only when
// its next table cannot be made, on a 32-bit platform past 2 GiB;
// only a Concurrent may be written by several goroutines at once; a
// Window forgets keys older than its window). docs/api.md lists which
// type implements which.

// Set is a filter seen as a set of keys: [Filter], [Scalable],
// [Concurrent] and [Window] implement it.
type Set interface {
	Add(key []byte) error
	AddUnique(key []byte) (added bool, err error)
	Contains(key []byte) bool
	Delete(key []byte) bool
	Len() uint64
}

// Counter is a [Set] that counts the copies of each key, as [Filter],
// [Scalable] and [Concurrent] do (a [Window] holds a key once).
type Counter interface {
	Set
	Count(key []byte) uint64
}

// Batcher is the batch form of a [Set]'s calls, which overlaps the memory
// accesses of many keys (see [Filter.ContainsBatch]): [Filter],
// [Scalable], [Concurrent] and [Window] implement it.
type Batcher interface {
	AddBatch(keys [][]byte) (added int, err error)
	AddUniqueBatch(keys [][]byte, added []bool) (processed int, err error)
	ContainsBatch(keys [][]byte, found []bool)
	DeleteBatch(keys [][]byte, deleted []bool)
}

// Encoder is a filter that writes its encoding (docs/format.md): every
// filter type implements it, and the type's zero value decodes it with
// UnmarshalBinary or ReadFrom.
type Encoder interface {
	encoding.BinaryMarshaler
	io.WriterTo
}

var (
	_ Counter = (*Filter)(nil)
	_ Counter = (*Scalable)(nil)
	_ Counter = (*Concurrent)(nil)
	_ Set     = (*Window)(nil)
	_ Batcher = (*Filter)(nil)
	_ Batcher = (*Scalable)(nil)
	_ Batcher = (*Concurrent)(nil)
	_ Batcher = (*Window)(nil)
	_ Encoder = (*Filter)(nil)
	_ Encoder = (*Scalable)(nil)
	_ Encoder = (*Concurrent)(nil)
	_ Encoder = (*Window)(nil)
)
