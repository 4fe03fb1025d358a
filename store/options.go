package store

import (
	"fmt"
	"math"

	"github.com/dedupkit/cuckoo/internal/vfs"
)

// SyncPolicy says when the log is synced to stable storage, and so what a
// crash of the machine can lose. Every policy survives a crash of the
// process (kill -9) with the records written to the operating system;
// Close always syncs.
type SyncPolicy int

const (
	// SyncEverySecond, the default, buffers records in memory and writes
	// and syncs them once a second (and whenever 1 MiB is buffered): a
	// crash of the process or the machine loses at most the writes of the
	// last second, plus those of a sync in progress. Writes go at memory
	// speed, as with Redis's "appendfsync everysec", which made the same
	// choice for the same reason: a sync costs milliseconds on most
	// disks, so syncing every write makes every write that slow.
	SyncEverySecond SyncPolicy = iota
	// SyncAlways writes each record to the operating system before the
	// write returns, and returns only once the record is synced. Writers
	// that overlap share one sync (group commit), so many goroutines
	// writing at once pay far less than one sync each. A write that
	// returned nil survives kill -9 and power loss.
	SyncAlways
	// SyncNever buffers records and writes them when 1 MiB is buffered,
	// on Sync and on Close, and never syncs but on Sync and Close: the
	// operating system writes them back when it chooses. A crash of the
	// process loses the buffered records; a crash of the machine may
	// lose anything since the last Sync.
	SyncNever
)

func (p SyncPolicy) String() string {
	switch p {
	case SyncEverySecond:
		return "everysec"
	case SyncAlways:
		return "always"
	case SyncNever:
		return "never"
	}
	return fmt.Sprintf("SyncPolicy(%d)", int(p))
}

// An Option configures Open. An option given a bad value makes Open
// return an error wrapping ErrInvalidParameter, and open nothing.
type Option func(*options) error

type options struct {
	sync        SyncPolicy
	logFileSize int64
	autoRatio   float64
	autoMin     int64
	ckRatio     float64
	ckMin       uint64
	ckInline    bool // tests: the writer that makes a checkpoint due writes it
	seed        uint64
	seedSet     bool
	mustExist   bool
	fs          vfs.FS
	bufSize     int
	beforeWrite func() error
}

// Defaults of the options, and their bounds.
const (
	// DefaultLogFileSize is the size past which the log starts a new
	// log file.
	DefaultLogFileSize = 1 << 30
	// DefaultCompactRatio is the share of the log's bytes held by
	// overwritten and deleted records, and tombstones, past which a
	// Store compacts itself in the background.
	DefaultCompactRatio = 0.5
	// DefaultCompactMin is the least log size at which a Store compacts
	// itself.
	DefaultCompactMin = 64 << 20
	// DefaultCheckpointRatio is the share of the keys that the records
	// written since the last checkpoint must reach before the next.
	DefaultCheckpointRatio = 1.0 / 16
	// DefaultCheckpointMin is the least number of records written
	// between checkpoints.
	DefaultCheckpointMin = 1 << 18

	// minLogFileSize and maxLogFileSize bound WithLogFileSize: an offset
	// in a log file takes 32 bits, with room for a last record past the
	// size.
	minLogFileSize = 4 << 10
	maxLogFileSize = 3 << 30
	bufferSize     = 1 << 20
)

func defaults() options {
	return options{
		sync:        SyncEverySecond,
		logFileSize: DefaultLogFileSize,
		autoRatio:   DefaultCompactRatio,
		autoMin:     DefaultCompactMin,
		ckRatio:     DefaultCheckpointRatio,
		ckMin:       DefaultCheckpointMin,
		fs:          vfs.OS{},
		bufSize:     bufferSize,
	}
}

