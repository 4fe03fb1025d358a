package server

// A key's value is a cuckoo filter (CF.* commands) or a Bloom filter (BF.*
// commands). Both persist in one encoding, used by snapshots and by
// CF.SCANDUMP / BF.SCANDUMP, so a dump is exactly what a snapshot stores:
//
//	+--------+---------+------+-------+-------------+-----------+-----------+---------+--------+
//	| "CKOB" | version | kind | flags | total bytes | expansion | deletes   | filter  | CRC-32C|
//	| 4 B    | 1 B     | 1 B  | 2 B   | u64         | u64       | u64       | n B     | u32    |
//	+--------+---------+------+-------+-------------+-----------+-----------+---------+--------+
//
// All integers are little-endian. version is 1; kind is 1 (cuckoo) or 2
// (Bloom); flags bit 0 is set for a growing filter (cuckoo.Scalable or
// bloom.Scalable) and clear for a fixed one (cuckoo.Filter, bloom.Filter);
// bit 1 alone marks a window filter (cuckoo.Window, window.go); the other
// bits are zero. total bytes is the length of the whole encoding,
// checksum included, so that a reader of the first chunk of a dump knows
// how much is to come. expansion is the EXPANSION the filter was created
// with, as CF.INFO and BF.INFO report it; deletes is CF.INFO's "Number of
// items deleted" (0 for Bloom). The filter is the library's own encoding
// (MarshalBinary), with its own checksum; the CRC-32C closes the whole.
// These constants are frozen: a snapshot written by this version is read
// by every later one.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/bloom"
	"github.com/dedupkit/cuckoo/internal/codec"
)

const (
	objMagic      = "CKOB" // frozen
	objVersion    = 1      // frozen
	objHeaderSize = 4 + 1 + 1 + 2 + 8 + 8 + 8
	objFlagGrow   = 1 // frozen
)

// kind is the type of a key's value. The values are frozen: they are the
// kind byte of the object encoding.
type kind uint8

const (
	kindCF kind = 1
	kindBF kind = 2
)

// typeName returns the name TYPE answers, RedisBloom's module type names.
func (k kind) typeName() string {
	if k == kindCF {
		return "MBbloomCF"
	}
	return "MBbloom--"
}

// object is the value of one key.
//
// Invariants:
//   - kind never changes, and exactly one of cf and bf is set, as kind says.
//   - while the object is in the key space, name is its key; once removed
//     (DEL, RENAME's overwritten target, FLUSHALL) dead is true and it is
//     never changed again.
//   - a write holds mu for writing from before it changes the filter until
//     after its log record is appended, so the log orders each key's writes
//     as they ran (see keyspace.go).
type object struct {
	mu   sync.RWMutex
	kind kind
	cf   *cfValue
	bf   *bfValue

	// name, dead and size are guarded by mu (written under the write
	// lock).
	name      string
	dead      bool
	size      int64 // SizeInBytes when last accounted in keyspace.used
	numTables int   // tableCount when last accounted in keyspace.growths
	// dump is the encoding CF.SCANDUMP/BF.SCANDUMP serves chunks of,
	// taken when a dump starts (iterator 0), or nil; dumpTick orders its
	// last use among the other copies' (dump.go). dumpMu guards dump; it
	// is taken after mu, never before.
	dumpMu   sync.Mutex
	dump     []byte
	dumpGen  int32 // the generation of dump, carried by its iterators (dump.go)
	dumpTick atomic.Uint64
	dumpUsed atomic.Int64 // when dump last served a chunk or was taken (dumpCopies.now)

	// snapEpoch is the latest snapshot epoch that already holds this
	// object's state (or that began after the object was created). It is
	// written under mu for writing, or under mu for reading by the one
	// snapshot scan; see keyspace.snapshotCopy.
	snapEpoch atomic.Uint64
}

// cfValue is a cuckoo filter: fixed (EXPANSION 0), growing, or a window
// filter (WINDOW: window.go).
//
// Invariants: exactly one of f, s and win is set.
type cfValue struct {
	f         *cuckoo.Filter
	s         *cuckoo.Scalable
	win       *windowValue
	expansion uint64 // as given to CF.RESERVE (0: fixed)
	deletes   uint64 // successful CF.DELs, for CF.INFO
}

// cfFilter is what the CF commands need of a cuckoo filter: a
// cuckoo.Filter, a cuckoo.Scalable, or a window (windowFilter).
type cfFilter interface {
	cuckoo.Counter
	SizeInBytes() uint64
	BucketSize() int
	MaxKicks() int
	EncodedSize() int64
	io.WriterTo
}

// filter returns the filter v holds.
func (v *cfValue) filter() cfFilter {
	switch {
	case v.win != nil:
		return (*windowFilter)(v.win)
	case v.f != nil:
		return v.f
	}
	return v.s
}

