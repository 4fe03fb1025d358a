package store

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dedupkit/cuckoo/internal/hash"
	"github.com/dedupkit/cuckoo/internal/invariants"
	"github.com/dedupkit/cuckoo/internal/vfs"
)

// Store is an exact key-value store: an append-only log on disk and a
// cuckoo hash table in RAM of a tag and a log location per key. See the
// package documentation.
//
// A Store is safe for use by any number of goroutines: reads run in
// parallel with each other and with writes; writes are serialized.
//
// Invariants:
//   - every live key has exactly one index entry, at the location of its
//     last Put record; every entry is such a location.
//   - the log, replayed in order, gives the keys and values the index
//     and Get give (up to the records a crash may lose, see SyncPolicy).
//   - live counts the bytes of the records the index points at.
type Store struct {
	dir  string
	fs   vfs.FS
	opt  options
	lock io.Closer
	seed uint64

	// wmu serializes writers. Writers change the fields below under mu
	// too, so a holder of wmu may read them without mu.
	wmu     sync.Mutex
	scratch []byte // the record being written

	mu struct {
		sync.RWMutex
		ix     *index
		files  [maxLogFiles]*logFile // by slot, the top 8 bits of a location
		order  []*logFile            // in log order; the last is the active one
		buf    []byte                // records of the active log file past its size
		closed bool
	}
	nextSeq  uint64 // the seq of the next new key
	nextID   uint64 // the id of the next log file
	live     int64  // bytes of live records
	logBytes int64  // bytes of all log files, with buf
	written  uint64 // bytes written to log files since Open (wmu)
	closing  bool   // Close has begun (wmu)

	// Checkpoints (checkpoint.go); under wmu but for ckMu and the atomics.
	sinceRecords uint64     // records written (or replayed by Open) since the last checkpoint was taken
	sinceBytes   int64      // their bytes
	ckRunning    bool       // a background checkpoint is under way
	remapping    bool       // a compaction switched the manifest and has not yet pointed the index at its copies
	replayed     uint64     // records Open replayed
	ckMu         sync.Mutex // one checkpoint written at a time
	checkpoints  atomic.Uint64
	ckErr        atomic.Pointer[error]

	// Group commit (SyncAlways) and the syncs of the other policies.
	smu     sync.Mutex
	scond   *sync.Cond
	syncing bool
	synced  uint64 // written, as of the last completed sync (smu)
	failed  atomic.Pointer[error]

	compactMu   sync.Mutex // one compaction, Range or Verify at a time
	closeOnce   sync.Once
	compacting  atomic.Bool
	compactions atomic.Uint64
	stop        chan struct{}
	bg          sync.WaitGroup
	autoErr     atomic.Pointer[error]
}

// log file is one log file.
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

func (s *Store) hash(key []byte) uint64 { return hash.Sum64(key, s.seed) }

func location(slot uint64, pos int64) uint64 { return slot<<32 | uint64(pos) }

// recordBytes returns the bytes of the log from location loc on: at
// least the whole record there, if it is intact. It reads the mapping or
// the write buffer without copying, or else reads the record into a new
// slice. Call it with mu held (read or write), or with wmu.
func (s *Store) recordBytes(loc uint64) ([]byte, *logFile, int64, error) {
	lf := s.mu.files[loc>>32]
	pos := int64(loc & (1<<32 - 1))
	if lf == nil || pos < logHeaderSize {
		return nil, lf, pos, fmt.Errorf("store: index points at a missing record (log file slot %d, offset %d)", loc>>32, pos)
	}
	if logReadHook != nil {
		logReadHook()
	}
	if pos >= lf.size {
		return s.mu.buf[pos-lf.size:], lf, pos, nil
	}
	if lf.data != nil {
		return lf.data[pos:lf.size], lf, pos, nil
	}
	var head [recPrefix]byte
	if _, err := lf.f.ReadAt(head[:], pos); err != nil {
		return nil, lf, pos, err
	}
	n := int64(recPrefix) + int64(uint32le(head[4:]))
	n = min(n, lf.size-pos, recPrefix+maxRecord)
	b := make([]byte, n)
	if _, err := lf.f.ReadAt(b, pos); err != nil {
		return nil, lf, pos, err
	}
	return b, lf, pos, nil
}

