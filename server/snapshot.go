package server

// A snapshot holds every key as it was when its epoch began (keyspace.go
// explains how that is kept while clients go on writing). It is the file
// snapshot.ckdb in the data directory, replaced atomically (written to a
// temporary file, fsynced, renamed):
//
//	+--------+---------+----------+-------+----------------+-------------+
//	| "CKSN" | version | reserved | epoch | unix time (ns) | entries ... |
//	| 4 B    | u16     | u16      | u64   | u64            |             |
//	+--------+---------+----------+-------+----------------+-------------+
//
//	entry:  | 1 (u8) | name length u32 | name | object length u64 | object encoding (object.go) |
//	end:    | 0 (u8) | entry count u64 | CRC-32C u32 of every byte before it |
//
// Integers are little-endian; version is 1. These constants are frozen.
//
// # The pause
//
// Taking a snapshot never stops the server. A write to a key that the
// snapshot has not copied yet copies it first, and the background scan
// holds each key's read lock while it copies it: so a write waits at most
// for one copy of its own key (the encoding of that one filter, about the
// time to copy its memory), and reads never wait. docs/server.md gives the
// measured figures.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/dedupkit/cuckoo/internal/codec"
	"github.com/dedupkit/cuckoo/internal/vfs"
)

const (
	snapMagic   = "CKSN" // frozen
	snapVersion = 1      // frozen
	snapName    = "snapshot.ckdb"
	entryTag    = 1 // frozen
	endTag      = 0 // frozen
)

// snapshotRun is a snapshot being taken: the copies writers made of the
// objects they were first to change.
type snapshotRun struct {
	epoch uint64
	mu    sync.Mutex
	cow   []snapEntry
	err   error
}

type snapEntry struct {
	name string
	enc  []byte
}

// copy records o's encoding. The caller holds o.mu.
func (r *snapshotRun) copy(o *object) {
	enc, err := o.encode()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if r.err == nil {
			r.err = err
		}
		return
	}
	r.cow = append(r.cow, snapEntry{o.name, enc})
}

// take removes and returns the copies made so far.
func (r *snapshotRun) take() ([]snapEntry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cow, err := r.cow, r.err
	r.cow = nil
	return cow, err
}

// bgSnapshot starts a snapshot in the background unless one is running,
// and reports whether it started one.
func (s *Server) bgSnapshot() bool {
	if !s.save.TryLock() {
		return false
	}
	s.save.running.Store(true)
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer s.save.Unlock()
		if err := s.snapshotLocked(); err != nil {
			s.logf("background snapshot failed: %v", err)
		}
	}()
	return true
}

// snapshot takes a snapshot and waits for it, after any running one.
func (s *Server) snapshot() error {
	s.save.Lock()
	defer s.save.Unlock()
	s.save.running.Store(true)
	return s.snapshotLocked()
}

// snapshotRetry is the wait before a Shutdown without a log tries again a
// snapshot that failed.
const snapshotRetry = time.Second

// errSnapshotAbandoned is the error of a snapshot that a Shutdown out of
// time abandoned: the log keeps every write it would have saved.
var errSnapshotAbandoned = errors.New("server: snapshot abandoned: the server is stopping, and the log keeps every write")

// snapshotLocked takes a snapshot. The caller holds s.save.
func (s *Server) snapshotLocked() (err error) {
	defer s.save.running.Store(false)
	defer func() {
		if err != nil && err != errSnapshotAbandoned {
			s.countError(errKindSnapshot)
			s.save.lastOK.Store(false)
		}
	}()
	start := time.Now()
	run := &snapshotRun{epoch: s.ks.epoch.Load() + 1}
	s.ks.snap.Store(run)
	defer s.ks.snap.Store(nil)
	if s.aof != nil {
		if err := s.aof.rotate(run.epoch); err != nil {
			return fmt.Errorf("starting a log file: %w", err)
		}
	}
	s.ks.epoch.Store(run.epoch)
	s.ks.dirty.Store(false)

	path := filepath.Join(s.cfg.Dir, snapName)
	f, err := vfs.Create(path, 0o640, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Abort()
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	e := codec.NewEncoder(bw, 0)
	e.Bytes([]byte(snapMagic))
	e.Uint16(snapVersion)
	e.Uint16(0)
	e.Uint64(run.epoch)
	e.Uint64(uint64(start.UnixNano()))
	var count uint64
	emit := func(name string, enc []byte) {
		e.Uint8(entryTag)
		e.Uint32(uint32(len(name)))
		e.Bytes([]byte(name))
		e.Uint64(uint64(len(enc)))
		e.Bytes(enc)
		count++
	}
	var objs []*object
	for i := range s.ks.shards {
		objs = s.ks.objects(i, objs[:0])
		for _, o := range objs {
			if s.save.abandon.Load() {
				return errSnapshotAbandoned
			}
			name, enc, err := scanCopy(o, run.epoch)
			if err != nil {
				return err
			}
			if enc != nil {
				emit(name, enc)
			}
		}
		cow, err := run.take()
		if err != nil {
			return err
		}
		for _, c := range cow {
			emit(c.name, c.enc)
		}
	}
	// Every object is in now: the scan saw all of them, and a write that
	// was copying one held its lock, which the scan waited for.
	e.Uint8(endTag)
	e.Uint64(count)
	n, err := e.Finish()
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return err
	}
	if err := f.Commit(); err != nil {
		return err
	}
	s.save.last.Store(time.Now().Unix())
	s.save.took.Store(int64(time.Since(start)))
	s.save.lastOK.Store(true)
	s.save.count.Add(1)
	s.save.fileSize.Store(n)
	s.removeLogsBefore(run.epoch)
	s.logf("snapshot of %s written to %s in %v (%d bytes)", plural(count, "key"), path, time.Since(start).Round(time.Millisecond), n)
	// The copies are garbage now, as large as the filters: give the memory
	// back at once rather than when the heap next doubles.
	debug.FreeOSMemory()
	return nil
}

