package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/dedupkit/cuckoo/internal/codec"
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

	// wmu serializes writers. Writers change the fields below, and the
	// log's, under mu too, so a holder of wmu may read them without mu.
	wmu     sync.Mutex
	scratch []byte // the record being written

	mu struct {
		sync.RWMutex
		ix     *index
		closed bool
	}
	log     *appendLog // its files and write buffer are under mu too
	nextSeq uint64     // the seq of the next new key
	live    int64      // bytes of live records
	closing bool       // Close has begun (wmu)

	checkpointer checkpointer
	compactor    compactor

	closeOnce sync.Once
	stop      chan struct{}
	bg        sync.WaitGroup

	inspect *inspection // Repair's reads of the files: load changes none

	ckUnused string // why Open did not use the INDEX it found (Stats)
}

func (s *Store) hash(key []byte) uint64 { return hash.Sum64(key, s.seed) }

// find looks key (of hash x) up: its slot, and its record (pointing into
// the log's bytes, valid while the lock is held), or found = false. Call
// it with mu held, or with wmu. Unless withValue, a record longer than
// streamAbove in a log file is checked by reading it in pieces, not
// through the mapping (whose pages would stay in memory), and, in a log
// file not mapped, only its head is read: the record may be partial,
// with no value.
func (s *Store) find(x uint64, key []byte, withValue bool) (ref slotRef, rec record, found bool, err error) {
	var c [maxCandidates]slotRef
	n := s.mu.ix.candidates(x, &c)
	for i := range n {
		b, lf, pos, err := s.log.recordBytes(c[i].loc, !withValue)
		if err != nil {
			return ref, rec, false, err
		}
		r, err := parseRecord(b)
		if err == errShort && !withValue {
			r, err = recordIn(b, lf, pos) // the head of a long record
		}
		if err != nil {
			return ref, rec, false, &CorruptError{File: lf.path, Offset: pos, Detail: err.Error()}
		}
		if r.kind == kindDelete {
			return ref, rec, false, indexWrong(lf.path, pos, tombstoneDetail)
		}
		// The checksum is checked for every candidate: a damaged key
		// must not pass for another key.
		ok := r.size > streamAbove && !withValue && pos < lf.size
		if !ok {
			ok = !r.partial && verify(b, r.size)
		} else if ok, err = verifyAt(lf, pos, r, uint32le(b)); err != nil {
			return ref, rec, false, err
		}
		if !ok {
			return ref, rec, false, &CorruptError{File: lf.path, Offset: pos, Detail: "record checksum mismatch"}
		}
		if bytes.Equal(r.key, key) {
			return c[i], r, true, nil
		}
		// Another key's record: its tag matches key's by chance, or the
		// entry is damaged, which would make key (whose entry it may
		// be) read as absent. Only here, rarely, is the other key hashed.
		if !s.mu.ix.holds(c[i], s.hash(r.key)) {
			return ref, rec, false, indexWrong(lf.path, pos, otherKeyDetail)
		}
	}
	return ref, rec, false, nil
}

// otherKeyDetail is what a lookup finds wrong in an entry that points at
// the record of a key whose hash does not give that entry.
const otherKeyDetail = "the index points at the record of another key (a key whose hash does not give the entry that points at it)"

// tombstoneDetail is what is wrong in an entry that points at a
// tombstone.
const tombstoneDetail = "an entry points at a tombstone"

// Get returns a copy of the value of key, or ErrNotFound. It reads the
// log only for the index entries whose tag matches key: one read for a
// present key, almost never one for an absent key. It checks the
// record's checksum (ErrCorrupt when it is wrong). An entry whose tag
// matches but whose record is another key's is a tag the two keys share
// by chance, or damage, which would make key read as absent: Get hashes
// that other key, and when its hash does not give the entry, returns a
// *CorruptError (wrapping ErrCorrupt) naming the record and saying that
// the index is wrong, not the log (see Verify for the remedy), not
// ErrNotFound. Cost: O(1) probes, one allocation, the size of the value.
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
	_, r, found, err := s.find(x, key, copyValue)
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