// WithBeforeWrite makes the store call fn before each write of records
// to the log file: the buffered records, or one too large for the buffer.
// A program that prints what it records calls its output's flush there,
// so that nothing reaches the store's file before what it printed
// reaches the output, whenever the process is killed: `cuckoo dedup
// --exact-dir` does, so that a line is never seen in a later run without
// having been printed. When fn returns an error the records are not
// written: the write that needed it (a Put, a Delete, Sync or Close)
// returns the error, and the records stay buffered, for a later write
// that fn allows (after a Close, they are gone). fn runs with the store's
// write lock held, from whichever goroutine writes, and must not call the
// store.
func WithBeforeWrite(fn func() error) Option {
	return func(o *options) error { o.beforeWrite = fn; return nil }
}

// WithSync sets the sync policy (default SyncEverySecond); a value that is
// none of the three policies is an invalid parameter.
func WithSync(p SyncPolicy) Option {
	return func(o *options) error {
		if p != SyncEverySecond && p != SyncAlways && p != SyncNever {
			return fmt.Errorf("%w: sync policy %v is none of SyncEverySecond, SyncAlways, SyncNever", ErrInvalidParameter, p)
		}
		o.sync = p
		return nil
	}
}

// WithLogFileSize sets the size in bytes past which the log starts a new
// log file: from 4 KiB to 3 GiB, default DefaultLogFileSize (1 GiB); a
// size outside is an error wrapping ErrInvalidParameter. A store has at
// most 256 log files, so this bounds the log: 256 GiB at the default. An
// existing store takes the new size for the log files it starts.
func WithLogFileSize(n int64) Option {
	return func(o *options) error {
		if n < minLogFileSize || n > maxLogFileSize {
			return fmt.Errorf("%w: log file size %d outside [%d, %d]", ErrInvalidParameter, n, int64(minLogFileSize), int64(maxLogFileSize))
		}
		o.logFileSize = n
		return nil
	}
}

// WithAutoCompact sets when the Store compacts itself: once the log
// holds at least minBytes and more than ratio of it is garbage
// (overwritten and deleted records, tombstones). ratio 0 turns automatic
// compaction off; otherwise it is below 1 (the garbage is never all of
// the log), and minBytes is not negative. Default DefaultCompactRatio,
// DefaultCompactMin.
func WithAutoCompact(ratio float64, minBytes int64) Option {
	return func(o *options) error {
		if !(ratio >= 0 && ratio < 1) || minBytes < 0 {
			return fmt.Errorf("%w: automatic compaction at ratio %v outside [0, 1) or past %d bytes (< 0)", ErrInvalidParameter, ratio, minBytes)
		}
		o.autoRatio, o.autoMin = ratio, minBytes
		return nil
	}
}

// WithCheckpoints sets when a Store checkpoints its index while it runs:
// once the records written since the last checkpoint are at least
// minRecords and at least ratio times the keys (or the log has grown by 8
// times the index's size, and at least 256 MiB, since). A crash then
// costs Open the replay of those records at most, instead of the whole
// log; each checkpoint costs a write of the index (about 9 bytes per
// key), written in the background while reads and writes go on (a write
// copies a 64 KiB part of the index it changes while the checkpoint is
// encoded), and a sync of the log. ratio 0 turns them off: only Close and
// Compact write one. ratio is finite and not negative, minRecords not
// negative (0 and 1 alike: a checkpoint waits for a record at least).
// Default DefaultCheckpointRatio, DefaultCheckpointMin.
func WithCheckpoints(ratio float64, minRecords int) Option {
	return func(o *options) error {
		if !(ratio >= 0) || math.IsInf(ratio, 1) || minRecords < 0 {
			return fmt.Errorf("%w: checkpoints at ratio %v (finite, >= 0) and %d records (>= 0)", ErrInvalidParameter, ratio, minRecords)
		}
		o.ckRatio, o.ckMin = ratio, uint64(minRecords)
		return nil
	}
}

// WithSeed sets the hash seed of a new store (default: random). An
// existing store keeps the seed it was created with.
func WithSeed(seed uint64) Option {
	return func(o *options) error { o.seed, o.seedSet = seed, true; return nil }
}

// WithMustExist makes Open open an existing store only: where dir does
// not exist, is not a directory, or holds no store, Open returns an
// error wrapping ErrNotStore and creates nothing.
func WithMustExist() Option { return func(o *options) error { o.mustExist = true; return nil } }
