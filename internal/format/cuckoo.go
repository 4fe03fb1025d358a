package format

import (
	"encoding/binary"
	"math"

	"github.com/dedupkit/cuckoo/internal/codec"
)

// The headers of the cuckoo family, version 1. Every one starts with the
// same 12 bytes: the start (magic "CKOO", version, kind), then
//
//	offset  size  field
//	     7     1  flags (FlagSemiSort, FlagGrowing; each kind allows some)
//	     8     1  bucket size b
//	     9     1  fingerprint bits f
//	    10     1  hash = HashXXH3 (0: a file from before format 1, ErrPreV1)
//	    11     1  reserved = 0
//
// and the fields of its kind, which TableHeader, ChainHeader and
// WindowHeader list with their offsets. What the values may be (bucket
// sizes, fingerprint widths, counts against a table's size) is for the
// filter that reads them to check; the readers here check the bytes the
// format fixes: magic, version, hash, kind, flags a kind does not allow,
// reserved bytes.

// HashXXH3 is the hash byte of every cuckoo and Bloom file of format 1:
// XXH3-64 of the key with the filter's seed. (0 was the hash of the files
// written before format 1 was frozen, retired.)
const HashXXH3 = 1

// The flags of a cuckoo header.
const (
	// FlagSemiSort marks semi-sorted buckets (b = 4).
	FlagSemiSort = 1 << 0
	// FlagGrowing marks the table of a chain that grows in place: its
	// slots hold tags wider than its fingerprints, so it is not a
	// Filter's table. Only a table inside a chain's file carries it.
	FlagGrowing = 1 << 1
)

// The sizes of the parts of the cuckoo files.
const (
	TableHeaderSize  = 72 // kind Filter
	ChainHeaderSize  = 64 // kind Scalable
	WindowHeaderSize = 80 // kind Window
	// TableCounterSize is the size of one duplicate counter after a
	// table's words: the key (bucket<<32 | fingerprint) and the copies,
	// 8 bytes each.
	TableCounterSize = 16
	// ChecksumSize is the size of the CRC-32C trailer of every file.
	ChecksumSize = 4
)

// prologueSize is the size of the bytes every cuckoo header starts with.
const prologueSize = 12

// prologue is the part of a cuckoo header after the start that every
// kind shares.
type prologue struct {
	flags, slots, fpBits uint8
}

func (p prologue) append(b []byte, k Kind) []byte {
	b = AppendStart(b, k)
	return append(b, p.flags, p.slots, p.fpBits, HashXXH3, 0)
}

// readPrologueV1 reads the rest of a version-1 prologue after the start
// and checks it: the hash (a file from before format 1 gets ErrPreV1,
// whatever its kind), the kind, the reserved byte and the flags the kind
// allows.
func readPrologueV1(d *codec.Decoder, s Start, want Kind, flags uint8) (prologue, error) {
	p := prologue{flags: d.Uint8(), slots: d.Uint8(), fpBits: d.Uint8()}
	hash, reserved := d.Uint8(), d.Uint8()
	if err := d.Err(); err != nil {
		return p, err
	}
	switch {
	case hash == 0 && reserved == 0:
		return p, errPreV1
	case hash != HashXXH3:
		return p, invalid(nil, "unknown hash %d", hash)
	}
	if err := ExpectKind(s, want); err != nil {
		return p, err
	}
	switch {
	case reserved != 0:
		return p, invalid(nil, "reserved header bits set")
	case p.flags&^flags != 0:
		return p, invalid(nil, "unknown flags %#x", p.flags)
	}
	return p, nil
}

// reservedZero checks that reserved fields read as zero.
func reservedZero(d *codec.Decoder, fields ...uint64) error {
	if err := d.Err(); err != nil {
		return err
	}
	for _, f := range fields {
		if f != 0 {
			return invalid(nil, "reserved header bits set")
		}
	}
	return nil
}

var le = binary.LittleEndian

// readHeader reads the start of a cuckoo file, then the rest of its header
// with the reader of its version: byVersion[v-1] reads version v. A new
// version adds its reader to each header's list.
func readHeader[H any](d *codec.Decoder, byVersion ...func(*codec.Decoder, Start) (H, error)) (H, error) {
	var none H
	s, err := ReadStart(d, Cuckoo)
	if err != nil {
		return none, err
	}
	if int(s.Version) > len(byVersion) {
		return none, unsupported(s.Version)
	}
	return byVersion[s.Version-1](d, s)
}

