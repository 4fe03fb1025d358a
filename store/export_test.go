package store

import "github.com/dedupkit/cuckoo/internal/vfs"

// The crash-testing file system the tests run stores in (package vfs).
type MemFS = vfs.MemFS

// NewMemFS returns an empty MemFS with no space limit.
func NewMemFS() *MemFS { return vfs.NewMemFS() }

// ErrCrash is the panic value of a write MemFS.CrashAtWrite chose.
var ErrCrash = vfs.ErrCrash

// WithFS makes a Store work in fs instead of the operating system's file
// system.
func WithFS(fs *MemFS) Option { return func(o *options) error { o.fs = fs; return nil } }

// WithInlineCheckpoints makes the write that makes a checkpoint due
// write it before it returns, in its goroutine, so that a simulated
// crash (a panic in a write of the MemFS) stops the store there too.
func WithInlineCheckpoints() Option { return func(o *options) error { o.ckInline = true; return nil } }

// Checkpoint writes an index checkpoint now.
func (s *Store) Checkpoint() error { return s.checkpoint() }

// WithBufferSize sets the write buffer's size.
func WithBufferSize(n int) Option { return func(o *options) error { o.bufSize = n; return nil } }

// SetLogReadHook sets a function called on every read of a record by a
// lookup (nil: none). Set it only while no Store is in use.
func SetLogReadHook(fn func()) { logReadHook = fn }

// CheckIndex verifies the index's structure and that every entry is where
// its key's hash puts it, reading each key from the log.
func (s *Store) CheckIndex() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	ix := s.mu.ix
	if err := ix.check(); err != nil {
		return err
	}
	n := ix.buckets()
	for j := uint64(0); j < n; j++ {
		for _, v := range ix.bucket(j) {
			if v == 0 {
				continue
			}
			x, err := s.hashAt(v >> locShift)
			if err != nil {
				return err
			}
			if v&whichBit != 0 {
				x = ix.alt(x)
			}
			if ix.addr(x) != j || ix.tag(j, x, v&whichBit) != v&tagMask {
				return errIndexPlacement
			}
		}
	}
	return nil
}

var errIndexPlacement = errorString("store: an index entry is not where its key's hash puts it")

type errorString string

func (e errorString) Error() string { return string(e) }

// IndexGeometry returns the index's level, split pointer and top.
func (s *Store) IndexGeometry() (level uint, split uint64, top uint) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mu.ix.level, s.mu.ix.split, s.mu.ix.top
}

// RecordEnds returns the offsets in a log file's bytes at which its
// intact records end, from the header on.
func RecordEnds(file []byte) []int64 {
	var ends []int64
	for p := logHeaderSize; p < len(file); {
		r, err := decodeRecord(file[p:])
		if err != nil {
			break
		}
		p += r.size
		ends = append(ends, int64(p))
	}
	return ends
}

// WithRepairFS makes Repair work in fs instead of the operating
// system's file system.
func WithRepairFS(fs *MemFS) RepairOption {
	return func(o *repairOptions) error { o.fs = fs; return nil }
}

// WithRepairStep makes Repair call fn after each of its steps: "copied"
// (the copy of the bytes to cut is synced, with its directory) and "cut"
// (the log file is cut and synced). An error from fn stops Repair there.
func WithRepairStep(fn func(step string) error) RepairOption {
	return func(o *repairOptions) error { o.step = fn; return nil }
}
