package store

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
)

// errStopped ends a compaction that Close interrupted.
var errStopped = errors.New("store: compaction stopped by Close")

// Compact rewrites the live records into a new log file and removes the
// old log files, reclaiming the space of overwritten and deleted records.
// Reads and writes go on meanwhile: writes go to a new log file started
// when Compact begins, and reads are held only while the index is pointed
// at the new log file, a few thousand entries at a time.
//
// It is atomic under a crash at any point: the new log file becomes the
// log only when a new manifest naming it is renamed into place, so a
// crash leaves either the old log or the new one, each complete; Open
// removes the files of the other. A failed Compact (a full disk) leaves
// the store as it was. Compact needs free space for the live records.
// The order of Range is kept. A Store compacts itself when garbage
// passes a ratio (WithAutoCompact).
func (s *Store) Compact() error {
	s.compacting.Store(true)
	defer s.compacting.Store(false)
	return s.compact()
}

func (s *Store) compact() error {
	s.compactMu.Lock()
	defer s.compactMu.Unlock()

	// Seal the active log file: what the compaction reads stops changing.
	s.wmu.Lock()
	if err := s.writable(); err != nil {
		s.wmu.Unlock()
		return err
	}
	if s.active().size+int64(len(s.mu.buf)) > logHeaderSize {
		if err := s.rotate(); err != nil {
			s.wmu.Unlock()
			return err
		}
	}
	old := append([]*logFile(nil), s.mu.order[:len(s.mu.order)-1]...)
	if len(old) == 0 {
		s.wmu.Unlock()
		return nil
	}
	s.wmu.Unlock()
	isOld := map[uint64]bool{}
	for _, lf := range old {
		isOld[lf.slot] = true
	}

	// Copy, in log order, each live key at the place of its first Put,
	// with its value now.
	w := &outputWriter{s: s}
	for _, lf := range old {
		sc := newScanner(lf, logHeaderSize, lf.size)
		for {
			if err := s.stopped(); err != nil {
				w.abandon()
				return err
			}
			pos := sc.pos
			_, r, err := sc.next()
			if err == errEnd {
				break
			}
			if err != nil {
				w.abandon()
				return &CorruptError{File: lf.path, Offset: pos, Detail: err.Error()}
			}
			if r.kind != kindPut {
				continue
			}
			if err := s.copyLive(w, r, location(lf.slot, pos)); err != nil {
				w.abandon()
				return err
			}
		}
	}
	if err := w.finish(); err != nil {
		w.abandon()
		return err
	}

	// Switch: the manifest rename is the commit point.
	s.wmu.Lock()
	order := append([]*logFile(nil), w.outs...)
	for _, lf := range s.mu.order {
		if !isOld[lf.slot] {
			order = append(order, lf)
		}
	}
	if err := s.writeManifest(order); err != nil {
		s.wmu.Unlock()
		w.abandon()
		return err
	}
	// Until the index points at the copies, it names log files the
	// manifest no longer lists: no checkpoint may record it.
	s.remapping = true
	s.mu.Lock()
	s.mu.order = order
	s.mu.Unlock()
	for _, out := range w.outs {
		s.logBytes += out.size - logHeaderSize // newLogFile counted the header
	}
	s.wmu.Unlock()

	// Point the index at the copies, a batch at a time.
	for _, out := range w.outs {
		if err := s.remap(out, isOld); err != nil {
			return s.fail(err)
		}
	}
	s.wmu.Lock()
	s.remapping = false
	s.wmu.Unlock()
	// The checkpoint of the old log names its log files: a new one, before
	// they go, so that a crash from here on replays only what follows.
	if err := s.checkpoint(); err != nil {
		s.ckErr.Store(&err)
	}

	s.wmu.Lock()
	s.mu.Lock()
	for _, lf := range old {
		s.mu.files[lf.slot] = nil
		lf.data = nil
	}
	s.mu.Unlock()
	for _, lf := range old {
		s.logBytes -= lf.size
		lf.f.Close()
		s.fs.Remove(lf.path)
	}
	s.wmu.Unlock()
	s.fs.SyncDir(s.dir)
	s.compactions.Add(1)
	return nil
}

// stopped returns errStopped once Close has begun.
func (s *Store) stopped() error {
	select {
	case <-s.stop:
		return errStopped
	default:
		return nil
	}
}

// copyLive copies key r.key to w if the record at loc is the first Put
// of its live incarnation, with the live value.
func (s *Store) copyLive(w *outputWriter, r record, loc uint64) error {
	x := s.hash(r.key)
	s.mu.RLock()
	_, live, found, err := s.find(x, r.key)
	if err == nil && found && live.seq == r.seq {
		w.add(r.key, live.value, r.seq)
	}
	s.mu.RUnlock()
	if err != nil {
		return err
	}
	return w.flushIfFull()
}

