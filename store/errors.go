package store

import (
	"errors"
	"fmt"
	"strings"
)

// Errors a Store returns. Compare with errors.Is: most are wrapped with
// the details (a file name, an offset, the key's length).
var (
	// ErrNotFound is returned by Get when the key is absent.
	ErrNotFound = errors.New("store: key not found")
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("store: closed")
	// ErrCorrupt is wrapped by the errors of Open, Get, Verify and
	// Repair that find a damaged log or manifest, or an index that
	// disagrees with the log: a *CorruptError names the file and the
	// offset. Open returns it for every damaged record
	// it reads, the last one included when one flipped bit explains it,
	// and opens nothing; a last record no flipped bit explains is a write
	// a crash cut short, and is cut, not reported.
	ErrCorrupt = errors.New("store: corrupt")
	// ErrTooLarge is returned by Put and PutIfAbsent for a key longer
	// than MaxKeySize or a value longer than MaxValueSize, and when the
	// log would need more than its 256 log files; nothing is written.
	ErrTooLarge = errors.New("store: too large")
	// ErrInvalidParameter is wrapped by the error Open returns for an
	// option given a bad value (a log file size past 3 GiB, an unknown
	// sync policy, a negative ratio); nothing is opened or created.
	ErrInvalidParameter = errors.New("store: invalid parameter")
	// ErrLocked is returned by Open when another process (or another
	// Store in this one) has the directory open.
	ErrLocked = errors.New("store: directory is in use by another process")
	// ErrNotStore is wrapped by the error of Open for a path that holds
	// no store: a file, a directory of other files (Open never creates a
	// store among them), or, with WithMustExist, a missing or empty
	// directory. Nothing is created.
	ErrNotStore = errors.New("store: not a store")
	// ErrNotRepairable is wrapped by the error of Repair (a
	// *RepairError), and of Open for a store whose manifest is lost, for
	// damage that no cut of the last log file's tail
	// repairs; Repair changes nothing then.
	ErrNotRepairable = errors.New("store: not repairable by a cut of the last log file")
	// ErrFailed is wrapped by the errors of every write after a sync of
	// the log failed: what the operating system kept is unknown, so the
	// Store takes no more writes; reads go on. Close and Open again to
	// continue from what is on disk.
	ErrFailed = errors.New("store: a sync of the log failed; reopen the store")
)

// CorruptError describes damage found in a store file. It wraps
// ErrCorrupt.
type CorruptError struct {
	File   string // the file's path
	Offset int64  // where the damage starts
	Detail string // what is wrong

	// index says that the index is wrong, not the file: an entry points
	// at a record it cannot be the entry of (File and Offset are the
	// record's), or Verify found the index disagreeing with the log.
	// The log is intact; rebuilding the index from it repairs the store.
	index bool
}

// indexWrong returns the error of an index that disagrees with the
// record at offset pos of the log file path, an intact one: what is
// wrong, and the remedy.
func indexWrong(path string, pos int64, what string) *CorruptError {
	return &CorruptError{File: path, Offset: pos, index: true, Detail: indexWrongPrefix + what + indexWrongRemedy}
}

const (
	indexWrongPrefix = "the index is wrong, not the log: "
	indexWrongRemedy = "; rebuild it from the log: close the store, remove its INDEX file and open it again (cuckoo store repair does so)"
)

// indexWhat returns what indexWrong said is wrong, with the record's
// place.
func (e *CorruptError) indexWhat() string {
	what := strings.TrimSuffix(strings.TrimPrefix(e.Detail, indexWrongPrefix), indexWrongRemedy)
	return fmt.Sprintf("%s (%s at offset %d)", what, e.File, e.Offset)
}

// isIndexWrong reports whether err is the error of an index that
// disagrees with an intact log (indexWrong).
func isIndexWrong(err error) bool {
	var ce *CorruptError
	return errors.As(err, &ce) && ce.index
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("store: corrupt: %s at offset %d: %s", e.File, e.Offset, e.Detail)
}

// Unwrap returns ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }
