package store

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dedupkit/cuckoo/internal/codec"
)

// errStopped ends a compaction that Close interrupted.
var errStopped = errors.New("store: compaction stopped by Close")

// compactor is the state compactions share across a Store's life: the
// lock that runs one compaction (or Range, or Verify) at a time, and
// their results.
type compactor struct {
	mu      sync.Mutex  // one compaction, Range or Verify at a time
	running atomic.Bool // a compaction is under way or about to be (no automatic one starts)
	// remapping is set while a compaction has switched the manifest and
	// not yet pointed the index at its copies: the index then names log
	// files the manifest no longer lists, and no checkpoint may record
	// it. Under wmu.
	remapping bool
	done      atomic.Uint64         // compactions completed since Open
	autoErr   atomic.Pointer[error] // the last automatic compaction's error
}

// liveIndex is what a compaction asks of the index over the log it
// rewrites: which records are live, and pointing the index at their
// copies. The Store implements it.
type liveIndex interface {
	// writable returns why the store takes no writes, if it does not.
	// Called with wmu held.
	writable() error
	// appendLive appends to dst, as a Put record, the key of r (a Put
	// record of the log) with its live value, if r is the first Put of
	// the key's live incarnation; else it returns dst.
	appendLive(dst []byte, r record) ([]byte, error)
	// repoint points every index entry at a log file of old to the copy
	// of its record in out, holding readers off a batch at a time.
	repoint(out *logFile, old map[uint64]bool) error
	// checkpoint writes an index checkpoint, recording a failure in
	// Stats.
	checkpointNow()
}

// compaction is one run of Compact: it rewrites the live records of the
// sealed log files into new ones, switches the manifest to them, and
// removes the old files.
type compaction struct {
	log   *appendLog
	index liveIndex
	state *compactor
	stop  <-chan struct{} // closed when Close begins
	old   []*logFile      // the log files it rewrites, in log order
	isOld map[uint64]bool // their slots
}

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
	s.compactor.running.Store(true)
	defer s.compactor.running.Store(false)
	return s.compact()
}

func (s *Store) compact() error {
	s.compactor.mu.Lock()
	defer s.compactor.mu.Unlock()
	c := &compaction{log: s.log, index: s, state: &s.compactor, stop: s.stop}
	return c.run()
}

func (c *compaction) run() error {
	if err := c.seal(); err != nil || len(c.old) == 0 {
		return err
	}
	w := &outputWriter{log: c.log}
	if err := c.copyLive(w); err != nil {
		w.abandon()
		return err
	}
	if err := c.switchTo(w.outs); err != nil {
		w.abandon()
		return err
	}
	// Point the index at the copies, a batch at a time.
	for _, out := range w.outs {
		if err := c.index.repoint(out, c.isOld); err != nil {
			return c.log.fail(err)
		}
	}
	c.log.wmu.Lock()
	c.state.remapping = false
	c.log.wmu.Unlock()
	// The checkpoint of the old log names its log files: a new one, before
	// they go, so that a crash from here on replays only what follows.
	c.index.checkpointNow()
	c.removeOld()
	c.state.done.Add(1)
	return nil
}