func uint32le(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// find looks key (of hash x) up: its slot, and its record (pointing into
// the log's bytes, valid while the lock is held), or found = false. Call
// it with mu held, or with wmu.
func (s *Store) find(x uint64, key []byte) (ref slotRef, rec record, found bool, err error) {
	var c [maxCandidates]slotRef
	n := s.mu.ix.candidates(x, &c)
	for i := range n {
		b, lf, pos, err := s.recordBytes(c[i].loc)
		if err != nil {
			return ref, rec, false, err
		}
		r, err := parseRecord(b)
		if err != nil {
			return ref, rec, false, &CorruptError{File: lf.path, Offset: pos, Detail: err.Error()}
		}
		if r.kind == kindDelete {
			return ref, rec, false, &CorruptError{File: lf.path, Offset: pos, Detail: "index points at a tombstone"}
		}
		// The checksum is checked for every candidate: a damaged key
		// must not pass for another key.
		if !verify(b, r.size) {
			return ref, rec, false, &CorruptError{File: lf.path, Offset: pos, Detail: "record checksum mismatch"}
		}
		if bytes.Equal(r.key, key) {
			return c[i], r, true, nil
		}
	}
	return ref, rec, false, nil
}

// Get returns a copy of the value of key, or ErrNotFound. It reads the
// log only for the index entries whose tag matches key: one read for a
// present key, almost never one for an absent key. It checks the
// record's checksum (ErrCorrupt when it is wrong). Cost: O(1) probes, one
// allocation, the size of the value.
func (s *Store) Get(key []byte) ([]byte, error) { return s.get(key, true) }

// Has reports whether key is present. It costs what Get does, without
// the copy of the value.
func (s *Store) Has(key []byte) (bool, error) {
	_, err := s.get(key, false)
	if err == ErrNotFound {
		return false, nil
	}
	return err == nil, err
}

// get is Get, and with copyValue false Has: it returns no value.
func (s *Store) get(key []byte, copyValue bool) ([]byte, error) {
	x := s.hash(key)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mu.closed {
		return nil, ErrClosed
	}
	_, r, found, err := s.find(x, key)
	switch {
	case err != nil:
		return nil, err
	case !found:
		return nil, ErrNotFound
	case !copyValue:
		return nil, nil
	}
	return append(make([]byte, 0, len(r.value)), r.value...), nil
}

// Len returns the number of keys.
func (s *Store) Len() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mu.ix.count
}

// Put sets the value of key, inserting it or overwriting its value. Keys
// are up to MaxKeySize bytes (the empty key is a key), values up to
// MaxValueSize (ErrTooLarge beyond). With SyncAlways, Put returns once
// the record is synced; see SyncPolicy for the others. A Put that
// returns an error has changed nothing (but see ErrFailed). Readers may
// see the new value before Put returns.
func (s *Store) Put(key, value []byte) error {
	_, err := s.put(key, value, false)
	return err
}

// PutIfAbsent sets the value of key only if key is absent, and reports
// whether it did. It is atomic: of concurrent PutIfAbsent calls for one
// absent key, exactly one stores its value.
func (s *Store) PutIfAbsent(key, value []byte) (stored bool, err error) {
	return s.put(key, value, true)
}

func (s *Store) put(key, value []byte, ifAbsent bool) (bool, error) {
	if len(key) > MaxKeySize {
		return false, fmt.Errorf("%w: key of %d bytes (at most %d)", ErrTooLarge, len(key), MaxKeySize)
	}
	if len(value) > MaxValueSize {
		return false, fmt.Errorf("%w: value of %d bytes (at most %d)", ErrTooLarge, len(value), MaxValueSize)
	}
	x := s.hash(key)
	ref, old, found, err := s.lockFind(x, key)
	if err != nil {
		return false, err
	}
	if found && ifAbsent {
		s.wmu.Unlock()
		return false, nil
	}
	kind, seq := byte(kindPut), s.nextSeq
	if found {
		kind, seq = kindPutOver, old.seq
	}
	oldSize := old.size
	if !found {
		if err := s.prepareInsert(); err != nil {
			s.wmu.Unlock()
			return false, err
		}
	}
	s.scratch = appendRecord(s.scratch[:0], kind, seq, key, value)
	return s.finishWrite(s.append(s.scratch, func(loc uint64) error {
		if found {
			s.mu.ix.setLoc(ref, loc)
			s.live -= int64(oldSize)
		} else {
			if err := s.insertLocked(x, loc); err != nil {
				return err
			}
			s.nextSeq++
		}
		s.live += int64(len(s.scratch))
		return nil
	}))
}

