package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/dedupkit/cuckoo/internal/codec"
	"github.com/dedupkit/cuckoo/internal/vfs"
)

// The INDEX file is a checkpoint of the index, so that Open reads it and
// replays only the records written after it instead of the whole log.
// A Store writes one while it runs, whenever enough has been written
// since the last (see WithCheckpoints), after each compaction, and at
// Close. Version 2:
//
//	+-----------+---------+-------+------+----------+------+----------------------------------------+
//	| magic     | version | count | seed | next seq | live | count × (id u64, size u64, slot u32,   |
//	|"CKSTIDX\n"| u32 (2) | u32   | u64  | u64      | u64  |          crc32c u32)                   |
//	+-----------+---------+-------+------+----------+------+----------------------------------------+
//	| level u32 | top u32 | split u64 | entries u64 | rng u64 | stash u32 | chunks u32 |
//	+-----------+---------+-----------+-------------+---------+-----------+------------+
//	| stash × (hash u64, location u64) | chunks × 8192 × u64 slots | crc32c u32 of all |
//	+----------------------------------+---------------------------+-------------------+
//
// The entries are the first count files of the log when the
// checkpoint was taken; the last of them was then possibly the active
// log file. size is how many of a log file's bytes the checkpoint covers,
// all of them written and synced before the checkpoint was; crc32c is
// the CRC-32C of those bytes, header included (so that Open can go on
// computing the log file's checksum from there); slot is the number the
// index's locations name the log file by. A log file shorter than its
// size in a checkpoint has lost synced records: Open reports it.
//
// Version 1, written by Close in the first version of the store, has
// entries of (id u64, size u64, slot u64) for every log file of the log;
// Open reads it. The formats are frozen.
const (
	idxMagic    = "CKSTIDX\n"
	idxVersion1 = 1
	idxVersion  = 2
	idxName     = "INDEX"
	idxFixed    = 40 // magic to live
	idxEntry    = 24 // a log file entry, in either version
	idxGeometry = 40 // level to chunks
)

// checkpoint is what an INDEX file holds besides the index.
type checkpoint struct {
	version       int
	seed, nextSeq uint64
	live          int64
	files         []ckFile
}

// ckFile is a log file as a checkpoint records it.
type ckFile struct {
	id   uint64
	size int64
	slot uint64
	crc  uint32 // version 2 only
}

