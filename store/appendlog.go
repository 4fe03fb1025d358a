package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/dedupkit/cuckoo/internal/codec"
	"github.com/dedupkit/cuckoo/internal/vfs"
)

// appendLog is the log on disk: its log files, the records written past
// the active one's size, the manifest that lists them, and the syncs
// (group commit). It knows records only as bytes at locations; what they
// mean is the Store's. The Store's locks guard it: mu (shared with the
// index, which points into the log) for the fields readers use, and wmu,
// which serializes writers, for the rest.
//
// Invariants:
//   - order lists the log files in log order, every one but the last
//     sealed (written, synced, and recorded in the manifest with its
//     size and checksum); files holds them by slot, and the files of a
//     compaction under way (its output before its switch, the log files
//     it rewrote until it removes them).
//   - the manifest on disk lists order (while a rotation or a compaction
//     switches the log, one step ahead: the manifest's rename is the
//     commit point, order follows).
//   - written counts the bytes written to log files since Open; synced
//     ≤ written, and every byte up to synced is on disk.
type appendLog struct {
	dir      string
	fs       vfs.FS
	seed     uint64 // the store's, in every log file header and the manifest
	fileSize int64  // a log file's size, past which a new one starts
	bufSize  int    // the write buffer's size
	// beforeWrite, when set, runs before records are written to a file,
	// and its error stops the write (WithBeforeWrite).
	beforeWrite func() error
	policy      SyncPolicy

	mu  *sync.RWMutex // the Store's mu: files, order, buf change under it (with wmu)
	wmu *sync.Mutex   // the Store's wmu: the writers' lock

	files [maxLogFiles]*logFile // by slot, the top 8 bits of a location
	order []*logFile            // in log order; the last is the active one
	buf   []byte                // records of the active log file past its size

	nextID  uint64 // the id of the next log file (wmu)
	bytes   int64  // bytes of all log files, with buf (wmu)
	written uint64 // bytes written to log files since Open (wmu)

	// Group commit (SyncAlways) and the syncs of the other policies.
	smu     sync.Mutex
	scond   *sync.Cond
	syncing bool
	synced  uint64 // written, as of the last completed sync (smu)
	failed  atomic.Pointer[error]
}

// newAppendLog returns the log of a store in dir, with no log file yet
// (Open's load or create gives it its files).
func newAppendLog(dir string, o *options, mu *sync.RWMutex, wmu *sync.Mutex) *appendLog {
	l := &appendLog{dir: dir, fs: o.fs, fileSize: o.logFileSize, bufSize: o.bufSize, policy: o.sync, mu: mu, wmu: wmu, beforeWrite: o.beforeWrite}
	l.scond = sync.NewCond(&l.smu)
	return l
}

// logFile is one log file.
type logFile struct {
	id   uint64
	slot uint64
	path string
	f    vfs.File
	data []byte // the file mapped, or nil
	size int64  // bytes in the file; the active log file's grows (under mu)
	// crc is the CRC-32C of the file's first size bytes (header
	// included): the writer updates it as it writes (wmu); once the
	// log file is sealed it is the checksum the manifest records.
	crc uint32
}

// logReadHook, when set (by tests), is called on every read of a record
// by a lookup.
var logReadHook func()

func location(slot uint64, pos int64) uint64 { return slot<<32 | uint64(pos) }