// Delete removes key and reports whether it was present. It appends a
// tombstone, which a compaction drops with the records it hides.
func (s *Store) Delete(key []byte) (deleted bool, err error) {
	if len(key) > MaxKeySize {
		return false, nil
	}
	ref, old, found, err := s.lockFind(s.hash(key), key)
	if err != nil {
		return false, err
	}
	if !found {
		s.wmu.Unlock()
		return false, nil
	}
	oldSize := old.size
	s.scratch = appendRecord(s.scratch[:0], kindDelete, 0, key, nil)
	return s.finishWrite(s.append(s.scratch, func(uint64) error {
		s.mu.ix.remove(ref)
		s.live -= int64(oldSize)
		return nil
	}))
}

// lockFind takes wmu for a write of key (of hash x) and finds key's
// record. It returns with wmu held when err is nil, and released
// otherwise.
func (s *Store) lockFind(x uint64, key []byte) (ref slotRef, rec record, found bool, err error) {
	s.wmu.Lock()
	if err = s.writable(); err == nil {
		ref, rec, found, err = s.find(x, key)
	}
	if err != nil {
		s.wmu.Unlock()
	}
	return ref, rec, found, err
}

// finishWrite ends a Put or Delete that holds wmu and appended its record
// (up to target, or failed with err): it does what is due after a write,
// releases wmu, runs a checkpoint due inline, and commits the record as
// the sync policy says. It reports whether the write took place.
func (s *Store) finishWrite(target uint64, err error) (bool, error) {
	if cap(s.scratch) > 4*bufferSize {
		s.scratch = nil
	}
	inline := s.afterWrite()
	s.wmu.Unlock()
	if inline {
		s.runCheckpoint()
	}
	if err != nil {
		return false, err
	}
	return true, s.commit(target)
}