// lookup takes mu for reading and looks key up (see find): it returns
// key's slot and record with mu held, which the caller releases, or
// ErrClosed, ErrNotFound or the error of the lookup, with mu released.
func (s *Store) lookup(key []byte, withValue bool) (slotRef, record, error) {
	x := s.hash(key)
	s.mu.RLock()
	if s.mu.closed {
		s.mu.RUnlock()
		return slotRef{}, record{}, ErrClosed
	}
	ref, r, found, err := s.find(x, key, withValue)
	if err == nil && !found {
		err = ErrNotFound
	}
	if err != nil {
		s.mu.RUnlock()
	}
	return ref, r, err
}

// ValueEquals reports whether the value of key is value (ErrNotFound
// when key is absent). It compares them in place: a stored value longer
// than about 1 MiB is read from the log in pieces of 64 KiB, never
// whole nor copied, and its record's checksum is checked as Get checks
// it (ErrCorrupt when it is wrong). So a caller that holds a large value
// can tell whether the store holds the same with no more memory. Cost:
// that of Has, and a read of the stored value, once more for a long one
// (its checksum, then the comparison).
func (s *Store) ValueEquals(key, value []byte) (bool, error) {
	ref, r, err := s.lookup(key, false)
	if err != nil {
		return false, err
	}
	defer s.mu.RUnlock()
	if r.size-int(r.valueAt) != len(value) {
		return false, nil
	}
	lf, pos := s.log.at(ref.loc)
	if r.size <= streamAbove || pos >= lf.size {
		return bytes.Equal(r.value, value), nil
	}
	equal, at := true, 0
	err = eachPiece(lf, pos+int64(r.valueAt), pos+int64(r.size), func(b []byte) bool {
		equal = bytes.Equal(b, value[at:at+len(b)])
		at += len(b)
		return equal
	})
	return equal && err == nil, err
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
// see the new value before Put returns. Put, PutIfAbsent and Delete look
// key up as Get does: an index entry found wrong so is their error, and
// they write nothing, so that a key whose entry is wrong is neither
// stored twice nor lost.
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
	// A large value is written from the caller's bytes, after the
	// record's head; a small one with it, in one piece.
	var tail []byte
	if len(value) > streamAbove {
		s.scratch, tail = appendRecordHead(s.scratch[:0], kind, seq, key, value), value
	} else {
		s.scratch = appendRecord(s.scratch[:0], kind, seq, key, value)
	}
	size := len(s.scratch) + len(tail)
	return s.finishWrite(s.append(s.scratch, tail, func(loc uint64) error {
		if found {
			s.mu.ix.setLoc(ref, loc)
			s.live -= int64(oldSize)
		} else {
			if err := s.insertLocked(x, loc); err != nil {
				return err
			}
			s.nextSeq++
		}
		s.live += int64(size)
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
	return s.finishWrite(s.append(s.scratch, nil, func(uint64) error {
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
		ref, rec, found, err = s.find(x, key, false)
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
	return true, s.log.commit(target)
}

// writable returns why the store takes no writes, if it does not. Call
// it with wmu held.
func (s *Store) writable() error {
	if s.mu.closed {
		return ErrClosed
	}
	return s.log.failure()
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
	r, _, _, err := s.keyAt(loc)
	if err != nil {
		return 0, err
	}
	return s.hash(r.key), nil
}

// keyAt returns the record at loc, possibly only its head (to the end
// of its key), and where it is, its checksum not checked.
func (s *Store) keyAt(loc uint64) (record, *logFile, int64, error) {
	b, lf, pos, err := s.log.recordBytes(loc, true)
	if err != nil {
		return record{}, lf, pos, err
	}
	r, err := parseRecord(b)
	if err == errShort {
		r, err = recordIn(b, lf, pos) // the head of a long record
	}
	if err != nil {
		return record{}, lf, pos, &CorruptError{File: lf.path, Offset: pos, Detail: err.Error()}
	}
	return r, lf, pos, nil
}

// insertLocked adds an index entry, splitting buckets as needed; on an
// error the entry is not in the index. Call it with wmu and mu held.
func (s *Store) insertLocked(x, loc uint64) error {
	if s.mu.ix.full() {
		if err := s.splitLocked(); err != nil {
			return err
		}
	}
	for full := s.mu.ix.add(x, loc); full; full = len(s.mu.ix.stash) >= maxStash {
		if err := s.splitLocked(); err != nil {
			// The refresh failed (a record it read is damaged): the
			// record of loc is taken back, so must its entry be.
			var c [maxCandidates]slotRef
			for _, r := range c[:s.mu.ix.candidates(x, &c)] {
				if r.loc == loc {
					s.mu.ix.remove(r)
					break
				}
			}
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
// does it beforehand, without, in all but rare cases: an insert that
// fills the stash, whose own record the refresh reads too, as
// appendLog.append makes it readable first). Call it with wmu and mu
// held.
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

// append writes a record, rec followed by value, to the log and applies
// change, with mu held, at the record's location (see appendLog.append),
// and counts it for the next checkpoint. Call it with wmu held.
func (s *Store) append(rec, value []byte, change func(loc uint64) error) (uint64, error) {
	target, err := s.log.append(rec, value, change)
	if err == nil {
		s.checkpointer.counted(len(rec) + len(value))
	}
	return target, err
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
	err := s.log.flush()
	target := s.log.written
	s.wmu.Unlock()
	if err != nil {
		return err
	}
	return s.log.syncTo(target)
}

// afterWrite starts a background checkpoint when one is due, and a
// background compaction when the garbage passes the configured ratio.
// Call it with wmu held. With inline checkpoints (tests) it returns
// whether the caller must run the checkpoint once it has released wmu.
func (s *Store) afterWrite() (inlineCheckpoint bool) {
	if s.checkpointer.due(s.mu.ix.count, s.mu.ix.bytes(), s.closing || s.compactor.remapping) {
		s.checkpointer.running = true
		s.bg.Add(1)
		if s.checkpointer.inline {
			inlineCheckpoint = true
		} else {
			go s.runCheckpoint()
		}
	}
	r := s.opt.autoRatio
	logBytes := s.log.bytes
	if r <= 0 || s.closing || logBytes < s.opt.autoMin || float64(logBytes-s.live) <= r*float64(logBytes) {
		return
	}
	if !s.compactor.running.CompareAndSwap(false, true) {
		return
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer s.compactor.running.Store(false)
		if err := s.compact(); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, errStopped) {
			s.compactor.autoErr.Store(&err)
		}
	}()
	return inlineCheckpoint
}

// Range calls fn for each key and its value, in the order the keys were
// first put: a Put of a present key keeps its place, and a key deleted
// and put again takes a new one at the end (as a Python dict orders its
// keys). It stops when fn returns false. key and value are valid only
// during the call. fn may read and write the store, but not call Compact
// or Range; keys written during Range may or may not be visited, and a
// key deleted and put again during Range may be visited twice. Range
// reads the whole log, and holds off compactions until it returns.
func (s *Store) Range(fn func(key, value []byte) bool) error {
	s.compactor.mu.Lock()
	defer s.compactor.mu.Unlock()
	spans, err := s.flushedSpans(nil)
	if err != nil {
		return err
	}
	var key, value []byte
	for _, sp := range spans {
		sc := newScanner(sp.lf, logHeaderSize, sp.end)
		for {
			pos := sc.pos
			_, r, err := sc.next()
			if err == errEnd {
				break
			}
			if err != nil {
				return &CorruptError{File: sp.lf.path, Offset: pos, Detail: err.Error()}
			}
			if r.kind != kindPut {
				continue
			}
			x := s.hash(r.key)
			s.mu.RLock()
			if s.mu.closed {
				s.mu.RUnlock()
				return ErrClosed
			}
			_, live, found, err := s.find(x, r.key, true)
			ok := err == nil && found && live.seq == r.seq
			if ok {
				key = append(key[:0], r.key...)
				value = append(value[:0], live.value...)
			}
			s.mu.RUnlock()
			if err != nil {
				return err
			}
			if ok && !fn(key, value) {
				return nil
			}
		}
	}
	return nil
}

// Verify reads the whole log and checks every record's checksum, as Open
// does, and the checksum of each log file as a whole: for a sealed one,
// the one the manifest recorded when it was sealed. It finds damage in
// the records Open does not read (those an index checkpoint covers),
// for a store that has been open a long time. It returns a
// *CorruptError (wrapping ErrCorrupt) for the first damage it finds.
//
// Then it checks the index against the log, as the log was when Verify
// began: it builds the index the log gives, as Open does without a
// checkpoint, and checks that every entry of the store's index points at
// the latest record of a live key, whose hash gives that entry, that no
// key has two entries, and that every live key of the log is found
// through the index (Len included). An index that disagrees (loaded
// from a checkpoint whose checksum passes but which a bug, or memory,
// got wrong) is a *CorruptError whose Detail begins "the index is wrong,
// not the log", naming the record concerned: the log is intact, and
// closing the store, removing its INDEX file and opening it again
// rebuilds the index from the log (cuckoo store repair does so).
//
// Reads and writes go on meanwhile; checkpoints wait until Verify
// returns. Verify holds a second index meanwhile (about 9 bytes per
// key), and a copy of each chunk of the store's index (64 KiB) that a
// write changes meanwhile; it costs about what Open without a
// checkpoint does.
func (s *Store) Verify() error {
	s.compactor.mu.Lock()
	defer s.compactor.mu.Unlock()
	// One snapshot of the index at a time shares its chunks: a
	// checkpoint's, or this one.
	s.checkpointer.mu.Lock()
	defer s.checkpointer.mu.Unlock()
	var ix, snap *index
	spans, err := s.flushedSpans(func() { ix = s.mu.ix; snap = ix.snapshot() })
	if err != nil {
		return err
	}
	defer func() {
		s.wmu.Lock()
		ix.unshare()
		s.wmu.Unlock()
	}()
	logIndex := s.over(newIndex(s.seed)) // the index the log gives
	for _, sp := range spans {
		lf := sp.lf
		head := make([]byte, logHeaderSize)
		if _, err := lf.f.ReadAt(head, 0); err != nil {
			return fmt.Errorf("store: reading %s: %w", lf.path, err)
		}
		if _, _, err := parseLogHeader(head); err != nil {
			return &CorruptError{File: lf.path, Detail: err.Error()}
		}
		sc := newScanner(lf, logHeaderSize, sp.end)
		sc.crc = codec.Checksum(head)
		for {
			pos := sc.pos
			_, r, err := sc.next()
			if err == errEnd {
				break
			}
			if err != nil {
				return &CorruptError{File: lf.path, Offset: pos, Detail: err.Error()}
			}
			s.mu.RLock() // the log's files, which the lookups read
			err = logIndex.apply(r, location(lf.slot, pos))
			s.mu.RUnlock()
			if err != nil {
				return err
			}
		}
		if sc.crc != sp.crc {
			return &CorruptError{File: lf.path, Offset: logHeaderSize,
				Detail: "the log file's records are intact, but its checksum is not the one recorded as they were written (records were changed, removed or moved)"}
		}
	}
	return s.verifyIndex(s.over(snap), logIndex)
}

// over returns a Store that looks keys up, and applies records, in ix,
// over the log of s. Call its methods with s.mu held for reading: they
// read the log.
func (s *Store) over(ix *index) *Store {
	o := &Store{dir: s.dir, seed: s.seed, log: s.log}
	o.mu.ix = ix
	return o
}

// verifyIndex compares the index of got, a snapshot of the store's, with
// that of want, the index the log gives (Verify): every entry of got is
// the only one of its key, whose hash gives it, and want's entry of that
// key; got has as many entries as want, or one of want's is missing
// from got.
func (s *Store) verifyIndex(got, want *Store) error {
	err := got.mu.ix.each(func(ref slotRef) error {
		s.mu.RLock()
		defer s.mu.RUnlock()
		r, lf, pos, err := s.keyAt(ref.loc)
		if err != nil {
			return indexWrong(lf.path, pos, "an entry points at no record: "+err.Error())
		}
		x := s.hash(r.key)
		if !got.mu.ix.holds(ref, x) {
			return indexWrong(lf.path, pos, otherKeyDetail)
		}
		// ref is a candidate of its key now: find checks its checksum,
		// and finds it unless the key has an entry before it.
		first, _, _, err := got.find(x, r.key, false)
		if err != nil {
			return err
		}
		if first != ref {
			return indexWrong(lf.path, pos, "the key of this record has two entries")
		}
		latest, _, found, err := want.find(x, r.key, false)
		switch {
		case err != nil:
			return err
		case !found:
			return indexWrong(lf.path, pos, "an entry points at the record of a key the log deletes after it")
		case latest.loc != ref.loc:
			lf2, pos2 := s.log.at(latest.loc)
			return indexWrong(lf.path, pos, fmt.Sprintf("an entry points at a record of its key, not at its latest (%s at offset %d)", lf2.path, pos2))
		}
		return nil
	})
	if err != nil || got.mu.ix.count == want.mu.ix.count {
		return err
	}
	err = want.mu.ix.each(func(ref slotRef) error {
		s.mu.RLock()
		defer s.mu.RUnlock()
		r, lf, pos, err := s.keyAt(ref.loc)
		if err != nil {
			return err
		}
		if _, _, found, err := got.find(s.hash(r.key), r.key, false); err != nil || found {
			return err
		}
		return indexWrong(lf.path, pos, "the key of this record, its latest, is not found through the index (it reads as absent)")
	})
	if err != nil {
		return err
	}
	return indexWrong(filepath.Join(s.dir, idxName), 0, fmt.Sprintf("the index counts %d keys (Len); the log holds %d", got.mu.ix.count, want.mu.ix.count))
}

// flushedSpans is appendLog.flushedSpans, for Range and Verify, which
// hold compactor.mu; also, unless nil, runs with the spans' log, under
// wmu.
func (s *Store) flushedSpans(also func()) ([]span, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.mu.closed {
		return nil, ErrClosed
	}
	spans, err := s.log.flushedSpans()
	if err == nil && also != nil {
		also()
	}
	return spans, err
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
	// CheckpointUnused says why Open did not use the index checkpoint
	// (INDEX) it found, and read the whole log instead: a damaged or cut
	// one, one of another log, or one that disagrees with the log ("":
	// it used it, or found none).
	CheckpointUnused string
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
		LogFiles:    len(s.log.order),
		Compactions: s.compactor.done.Load(),
		// Set by Open, never changed.
		CheckpointUnused: s.ckUnused,
	}
	s.mu.RUnlock()
	s.wmu.Lock()
	st.LogBytes, st.LiveBytes = uint64(s.log.bytes), uint64(s.live)
	st.Replayed, st.SinceCheckpoint = s.checkpointer.replayed, s.checkpointer.sinceRecords
	s.wmu.Unlock()
	st.Checkpoints = s.checkpointer.written.Load()
	if p := s.compactor.autoErr.Load(); p != nil {
		st.AutoCompactError = *p
	}
	if p := s.checkpointer.err.Load(); p != nil {
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
	s.compactor.mu.Lock()
	defer s.compactor.mu.Unlock()
	s.wmu.Lock()
	err := s.log.flush()
	target := s.log.written
	s.wmu.Unlock()
	if err == nil {
		if err = s.log.failure(); err == nil {
			err = s.log.syncTo(target)
		}
	}
	if err == nil && s.log.failure() == nil {
		// The checkpoint is a cache: without it Open replays more.
		s.checkpoint()
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	s.mu.closed = true
	for _, lf := range s.log.order {
		if cerr := lf.f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("store: closing %s: %w", lf.path, cerr)
		}
		lf.data = nil
	}
	s.log.buf = nil
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