func (v *cfValue) add(item []byte) error               { return v.filter().Add(item) }
func (v *cfValue) addUnique(item []byte) (bool, error) { return v.filter().AddUnique(item) }
func (v *cfValue) contains(item []byte) bool           { return v.filter().Contains(item) }
func (v *cfValue) count(item []byte) uint64            { return v.filter().Count(item) }
func (v *cfValue) len() uint64                         { return v.filter().Len() }
func (v *cfValue) sizeInBytes() uint64                 { return v.filter().SizeInBytes() }
func (v *cfValue) bucketSize() int                     { return v.filter().BucketSize() }
func (v *cfValue) maxKicks() int                       { return v.filter().MaxKicks() }
func (v *cfValue) writer() (io.WriterTo, int64)        { f := v.filter(); return f, f.EncodedSize() }

func (v *cfValue) del(item []byte) bool {
	ok := v.filter().Delete(item)
	if ok {
		v.deletes++
	}
	return ok
}

// windowFilter is a window's value as a cfFilter: its writes run at the
// time windowWrite took (window.go), and Count is 0 or 1, a window
// holding each item once.
type windowFilter windowValue

func (w *windowFilter) value() *windowValue                  { return (*windowValue)(w) }
func (w *windowFilter) Add(item []byte) error                { return w.value().add(item) }
func (w *windowFilter) AddUnique(item []byte) (bool, error)  { return w.value().addUnique(item) }
func (w *windowFilter) Delete(item []byte) bool              { return w.value().del(item) }
func (w *windowFilter) Count(item []byte) uint64             { return w.value().count(item) }
func (w *windowFilter) Contains(item []byte) bool            { return w.w.Contains(item) }
func (w *windowFilter) Len() uint64                          { return w.w.Len() }
func (w *windowFilter) SizeInBytes() uint64                  { return w.w.SizeInBytes() }
func (w *windowFilter) BucketSize() int                      { return w.w.BucketSize() }
func (w *windowFilter) MaxKicks() int                        { return w.w.MaxKicks() }
func (w *windowFilter) EncodedSize() int64                   { return w.w.EncodedSize() }
func (w *windowFilter) WriteTo(out io.Writer) (int64, error) { return w.w.WriteTo(out) }

// infoSize returns CF.INFO's Size: the length of the filter's encoding,
// its tables and counters, which depends only on what the filter holds.
// (SizeInBytes, which maxmemory counts, includes the memory inserts keep
// between calls, which depends on their history: a dump loaded back, a
// restart or a replay would report another figure.)
func (v *cfValue) infoSize() uint64 {
	_, n := v.writer()
	return uint64(n)
}

// capacity returns the items the filter was sized for: a growing one's,
// the tables' it has so far.
func (v *cfValue) capacity() uint64 {
	switch {
	case v.win != nil:
		return v.win.w.Capacity()
	case v.f != nil:
		return v.f.Capacity()
	}
	return v.s.Capacity()
}

func (v *cfValue) tables() int {
	if v.f != nil || v.win != nil {
		return 1
	}
	return v.s.NumTables()
}

// buckets returns CF.INFO's "Number of buckets": the table's buckets for a
// fixed filter; for a growing one, which does not expose its bucket
// counts, the buckets its capacity fills at one item per slot.
func (v *cfValue) buckets() uint64 {
	if v.f != nil {
		return v.f.NumBuckets()
	}
	if v.win != nil {
		return v.win.w.NumBuckets()
	}
	b := uint64(v.s.BucketSize())
	return (v.s.Capacity() + b - 1) / b
}

// bfValue is a Bloom filter: fixed (NONSCALING) or growing.
//
// Invariants: exactly one of f and s is set.
type bfValue struct {
	f         *bloom.Filter
	s         *bloom.Scalable
	expansion uint64 // as given to BF.RESERVE (0 for NONSCALING)
}

// addUnique adds item and reports whether it was absent. A fixed filter
// holding its capacity refuses new items (errBloomFull), as RedisBloom's
// NONSCALING filters do, so that its false-positive rate stays the one it
// was built for.
func (v *bfValue) addUnique(item []byte) (bool, error) {
	if v.f != nil {
		if v.f.Len() >= v.f.Capacity() {
			if v.f.Contains(item) {
				return false, nil
			}
			return false, errBloomFull
		}
		return v.f.AddUnique(item)
	}
	return v.s.AddUnique(item)
}

// bfFilter is what the BF commands read of a Bloom filter: a bloom.Filter
// or a bloom.Scalable.
type bfFilter interface {
	Contains(key []byte) bool
	Len() uint64
	Capacity() uint64
	SizeInBytes() uint64
	EncodedSize() int64
	io.WriterTo
}

// filter returns the filter v holds.
func (v *bfValue) filter() bfFilter {
	if v.f != nil {
		return v.f
	}
	return v.s
}

func (v *bfValue) contains(item []byte) bool    { return v.filter().Contains(item) }
func (v *bfValue) len() uint64                  { return v.filter().Len() }
func (v *bfValue) capacity() uint64             { return v.filter().Capacity() }
func (v *bfValue) sizeInBytes() uint64          { return v.filter().SizeInBytes() }
func (v *bfValue) writer() (io.WriterTo, int64) { f := v.filter(); return f, f.EncodedSize() }

func (v *bfValue) tables() int {
	if v.f != nil {
		return 1
	}
	return v.s.NumTables()
}

