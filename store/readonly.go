package store

import (
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/dedupkit/cuckoo/internal/vfs"
)

// readOnlyFS is a file system seen for reading only: Repair's dry run,
// which must work on a store it may not change (files and directory
// without write permission, a read-only mount). Files open read-only;
// the directory's lock is taken only where its file exists (a store no
// process has open may have none), never created; and whatever would
// change a file fails with errReadOnly, so that a dry run changes
// nothing even by mistake.
type readOnlyFS struct{ vfs.FS }

// errReadOnly is the error of a change a dry run tried.
var errReadOnly = errors.New("store: a dry run changes no file")

// Open opens name for reading only.
func (r readOnlyFS) Open(name string) (vfs.File, error) {
	if _, ok := r.FS.(vfs.OS); ok {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		return readOnlyOSFile{f}, nil
	}
	f, err := r.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return readOnlyFile{f}, nil
}

// Lock takes the lock of name as FS.Lock does, without creating its
// file: where there is none, no process has the store open (Open creates
// it before it reads the store), and there is nothing to lock.
func (r readOnlyFS) Lock(name string) (io.Closer, error) {
	if _, ok := r.FS.(vfs.OS); !ok {
		return r.FS.Lock(name) // a MemFS's locks are no files
	}
	f, err := vfs.LockExisting(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nopCloser{}, nil
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (readOnlyFS) Create(string) (vfs.File, error)    { return nil, errReadOnly }
func (readOnlyFS) CreateNew(string) (vfs.File, error) { return nil, errReadOnly }
func (readOnlyFS) MkdirAll(string) error              { return errReadOnly }
func (readOnlyFS) Rename(string, string) error        { return errReadOnly }
func (readOnlyFS) Remove(string) error                { return errReadOnly }
func (readOnlyFS) SyncDir(string) error               { return errReadOnly }

// readOnlyFile is a file of a readOnlyFS other than the operating
// system's.
type readOnlyFile struct{ vfs.File }

func (readOnlyFile) WriteAt([]byte, int64) (int, error) { return 0, errReadOnly }
func (readOnlyFile) Truncate(int64) error               { return errReadOnly }
func (readOnlyFile) Sync() error                        { return errReadOnly }

// readOnlyOSFile is a file of the operating system opened for reading
// only. It is not mapped: reads go through ReadAt.
type readOnlyOSFile struct{ f *os.File }

func (o readOnlyOSFile) ReadAt(p []byte, off int64) (int, error) { return o.f.ReadAt(p, off) }
func (readOnlyOSFile) WriteAt([]byte, int64) (int, error)        { return 0, errReadOnly }
func (readOnlyOSFile) Truncate(int64) error                      { return errReadOnly }
func (readOnlyOSFile) Sync() error                               { return errReadOnly }
func (readOnlyOSFile) Map(int) []byte                            { return nil }
func (o readOnlyOSFile) Close() error                            { return o.f.Close() }

func (o readOnlyOSFile) Size() (int64, error) {
	fi, err := o.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// nopCloser is the lock of a directory with no lock file.
type nopCloser struct{}

func (nopCloser) Close() error { return nil }
