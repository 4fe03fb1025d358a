package server

// The append-only log holds every write command that succeeded, in the
// order each key's writes ran. It is a sequence of files
// appendonly.<epoch>.log in the data directory, a new one begun by each
// snapshot (keyspace.go explains the epochs). A file is a sequence of
// records:
//
//	+------------+-------------+-----------------+------------------------------+
//	| length u32 | CRC-32C u32 | epoch (uvarint) | command: RESP array of bulks |
//	+------------+-------------+-----------------+------------------------------+
//	              \___________ over the `length` bytes that follow ___________/
//
// Both integers are little-endian. The command is encoded exactly as a
// client sends it (the same codec serves the wire and the disk), so
// `strings appendonly.1.log` shows what was written. A filter's creation
// is logged as CF.RESERVE or BF.RESERVE with every parameter spelled out;
// a cuckoo filter's also with the plan version its table was sized by
// (PLAN, internal/replay) and, for a fixed one, its bucket count
// (BUCKETS): options only a replay accepts, so that a replay builds the
// same tables whatever the library would plan now (cfParams in cf.go;
// docs/server.md, Recovery, lists the versions). A record is written
// only after its command succeeded, and a client's reply is sent only
// after its batch's records were handed to the operating system (and, with
// appendfsync always, fsynced): an acknowledged write is in the log.
//
// A record is whole or torn. Recovery reads each file to its end; a torn
// last record (a crash in the middle of a write) is cut off, while a bad
// record with valid data after it is damage, which stops the server from
// starting until Config.Repair cuts the log there.
// These constants are frozen.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dedupkit/cuckoo/internal/codec"
	"github.com/dedupkit/cuckoo/internal/vfs"
	"github.com/dedupkit/cuckoo/server/resp"
)

const (
	recordHeader = 8
	logPrefix    = "appendonly."
	logSuffix    = ".log"
)

// FsyncPolicy says when the append-only log is flushed to stable storage
// (Redis's appendfsync). With every policy a write is handed to the
// operating system before its reply is sent, so a crash of the server
// process alone (kill -9) loses no acknowledged write; the policies differ
// on a crash of the machine.
type FsyncPolicy int

const (
	// FsyncEverySec fsyncs the log once a second, in the background: a
	// machine crash loses at most the last second or so of writes. The
	// default, as in Redis.
	FsyncEverySec FsyncPolicy = iota
	// FsyncAlways fsyncs the log before replying to a batch of commands that
	// wrote: an acknowledged write survives a machine crash. Concurrent
	// clients share each fsync.
	FsyncAlways
	// FsyncNo never fsyncs: the operating system writes the log when it
	// chooses (on Linux, within about 30 seconds).
	FsyncNo
)

// String returns the policy's name as appendfsync spells it.
func (p FsyncPolicy) String() string {
	switch p {
	case FsyncAlways:
		return "always"
	case FsyncNo:
		return "no"
	}
	return "everysec"
}

// ParseFsyncPolicy parses always, everysec or no.
func ParseFsyncPolicy(s string) (FsyncPolicy, error) {
	switch strings.ToLower(s) {
	case "always":
		return FsyncAlways, nil
	case "everysec":
		return FsyncEverySec, nil
	case "no":
		return FsyncNo, nil
	}
	return 0, fmt.Errorf("server: appendfsync %q: want always, everysec or no", s)
}

func logName(epoch uint64) string { return logPrefix + strconv.FormatUint(epoch, 10) + logSuffix }

// aof is the append-only log being written.
type aof struct {
	dir    string
	policy FsyncPolicy

	mu struct {
		sync.Mutex
		buf   []byte   // records appended and not yet written
		end   int64    // logical offset after the last record appended
		file  *os.File // the file buf goes to
		epoch uint64   // the file's epoch
		size  int64    // bytes written to the file
		err   error    // sticky: the first write or fsync error
	}

	// io serializes the writes, fsyncs and file switches; it is taken
	// before mu, never while holding it.
	io      sync.Mutex
	spare   []byte
	failed  atomic.Bool  // mu.err is set
	written atomic.Int64 // logical offset handed to the operating system
	synced  atomic.Int64 // logical offset fsynced

	fsyncs    durationHistogram // for Stats
	lastFsync atomic.Int64      // unix nanoseconds of the last good fsync
}