// seal seals the active log file, so that what the compaction reads stops
// changing, and takes the sealed log files as the ones to rewrite.
func (c *compaction) seal() error {
	l := c.log
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := c.index.writable(); err != nil {
		return err
	}
	if l.active().size+int64(len(l.buf)) > logHeaderSize {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	c.old = append([]*logFile(nil), l.order[:len(l.order)-1]...)
	c.isOld = map[uint64]bool{}
	for _, lf := range c.old {
		c.isOld[lf.slot] = true
	}
	return nil
}

// copyLive writes to w, in log order, each live key at the place of its
// first Put, with its value now; then writes and syncs w's output.
func (c *compaction) copyLive(w *outputWriter) error {
	for _, lf := range c.old {
		sc := newScanner(lf, logHeaderSize, lf.size)
		for {
			if err := c.stopped(); err != nil {
				return err
			}
			pos := sc.pos
			_, r, err := sc.next()
			if err == errEnd {
				break
			}
			if err != nil {
				return &CorruptError{File: lf.path, Offset: pos, Detail: err.Error()}
			}
			if r.kind != kindPut {
				continue
			}
			if w.buf, err = c.index.appendLive(w.buf, r); err != nil {
				return err
			}
			if err := w.flushIfFull(); err != nil {
				return err
			}
		}
	}
	return w.finish()
}

// switchTo makes outs, with the log files written since the compaction
// began, the log: the manifest rename is the commit point.
func (c *compaction) switchTo(outs []*logFile) error {
	l := c.log
	l.wmu.Lock()
	defer l.wmu.Unlock()
	order := append([]*logFile(nil), outs...)
	for _, lf := range l.order {
		if !c.isOld[lf.slot] {
			order = append(order, lf)
		}
	}
	if err := l.writeManifest(order); err != nil {
		return err
	}
	c.state.remapping = true
	l.mu.Lock()
	l.order = order
	l.mu.Unlock()
	for _, out := range outs {
		l.bytes += out.size - logHeaderSize // newLogFile counted the header
	}
	return nil
}

// removeOld frees the slots of the rewritten log files and removes them.
func (c *compaction) removeOld() {
	l := c.log
	l.wmu.Lock()
	l.mu.Lock()
	for _, lf := range c.old {
		l.files[lf.slot] = nil
		lf.data = nil
	}
	l.mu.Unlock()
	for _, lf := range c.old {
		l.bytes -= lf.size
		lf.f.Close()
		l.fs.Remove(lf.path)
	}
	l.wmu.Unlock()
	l.fs.SyncDir(l.dir)
}

// stopped returns errStopped once Close has begun.
func (c *compaction) stopped() error {
	select {
	case <-c.stop:
		return errStopped
	default:
		return nil
	}
}

// appendLive is liveIndex.appendLive.
func (s *Store) appendLive(dst []byte, r record) ([]byte, error) {
	x := s.hash(r.key)
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, live, found, err := s.find(x, r.key, true)
	if err == nil && found && live.seq == r.seq {
		dst = appendRecord(dst, kindPut, r.seq, r.key, live.value)
	}
	return dst, err
}

// repoint is liveIndex.repoint.
func (s *Store) repoint(out *logFile, isOld map[uint64]bool) error {
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
				b, lf, at, err := s.log.recordBytes(c[i].loc, true)
				if err != nil {
					continue
				}
				if or, err := recordIn(b, lf, at); err == nil && bytes.Equal(or.key, r.key) {
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
// many log files as the log file size asks. The log files take slots at
// once (so a rotation meanwhile takes others), and join the log only
// with the manifest that lists them.
type outputWriter struct {
	log  *appendLog
	outs []*logFile
	buf  []byte
}

// outputBufferSize is how many bytes of records a compaction buffers
// before it writes them: its output log file can pass the log file size
// by that and a record (appendLog.mapSize).
const outputBufferSize = 1 << 20

func (w *outputWriter) flushIfFull() error {
	if len(w.buf) < outputBufferSize {
		return nil
	}
	return w.flush()
}

func (w *outputWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if n := len(w.outs); n == 0 || w.outs[n-1].size+int64(len(w.buf)) > w.log.fileSize && w.outs[n-1].size > logHeaderSize {
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
	lf.crc = codec.UpdateChecksum(lf.crc, w.buf)
	lf.size += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}

// addOutput starts a new output log file and makes it visible to readers.
func (w *outputWriter) addOutput() error {
	l := w.log
	l.wmu.Lock()
	lf, err := l.newLogFile()
	if err == nil {
		l.mu.Lock()
		l.files[lf.slot] = lf
		l.mu.Unlock()
	}
	l.wmu.Unlock()
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
	l := w.log
	l.wmu.Lock()
	l.mu.Lock()
	for _, lf := range w.outs {
		l.files[lf.slot] = nil
	}
	l.mu.Unlock()
	for _, lf := range w.outs {
		l.dropLogFile(lf)
	}
	l.wmu.Unlock()
	w.outs = nil
}