func (o *object) sizeInBytes() int64 {
	if o.cf != nil {
		return int64(o.cf.sizeInBytes())
	}
	return int64(o.bf.sizeInBytes())
}

// encodedSize returns the length of o's object encoding. The caller holds
// o.mu (for reading at least).
func (o *object) encodedSize() int64 {
	var n int64
	if o.cf != nil {
		_, n = o.cf.writer()
	} else {
		_, n = o.bf.writer()
	}
	return objHeaderSize + n + 4
}

// encode returns the object encoding of o, in one allocation of its exact
// size. The caller holds o.mu (for reading at least).
func (o *object) encode() ([]byte, error) {
	var (
		filter    io.WriterTo
		n         int64
		flags     uint16
		expansion uint64
		deletes   uint64
	)
	if o.cf != nil {
		filter, n = o.cf.writer()
		expansion, deletes = o.cf.expansion, o.cf.deletes
		if o.cf.s != nil {
			flags |= objFlagGrow
		}
		if o.cf.win != nil {
			flags |= objFlagWindow
		}
	} else {
		filter, n = o.bf.writer()
		expansion = o.bf.expansion
		if o.bf.s != nil {
			flags |= objFlagGrow
		}
	}
	total := objHeaderSize + n + 4
	buf := bytes.NewBuffer(make([]byte, 0, total))
	var h [objHeaderSize]byte
	copy(h[:], objMagic)
	h[4] = objVersion
	h[5] = byte(o.kind)
	binary.LittleEndian.PutUint16(h[6:], flags)
	binary.LittleEndian.PutUint64(h[8:], uint64(total))
	binary.LittleEndian.PutUint64(h[16:], expansion)
	binary.LittleEndian.PutUint64(h[24:], deletes)
	buf.Write(h[:])
	if _, err := filter.WriteTo(buf); err != nil {
		return nil, err
	}
	if int64(buf.Len()) != objHeaderSize+n {
		return nil, fmt.Errorf("server: filter wrote %d bytes, announced %d", buf.Len()-objHeaderSize, n)
	}
	p := buf.Bytes()
	return binary.LittleEndian.AppendUint32(p, codec.Checksum(p)), nil
}

// errObjectCorrupt is wrapped by every error of decodeObject.
var errObjectCorrupt = errors.New("server: corrupt filter encoding")

// encodedLength returns the total length an object encoding announces in
// its header, which must be at least 16 bytes of it.
func encodedLength(head []byte) (uint64, error) {
	if len(head) < 16 || string(head[:4]) != objMagic {
		return 0, fmt.Errorf("%w: no object header", errObjectCorrupt)
	}
	return binary.LittleEndian.Uint64(head[8:16]), nil
}

// decodeObject decodes an object encoding of the given kind (0: any).
func decodeObject(p []byte, want kind) (*object, error) {
	if len(p) < objHeaderSize+4 {
		return nil, fmt.Errorf("%w: %d bytes", errObjectCorrupt, len(p))
	}
	le := binary.LittleEndian
	version, k, flags := p[4], kind(p[5]), le.Uint16(p[6:])
	total, expansion, deletes := le.Uint64(p[8:]), le.Uint64(p[16:]), le.Uint64(p[24:])
	switch {
	case string(p[:4]) != objMagic:
		return nil, fmt.Errorf("%w: bad magic", errObjectCorrupt)
	case version != objVersion:
		return nil, fmt.Errorf("%w: unknown version %d", errObjectCorrupt, version)
	case k != kindCF && k != kindBF || want != 0 && k != want:
		return nil, fmt.Errorf("%w: kind %d", errObjectCorrupt, k)
	case flags&^objFlagGrow != 0 && (k != kindCF || flags != objFlagWindow):
		return nil, fmt.Errorf("%w: unknown flags %#x", errObjectCorrupt, flags)
	case total != uint64(len(p)):
		return nil, fmt.Errorf("%w: length %d in header, %d given", errObjectCorrupt, total, len(p))
	}
	filter := p[objHeaderSize : len(p)-4]
	if codec.Checksum(p[:len(p)-4]) != le.Uint32(p[len(p)-4:]) {
		return nil, fmt.Errorf("%w: %v", errObjectCorrupt, codec.ErrChecksum)
	}
	o := &object{kind: k}
	grow := flags&objFlagGrow != 0
	var err error
	if k == kindCF {
		v := &cfValue{expansion: expansion, deletes: deletes}
		if flags == objFlagWindow {
			v.win, err = decodeWindowValue(filter)
		} else if grow {
			v.s = new(cuckoo.Scalable)
			err = v.s.UnmarshalBinary(filter)
		} else {
			v.f = new(cuckoo.Filter)
			err = v.f.UnmarshalBinary(filter)
		}
		o.cf = v
	} else {
		v := &bfValue{expansion: expansion}
		if grow {
			v.s = new(bloom.Scalable)
			err = v.s.UnmarshalBinary(filter)
		} else {
			v.f = new(bloom.Filter)
			err = v.f.UnmarshalBinary(filter)
		}
		o.bf = v
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errObjectCorrupt, err)
	}
	o.size = o.sizeInBytes()
	o.numTables = o.tableCount()
	return o, nil
}
