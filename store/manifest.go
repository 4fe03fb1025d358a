package store

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dedupkit/cuckoo/internal/codec"
)

// The MANIFEST names the log files in log order and records the length
// and checksum of every sealed one. Version 2:
//
//	 0          8         12       16       24        32
//	+----------+---------+--------+--------+---------+-------------------------------+--------+
//	| magic    | version | count  | seed   | next id | count × (id u64, size u64,    | crc32c |
//	|"CKSTMAN\n"| u32 (2)| u32    | u64    | u64     |   crc32c u32, zero u32)       | of all |
//	+----------+---------+--------+--------+---------+-------------------------------+--------+
//
// Every log file but the last is sealed: nothing is written to it again,
// and its size and crc32c are its length and the CRC-32C of all its
// bytes, header included, so that Open finds a sealed log file cut short
// (by its length, at every Open) and Verify any other change (by its
// checksum). The last log file is the active one: size and crc32c are 0.
//
// Version 1, written by the first version of the store, has the ids
// alone:
//
//	+----------+---------+--------+--------+---------+------------+--------+
//	| magic    | version | count  | seed   | next id | ids        | crc32c |
//	|"CKSTMAN\n"| u32 (1)| u32    | u64    | u64     | count × u64| of all |
//	+----------+---------+--------+--------+---------+------------+--------+
//
// Open reads both, and replaces a version 1 manifest by a version 2 one
// that records the sealed log files as it finds them. The manifest is
// replaced atomically: written to MANIFEST.tmp, synced, renamed, and the
// directory synced. The formats are frozen.
const (
	manMagic     = "CKSTMAN\n"
	manVersion1  = 1
	manVersion   = 2
	manFixed     = 32
	manEntry     = 24 // a version 2 log file entry
	manEntryV1   = 8  // a version 1 log file entry: the id
	manifestName = "MANIFEST"
	// maxLogFiles is the most log files a store has at once: a location
	// keeps 8 bits for the log file.
	maxLogFiles = 256
)

// manifest is a decoded MANIFEST.
type manifest struct {
	version int // the version it was read in
	seed    uint64
	nextID  uint64
	files   []manifestFile
}

// manifestFile is a log file as the manifest lists it. size and crc are
// set for a sealed log file (all but the last) of a version 2 manifest.
type manifestFile struct {
	id   uint64
	size int64
	crc  uint32
}

// encode returns the manifest in version 2.
func (m *manifest) encode() []byte {
	b := make([]byte, manFixed, manFixed+manEntry*len(m.files)+4)
	copy(b, manMagic)
	binary.LittleEndian.PutUint32(b[8:], manVersion)
	binary.LittleEndian.PutUint32(b[12:], uint32(len(m.files)))
	binary.LittleEndian.PutUint64(b[16:], m.seed)
	binary.LittleEndian.PutUint64(b[24:], m.nextID)
	for _, lf := range m.files {
		b = binary.LittleEndian.AppendUint64(b, lf.id)
		b = binary.LittleEndian.AppendUint64(b, uint64(lf.size))
		b = binary.LittleEndian.AppendUint32(b, lf.crc)
		b = binary.LittleEndian.AppendUint32(b, 0)
	}
	return binary.LittleEndian.AppendUint32(b, codec.Checksum(b))
}

// decodeManifest decodes a MANIFEST of either version. Every
// inconsistency is an error: the caller reports it as damage.
func decodeManifest(b []byte) (manifest, error) {
	var m manifest
	if len(b) < manFixed+4 || string(b[:8]) != manMagic {
		return m, errors.New("not a store manifest")
	}
	if binary.LittleEndian.Uint32(b[len(b)-4:]) != codec.Checksum(b[:len(b)-4]) {
		return m, errors.New("manifest checksum mismatch")
	}
	m.version = int(binary.LittleEndian.Uint32(b[8:]))
	entry := 0
	switch m.version {
	case manVersion1:
		entry = manEntryV1
	case manVersion:
		entry = manEntry
	default:
		return m, fmt.Errorf("manifest format version %d is not one this version reads (1 or 2)", m.version)
	}
	n := binary.LittleEndian.Uint32(b[12:])
	if n == 0 || n > maxLogFiles || len(b) != manFixed+entry*int(n)+4 {
		return m, errors.New("manifest length does not match its log file count")
	}
	m.seed = binary.LittleEndian.Uint64(b[16:])
	m.nextID = binary.LittleEndian.Uint64(b[24:])
	seen := make(map[uint64]bool, n)
	for i := range int(n) {
		e := b[manFixed+entry*i:]
		lf := manifestFile{id: binary.LittleEndian.Uint64(e)}
		if lf.id >= m.nextID {
			return m, errors.New("manifest names a log file at or past its next id")
		}
		if seen[lf.id] {
			return m, errors.New("manifest names a log file twice")
		}
		seen[lf.id] = true
		if m.version == manVersion {
			lf.size = int64(binary.LittleEndian.Uint64(e[8:]))
			lf.crc = binary.LittleEndian.Uint32(e[16:])
			last := i == int(n)-1
			switch {
			case binary.LittleEndian.Uint32(e[20:]) != 0:
				return m, errors.New("manifest has unknown flags")
			case last && (lf.size != 0 || lf.crc != 0):
				return m, errors.New("manifest records a length for the active log file")
			case !last && (lf.size < logHeaderSize || lf.size > maxLogFileSize+recPrefix+maxRecord):
				return m, fmt.Errorf("manifest records a sealed log file of %d bytes", lf.size)
			}
		}
		m.files = append(m.files, lf)
	}
	return m, nil
}