// recordBytes returns the bytes of the log from location loc on: at
// least the whole record there, if it is intact. It reads the mapping or
// the write buffer without copying, or else reads the record into a new
// slice: with head, of a record longer than streamAbove, only up to the
// end of its key (parseRecordHead decodes it). Call it with mu held
// (read or write), or with wmu.
func (l *appendLog) recordBytes(loc uint64, head bool) ([]byte, *logFile, int64, error) {
	lf, pos := l.at(loc)
	if lf == nil || pos < logHeaderSize {
		return nil, lf, pos, fmt.Errorf("store: index points at a missing record (log file slot %d, offset %d)", loc>>32, pos)
	}
	if logReadHook != nil {
		logReadHook()
	}
	if pos >= lf.size {
		// Only the active log file has records past its size, in the
		// buffer. An index that points past them (a checkpoint written
		// by hand: its checksum passes) names no record.
		if lf != l.active() || pos-lf.size >= int64(len(l.buf)) {
			return nil, lf, pos, &CorruptError{File: lf.path, Offset: pos,
				Detail: fmt.Sprintf("the index points past the end of the log file (%d bytes written)", lf.size+int64(len(l.buf)))}
		}
		return l.buf[pos-lf.size:], lf, pos, nil
	}
	if lf.data != nil {
		return lf.data[pos:lf.size], lf, pos, nil
	}
	var first [32]byte // the prefix, the kind and both varints
	m, err := lf.f.ReadAt(first[:min(int64(len(first)), lf.size-pos)], pos)
	if err != nil {
		return nil, lf, pos, err
	}
	n := int64(recPrefix) + int64(uint32le(first[4:]))
	n = min(n, lf.size-pos, recPrefix+maxRecord)
	if head && n > streamAbove {
		// Up to the end of the key, which the varints after the kind
		// say (at most a key and the varints, if they are damaged).
		n = min(n, recPrefix+1+2*binary.MaxVarintLen64+MaxKeySize)
		if m > recPrefix+1 {
			keyLen, k := binary.Uvarint(first[recPrefix+1 : m])
			if k > 0 && keyLen <= MaxKeySize {
				if _, q := binary.Uvarint(first[recPrefix+1+k : m]); q > 0 {
					n = min(n, int64(recPrefix+1+k+q)+int64(keyLen))
				}
			}
		}
	}
	b := make([]byte, n)
	if _, err := lf.f.ReadAt(b, pos); err != nil {
		return nil, lf, pos, err
	}
	return b, lf, pos, nil
}

// at returns the log file and the offset that loc names (the log file
// nil when no log file has its slot).
func (l *appendLog) at(loc uint64) (*logFile, int64) {
	return l.files[loc>>32], int64(loc & (1<<32 - 1))
}

// Records longer than streamAbove are read in pieces of readPiece bytes
// through ReadAt (eachPiece), not through the mapping nor whole, to
// check their checksum on a lookup that needs no value and to compare
// their value (ValueEquals): so a lookup holds at most a piece and the
// key of a large record in memory.
const (
	streamAbove = 1 << 20
	readPiece   = 64 << 10
)

// eachPiece calls fn with the bytes [from, to) of log file lf in order,
// read through ReadAt in pieces of at most readPiece bytes, until fn
// returns false. The bytes are lf's file's: call it for bytes below
// lf.size.
func eachPiece(lf *logFile, from, to int64, fn func([]byte) bool) error {
	buf := make([]byte, min(readPiece, to-from))
	for p := from; p < to; {
		b := buf[:min(int64(len(buf)), to-p)]
		if _, err := lf.f.ReadAt(b, p); err != nil {
			return fmt.Errorf("store: reading %s: %w", lf.path, err)
		}
		if !fn(b) {
			return nil
		}
		p += int64(len(b))
	}
	return nil
}

// verifyAt reports whether the record r at pos of log file lf, which
// starts with the checksum sum, verifies, reading it in pieces
// (eachPiece).
func verifyAt(lf *logFile, pos int64, r record, sum uint32) (bool, error) {
	crc := uint32(0)
	err := eachPiece(lf, pos+4, pos+int64(r.size), func(b []byte) bool {
		crc = codec.UpdateChecksum(crc, b)
		return true
	})
	return crc == sum, err
}