// openAOF opens (creating it if needed) the log file of epoch for
// appending.
func openAOF(dir string, epoch uint64, policy FsyncPolicy) (*aof, error) {
	f, err := os.OpenFile(filepath.Join(dir, logName(epoch)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := vfs.SyncDir(dir); err != nil {
		f.Close()
		return nil, err
	}
	a := &aof{dir: dir, policy: policy}
	a.mu.file, a.mu.epoch, a.mu.size = f, epoch, fi.Size()
	return a, nil
}

// append adds the record of one command to the buffer and returns the
// logical offset after it, which flush takes. It never blocks on I/O.
func (a *aof) append(epoch uint64, args [][]byte) int64 {
	a.mu.Lock()
	b := a.mu.buf
	start := len(b)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0)
	b = binary.AppendUvarint(b, epoch)
	b = resp.AppendArray(b, len(args))
	for _, arg := range args {
		b = resp.AppendBulk(b, arg)
	}
	body := b[start+recordHeader:]
	binary.LittleEndian.PutUint32(b[start:], uint32(len(body)))
	binary.LittleEndian.PutUint32(b[start+4:], codec.Checksum(body))
	a.mu.buf = b
	a.mu.end += int64(len(b) - start)
	end := a.mu.end
	a.mu.Unlock()
	return end
}

// err returns the sticky I/O error, or nil.
func (a *aof) err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mu.err
}

// flush makes the log hold everything up to the logical offset off:
// written to the operating system, and fsynced too when sync is true.
// Concurrent callers share the writes and fsyncs.
func (a *aof) flush(off int64, sync bool) error {
	if a.written.Load() >= off && (!sync || a.synced.Load() >= off) {
		return a.err()
	}
	a.io.Lock()
	defer a.io.Unlock()
	if a.written.Load() < off {
		if err := a.writeLocked(); err != nil {
			return err
		}
	}
	if sync && a.synced.Load() < off {
		return a.syncLocked()
	}
	return a.err()
}

// writeLocked writes the buffer to the file. The caller holds a.io.
func (a *aof) writeLocked() error {
	a.mu.Lock()
	if a.mu.err != nil {
		err := a.mu.err
		a.mu.Unlock()
		return err
	}
	if len(a.mu.buf) == 0 {
		a.mu.Unlock()
		return nil
	}
	// Double buffering: appends go on into spare while b is written.
	b, f, end := a.mu.buf, a.mu.file, a.mu.end
	a.mu.buf, a.spare = a.spare[:0], nil
	a.mu.Unlock()
	n, err := writeLog(f, b)
	a.mu.Lock()
	a.mu.size += int64(n)
	if err != nil {
		a.mu.err = err
		a.failed.Store(true)
	}
	a.mu.Unlock()
	if err != nil {
		return err
	}
	if cap(b) <= 1<<20 {
		a.spare = b
	} else {
		a.spare = nil
	}
	a.written.Store(end)
	return nil
}

// syncLocked fsyncs the file. The caller holds a.io.
func (a *aof) syncLocked() error {
	a.mu.Lock()
	f, err := a.mu.file, a.mu.err
	a.mu.Unlock()
	if err != nil {
		return err
	}
	w := a.written.Load()
	start := monotonicNow()
	err = f.Sync()
	a.fsyncs.observe(monotonicNow() - start)
	if err != nil {
		// After a failed fsync the kernel may have dropped the pages:
		// nothing written since the last good fsync can be trusted.
		a.mu.Lock()
		a.mu.err = err
		a.failed.Store(true)
		a.mu.Unlock()
		return err
	}
	a.synced.Store(w)
	a.lastFsync.Store(time.Now().UnixNano())
	return nil
}

// sync writes and fsyncs everything appended so far.
func (a *aof) sync() error {
	a.mu.Lock()
	end := a.mu.end
	a.mu.Unlock()
	return a.flush(end, true)
}

// size returns the bytes in the current file.
func (a *aof) size() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mu.size + int64(len(a.mu.buf))
}

// rotate writes and fsyncs the current file, then makes the log of epoch
// the file new records go to. Records appended after the switch go to the
// new file, whatever epoch they are tagged with.
func (a *aof) rotate(epoch uint64) error {
	a.io.Lock()
	defer a.io.Unlock()
	if err := a.writeLocked(); err != nil {
		return err
	}
	if err := a.syncLocked(); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(a.dir, logName(epoch)), os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	if err := vfs.SyncDir(a.dir); err != nil {
		f.Close()
		return err
	}
	a.mu.Lock()
	old := a.mu.file
	a.mu.file, a.mu.epoch, a.mu.size = f, epoch, 0
	a.mu.Unlock()
	return old.Close()
}

