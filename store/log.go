package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
)

// The log is a sequence of segment files, NNNNNNNNNNNNNNNN.log (the
// segment's id in hex), each a header and then records back to back. The
// MANIFEST file lists the segments in log order.
//
// A segment header, 40 bytes:
//
//	 0        8        12       16               24               32       36       40
//	+--------+--------+--------+----------------+----------------+--------+--------+
//	| magic  |version | flags  | segment id     | store seed     | crc32c | zero   |
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
	segMagic      = "CKSTLOG\n"
	segVersion    = 1
	segHeaderSize = 40

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

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordSize returns the bytes a record of these lengths takes.
func recordSize(seq uint64, keyLen, valueLen int) int {
	return recPrefix + 1 + uvarintLen(uint64(keyLen)) + uvarintLen(seq) + keyLen + valueLen
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// appendRecord appends the encoding of a record to dst.
func appendRecord(dst []byte, kind byte, seq uint64, key, value []byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0, kind)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = binary.AppendUvarint(dst, seq)
	dst = append(dst, key...)
	dst = append(dst, value...)
	rec := dst[start:]
	binary.LittleEndian.PutUint32(rec[4:], uint32(len(rec)-recPrefix))
	binary.LittleEndian.PutUint32(rec, crc32.Checksum(rec[4:], castagnoli))
	return dst
}