func uint32le(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// fail makes err the log's sticky write error: no write is taken after
// it (the store reports ErrFailed).
func (l *appendLog) fail(err error) error {
	e := fmt.Errorf("%w: %w", ErrFailed, err)
	l.failed.CompareAndSwap(nil, &e)
	return *l.failed.Load()
}

// failure returns the sticky write error, or nil.
func (l *appendLog) failure() error {
	if p := l.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// append writes rec (one record) to the log and applies change, with mu
// held, at the record's location; change returning an error leaves the
// log as it was. change finds the record at its location (recordBytes),
// as readers will once mu is released: an insert that fills the index's
// stash may refresh the index, which reads the key of every entry, the
// new one's included. It returns the count of bytes written the record
// needs synced (commit). Call it with wmu held.
func (l *appendLog) append(rec, value []byte, change func(loc uint64) error) (uint64, error) {
	n := len(rec) + len(value)
	if err := l.maybeRotate(n); err != nil {
		return 0, err
	}
	lf := l.active()
	direct := l.policy == SyncAlways || n > l.bufSize/2
	if direct || len(l.buf)+n > l.bufSize {
		if err := l.flush(); err != nil {
			return 0, err
		}
	}
	loc := location(lf.slot, lf.size+int64(len(l.buf)))
	if direct {
		crc := lf.crc
		if err := l.writeAt(lf, rec, value); err != nil {
			return 0, err
		}
		l.mu.Lock()
		lf.size += int64(n)
		err := change(loc)
		if err != nil {
			lf.size -= int64(n)
		}
		l.mu.Unlock()
		if err != nil {
			l.undoWrite(lf, n, crc)
			return 0, err
		}
		l.bytes += int64(n)
		return l.written, nil
	}
	l.mu.Lock()
	l.buf = append(l.buf, rec...)
	l.buf = append(l.buf, value...)
	err := change(loc)
	if err == nil {
		l.bytes += int64(n)
	} else {
		l.buf = l.buf[:len(l.buf)-n]
	}
	l.mu.Unlock()
	return 0, err
}

// writeAt writes b at the end of log file lf's file (past its size). On a
// failed write it cuts what was written, so the file is as it was.
func (l *appendLog) writeAt(lf *logFile, b, more []byte) error {
	if l.beforeWrite != nil {
		if err := l.beforeWrite(); err != nil {
			return err
		}
	}
	_, err := lf.f.WriteAt(b, lf.size)
	if err == nil && len(more) > 0 {
		_, err = lf.f.WriteAt(more, lf.size+int64(len(b)))
	}
	if err != nil {
		if terr := lf.f.Truncate(lf.size); terr != nil {
			return l.fail(fmt.Errorf("writing %s: %w (and cutting the partial write: %v)", lf.path, err, terr))
		}
		return fmt.Errorf("store: writing %s: %w", lf.path, err)
	}
	l.written += uint64(len(b) + len(more))
	lf.crc = codec.UpdateChecksum(lf.crc, b)
	if len(more) > 0 {
		lf.crc = codec.UpdateChecksum(lf.crc, more)
	}
	return nil
}

// undoWrite cuts the last n bytes written to lf past its size, whose
// checksum before them was crc.
func (l *appendLog) undoWrite(lf *logFile, n int, crc uint32) {
	if err := lf.f.Truncate(lf.size); err != nil {
		l.fail(fmt.Errorf("cutting %s: %w", lf.path, err))
	}
	l.written -= uint64(n)
	lf.crc = crc
}

// flush writes the buffered records. On an error the buffer is kept (its
// writes were acknowledged) and the file is as it was. Call it with wmu
// held.
func (l *appendLog) flush() error {
	if len(l.buf) == 0 {
		return nil
	}
	lf := l.active()
	if err := l.writeAt(lf, l.buf, nil); err != nil {
		return err
	}
	l.mu.Lock()
	lf.size += int64(len(l.buf))
	l.buf = l.buf[:0]
	if cap(l.buf) > 2*l.bufSize {
		l.buf = nil
	}
	l.mu.Unlock()
	return nil
}

func (l *appendLog) active() *logFile { return l.order[len(l.order)-1] }

// commit waits until the first target bytes written are synced, when the
// policy says so. Overlapping callers share one sync: the first to find
// none in progress syncs everything written so far for all of them.
func (l *appendLog) commit(target uint64) error {
	if l.policy != SyncAlways {
		return nil
	}
	return l.syncTo(target)
}

// syncTo syncs the active log file until at least target bytes written
// are synced. Call it without wmu.
func (l *appendLog) syncTo(target uint64) error {
	l.smu.Lock()
	defer l.smu.Unlock()
	for l.synced < target {
		if err := l.failure(); err != nil {
			return err
		}
		if l.syncing {
			l.scond.Wait()
			continue
		}
		l.syncing = true
		l.smu.Unlock()
		l.wmu.Lock()
		f, upto := l.active().f, l.written
		l.wmu.Unlock()
		err := f.Sync()
		l.smu.Lock()
		l.syncing = false
		l.scond.Broadcast()
		if err != nil {
			return l.fail(fmt.Errorf("syncing the log: %w", err))
		}
		l.synced = max(l.synced, upto)
	}
	return nil
}

// maybeRotate starts a new log file when a record of n bytes would take
// the active one past the log file size. Call it with wmu held.
func (l *appendLog) maybeRotate(n int) error {
	lf := l.active()
	end := lf.size + int64(len(l.buf))
	if end+int64(n) <= l.fileSize || end == logHeaderSize {
		return nil
	}
	return l.rotate()
}

// rotate seals the active log file (written and synced) and starts a new
// one, listed in the manifest before any record goes in it. Call it with
// wmu held.
func (l *appendLog) rotate() error {
	if err := l.flush(); err != nil {
		return err
	}
	old := l.active()
	if err := old.f.Sync(); err != nil {
		return l.fail(fmt.Errorf("syncing %s: %w", old.path, err))
	}
	l.smu.Lock()
	l.synced = max(l.synced, l.written)
	l.smu.Unlock()
	lf, err := l.newLogFile()
	if err != nil {
		return err
	}
	order := append(append([]*logFile(nil), l.order...), lf)
	if err := l.writeManifest(order); err != nil {
		l.dropLogFile(lf)
		return err
	}
	l.mu.Lock()
	l.files[lf.slot] = lf
	l.order = order
	l.mu.Unlock()
	return nil
}

// newLogFile creates the next log file, with its header synced, in a
// free slot (not yet registered). Call it with wmu held.
func (l *appendLog) newLogFile() (*logFile, error) {
	slot := -1
	for i, lf := range l.files {
		if lf == nil {
			slot = i
			break
		}
	}
	if slot < 0 {
		return nil, fmt.Errorf("%w: the log has %d files; compact it or use a larger log file size (WithLogFileSize)", ErrTooLarge, maxLogFiles)
	}
	id := l.nextID
	l.nextID++
	path := filepath.Join(l.dir, logFileName(id))
	f, err := l.fs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("store: creating %s: %w", path, err)
	}
	lf := &logFile{id: id, slot: uint64(slot), path: path, f: f}
	head := appendLogHeader(nil, id, l.seed)
	if _, err := f.WriteAt(head, 0); err != nil {
		l.dropLogFile(lf)
		return nil, fmt.Errorf("store: writing %s: %w", path, err)
	}
	lf.crc = codec.Checksum(head)
	if err := f.Sync(); err != nil {
		l.dropLogFile(lf)
		return nil, fmt.Errorf("store: syncing %s: %w", path, err)
	}
	lf.size = logHeaderSize
	lf.data = f.Map(l.mapSize(logHeaderSize))
	l.bytes += logHeaderSize
	return lf, nil
}

// dropLogFile closes and removes a log file that is in no manifest.
func (l *appendLog) dropLogFile(lf *logFile) {
	lf.f.Close()
	l.fs.Remove(lf.path)
	if lf.size >= logHeaderSize {
		l.bytes -= logHeaderSize // what newLogFile counted
	}
}

// mapSize is how much of a log file of size bytes is mapped: the most it
// can come to hold, as readers slice the mapping up to the file's size,
// which must never pass its end. The active log file grows to the log
// file size, or past it by one record (an empty log file takes a record
// of any size), and a compaction's output to what its buffer holds
// (outputBufferSize and a record). A log file may also be longer than
// that already: one written with a larger log file size (WithLogFileSize
// may change between Opens), which grows no more (the next record starts
// a new log file). 0 (not mapped: read through ReadAt) when that is past
// what an int holds.
func (l *appendLog) mapSize(size int64) int {
	n := max(l.fileSize, size, logHeaderSize+outputBufferSize) + recPrefix + maxRecord
	if n > math.MaxInt {
		return 0
	}
	return int(n)
}

func logFileName(id uint64) string { return fmt.Sprintf("%016x.log", id) }

// writeManifest replaces the manifest with one that lists order, every
// log file but the last sealed, with its size and checksum: written to a
// temporary file, synced, renamed, and the directory synced. The sealed
// log files must be synced.
func (l *appendLog) writeManifest(order []*logFile) error {
	m := manifest{seed: l.seed, nextID: l.nextID}
	for i, lf := range order {
		ms := manifestFile{id: lf.id}
		if i < len(order)-1 {
			ms.size, ms.crc = lf.size, lf.crc
		}
		m.files = append(m.files, ms)
	}
	renamed, err := vfs.Replace(l.fs, filepath.Join(l.dir, manifestName), func(f vfs.File) error {
		_, err := f.WriteAt(m.encode(), 0)
		return err
	})
	if renamed && err != nil {
		return l.fail(fmt.Errorf("syncing %s: %w", l.dir, err))
	}
	if err != nil {
		return fmt.Errorf("store: writing the manifest: %w", err)
	}
	return nil
}

// span is a log file as far as it was written when a reader of the whole
// log began: its size and the checksum of its records then.
type span struct {
	lf  *logFile
	end int64
	crc uint32
}

// flushedSpans writes out what is buffered and returns the log files in
// order, as far as they are written: what Range and Verify read. Call it
// with wmu held, and hold off compactions until the spans are read, so
// that no log file goes meanwhile.
func (l *appendLog) flushedSpans() ([]span, error) {
	if err := l.flush(); err != nil {
		return nil, err
	}
	spans := make([]span, len(l.order))
	for i, lf := range l.order {
		spans[i] = span{lf, lf.size, lf.crc}
	}
	return spans, nil
}
