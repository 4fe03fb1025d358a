package kafkadedup

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// The state of an input partition lives in two places, written in the
// same transaction as the offsets they go with:
//
//   - a snapshot of its filter, in the state topic, cut into chunks of
//     records under the topic's largest message;
//   - a pointer to that snapshot in the metadata of the partition's
//     committed offset: where the snapshot is, and the input offset it
//     covers up to (the base). A partition whose filter started empty and
//     has no snapshot yet has a pointer with only its base.
//
// The filter that goes with a committed offset C is the snapshot's (or an
// empty one) updated with the input records from the base to C, which a
// restore replays. Both are committed atomically with C, so the pair is
// always consistent.

// pointerPrefix starts every pointer; the version after it is frozen.
// Metadata that starts with pointerFamily is a pointer of this package,
// whatever its version: one this build does not read is an error, never
// another consumer's metadata (which would start the partition with an
// empty filter).
const (
	pointerFamily = "cuckoo-kafkadedup/"
	pointerPrefix = pointerFamily + "1"
)

// pointer is where a partition's state is: its filter is the snapshot at
// (statePartition, offset), of chunks records and size bytes, updated
// with the input from base on; without a snapshot (chunks == 0) it is an
// empty filter updated from base on.
type pointer struct {
	base           int64
	statePartition int32
	offset         int64
	chunks         int32
	size           int64
	id             uint64
}

// String encodes the pointer as offset metadata (at most about 100 bytes;
// Kafka keeps up to offset.metadata.max.bytes, 4,096 by default):
//
//	cuckoo-kafkadedup/1 base=B
//	cuckoo-kafkadedup/1 base=B snap=PARTITION:OFFSET:CHUNKS:SIZE:ID
func (p pointer) String() string {
	s := pointerPrefix + " base=" + strconv.FormatInt(p.base, 10)
	if p.chunks > 0 {
		s += fmt.Sprintf(" snap=%d:%d:%d:%d:%016x", p.statePartition, p.offset, p.chunks, p.size, p.id)
	}
	return s
}

// parsePointer decodes offset metadata written by pointer.String; ok is
// false for metadata this package did not write (another consumer's,
// Kafka tools' empty string), and err non-nil for a pointer of ours that is
// damaged or of a version this build does not read.
func parsePointer(s string) (p pointer, ok bool, err error) {
	if !strings.HasPrefix(s, pointerFamily) {
		return p, false, nil
	}
	rest, found := strings.CutPrefix(s, pointerPrefix+" ")
	if !found {
		version, _, _ := strings.Cut(strings.TrimPrefix(s, pointerFamily), " ")
		if version != "1" && version != "" && strings.Trim(version, "0123456789") == "" {
			return pointer{}, true, fmt.Errorf("%w: the committed offset's metadata holds a state pointer of version %s, which this build does not read (it reads version 1): run the build that wrote it, or reset the partition's offsets to start it with an empty filter", ErrState, version)
		}
	}
	bad := func() (pointer, bool, error) {
		return pointer{}, true, fmt.Errorf("%w: damaged state pointer %q in the committed offset's metadata", ErrState, s)
	}
	if !found {
		return bad()
	}
	baseText, snapText, hasSnap := strings.Cut(rest, " ")
	b, found := strings.CutPrefix(baseText, "base=")
	if !found {
		return bad()
	}
	if p.base, err = strconv.ParseInt(b, 10, 64); err != nil || p.base < 0 {
		return bad()
	}
	if !hasSnap {
		if p.String() != s {
			return bad() // not the canonical form: leading zeros, signs
		}
		return p, true, nil
	}
	snap, found := strings.CutPrefix(snapText, "snap=")
	parts := strings.Split(snap, ":")
	if !found || len(parts) != 5 {
		return bad()
	}
	part, err1 := strconv.ParseInt(parts[0], 10, 32)
	off, err2 := strconv.ParseInt(parts[1], 10, 64)
	chunks, err3 := strconv.ParseInt(parts[2], 10, 32)
	size, err4 := strconv.ParseInt(parts[3], 10, 64)
	id, err5 := strconv.ParseUint(parts[4], 16, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil ||
		part < 0 || off < 0 || chunks < 1 || size < 1 || len(parts[4]) != 16 {
		return bad()
	}
	p.statePartition, p.offset, p.chunks, p.size, p.id = int32(part), off, int32(chunks), size, id
	if p.String() != s {
		return bad() // not the canonical form: leading zeros, signs
	}
	return p, true, nil
}

// A chunk of a snapshot is one record of the state topic. Its key names
// the input partition and the chunk's index, so that compaction keeps
// the latest snapshot's chunks (and the tombstones written for the
// indexes a shorter snapshot no longer uses remove the rest):
//
//	"cuckoo-kafkadedup" 0x00 group 0x00 topic 0x00 partition 0x00 index
//
// (partition and index in decimal). Its value, little-endian:
//
//	offset  size  field
//	     0     4  magic "CKKS"
//	     4     1  version = 1
//	     5     3  reserved = 0
//	     8     8  snapshot id (random, the same in every chunk)
//	    16     8  base: the input offset the snapshot covers up to
//	    24     4  index of the chunk, from 0
//	    28     4  number of chunks
//	    32     …  the chunk's part of the filter's encoding (its own
//	              format, checksummed: cuckoo's WriteTo)
//
// The values are frozen: a new layout gets a new version.
const (
	chunkMagic      = "CKKS"
	chunkVersion    = 1
	chunkHeaderSize = 32
)

// chunkHeader is the part of a chunk's value before its payload.
type chunkHeader struct {
	id     uint64
	base   int64
	index  int32
	chunks int32
}

func (h chunkHeader) append(dst []byte) []byte {
	dst = append(dst, chunkMagic...)
	dst = append(dst, chunkVersion, 0, 0, 0)
	dst = binary.LittleEndian.AppendUint64(dst, h.id)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(h.base))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(h.index))
	return binary.LittleEndian.AppendUint32(dst, uint32(h.chunks))
}

// parseChunk splits a chunk's value into its header and payload.
func parseChunk(v []byte) (chunkHeader, []byte, error) {
	var h chunkHeader
	if len(v) < chunkHeaderSize || string(v[:4]) != chunkMagic || v[4] != chunkVersion || v[5]|v[6]|v[7] != 0 {
		return h, nil, fmt.Errorf("%w: a record of the state topic is not a snapshot chunk of version %d", ErrState, chunkVersion)
	}
	h.id = binary.LittleEndian.Uint64(v[8:])
	h.base = int64(binary.LittleEndian.Uint64(v[16:]))
	h.index = int32(binary.LittleEndian.Uint32(v[24:]))
	h.chunks = int32(binary.LittleEndian.Uint32(v[28:]))
	if h.base < 0 || h.index < 0 || h.chunks < 1 || h.index >= h.chunks {
		return h, nil, fmt.Errorf("%w: a snapshot chunk's header is damaged", ErrState)
	}
	return h, v[chunkHeaderSize:], nil
}

// chunkKey is the key of chunk index of the snapshot of (topic,
// partition) for group.
func chunkKey(group, topic string, partition, index int32) []byte {
	k := make([]byte, 0, 32+len(group)+len(topic))
	k = append(k, "cuckoo-kafkadedup\x00"...)
	k = append(k, group...)
	k = append(k, 0)
	k = append(k, topic...)
	k = append(k, 0)
	k = strconv.AppendInt(k, int64(partition), 10)
	k = append(k, 0)
	return strconv.AppendInt(k, int64(index), 10)
}