// encodeIndex writes the checkpoint of ix to w, in version 2.
func encodeIndex(w io.Writer, c checkpoint, ix *index) error {
	crc := codec.NewChecksum()
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<20)
	var b []byte
	b = append(b, idxMagic...)
	b = binary.LittleEndian.AppendUint32(b, idxVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.files)))
	b = binary.LittleEndian.AppendUint64(b, c.seed)
	b = binary.LittleEndian.AppendUint64(b, c.nextSeq)
	b = binary.LittleEndian.AppendUint64(b, uint64(c.live))
	for _, lf := range c.files {
		b = binary.LittleEndian.AppendUint64(b, lf.id)
		b = binary.LittleEndian.AppendUint64(b, uint64(lf.size))
		b = binary.LittleEndian.AppendUint32(b, uint32(lf.slot))
		b = binary.LittleEndian.AppendUint32(b, lf.crc)
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

// crcReader reads through a running CRC-32C.
type crcReader struct {
	r   io.Reader
	crc hash.Hash32
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.crc.Write(p[:n])
	return n, err
}

// decodeIndex decodes an INDEX file of either version, of total bytes,
// read from r. It checks every length against the header and the file's
// length before it allocates, and allocates the index chunk by chunk as
// it reads (the file is never held whole in memory). Any inconsistency
// is an error: the caller then reads the log instead.
func decodeIndex(r io.Reader, total int64, seed uint64) (checkpoint, *index, error) {
	var c checkpoint
	bad := func(why string) (checkpoint, *index, error) { return c, nil, errors.New("index checkpoint: " + why) }
	cr := &crcReader{r: bufio.NewReaderSize(r, 256<<10), crc: codec.NewChecksum()}
	b := make([]byte, idxFixed)
	if _, err := io.ReadFull(cr, b); err != nil || string(b[:8]) != idxMagic {
		return bad("not a checkpoint")
	}
	c.version = int(binary.LittleEndian.Uint32(b[8:]))
	if c.version != idxVersion1 && c.version != idxVersion {
		return bad(fmt.Sprintf("unknown version %d", c.version))
	}
	n := int(binary.LittleEndian.Uint32(b[12:]))
	c.seed = binary.LittleEndian.Uint64(b[16:])
	c.nextSeq = binary.LittleEndian.Uint64(b[24:])
	c.live = int64(binary.LittleEndian.Uint64(b[32:]))
	if c.seed != seed || n == 0 || n > maxLogFiles || c.live < 0 {
		return bad("does not match the store")
	}
	if total < int64(idxFixed+idxEntry*n+idxGeometry+4) {
		return bad("cut short")
	}
	b = make([]byte, idxEntry*n+idxGeometry)
	if _, err := io.ReadFull(cr, b); err != nil {
		return bad("cut short")
	}
	used := map[uint64]bool{}
	for i := range n {
		e := b[idxEntry*i:]
		lf := ckFile{id: binary.LittleEndian.Uint64(e), size: int64(binary.LittleEndian.Uint64(e[8:]))}
		if c.version == idxVersion1 {
			lf.slot = binary.LittleEndian.Uint64(e[16:])
		} else {
			lf.slot = uint64(binary.LittleEndian.Uint32(e[16:]))
			lf.crc = binary.LittleEndian.Uint32(e[20:])
		}
		if lf.slot >= maxLogFiles || used[lf.slot] {
			return bad("bad log file slot")
		}
		if lf.size < logHeaderSize || lf.size > maxLogFileSize+recPrefix+maxRecord {
			return bad("bad log file size")
		}
		used[lf.slot] = true
		c.files = append(c.files, lf)
	}
	g := b[idxEntry*n:]
	ix := &index{
		level: uint(binary.LittleEndian.Uint32(g)),
		top:   uint(binary.LittleEndian.Uint32(g[4:])),
		split: binary.LittleEndian.Uint64(g[8:]),
		count: binary.LittleEndian.Uint64(g[16:]),
		rng:   binary.LittleEndian.Uint64(g[24:]) | 1,
	}
	nStash := int64(binary.LittleEndian.Uint32(g[32:]))
	nChunks := int64(binary.LittleEndian.Uint32(g[36:]))
	rest := total - int64(idxFixed+idxEntry*n+idxGeometry+4)
	if ix.top > 64 || ix.level > 40 || ix.top < dispBits || nStash > maxStash || nChunks == 0 ||
		rest != nStash*16+nChunks*chunkWords*8 {
		return bad("geometry does not match its length")
	}
	b = make([]byte, max(16*nStash, chunkWords*8))
	if _, err := io.ReadFull(cr, b[:16*nStash]); err != nil {
		return bad("cut short")
	}
	for i := range nStash {
		ix.stash = append(ix.stash, stashEntry{binary.LittleEndian.Uint64(b[16*i:]), binary.LittleEndian.Uint64(b[16*i+8:])})
	}
	ix.chunks = make([][]uint64, 0, nChunks)
	for range nChunks {
		if _, err := io.ReadFull(cr, b[:chunkWords*8]); err != nil {
			return bad("cut short")
		}
		chunk := make([]uint64, chunkWords)
		for k := range chunk {
			chunk[k] = binary.LittleEndian.Uint64(b[8*k:])
		}
		ix.chunks = append(ix.chunks, chunk)
	}
	want := cr.crc.Sum32()
	if _, err := io.ReadFull(cr.r, b[:4]); err != nil {
		return bad("cut short")
	}
	if binary.LittleEndian.Uint32(b) != want {
		return bad("checksum mismatch")
	}
	ix.disp = newDisp(seed)
	ix.setMask()
	if err := ix.check(); err != nil {
		return bad(err.Error())
	}
	return c, ix, nil
}

// A checkpoint is also due once the log has grown by ckBytesFactor times
// the index's size, and at least ckMinBytes, since the last (so that large
// values do not make the tail long to read).
const (
	ckBytesFactor = 8
	ckMinBytes    = 256 << 20
)

// checkpointer writes the index checkpoints of a log: it counts what is
// written since the last, says when the next is due, and writes one from
// a snapshot the Store takes of its index. Its counts are under the
// Store's wmu.
type checkpointer struct {
	log    *appendLog
	ratio  float64 // WithCheckpoints: records since the last, per key
	min    uint64  // and at least this many
	inline bool    // due checkpoints run in the writer, after wmu (tests)

	mu           sync.Mutex // one checkpoint written at a time
	sinceRecords uint64     // records written (or replayed by Open) since the last checkpoint was taken
	sinceBytes   int64      // their bytes
	running      bool       // a background checkpoint is under way
	replayed     uint64     // records Open replayed
	written      atomic.Uint64
	err          atomic.Pointer[error] // the last failed checkpoint's error
}

// counted counts a record of n bytes written (or replayed) since the last
// checkpoint.
func (c *checkpointer) counted(n int) {
	c.sinceRecords++
	c.sinceBytes += int64(n)
}

// due reports whether a checkpoint should start, for an index of keys
// keys and indexBytes bytes; held says that one may not start now.
func (c *checkpointer) due(keys, indexBytes uint64, held bool) bool {
	if c.ratio <= 0 || held || c.running {
		return false
	}
	return c.sinceRecords > 0 && c.sinceRecords >= max(c.min, uint64(c.ratio*float64(keys))) ||
		c.sinceBytes >= max(ckMinBytes, ckBytesFactor*int64(indexBytes))
}

// failed records the error of a checkpoint that failed (Stats reports it).
func (c *checkpointer) failed(err error) { c.err.Store(&err) }

// snapshot is what a checkpoint records, as the Store gives it: the
// checkpoint's header, a snapshot of the index, how much of the log must
// be synced before the checkpoint names it, and unshare, which ends the
// snapshot's sharing of the index's chunks.
type snapshot struct {
	ck      checkpoint
	index   *index
	target  uint64
	unshare func()
}

// write writes the INDEX file for the snapshot take returns (with no
// index: nothing to write). take runs with wmu held, for O(chunks); the
// snapshot is encoded without the lock, so writers and readers go on;
// then the log is synced up to what the checkpoint covers, and only then
// is INDEX replaced (written to INDEX.tmp, synced, renamed, the directory
// synced): a checkpoint never records a byte of the log that is not
// synced. An error leaves the last checkpoint in place; Open then
// replays more of the log.
func (c *checkpointer) write(take func() (snapshot, error)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log.wmu.Lock()
	snap, err := take()
	if err == nil && snap.index != nil {
		// Counted from now, whether this checkpoint is written or fails
		// (a full disk is not retried at every write).
		c.sinceRecords, c.sinceBytes = 0, 0
	}
	c.log.wmu.Unlock()
	if err != nil || snap.index == nil {
		return err
	}
	// The snapshot is shared until it is encoded, or until the file to
	// encode it to could not be created.
	_, err = vfs.Replace(c.log.fs, filepath.Join(c.log.dir, idxName), func(f vfs.File) error {
		err := encodeIndex(&fileWriter{f: f}, snap.ck, snap.index)
		snap.unshare()
		if err != nil {
			return err
		}
		// The log up to the checkpoint is synced before the checkpoint
		// names it.
		return c.log.syncTo(snap.target)
	})
	snap.unshare()
	if err != nil {
		return fmt.Errorf("store: writing the index checkpoint: %w", err)
	}
	c.written.Add(1)
	return nil
}

// checkpoint writes the INDEX file for the log as it is now (see
// checkpointer.write). It does nothing while a compaction has the index
// point at log files the manifest no longer lists.
func (s *Store) checkpoint() error { return s.checkpointer.write(s.snapshot) }

// checkpointNow is liveIndex.checkpointNow.
func (s *Store) checkpointNow() {
	if err := s.checkpoint(); err != nil {
		s.checkpointer.failed(err)
	}
}

// snapshot takes what a checkpoint of the store now records: with the
// buffered records written, the log files as they are, the key counters,
// and a snapshot of the index whose chunks the index copies before it
// writes them (until unshare). Call it with wmu held.
func (s *Store) snapshot() (snapshot, error) {
	if err := s.writable(); err != nil || s.compactor.remapping {
		return snapshot{}, err
	}
	if err := s.log.flush(); err != nil {
		return snapshot{}, err
	}
	ck := checkpoint{seed: s.seed, nextSeq: s.nextSeq, live: s.live}
	for _, lf := range s.log.order {
		ck.files = append(ck.files, ckFile{id: lf.id, size: lf.size, slot: lf.slot, crc: lf.crc})
	}
	ix := s.mu.ix
	var once sync.Once
	return snapshot{ck: ck, index: ix.snapshot(), target: s.log.written, unshare: func() {
		once.Do(func() {
			s.wmu.Lock()
			ix.unshare()
			s.wmu.Unlock()
		})
	}}, nil
}

// runCheckpoint writes the checkpoint afterWrite found due (in the
// background, but for the inline checkpoints of tests).
func (s *Store) runCheckpoint() {
	defer s.bg.Done()
	if err := s.checkpoint(); err != nil && !errors.Is(err, ErrClosed) {
		s.checkpointer.failed(err)
	}
	s.wmu.Lock()
	s.checkpointer.running = false
	s.wmu.Unlock()
}

// fileWriter writes a file from its start, in order.
type fileWriter struct {
	f   vfs.File
	off int64
}

func (w *fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.WriteAt(p, w.off)
	w.off += int64(n)
	return n, err
}
