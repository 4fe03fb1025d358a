package server

// The append-only log holds every write command that succeeded, in the
// order each key's writes ran. It is a sequence of files
// appendonly.<epoch>.log in the data directory, a new one begun by each
// snapshot (keyspace.go explains the epochs). A file is a sequence of
// records, each of format 2 since this version, of format 1 before:
//
//	format 2:
//	+--------------------------+-------------+-------------+-----------------+------------------------------+
//	| 1<<31 | length (u32)     | CRC-32C u32 | CRC-32C u32 | epoch (uvarint) | command: RESP array of bulks |
//	+--------------------------+-------------+-------------+-----------------+------------------------------+
//	                            \__ of the body ___________/ \____ the body: `length` bytes ____________/
//	 \__________ of the header's first 8 bytes __/
//
//	format 1:
//	+------------+-------------+-----------------+------------------------------+
//	| length u32 | CRC-32C u32 | epoch (uvarint) | command: RESP array of bulks |
//	+------------+-------------+-----------------+------------------------------+
//
// All integers are little-endian. The top bit of the first word tells the
// formats apart (a format 1 length is below 2^31); a file may hold records
// of format 1 and then of format 2 (a server of this version appends to
// the file an older one wrote), never the reverse. The command is encoded
// exactly as a client sends it (the same codec serves the wire and the
// disk), so `strings appendonly.1.log` shows what was written. A filter's
// creation is logged as CF.RESERVE or BF.RESERVE with every parameter
// spelled out; a cuckoo filter's also with the plan version its table was
// sized by (PLAN, internal/replay) and, for a fixed one, its bucket count
// (BUCKETS): options only a replay accepts, so that a replay builds the
// same tables whatever the library would plan now (cfParams in cf.go;
// docs/server.md, Recovery, lists the versions). A record is written only
// after its command succeeded, and a client's reply is sent only after
// its batch's records were handed to the operating system (and, with
// appendfsync always, fsynced): an acknowledged write is in the log, whole.
//
// A record is whole, torn or damaged. Recovery reads each file to its end
// and cuts a torn end off only when it can prove that the end is torn,
// that is, that it holds no record ever written whole (readLog says how);
// anything else that fails a check is damage, which stops the server from
// starting until Config.Repair cuts the log there. The second checksum of
// format 2 is what makes the proof possible: a length is trusted only once
// its header's checksum matches, so a damaged length is never taken for a
// record that runs past the end of the file.
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
	recordHeader  = 12      // format 2
	recordFormat2 = 1 << 31 // the flag of format 2, in a record's first word
	headerV1      = 8       // format 1
	logPrefix     = "appendonly."
	logSuffix     = ".log"

	// maxLogRecord bounds the body of a record recovery reads: the largest
	// command any client-query-buffer-limit lets through, and room for its
	// epoch and headers.
	maxLogRecord = MaxQueryBufferLimit + 1<<20
)

// SyncPolicy says when the append-only log is flushed to stable storage
// (Redis's appendfsync, whose words the config file, the flags, CONFIG GET
// and INFO keep: everysec, always, no). With every policy a write is
// handed to the operating system before its reply is sent, so a crash of
// the server process alone (kill -9) loses no acknowledged write; the
// policies differ on a crash of the machine. The names are those of
// store.SyncPolicy.
type SyncPolicy int

const (
	// SyncEverySecond fsyncs the log once a second, in the background: a
	// machine crash loses at most the last second or so of writes. The
	// default, as in Redis (appendfsync everysec).
	SyncEverySecond SyncPolicy = iota
	// SyncAlways fsyncs the log before replying to a batch of commands that
	// wrote: an acknowledged write survives a machine crash. Concurrent
	// clients share each fsync (appendfsync always).
	SyncAlways
	// SyncNever never fsyncs: the operating system writes the log when it
	// chooses (on Linux, within about 30 seconds) (appendfsync no).
	SyncNever
)

// String returns the policy's name as appendfsync spells it: everysec,
// always or no.
func (p SyncPolicy) String() string {
	switch p {
	case SyncEverySecond:
		return "everysec"
	case SyncAlways:
		return "always"
	case SyncNever:
		return "no"
	}
	return fmt.Sprintf("SyncPolicy(%d)", int(p))
}

// ParseSyncPolicy parses a policy as appendfsync spells it: always,
// everysec or no, in any case.
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	switch strings.ToLower(s) {
	case "always":
		return SyncAlways, nil
	case "everysec":
		return SyncEverySecond, nil
	case "no":
		return SyncNever, nil
	}
	return 0, fmt.Errorf("server: appendfsync %q: want always, everysec or no", s)
}

