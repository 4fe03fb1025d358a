package store

import (
	"io"
	"os"
	"path/filepath"
	"sort"
)

// fsys is the file system a Store works in: the operating system's
// (osFS), or in tests one that keeps only synced bytes across a simulated
// crash and injects I/O errors (memFS, in memfs_test.go). Names are paths
// as the Store builds them with filepath.Join.
type fsys interface {
	// IsDir reports whether name is a directory; an error wrapping
	// fs.ErrNotExist when there is nothing of that name.
	IsDir(name string) (bool, error)
	MkdirAll(dir string) error
	// Create creates name, or truncates it, for reading and writing.
	Create(name string) (file, error)
	// Open opens an existing file for reading and writing.
	Open(name string) (file, error)
	ReadFile(name string) ([]byte, error)
	Rename(oldname, newname string) error
	Remove(name string) error
	// List returns the names in dir, sorted.
	List(dir string) ([]string, error)
	// SyncDir makes the creations, renames and removals in dir durable.
	SyncDir(dir string) error
	// Lock takes an exclusive lock on name, created if needed, for as
	// long as the returned Closer is open; errLockHeld if another
	// process (or another open Store) holds it.
	Lock(name string) (io.Closer, error)
}

// file is an open file. The Store writes only at its end, with WriteAt.
type file interface {
	io.ReaderAt
	io.WriterAt
	Sync() error
	Truncate(size int64) error
	Size() (int64, error)
	Close() error
	// Map returns the first max bytes of the file mapped for reading, or
	// nil when the file system cannot map (reads then go through
	// ReadAt). Bytes past the file's size must not be read. The mapping
	// lives until Close.
	Map(max int) []byte
}

// osFS is the operating system's file system.
type osFS struct{}

func (osFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }

func (osFS) IsDir(name string) (bool, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return false, err
	}
	return fi.IsDir(), nil
}

func (osFS) Create(name string) (file, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f}, nil
}

func (osFS) Open(name string) (file, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f}, nil
}

func (osFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }
func (osFS) Rename(o, n string) error             { return os.Rename(o, n) }
func (osFS) Remove(name string) error             { return os.Remove(name) }

func (osFS) List(dir string) ([]string, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Name()
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (osFS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(filepath.Clean(name), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

type osFile struct {
	f      *os.File
	mapped []byte
}

func (o *osFile) ReadAt(p []byte, off int64) (int, error)  { return o.f.ReadAt(p, off) }
func (o *osFile) WriteAt(p []byte, off int64) (int, error) { return o.f.WriteAt(p, off) }
func (o *osFile) Sync() error                              { return o.f.Sync() }
func (o *osFile) Truncate(size int64) error                { return o.f.Truncate(size) }

func (o *osFile) Size() (int64, error) {
	fi, err := o.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (o *osFile) Map(max int) []byte {
	if o.mapped == nil {
		o.mapped = mmapFile(o.f, max)
	}
	return o.mapped
}

func (o *osFile) Close() error {
	if o.mapped != nil {
		munmapFile(o.mapped)
		o.mapped = nil
	}
	return o.f.Close()
}