// record is a decoded record; key and value point into the bytes it was
// decoded from.
type record struct {
	kind       byte
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
func parseRecord(b []byte) (record, error) {
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
	if total > len(b) {
		return record{}, errShort
	}
	body := b[recPrefix:total]
	r := record{kind: body[0], size: total}
	if r.kind < kindPut || r.kind > kindDelete {
		return record{}, errBad
	}
	keyLen, n := binary.Uvarint(body[1:])
	if n <= 0 || keyLen > MaxKeySize {
		return record{}, errBad
	}
	p := 1 + n
	seq, n := binary.Uvarint(body[p:])
	if n <= 0 {
		return record{}, errBad
	}
	p += n
	if keyLen > uint64(len(body)-p) {
		return record{}, errBad
	}
	r.seq = seq
	r.key = body[p : p+int(keyLen)]
	r.value = body[p+int(keyLen):]
	if len(r.value) > MaxValueSize || r.kind == kindDelete && len(r.value) != 0 {
		return record{}, errBad
	}
	return r, nil
}

// verify reports whether the record at the start of b, of size bytes,
// has a correct checksum.
func verify(b []byte, size int) bool {
	return binary.LittleEndian.Uint32(b) == crc32.Checksum(b[4:size], castagnoli)
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

// appendSegHeader appends a segment header.
func appendSegHeader(dst []byte, id, seed uint64) []byte {
	h := make([]byte, segHeaderSize)
	copy(h, segMagic)
	binary.LittleEndian.PutUint32(h[8:], segVersion)
	binary.LittleEndian.PutUint64(h[16:], id)
	binary.LittleEndian.PutUint64(h[24:], seed)
	binary.LittleEndian.PutUint32(h[32:], crc32.Checksum(h[:32], castagnoli))
	return append(dst, h...)
}

// parseSegHeader checks a segment header and returns its id and seed.
func parseSegHeader(b []byte) (id, seed uint64, err error) {
	if len(b) < segHeaderSize {
		return 0, 0, errors.New("shorter than a segment header")
	}
	if string(b[:8]) != segMagic {
		return 0, 0, errors.New("not a store log segment (bad magic)")
	}
	if binary.LittleEndian.Uint32(b[32:]) != crc32.Checksum(b[:32], castagnoli) {
		return 0, 0, errors.New("segment header checksum mismatch")
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != segVersion {
		return 0, 0, errors.New("segment format version is not 1")
	}
	if binary.LittleEndian.Uint32(b[12:]) != 0 || binary.LittleEndian.Uint32(b[36:]) != 0 {
		return 0, 0, errors.New("segment header has unknown flags")
	}
	return binary.LittleEndian.Uint64(b[16:]), binary.LittleEndian.Uint64(b[24:]), nil
}

// The MANIFEST names the segments in log order:
//
//	 0        8         12       16         24          32
//	+--------+---------+--------+----------+-----------+------------+--------+
//	| magic  | version | count  | seed     | next id   | ids        | crc32c |
//	|"CKSTMAN\n"| u32  | u32    | u64      | u64       | count × u64| of all |
//	+--------+---------+--------+----------+-----------+------------+--------+
//
// It is replaced atomically: written to MANIFEST.tmp, synced, renamed,
// and the directory synced.
const (
	manMagic   = "CKSTMAN\n"
	manVersion = 1
	manFixed   = 32
	// maxSegments is the most segments a store has at once: a location
	// keeps 8 bits for the segment.
	maxSegments = 256
)

type manifest struct {
	seed   uint64
	nextID uint64
	ids    []uint64
}

func (m *manifest) encode() []byte {
	b := make([]byte, manFixed, manFixed+8*len(m.ids)+4)
	copy(b, manMagic)
	binary.LittleEndian.PutUint32(b[8:], manVersion)
	binary.LittleEndian.PutUint32(b[12:], uint32(len(m.ids)))
	binary.LittleEndian.PutUint64(b[16:], m.seed)
	binary.LittleEndian.PutUint64(b[24:], m.nextID)
	for _, id := range m.ids {
		b = binary.LittleEndian.AppendUint64(b, id)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeManifest(b []byte) (manifest, error) {
	var m manifest
	if len(b) < manFixed+4 || string(b[:8]) != manMagic {
		return m, errors.New("not a store manifest")
	}
	n := binary.LittleEndian.Uint32(b[12:])
	if n > maxSegments || len(b) != manFixed+8*int(n)+4 {
		return m, errors.New("manifest length does not match its segment count")
	}
	if binary.LittleEndian.Uint32(b[len(b)-4:]) != crc32.Checksum(b[:len(b)-4], castagnoli) {
		return m, errors.New("manifest checksum mismatch")
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != manVersion {
		return m, errors.New("manifest format version is not 1")
	}
	m.seed = binary.LittleEndian.Uint64(b[16:])
	m.nextID = binary.LittleEndian.Uint64(b[24:])
	for i := range int(n) {
		id := binary.LittleEndian.Uint64(b[manFixed+8*i:])
		if id >= m.nextID {
			return m, errors.New("manifest names a segment at or past its next id")
		}
		for _, prev := range m.ids {
			if prev == id {
				return m, errors.New("manifest names a segment twice")
			}
		}
		m.ids = append(m.ids, id)
	}
	return m, nil
}

// The INDEX file is a checkpoint of the index, written by Close, so that
// Open reads it and replays only the records written after it, instead of
// the whole log:
//
//	+-----------+---------+---------+------+----------+--------+------------------+
//	| magic     | version | count   | seed | next seq | live   | count × (id,size,|
//	|"CKSTIDX\n"| u32     | u32     | u64  | u64      | u64    | slot) 3 × u64    |
//	+-----------+---------+---------+------+----------+--------+------------------+
//	| level u32 | top u32 | split u64 | entries u64 | rng u64 | stash u32 | chunks u32 |
//	+-----------+---------+-----------+-------------+---------+-----------+------------+
//	| stash × (hash u64, location u64) | chunks × 8192 × u64 slots | crc32c u32 of all |
//	+----------------------------------+---------------------------+-------------------+
//
// count and (id, size, slot) are the manifest's segments, their sizes
// when the checkpoint was taken, and the slots the index's locations name
// them by. It is only a cache: Open ignores (and
// removes) a checkpoint that does not match the log, and reads the log.
const (
	idxMagic   = "CKSTIDX\n"
	idxVersion = 1
	idxName    = "INDEX"
)

// checkpoint is what an INDEX file holds besides the index.
type checkpoint struct {
	seed, nextSeq uint64
	live          int64
	ids, sizes    []uint64
	slots         []uint64
}

// encodeIndex writes the checkpoint of ix to w.
func encodeIndex(w io.Writer, c checkpoint, ix *index) error {
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<20)
	var b []byte
	b = append(b, idxMagic...)
	b = binary.LittleEndian.AppendUint32(b, idxVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.ids)))
	b = binary.LittleEndian.AppendUint64(b, c.seed)
	b = binary.LittleEndian.AppendUint64(b, c.nextSeq)
	b = binary.LittleEndian.AppendUint64(b, uint64(c.live))
	for i := range c.ids {
		b = binary.LittleEndian.AppendUint64(b, c.ids[i])
		b = binary.LittleEndian.AppendUint64(b, c.sizes[i])
		b = binary.LittleEndian.AppendUint64(b, c.slots[i])
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(ix.level))
	b = binary.LittleEndian.AppendUint32(b, uint32(ix.top))
	b = binary.LittleEndian.AppendUint64(b, ix.split)
	b = binary.LittleEndian.AppendUint64(b, ix.count)
	b = binary.LittleEndian.AppendUint64(b, ix.rng)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ix.stash)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ix.chunks)))
	for _, e := range ix.stash {
		b = binary.LittleEndian.AppendUint64(b, e.x)
		b = binary.LittleEndian.AppendUint64(b, e.loc)
	}
	bw.Write(b)
	buf := make([]byte, 0, chunkWords*8)
	for _, c := range ix.chunks {
		buf = buf[:0]
		for _, v := range c {
			buf = binary.LittleEndian.AppendUint64(buf, v)
		}
		bw.Write(buf)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

// decodeIndex decodes an INDEX file. Any inconsistency is an error: the
// caller then reads the log instead.
func decodeIndex(b []byte, seed uint64) (checkpoint, *index, error) {
	var c checkpoint
	bad := func(why string) (checkpoint, *index, error) { return c, nil, errors.New("index checkpoint: " + why) }
	if len(b) < 44 || string(b[:8]) != idxMagic {
		return bad("not a checkpoint")
	}
	if binary.LittleEndian.Uint32(b[len(b)-4:]) != crc32.Checksum(b[:len(b)-4], castagnoli) {
		return bad("checksum mismatch")
	}
	b = b[:len(b)-4]
	if binary.LittleEndian.Uint32(b[8:]) != idxVersion {
		return bad("unknown version")
	}
	n := int(binary.LittleEndian.Uint32(b[12:]))
	c.seed = binary.LittleEndian.Uint64(b[16:])
	c.nextSeq = binary.LittleEndian.Uint64(b[24:])
	c.live = int64(binary.LittleEndian.Uint64(b[32:]))
	if c.seed != seed || n > maxSegments {
		return bad("does not match the store")
	}
	p := 40
	if len(b) < p+24*n+40 {
		return bad("cut short")
	}
	used := map[uint64]bool{}
	for range n {
		c.ids = append(c.ids, binary.LittleEndian.Uint64(b[p:]))
		c.sizes = append(c.sizes, binary.LittleEndian.Uint64(b[p+8:]))
		slot := binary.LittleEndian.Uint64(b[p+16:])
		if slot >= maxSegments || used[slot] {
			return bad("bad segment slot")
		}
		used[slot] = true
		c.slots = append(c.slots, slot)
		p += 24
	}
	ix := &index{
		level: uint(binary.LittleEndian.Uint32(b[p:])),
		top:   uint(binary.LittleEndian.Uint32(b[p+4:])),
		split: binary.LittleEndian.Uint64(b[p+8:]),
		count: binary.LittleEndian.Uint64(b[p+16:]),
		rng:   binary.LittleEndian.Uint64(b[p+24:]) | 1,
	}
	nStash := int(binary.LittleEndian.Uint32(b[p+32:]))
	nChunks := uint64(binary.LittleEndian.Uint32(b[p+36:]))
	p += 40
	if ix.top > 64 || ix.level > 40 || ix.top < dispBits || nStash > maxStash ||
		uint64(len(b)-p) != uint64(nStash)*16+nChunks*chunkWords*8 {
		return bad("geometry does not match its length")
	}
	for range nStash {
		ix.stash = append(ix.stash, stashEntry{binary.LittleEndian.Uint64(b[p:]), binary.LittleEndian.Uint64(b[p+8:])})
		p += 16
	}
	ix.chunks = make([][]uint64, nChunks)
	for i := range ix.chunks {
		c := make([]uint64, chunkWords)
		for k := range c {
			c[k] = binary.LittleEndian.Uint64(b[p:])
			p += 8
		}
		ix.chunks[i] = c
	}
	ix.disp = newIndex(seed).disp
	ix.setMask()
	if err := ix.check(); err != nil {
		return bad(err.Error())
	}
	return c, ix, nil
}