// writable returns why the store takes no writes, if it does not. Call
// it with wmu held.
func (s *Store) writable() error {
	if s.mu.closed {
		return ErrClosed
	}
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// fail makes err the store's sticky write error.
func (s *Store) fail(err error) error {
	e := fmt.Errorf("%w: %w", ErrFailed, err)
	s.failed.CompareAndSwap(nil, &e)
	return *s.failed.Load()
}

// prepareInsert makes room for one index entry with only wmu held: a
// refresh that the next split needs (readers go on meanwhile), and the
// chunk it needs, allocated outside mu.
func (s *Store) prepareInsert() error {
	ix := s.mu.ix
	if !ix.full() {
		return nil
	}
	if ix.splitNeedsRefresh() {
		nx, err := ix.rebuilt(ix.disp, s.hashAt)
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.mu.ix = nx
		s.mu.Unlock()
		ix = nx
	}
	if ix.splitNeedsChunk() {
		c := make([]uint64, chunkWords)
		s.mu.Lock()
		ix.addChunk(c)
		s.mu.Unlock()
	}
	return nil
}

// hashAt returns the hash of the key of the record at loc.
func (s *Store) hashAt(loc uint64) (uint64, error) {
	b, lf, pos, err := s.recordBytes(loc)
	if err != nil {
		return 0, err
	}
	r, err := parseRecord(b)
	if err != nil {
		return 0, &CorruptError{File: lf.path, Offset: pos, Detail: err.Error()}
	}
	return s.hash(r.key), nil
}

// insertLocked adds an index entry, splitting buckets as needed. Call it
// with wmu and mu held.
func (s *Store) insertLocked(x, loc uint64) error {
	if s.mu.ix.full() {
		if err := s.splitLocked(); err != nil {
			return err
		}
	}
	for full := s.mu.ix.add(x, loc); full; full = len(s.mu.ix.stash) >= maxStash {
		if err := s.splitLocked(); err != nil {
			return err
		}
	}
	if invariants.Enabled && s.mu.ix.count%4096 == 0 {
		if err := s.mu.ix.check(); err != nil {
			panic(err)
		}
	}
	return nil
}

// splitLocked splits a bucket of the index, refreshing it first if the
// split needs it (which holds readers off for the refresh: prepareInsert
// does it beforehand, without, in all but rare cases). Call it with wmu
// and mu held.
func (s *Store) splitLocked() error {
	ix := s.mu.ix
	if ix.splitNeedsRefresh() {
		nx, err := ix.rebuilt(ix.disp, s.hashAt)
		if err != nil {
			return err
		}
		s.mu.ix, ix = nx, nx
	}
	ix.splitBucket()
	return nil
}

// append writes rec (one record) to the log and applies change, with mu
// held, at the record's location; change returning an error leaves the
// log as it was. It returns the count of bytes written the record needs
// synced (commit). Call it with wmu held.
func (s *Store) append(rec []byte, change func(loc uint64) error) (uint64, error) {
	if err := s.maybeRotate(len(rec)); err != nil {
		return 0, err
	}
	lf := s.active()
	direct := s.opt.sync == SyncAlways || len(rec) > s.opt.bufSize/2
	if direct || len(s.mu.buf)+len(rec) > s.opt.bufSize {
		if err := s.flush(); err != nil {
			return 0, err
		}
	}
	loc := location(lf.slot, lf.size+int64(len(s.mu.buf)))
	if direct {
		crc := lf.crc
		if err := s.writeAt(lf, rec); err != nil {
			return 0, err
		}
		s.mu.Lock()
		err := change(loc)
		if err == nil {
			lf.size += int64(len(rec))
		}
		s.mu.Unlock()
		if err != nil {
			s.undoWrite(lf, len(rec), crc)
			return 0, err
		}
		s.logBytes += int64(len(rec))
		s.sinceRecords++
		s.sinceBytes += int64(len(rec))
		return s.written, nil
	}
	s.mu.Lock()
	err := change(loc)
	if err == nil {
		s.mu.buf = append(s.mu.buf, rec...)
		s.logBytes += int64(len(rec))
		s.sinceRecords++
		s.sinceBytes += int64(len(rec))
	}
	s.mu.Unlock()
	return 0, err
}

// writeAt writes b at the end of log file lf's file (past its size). On a
// failed write it cuts what was written, so the file is as it was.
func (s *Store) writeAt(lf *logFile, b []byte) error {
	_, err := lf.f.WriteAt(b, lf.size)
	if err != nil {
		if terr := lf.f.Truncate(lf.size); terr != nil {
			return s.fail(fmt.Errorf("writing %s: %w (and cutting the partial write: %v)", lf.path, err, terr))
		}
		return fmt.Errorf("store: writing %s: %w", lf.path, err)
	}
	s.written += uint64(len(b))
	lf.crc = crc32.Update(lf.crc, castagnoli, b)
	return nil
}

// undoWrite cuts the last n bytes written to lf past its size, whose
// checksum before them was crc.
func (s *Store) undoWrite(lf *logFile, n int, crc uint32) {
	if err := lf.f.Truncate(lf.size); err != nil {
		s.fail(fmt.Errorf("cutting %s: %w", lf.path, err))
	}
	s.written -= uint64(n)
	lf.crc = crc
}

// flush writes the buffered records. On an error the buffer is kept (its
// writes were acknowledged) and the file is as it was. Call it with wmu
// held.
func (s *Store) flush() error {
	if len(s.mu.buf) == 0 {
		return nil
	}
	lf := s.active()
	if err := s.writeAt(lf, s.mu.buf); err != nil {
		return err
	}
	s.mu.Lock()
	lf.size += int64(len(s.mu.buf))
	s.mu.buf = s.mu.buf[:0]
	if cap(s.mu.buf) > 2*s.opt.bufSize {
		s.mu.buf = nil
	}
	s.mu.Unlock()
	return nil
}

func (s *Store) active() *logFile { return s.mu.order[len(s.mu.order)-1] }

// commit waits until the first target bytes written are synced, when the
// policy says so. Overlapping callers share one sync: the first to find
// none in progress syncs everything written so far for all of them.
func (s *Store) commit(target uint64) error {
	if s.opt.sync != SyncAlways {
		return nil
	}
	return s.syncTo(target)
}

// syncTo syncs the active log file until at least target bytes written
// are synced. Call it without wmu.
func (s *Store) syncTo(target uint64) error {
	s.smu.Lock()
	defer s.smu.Unlock()
	for s.synced < target {
		if p := s.failed.Load(); p != nil {
			return *p
		}
		if s.syncing {
			s.scond.Wait()
			continue
		}
		s.syncing = true
		s.smu.Unlock()
		s.wmu.Lock()
		f, upto := s.active().f, s.written
		s.wmu.Unlock()
		err := f.Sync()
		s.smu.Lock()
		s.syncing = false
		s.scond.Broadcast()
		if err != nil {
			return s.fail(fmt.Errorf("syncing the log: %w", err))
		}
		s.synced = max(s.synced, upto)
	}
	return nil
}

// Sync writes the buffered records and syncs the log, whatever the
// policy: every write that returned before Sync was called then survives
// a crash.
func (s *Store) Sync() error {
	s.wmu.Lock()
	if err := s.writable(); err != nil {
		s.wmu.Unlock()
		return err
	}
	err := s.flush()
	target := s.written
	s.wmu.Unlock()
	if err != nil {
		return err
	}
	return s.syncTo(target)
}

// maybeRotate starts a new log file when a record of n bytes would take
// the active one past the log file size. Call it with wmu held.
func (s *Store) maybeRotate(n int) error {
	lf := s.active()
	end := lf.size + int64(len(s.mu.buf))
	if end+int64(n) <= s.opt.logFileSize || end == logHeaderSize {
		return nil
	}
	return s.rotate()
}

// rotate seals the active log file (written and synced) and starts a new
// one, listed in the manifest before any record goes in it. Call it with
// wmu held.
func (s *Store) rotate() error {
	if err := s.flush(); err != nil {
		return err
	}
	old := s.active()
	if err := old.f.Sync(); err != nil {
		return s.fail(fmt.Errorf("syncing %s: %w", old.path, err))
	}
	s.smu.Lock()
	s.synced = max(s.synced, s.written)
	s.smu.Unlock()
	lf, err := s.newLogFile()
	if err != nil {
		return err
	}
	order := append(append([]*logFile(nil), s.mu.order...), lf)
	if err := s.writeManifest(order); err != nil {
		s.dropLogFile(lf)
		return err
	}
	s.mu.Lock()
	s.mu.files[lf.slot] = lf
	s.mu.order = order
	s.mu.Unlock()
	return nil
}

// newLogFile creates the next log file, with its header synced, in a
// free slot (not yet registered).
func (s *Store) newLogFile() (*logFile, error) {
	slot := -1
	for i, lf := range s.mu.files {
		if lf == nil {
			slot = i
			break
		}
	}
	if slot < 0 {
		return nil, fmt.Errorf("%w: the log has %d files; compact it or use a larger log file size (WithLogFileSize)", ErrTooLarge, maxLogFiles)
	}
	id := s.nextID
	s.nextID++
	path := filepath.Join(s.dir, logFileName(id))
	f, err := s.fs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("store: creating %s: %w", path, err)
	}
	lf := &logFile{id: id, slot: uint64(slot), path: path, f: f}
	head := appendLogHeader(nil, id, s.seed)
	if _, err := f.WriteAt(head, 0); err != nil {
		s.dropLogFile(lf)
		return nil, fmt.Errorf("store: writing %s: %w", path, err)
	}
	lf.crc = crc32.Checksum(head, castagnoli)
	if err := f.Sync(); err != nil {
		s.dropLogFile(lf)
		return nil, fmt.Errorf("store: syncing %s: %w", path, err)
	}
	lf.size = logHeaderSize
	lf.data = f.Map(s.mapSize())
	s.logBytes += logHeaderSize
	return lf, nil
}