func logName(epoch uint64) string { return logPrefix + strconv.FormatUint(epoch, 10) + logSuffix }

// aof is the append-only log being written.
type aof struct {
	dir    string
	policy SyncPolicy

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
	io       sync.Mutex
	spare    []byte
	failed   atomic.Bool  // mu.err is set
	appended atomic.Int64 // logical offset after the last record appended
	written  atomic.Int64 // logical offset handed to the operating system
	synced   atomic.Int64 // logical offset fsynced

	fsyncs    durationHistogram // for Stats
	lastFsync atomic.Int64      // unix nanoseconds of the last good fsync
}

// openAOF opens (creating it if needed) the log file of epoch for
// appending.
func openAOF(dir string, epoch uint64, policy SyncPolicy) (*aof, error) {
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
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	b = binary.AppendUvarint(b, epoch)
	b = resp.AppendArray(b, len(args))
	for _, arg := range args {
		b = resp.AppendBulk(b, arg)
	}
	body := b[start+recordHeader:]
	binary.LittleEndian.PutUint32(b[start:], uint32(len(body))|recordFormat2)
	binary.LittleEndian.PutUint32(b[start+4:], codec.Checksum(body))
	binary.LittleEndian.PutUint32(b[start+8:], codec.Checksum(b[start:start+8]))
	a.mu.buf = b
	a.mu.end += int64(len(b) - start)
	end := a.mu.end
	a.appended.Store(end)
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
	var n int
	var err error
	if hook := logWriteHook.Load(); hook != nil {
		err = (*hook)()
	}
	if err == nil {
		n, err = writeLog(f, b)
	}
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

// errTorn is the error readLog returns, wrapped, for a file whose end it
// proved torn.
var errTorn = errors.New("torn last record")

// logWriteHook, when set (by tests), runs before each write of the log's
// buffer: a test holds a write back with it, or fails it (the error is
// taken as the write's).
var logWriteHook atomic.Pointer[func() error]

// tornEnd is a torn end of a log file, and the proof that it is one.
type tornEnd struct{ proof string }

func (e *tornEnd) Error() string        { return e.proof }
func (e *tornEnd) Is(target error) bool { return target == errTorn }

// readLog calls fn for each record of the log file at path, with the
// record's offset. It returns the offset after the last whole record it
// read, and: nil at a clean end; an error that errors.Is errTorn when
// what follows is a torn write; a *logDamage for anything else that
// fails a check, and for fn's error, at that record. maxRecord bounds a
// record's body.
//
// A write the crash interrupted leaves a prefix of its bytes (a process
// killed in the middle of a write), and a machine crash may also leave
// zeros where the file's last blocks were never written. So the end from
// the first record that fails a check is torn, and cut, only when one of
// these holds, and nothing else:
//   - the file ends inside the record's header;
//   - the header's checksum matches (format 2) and its length runs past
//     the end of the file;
//   - the file is zeros from inside the part of the record it was checking
//     to its end (the header when the header fails, the whole record when
//     the body does): a record written whole ends with "\r\n", never a
//     zero byte;
//   - format 1, which has no header checksum: the length runs past the end
//     of the file, and no prefix of what follows the header has the
//     record's checksum, so it is not a whole record with a damaged length.
//
// One damaged bit of a whole log therefore never passes for a torn end.
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
	return readLogFrom(f, fi.Size(), filepath.Base(path), maxRecord, fn)
}