// close writes and fsyncs what is buffered and closes the file.
func (a *aof) close() error {
	err := a.sync()
	a.io.Lock()
	defer a.io.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if cerr := a.mu.file.Close(); err == nil {
		err = cerr
	}
	return err
}

// logFiles returns the epochs of the log files in dir, ascending.
func logFiles(dir string) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var epochs []uint64
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, logPrefix) || !strings.HasSuffix(name, logSuffix) {
			continue
		}
		n, err := strconv.ParseUint(name[len(logPrefix):len(name)-len(logSuffix)], 10, 64)
		if err != nil {
			continue
		}
		epochs = append(epochs, n)
	}
	slices.Sort(epochs)
	return epochs, nil
}

// logDamage describes a log that cannot be read to its end.
type logDamage struct {
	file   string
	offset int64
	reason string
}

func (d *logDamage) Error() string {
	return fmt.Sprintf("%s is damaged at byte %d (%s)", d.file, d.offset, d.reason)
}

// errTorn is returned by readLog when the file ends inside its last record.
var errTorn = errors.New("torn last record")

// readLog calls fn for each record of the log file at path, with the
// record's offset. It returns the offset after the last whole record
// it read, and: nil at a clean end; errTorn when the file ends inside a
// record (or in zeros, which a crash can leave past the last write); a
// *logDamage for a bad record followed by more data; fn's error, wrapped
// in a *logDamage at that record.
func readLog(path string, maxRecord int64, fn func(off int64, epoch uint64, args [][]byte) error) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	br := bufio.NewReaderSize(f, 1<<16)
	name := filepath.Base(path)
	var off int64
	var body []byte
	rd := resp.NewReader(nil, resp.Limits{MaxCommand: int(maxRecord)})
	for off < size {
		if size-off < recordHeader {
			return off, errTorn
		}
		var h [recordHeader]byte
		if _, err := io.ReadFull(br, h[:]); err != nil {
			return off, err
		}
		n := int64(binary.LittleEndian.Uint32(h[:]))
		sum := binary.LittleEndian.Uint32(h[4:])
		if n == 0 && sum == 0 {
			return off, tornOrDamage(br, name, off, "a zero header")
		}
		if n == 0 || n > maxRecord {
			return off, &logDamage{name, off, fmt.Sprintf("a record length of %d", n)}
		}
		if off+recordHeader+n > size {
			return off, errTorn
		}
		if int64(cap(body)) < n {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(br, body); err != nil {
			return off, err
		}
		if codec.Checksum(body) != sum {
			if off+recordHeader+n == size {
				return off, errTorn
			}
			return off, &logDamage{name, off, "a checksum mismatch"}
		}
		epoch, args, err := decodeRecord(rd, body)
		if err != nil {
			return off, &logDamage{name, off, err.Error()}
		}
		if err := fn(off, epoch, args); err != nil {
			return off, &logDamage{name, off, err.Error()}
		}
		off += recordHeader + n
	}
	return off, nil
}

// tornOrDamage decides, at a record that cannot be read, whether the rest
// of the file is zeros (a torn end) or data (damage).
func tornOrDamage(br *bufio.Reader, name string, off int64, what string) error {
	var buf [4096]byte
	for {
		n, err := br.Read(buf[:])
		for _, c := range buf[:n] {
			if c != 0 {
				return &logDamage{name, off, what + " before more data"}
			}
		}
		if err != nil {
			return errTorn
		}
	}
}

// decodeRecord splits a record body into its epoch and command, read with
// rd: exactly one RESP array.
func decodeRecord(rd *resp.Reader, body []byte) (uint64, [][]byte, error) {
	epoch, k := binary.Uvarint(body)
	if k <= 0 || k == len(body) {
		return 0, nil, errors.New("a bad epoch")
	}
	src := bytes.NewReader(body[k:])
	rd.Reset(src)
	args, err := rd.ReadCommand()
	if err != nil || body[k] != '*' || rd.Buffered() != 0 || src.Len() != 0 {
		return 0, nil, errors.New("a bad command")
	}
	return epoch, args, nil
}

// truncateLog cuts the log file at path to size bytes and fsyncs it.
func truncateLog(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