// dropLogFile closes and removes a log file that is in no manifest.
func (s *Store) dropLogFile(lf *logFile) {
	lf.f.Close()
	s.fs.Remove(lf.path)
	if lf.size >= logHeaderSize {
		s.logBytes -= logHeaderSize // what newLogFile counted
	}
}

// mapSize is how much of a log file is mapped: the most it can hold.
func (s *Store) mapSize() int {
	n := s.opt.logFileSize + recPrefix + maxRecord
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
func (s *Store) writeManifest(order []*logFile) error {
	m := manifest{seed: s.seed, nextID: s.nextID}
	for i, lf := range order {
		ms := manifestFile{id: lf.id}
		if i < len(order)-1 {
			ms.size, ms.crc = lf.size, lf.crc
		}
		m.files = append(m.files, ms)
	}
	renamed, err := vfs.Replace(s.fs, filepath.Join(s.dir, manifestName), func(f vfs.File) error {
		_, err := f.WriteAt(m.encode(), 0)
		return err
	})
	if renamed && err != nil {
		return s.fail(fmt.Errorf("syncing %s: %w", s.dir, err))
	}
	if err != nil {
		return fmt.Errorf("store: writing the manifest: %w", err)
	}
	return nil
}

// afterWrite starts a background checkpoint when one is due, and a
// background compaction when the garbage passes the configured ratio.
// Call it with wmu held. With inline checkpoints (tests) it returns
// whether the caller must run the checkpoint once it has released wmu.
func (s *Store) afterWrite() (inlineCheckpoint bool) {
	if s.checkpointDue() {
		s.ckRunning = true
		s.bg.Add(1)
		if s.opt.ckInline {
			inlineCheckpoint = true
		} else {
			go s.runCheckpoint()
		}
	}
	r := s.opt.autoRatio
	if r <= 0 || s.closing || s.logBytes < s.opt.autoMin || float64(s.logBytes-s.live) <= r*float64(s.logBytes) {
		return
	}
	if !s.compacting.CompareAndSwap(false, true) {
		return
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer s.compacting.Store(false)
		if err := s.compact(); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, errStopped) {
			s.autoErr.Store(&err)
		}
	}()
	return inlineCheckpoint
}