// scanCopy returns the name and encoding of o for the snapshot of epoch,
// or a nil encoding when o is gone or already copied.
func scanCopy(o *object, epoch uint64) (string, []byte, error) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.dead || o.snapEpoch.Load() >= epoch {
		return "", nil, nil
	}
	enc, err := o.encode()
	if err != nil {
		return "", nil, err
	}
	// Only this scan writes snapEpoch under the read lock; writers change
	// it under the write lock, which excludes the scan.
	o.snapEpoch.Store(epoch)
	return o.name, enc, nil
}

// removeLogsBefore deletes the log files a snapshot of epoch made
// useless.
func (s *Server) removeLogsBefore(epoch uint64) {
	epochs, err := logFiles(s.cfg.Dir)
	if err != nil {
		s.logf("listing log files: %v", err)
		return
	}
	for _, e := range epochs {
		if e < epoch {
			if err := os.Remove(filepath.Join(s.cfg.Dir, logName(e))); err != nil {
				s.logf("removing an old log file: %v", err)
			}
		}
	}
}

// errSnapshotCorrupt is wrapped by loadSnapshot's errors about the file's
// contents.
var errSnapshotCorrupt = errors.New("damaged snapshot")

// loadSnapshot reads the snapshot at path into ks and returns its epoch
// and its time. A missing file is an empty snapshot of epoch 0.
func loadSnapshot(path string, ks *keyspace, maxObject uint64) (uint64, time.Time, int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, time.Time{}, 0, nil
	}
	if err != nil {
		return 0, time.Time{}, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, time.Time{}, 0, err
	}
	size := uint64(fi.Size())
	d := codec.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	magic := d.Bytes(4, 4)
	version := d.Uint16()
	d.Uint16()
	epoch := d.Uint64()
	unix := d.Uint64()
	if d.Err() == nil && (string(magic) != snapMagic || version != snapVersion) {
		return 0, time.Time{}, 0, fmt.Errorf("%w: not a snapshot of this version", errSnapshotCorrupt)
	}
	type loaded struct {
		name string
		o    *object
	}
	var objs []loaded
	var count uint64
	for d.Err() == nil {
		tag := d.Uint8()
		if tag == endTag {
			break
		}
		if tag != entryTag {
			d.Fail(fmt.Errorf("%w: unknown entry tag %d", errSnapshotCorrupt, tag))
			break
		}
		nameLen := uint64(d.Uint32())
		name := d.Bytes(nameLen, size)
		encLen := d.Uint64()
		enc := d.Bytes(encLen, min(size, maxObject))
		if d.Err() != nil {
			break
		}
		o, err := decodeObject(enc, 0)
		if err != nil {
			d.Fail(fmt.Errorf("%w: key %q: %v", errSnapshotCorrupt, name, err))
			break
		}
		objs = append(objs, loaded{string(name), o})
		count++
	}
	n := d.Uint64()
	if d.Err() == nil && n != count {
		d.Fail(fmt.Errorf("%w: %d entries, the end says %d", errSnapshotCorrupt, count, n))
	}
	if err := d.VerifyChecksum(); err != nil {
		if errors.Is(err, errSnapshotCorrupt) {
			return 0, time.Time{}, 0, err
		}
		return 0, time.Time{}, 0, fmt.Errorf("%w: %v", errSnapshotCorrupt, err)
	}
	if uint64(d.Read()) != size {
		return 0, time.Time{}, 0, fmt.Errorf("%w: %d bytes after its end", errSnapshotCorrupt, size-uint64(d.Read()))
	}
	for _, l := range objs {
		ks.insertLoaded(l.name, l.o)
	}
	return epoch, time.Unix(0, int64(unix)), int64(size), nil
}