// TableHeader is the header of a table's file (kind Filter): a Filter's,
// and each table inside a chain's file. Version 1 layout:
//
//	offset  size  field
//	     0    12  the cuckoo prologue (kind 1); flags FlagSemiSort, FlagGrowing
//	    12     4  max kicks
//	    16     8  seed
//	    24     8  capacity
//	    32     8  number of buckets
//	    40     8  items, copies included
//	    48     8  W = number of table words
//	    56     8  D = number of duplicate counters
//	    64     4  number of segments
//	    68     4  reserved = 0
//	    72    8W  the table's words, then D counters of TableCounterSize
//	              bytes, then the checksum
type TableHeader struct {
	Version       uint16 // the file's; Append writes Latest
	Flags         uint8
	Slots, FPBits uint8
	MaxKicks      uint32
	Seed          uint64
	Capacity      uint64
	Buckets       uint64
	Items         uint64
	Words         uint64
	Counters      uint64
	Segments      uint32
}

// Append appends the header, in the latest version, to b.
func (h *TableHeader) Append(b []byte) []byte {
	b = prologue{h.Flags, h.Slots, h.FPBits}.append(b, Filter)
	b = le.AppendUint32(b, h.MaxKicks)
	for _, v := range [...]uint64{h.Seed, h.Capacity, h.Buckets, h.Items, h.Words, h.Counters} {
		b = le.AppendUint64(b, v)
	}
	b = le.AppendUint32(b, h.Segments)
	return le.AppendUint32(b, 0)
}

// Write writes the header, in the latest version, to e.
func (h *TableHeader) Write(e *codec.Encoder) {
	var buf [TableHeaderSize]byte
	e.Bytes(h.Append(buf[:0]))
}

// ReadTableHeader reads the header of a table's file, of any version this
// build reads.
func ReadTableHeader(d *codec.Decoder) (TableHeader, error) {
	return readHeader(d, readTableHeaderV1)
}

func readTableHeaderV1(d *codec.Decoder, s Start) (TableHeader, error) {
	p, err := readPrologueV1(d, s, Filter, FlagSemiSort|FlagGrowing)
	if err != nil {
		return TableHeader{}, err
	}
	h := TableHeader{Version: s.Version, Flags: p.flags, Slots: p.slots, FPBits: p.fpBits}
	h.MaxKicks = d.Uint32()
	h.Seed, h.Capacity, h.Buckets, h.Items = d.Uint64(), d.Uint64(), d.Uint64(), d.Uint64()
	h.Words, h.Counters = d.Uint64(), d.Uint64()
	h.Segments = d.Uint32()
	return h, reservedZero(d, uint64(d.Uint32()))
}

// ChainHeader is the header of a growing filter's chain (kind Scalable):
// a Scalable's, and a growing Concurrent's. Version 1 layout:
//
//	offset  size  field
//	     0    12  the cuckoo prologue (kind 2); flag FlagSemiSort; the
//	              fingerprint bits are generation 0's
//	    12     4  max kicks
//	    16     8  seed
//	    24     8  initial capacity
//	    32     8  growth factor, IEEE-754 binary64
//	    40     8  false-positive bound, binary64
//	    48     4  generation of the first table
//	    52     4  number of tables
//	    56     8  number of overflow counters
//	    64     …  the tables, each its length (8 bytes) and a table's file,
//	              then the overflow counters, then the checksum
type ChainHeader struct {
	Version       uint16 // the file's; Append writes Latest
	Flags         uint8
	Slots, FPBits uint8
	MaxKicks      uint32
	Seed          uint64
	Initial       uint64
	Factor        float64
	Bound         float64
	First         uint32
	Tables        uint32
	Overflow      uint64
}

// Append appends the header, in the latest version, to b.
func (h *ChainHeader) Append(b []byte) []byte {
	b = prologue{h.Flags, h.Slots, h.FPBits}.append(b, Scalable)
	b = le.AppendUint32(b, h.MaxKicks)
	for _, v := range [...]uint64{h.Seed, h.Initial, math.Float64bits(h.Factor), math.Float64bits(h.Bound)} {
		b = le.AppendUint64(b, v)
	}
	b = le.AppendUint32(b, h.First)
	b = le.AppendUint32(b, h.Tables)
	return le.AppendUint64(b, h.Overflow)
}