// Stats describes a Store at one moment.
type Stats struct {
	Keys        uint64  // live keys: Len
	IndexBytes  uint64  // RAM held by the index
	IndexLoad   float64 // share of the index's slots in use
	LogBytes    uint64  // bytes of the log: every log file, with buffered records
	LiveBytes   uint64  // bytes of the records of live keys
	LogFiles    int     // log files
	Compactions uint64  // compactions completed since Open
	// Replayed is the number of records Open read from the log after
	// the index checkpoint (every record, when it found none usable).
	Replayed uint64
	// Checkpoints is the number of index checkpoints written since Open.
	Checkpoints uint64
	// SinceCheckpoint is the number of records written since the last
	// checkpoint was taken: about what Open would replay after a crash
	// now.
	SinceCheckpoint uint64
	// AutoCompactError is the error of the last automatic compaction
	// that failed, if any (it is retried at a later write).
	AutoCompactError error
	// CheckpointError is the error of the last checkpoint that failed,
	// if any (a later one is tried once as much again is written).
	CheckpointError error
}

// Stats returns the store's counts. Its cost is O(1).
func (s *Store) Stats() Stats {
	s.mu.RLock()
	ix := s.mu.ix
	st := Stats{
		Keys:        ix.count,
		IndexBytes:  ix.bytes(),
		IndexLoad:   float64(ix.count) / float64(ix.buckets()*slotsPerBucket),
		LogFiles:    len(s.mu.order),
		Compactions: s.compactions.Load(),
	}
	s.mu.RUnlock()
	s.wmu.Lock()
	st.LogBytes, st.LiveBytes = uint64(s.logBytes), uint64(s.live)
	st.Replayed, st.SinceCheckpoint = s.replayed, s.sinceRecords
	s.wmu.Unlock()
	st.Checkpoints = s.checkpoints.Load()
	if p := s.autoErr.Load(); p != nil {
		st.AutoCompactError = *p
	}
	if p := s.ckErr.Load(); p != nil {
		st.CheckpointError = *p
	}
	return st
}

// Close writes and syncs what is buffered, stops a compaction in
// progress (which then leaves the log as it was), and releases the
// directory. Later calls of any method return ErrClosed; Close itself
// returns nil when called again. Its error says the buffered records
// could not all be written or synced.
func (s *Store) Close() error {
	first := false
	s.closeOnce.Do(func() { first = true })
	if !first {
		return nil
	}
	s.wmu.Lock()
	s.closing = true // no more background compactions start
	s.wmu.Unlock()
	close(s.stop)
	s.bg.Wait()
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	s.wmu.Lock()
	err := s.flush()
	target := s.written
	s.wmu.Unlock()
	if err == nil {
		if p := s.failed.Load(); p != nil {
			err = *p
		} else {
			err = s.syncTo(target)
		}
	}
	if err == nil && s.failed.Load() == nil {
		// The checkpoint is a cache: without it Open replays more.
		s.checkpoint()
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	s.mu.closed = true
	for _, lf := range s.mu.order {
		if cerr := lf.f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("store: closing %s: %w", lf.path, cerr)
		}
		lf.data = nil
	}
	s.mu.buf = nil
	s.mu.Unlock()
	if cerr := s.lock.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// syncLoop writes and syncs the log once a second (SyncEverySecond).
func (s *Store) syncLoop() {
	defer s.bg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.Sync()
		}
	}
}
