package store

import (
	"encoding/binary"
	"errors"

	"github.com/dedupkit/cuckoo/internal/codec"
)

// The log is a sequence of log files, NNNNNNNNNNNNNNNN.log (the
// file's id in hex), each a header and then records back to back. The
// MANIFEST file (manifest.go) lists the log files in log order, with the
// length and checksum of each sealed one; the INDEX file (checkpoint.go)
// is a checkpoint of the index.
//
// A log file header, 40 bytes:
//
//	 0        8        12       16               24               32       36       40
//	+--------+--------+--------+----------------+----------------+--------+--------+
//	| magic  |version | flags  | file id        | store seed     | crc32c | zero   |
//	|"CKSTLOG\n"| u32 | u32 (0)| u64            | u64            | of 0:32| u32    |
//	+--------+--------+--------+----------------+----------------+--------+--------+
//
// A record:
//
//	 0        4        8      9           9+a        9+a+b       9+a+b+keyLen  8+size
//	+--------+--------+------+-----------+-----------+-----------+-------------+
//	| crc32c | size   | kind | keyLen    | seq       | key       | value       |
//	| u32    | u32    | u8   | uvarint(a)| uvarint(b)| keyLen B  | the rest    |
//	+--------+--------+------+-----------+-----------+-----------+-------------+
//
// crc32c is CRC-32C (Castagnoli) of bytes [4, 8+size): the size and all
// that follows. size counts the bytes after the first 8. seq is the
// sequence number of the Put that created the key (kindPut) or that an
// overwrite (kindPutOver) keeps, which orders Range; 0 in a delete. All
// integers are little-endian. The formats are frozen: a reader of this
// version reads them forever; a change takes a new version number.
const (
	logMagic      = "CKSTLOG\n"
	logVersion    = 1
	logHeaderSize = 40

	recPrefix = 8 // crc32c, size

	// Record kinds; frozen. 0 is never a kind, so zeroed space is no record.
	kindPut     = 1 // a Put of a key that was absent
	kindPutOver = 2 // a Put of a key that was present
	kindDelete  = 3 // a tombstone
)

// MaxKeySize is the longest key a Store takes: 1 MiB.
const MaxKeySize = 1 << 20

// MaxValueSize is the longest value a Store takes: 64 MiB.
const MaxValueSize = 64 << 20

// maxRecord bounds a record's size field: the largest record a Store
// writes, with room for the varints.
const maxRecord = 1 + 2*binary.MaxVarintLen64 + MaxKeySize + MaxValueSize

// appendRecordHead appends the encoding of a record to dst up to its
// key: the record is that and value, which the checksum covers too. A
// large value is so written from the caller's bytes, not copied.
func appendRecordHead(dst []byte, kind byte, seq uint64, key, value []byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0, kind)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = binary.AppendUvarint(dst, seq)
	dst = append(dst, key...)
	rec := dst[start:]
	binary.LittleEndian.PutUint32(rec[4:], uint32(len(rec)+len(value)-recPrefix))
	binary.LittleEndian.PutUint32(rec, codec.UpdateChecksum(codec.Checksum(rec[4:]), value))
	return dst
}

// appendRecord appends the encoding of a record to dst.
func appendRecord(dst []byte, kind byte, seq uint64, key, value []byte) []byte {
	return append(appendRecordHead(dst, kind, seq, key, value), value...)
}

// record is a decoded record; key and value point into the bytes it was
// decoded from.
type record struct {
	kind byte
	// partial says that the bytes decoded end before the record does
	// (parseRecordHead): value is nil, and its size - valueAt bytes
	// are in the log.
	partial bool
	valueAt int32 // where the value starts, from the record's start
	// (kind, partial and valueAt share a word: a record is returned by
	// every lookup)
	seq        uint64
	key, value []byte
	size       int // bytes in the log
}

// Why a record does not decode.
var (
	errShort = errors.New("record runs past the end of the data")
	errBad   = errors.New("record is damaged")
)

// parseRecord decodes the record at the start of b without checking its
// checksum (see verify). It returns errShort when b ends inside the
// record, errBad when the record cannot be one a Store writes.
func parseRecord(b []byte) (record, error) { return parseRecordPart(b, false) }

// parseRecordHead is parseRecord of b that may end anywhere after the
// record's key: a record that b does not hold whole is partial, with no
// value (errShort when b ends before the key does).
func parseRecordHead(b []byte) (record, error) { return parseRecordPart(b, true) }