// remap points every index entry at an old log file to its copy in out,
// holding readers off a batch of records at a time.
func (s *Store) remap(out *logFile, isOld map[uint64]bool) error {
	const batch = 4096
	sc := newScanner(out, logHeaderSize, out.size)
	for done := false; !done; {
		s.wmu.Lock()
		s.mu.Lock()
		for range batch {
			pos := sc.pos
			_, r, err := sc.next()
			if err == errEnd {
				done = true
				break
			}
			if err != nil {
				s.mu.Unlock()
				s.wmu.Unlock()
				return &CorruptError{File: out.path, Offset: pos, Detail: err.Error()}
			}
			var c [maxCandidates]slotRef
			n := s.mu.ix.candidates(s.hash(r.key), &c)
			for i := range n {
				if !isOld[c[i].loc>>32] {
					continue
				}
				b, _, _, err := s.recordBytes(c[i].loc)
				if err != nil {
					continue
				}
				if or, err := parseRecord(b); err == nil && bytes.Equal(or.key, r.key) {
					s.mu.ix.setLoc(c[i], location(out.slot, pos))
					break
				}
			}
		}
		s.mu.Unlock()
		s.wmu.Unlock()
	}
	return nil
}

// outputWriter writes a compaction's output through a buffer, into as
// many log files as the log file size asks. The log files take slots at once
// (so a rotation meanwhile takes others), and join the log only with the
// manifest that lists them.
type outputWriter struct {
	s    *Store
	outs []*logFile
	buf  []byte
}

func (w *outputWriter) add(key, value []byte, seq uint64) {
	w.buf = appendRecord(w.buf, kindPut, seq, key, value)
}

func (w *outputWriter) flushIfFull() error {
	if len(w.buf) < 1<<20 {
		return nil
	}
	return w.flush()
}

func (w *outputWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	s := w.s
	if n := len(w.outs); n == 0 || w.outs[n-1].size+int64(len(w.buf)) > s.opt.logFileSize && w.outs[n-1].size > logHeaderSize {
		if n > 0 {
			if err := w.outs[n-1].f.Sync(); err != nil {
				return fmt.Errorf("store: syncing %s: %w", w.outs[n-1].path, err)
			}
		}
		if err := w.addOutput(); err != nil {
			return err
		}
	}
	lf := w.outs[len(w.outs)-1]
	if _, err := lf.f.WriteAt(w.buf, lf.size); err != nil {
		return fmt.Errorf("store: writing %s: %w", lf.path, err)
	}
	lf.crc = crc32.Update(lf.crc, castagnoli, w.buf)
	lf.size += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}

// addOutput starts a new output log file and makes it visible to readers.
func (w *outputWriter) addOutput() error {
	s := w.s
	s.wmu.Lock()
	lf, err := s.newLogFile()
	if err == nil {
		s.mu.Lock()
		s.mu.files[lf.slot] = lf
		s.mu.Unlock()
	}
	s.wmu.Unlock()
	if err != nil {
		return err
	}
	w.outs = append(w.outs, lf)
	return nil
}

// finish writes and syncs the output; a compaction that copied nothing
// still writes one (empty) log file.
func (w *outputWriter) finish() error {
	if len(w.outs) == 0 {
		if err := w.addOutput(); err != nil {
			return err
		}
	}
	if err := w.flush(); err != nil {
		return err
	}
	lf := w.outs[len(w.outs)-1]
	if err := lf.f.Sync(); err != nil {
		return fmt.Errorf("store: syncing %s: %w", lf.path, err)
	}
	return nil
}

// abandon removes the output of a compaction that did not commit.
func (w *outputWriter) abandon() {
	s := w.s
	s.wmu.Lock()
	s.mu.Lock()
	for _, lf := range w.outs {
		s.mu.files[lf.slot] = nil
	}
	s.mu.Unlock()
	for _, lf := range w.outs {
		s.dropLogFile(lf)
	}
	s.wmu.Unlock()
	w.outs = nil
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
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	spans, err := s.flushedSpans()
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
			_, live, found, err := s.find(x, r.key)
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
func (s *Store) Verify() error {
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	spans, err := s.flushedSpans()
	if err != nil {
		return err
	}
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
		sc.crc = crc32.Checksum(head, castagnoli)
		for {
			pos := sc.pos
			_, _, err := sc.next()
			if err == errEnd {
				break
			}
			if err != nil {
				return &CorruptError{File: lf.path, Offset: pos, Detail: err.Error()}
			}
		}
		if sc.crc != sp.crc {
			return &CorruptError{File: lf.path, Offset: logHeaderSize,
				Detail: "the log file's records are intact, but its checksum is not the one recorded as they were written (records were changed, removed or moved)"}
		}
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

// flushedSpans writes out what is buffered and returns the log's
// log files in order, as far as they are written: what Range and Verify
// read. The caller holds compactMu, so that no log file goes meanwhile.
func (s *Store) flushedSpans() ([]span, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.mu.closed {
		return nil, ErrClosed
	}
	if err := s.flush(); err != nil {
		return nil, err
	}
	spans := make([]span, len(s.mu.order))
	for i, lf := range s.mu.order {
		spans[i] = span{lf, lf.size, lf.crc}
	}
	return spans, nil
}