// readLogFrom is readLog of the size bytes of r, a log file named name.
func readLogFrom(r io.ReaderAt, size int64, name string, maxRecord int64, fn func(off int64, epoch uint64, args [][]byte) error) (int64, error) {
	lf := &logFile{r: r, name: name, size: size, zeros: -1}
	br := bufio.NewReaderSize(io.NewSectionReader(r, 0, size), int(min(size, 1<<16)))
	var off int64
	var body []byte
	format2 := false // a record of format 2 was read: no format 1 after it
	// A record is read whole, whatever its arguments: the record's own
	// length bounds them, and a live limit (proto-max-bulk-len, which
	// CONFIG SET may have raised) must not refuse what it let through.
	rd := resp.NewReader(nil, resp.Limits{MaxCommand: int(maxRecord), MaxBulk: int(maxRecord), MaxArray: int(maxRecord)})
	for off < lf.size {
		rest := lf.size - off
		if rest < 4 {
			return off, &tornEnd{"the file ends inside a record's header"}
		}
		h, err := br.Peek(int(min(rest, recordHeader)))
		if err != nil {
			return off, err
		}
		word := binary.LittleEndian.Uint32(h)
		var n, end int64
		if format2 || word&recordFormat2 != 0 {
			format2 = true
			if rest < recordHeader {
				return off, &tornEnd{"the file ends inside a record's header"}
			}
			if word&recordFormat2 == 0 {
				return off, lf.failed(off, off+recordHeader, "a record of format 1 after records of format 2")
			}
			if codec.Checksum(h[:8]) != binary.LittleEndian.Uint32(h[8:]) {
				return off, lf.failed(off, off+recordHeader, "a header checksum mismatch")
			}
			n = int64(word &^ recordFormat2)
			if n == 0 || n > maxRecord {
				return off, &logDamage{lf.name, off, fmt.Sprintf("a record length of %d", n)}
			}
			end = off + recordHeader + n
			if end > lf.size {
				return off, &tornEnd{"the file ends inside a record whose header is whole"}
			}
		} else {
			if rest < headerV1 {
				return off, &tornEnd{"the file ends inside a record's header"}
			}
			n = int64(word)
			if n == 0 || n > maxRecord {
				return off, lf.failed(off, off+headerV1, fmt.Sprintf("a record length of %d", n))
			}
			end = off + headerV1 + n
			if end > lf.size {
				whole, err := lf.hasChecksumPrefix(off+headerV1, n, binary.LittleEndian.Uint32(h[4:]))
				if err != nil {
					return off, err
				}
				if whole {
					return off, &logDamage{lf.name, off, fmt.Sprintf("a record length of %d past the end of the file, with a whole record before it", n)}
				}
				return off, &tornEnd{"the file ends inside a record of format 1, and no prefix of it has its checksum"}
			}
		}
		sum := binary.LittleEndian.Uint32(h[4:])
		if _, err := br.Discard(int(end - n - off)); err != nil {
			return off, err
		}
		if int64(cap(body)) < n {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(br, body); err != nil {
			return off, err
		}
		if codec.Checksum(body) != sum {
			return off, lf.failed(off, end, "a checksum mismatch")
		}
		epoch, args, err := decodeRecord(rd, body)
		if err != nil {
			return off, &logDamage{lf.name, off, err.Error()}
		}
		if err := fn(off, epoch, args); err != nil {
			return off, &logDamage{lf.name, off, err.Error()}
		}
		off = end
	}
	return off, nil
}

// logFile is a log file readLog reads, with what its proofs need.
type logFile struct {
	r     io.ReaderAt
	name  string
	size  int64
	zeros int64 // where the zeros that end the file begin; -1: not known yet
}

// failed returns what a record at off that failed a check over its bytes
// up to checked is: a torn end if the file is zeros from before checked
// to its end (the record was never written whole, see readLog), else
// damage.
func (lf *logFile) failed(off, checked int64, reason string) error {
	z, err := lf.zeroTail()
	if err != nil {
		return err
	}
	switch {
	case z <= off:
		return &tornEnd{fmt.Sprintf("the file is zeros from byte %d to its end", z)}
	case z < checked:
		return &tornEnd{fmt.Sprintf("%s, and the file is zeros from byte %d to its end", reason, z)}
	}
	return &logDamage{lf.name, off, reason}
}

// zeroTail returns the offset from which the file holds only zeros (its
// size when its last byte is not zero).
func (lf *logFile) zeroTail() (int64, error) {
	if lf.zeros >= 0 {
		return lf.zeros, nil
	}
	buf := make([]byte, min(lf.size, 64<<10))
	end := lf.size
	for end > 0 {
		start := max(0, end-int64(len(buf)))
		chunk := buf[:end-start]
		if _, err := lf.r.ReadAt(chunk, start); err != nil {
			return 0, err
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] != 0 {
				lf.zeros = start + int64(i) + 1
				return lf.zeros, nil
			}
		}
		end = start
	}
	lf.zeros = 0
	return 0, nil
}

// hasChecksumPrefix reports whether some prefix of the file's bytes from
// start, at most limit long and ending with '\n' (as every record body
// does), has the CRC-32C sum: a whole record whose length was damaged.
func (lf *logFile) hasChecksumPrefix(start, limit int64, sum uint32) (bool, error) {
	end := min(lf.size, start+limit)
	buf := make([]byte, min(end-start, 64<<10))
	var crc uint32
	for pos := start; pos < end; {
		chunk := buf[:min(int64(len(buf)), end-pos)]
		if _, err := lf.r.ReadAt(chunk, pos); err != nil {
			return false, err
		}
		pos += int64(len(chunk))
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				crc = codec.UpdateChecksum(crc, chunk)
				break
			}
			crc = codec.UpdateChecksum(crc, chunk[:i+1])
			if crc == sum {
				return true, nil
			}
			chunk = chunk[i+1:]
		}
	}
	return false, nil
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