// recordIn decodes the record at the start of b, the bytes recordBytes
// returned for offset pos of log file lf: parseRecordHead, but errShort
// for a record that runs past what lf and the write buffer hold (partial
// only when recordBytes read the head of a record of a log file that is
// not mapped).
func recordIn(b []byte, lf *logFile, pos int64) (record, error) {
	r, err := parseRecordHead(b)
	if err == nil && r.partial && (lf.data != nil || pos+int64(r.size) > lf.size) {
		return record{}, errShort
	}
	return r, err
}

// parseRecordPart is parseRecord, and with head parseRecordHead.
func parseRecordPart(b []byte, head bool) (record, error) {
	if len(b) < recPrefix+3 {
		if len(b) >= recPrefix && binary.LittleEndian.Uint32(b[4:]) > maxRecord {
			return record{}, errBad
		}
		return record{}, errShort
	}
	size := binary.LittleEndian.Uint32(b[4:])
	if size < 3 || size > maxRecord {
		return record{}, errBad
	}
	total := recPrefix + int(size)
	end := total
	if total > len(b) {
		if !head {
			return record{}, errShort
		}
		end = len(b)
	}
	body := b[recPrefix:end]
	r := record{kind: body[0], size: total, partial: end < total}
	if r.kind < kindPut || r.kind > kindDelete {
		return record{}, errBad
	}
	keyLen, n := binary.Uvarint(body[1:])
	if n == 0 && r.partial {
		return record{}, errShort
	}
	if n <= 0 || keyLen > MaxKeySize {
		return record{}, errBad
	}
	p := 1 + n
	seq, n := binary.Uvarint(body[p:])
	if n == 0 && r.partial {
		return record{}, errShort
	}
	if n <= 0 {
		return record{}, errBad
	}
	p += n
	if keyLen > uint64(int(size)-p) {
		return record{}, errBad
	}
	if keyLen > uint64(len(body)-p) {
		return record{}, errShort // only a partial record's key runs past b
	}
	r.seq = seq
	r.key = body[p : p+int(keyLen)]
	r.valueAt = int32(recPrefix + p + int(keyLen))
	if n := total - int(r.valueAt); n > MaxValueSize || r.kind == kindDelete && n != 0 {
		return record{}, errBad
	}
	if !r.partial {
		r.value = body[p+int(keyLen):]
	}
	return r, nil
}

// verify reports whether the record at the start of b, of size bytes,
// has a correct checksum.
func verify(b []byte, size int) bool {
	return binary.LittleEndian.Uint32(b) == codec.Checksum(b[4:size])
}

// decodeRecord is parseRecord then verify: the record at the start of b,
// whole and intact, or errShort or errBad.
func decodeRecord(b []byte) (record, error) {
	r, err := parseRecord(b)
	if err != nil {
		return r, err
	}
	if !verify(b, r.size) {
		return record{}, errBad
	}
	return r, nil
}

// appendLogHeader appends a log file header.
func appendLogHeader(dst []byte, id, seed uint64) []byte {
	h := make([]byte, logHeaderSize)
	copy(h, logMagic)
	binary.LittleEndian.PutUint32(h[8:], logVersion)
	binary.LittleEndian.PutUint64(h[16:], id)
	binary.LittleEndian.PutUint64(h[24:], seed)
	binary.LittleEndian.PutUint32(h[32:], codec.Checksum(h[:32]))
	return append(dst, h...)
}

// parseLogHeader checks a log file header and returns its id and seed.
func parseLogHeader(b []byte) (id, seed uint64, err error) {
	if len(b) < logHeaderSize {
		return 0, 0, errors.New("shorter than a log file header")
	}
	if string(b[:8]) != logMagic {
		return 0, 0, errors.New("not a store log file (bad magic)")
	}
	if binary.LittleEndian.Uint32(b[32:]) != codec.Checksum(b[:32]) {
		return 0, 0, errors.New("log file header checksum mismatch")
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != logVersion {
		return 0, 0, errors.New("log file format version is not 1")
	}
	if binary.LittleEndian.Uint32(b[12:]) != 0 || binary.LittleEndian.Uint32(b[36:]) != 0 {
		return 0, 0, errors.New("log file header has unknown flags")
	}
	return binary.LittleEndian.Uint64(b[16:]), binary.LittleEndian.Uint64(b[24:]), nil
}