// Write writes the header, in the latest version, to e.
func (h *ChainHeader) Write(e *codec.Encoder) {
	var buf [ChainHeaderSize]byte
	e.Bytes(h.Append(buf[:0]))
}

// ReadChainHeader reads the header of a chain's file, of any version this
// build reads.
func ReadChainHeader(d *codec.Decoder) (ChainHeader, error) {
	return readHeader(d, readChainHeaderV1)
}

func readChainHeaderV1(d *codec.Decoder, s Start) (ChainHeader, error) {
	p, err := readPrologueV1(d, s, Scalable, FlagSemiSort)
	if err != nil {
		return ChainHeader{}, err
	}
	h := ChainHeader{Version: s.Version, Flags: p.flags, Slots: p.slots, FPBits: p.fpBits}
	h.MaxKicks = d.Uint32()
	h.Seed, h.Initial = d.Uint64(), d.Uint64()
	h.Factor, h.Bound = math.Float64frombits(d.Uint64()), math.Float64frombits(d.Uint64())
	h.First, h.Tables, h.Overflow = d.Uint32(), d.Uint32(), d.Uint64()
	return h, d.Err()
}

// WindowHeader is the header of a Window's file (kind Window). Version 1
// layout:
//
//	offset  size  field
//	     0    12  the cuckoo prologue (kind 3); no flags
//	    12     1  stamp bits
//	    13     1  epochs per window
//	    14     2  reserved = 0
//	    16     4  max kicks
//	    20     4  reserved = 0
//	    24     8  seed
//	    32     8  keys per window
//	    40     8  window in ns
//	    48     8  epoch of the latest write (int64)
//	    56     8  sweep cursor
//	    64     8  number of buckets
//	    72     8  W = number of table words
//	    80    8W  the table's words, then the checksum
type WindowHeader struct {
	Version       uint16 // the file's; Append writes Latest
	Slots, FPBits uint8
	StampBits     uint8
	Epochs        uint8
	MaxKicks      uint32
	Seed          uint64
	PerWindow     uint64
	Window        int64
	Epoch         int64
	Cursor        uint64
	Buckets       uint64
	Words         uint64
}

// Append appends the header, in the latest version, to b.
func (h *WindowHeader) Append(b []byte) []byte {
	b = prologue{0, h.Slots, h.FPBits}.append(b, Window)
	b = append(b, h.StampBits, h.Epochs, 0, 0)
	b = le.AppendUint32(b, h.MaxKicks)
	b = le.AppendUint32(b, 0)
	for _, v := range [...]uint64{h.Seed, h.PerWindow, uint64(h.Window), uint64(h.Epoch), h.Cursor, h.Buckets, h.Words} {
		b = le.AppendUint64(b, v)
	}
	return b
}

// Write writes the header, in the latest version, to e.
func (h *WindowHeader) Write(e *codec.Encoder) {
	var buf [WindowHeaderSize]byte
	e.Bytes(h.Append(buf[:0]))
}

// ReadWindowHeader reads the header of a Window's file, of any version
// this build reads.
func ReadWindowHeader(d *codec.Decoder) (WindowHeader, error) {
	return readHeader(d, readWindowHeaderV1)
}

func readWindowHeaderV1(d *codec.Decoder, s Start) (WindowHeader, error) {
	p, err := readPrologueV1(d, s, Window, 0)
	if err != nil {
		return WindowHeader{}, err
	}
	h := WindowHeader{Version: s.Version, Slots: p.slots, FPBits: p.fpBits}
	h.StampBits, h.Epochs = d.Uint8(), d.Uint8()
	reserved16 := d.Uint16()
	h.MaxKicks = d.Uint32()
	reserved32 := d.Uint32()
	h.Seed, h.PerWindow = d.Uint64(), d.Uint64()
	h.Window, h.Epoch = int64(d.Uint64()), int64(d.Uint64())
	h.Cursor, h.Buckets, h.Words = d.Uint64(), d.Uint64(), d.Uint64()
	return h, reservedZero(d, uint64(reserved16), uint64(reserved32))
}
