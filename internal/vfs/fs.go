package vfs

import (
	"io"
	"os"
	"path/filepath"
	"sort"
)

// FS is the file system a store works in: [OS], or in tests a [MemFS].
// Names are paths as filepath.Join builds them.
type FS interface {
	// IsDir reports whether name is a directory; an error wrapping
	// fs.ErrNotExist when there is nothing of that name.
	IsDir(name string) (bool, error)
	MkdirAll(dir string) error
	// Create creates name, or truncates it, for reading and writing.
	Create(name string) (File, error)
	// CreateNew creates name for reading and writing, and fails with an
	// error wrapping fs.ErrExist when something of that name exists: it
	// never truncates or replaces a file.
	CreateNew(name string) (File, error)
	// Open opens an existing file for reading and writing.
	Open(name string) (File, error)
	ReadFile(name string) ([]byte, error)
	Rename(oldname, newname string) error
	Remove(name string) error
	// List returns the names in dir, sorted.
	List(dir string) ([]string, error)
	// SyncDir makes the creations, renames and removals in dir durable.
	SyncDir(dir string) error
	// Lock takes an exclusive lock on name, created if needed, for as
	// long as the returned Closer is open; an error wrapping ErrLocked
	// if another process (or another open file) holds it.
	Lock(name string) (io.Closer, error)
}

// File is an open file of an [FS]. Its users write at given offsets,
// with WriteAt.
type File interface {
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

// OS is the operating system's file system. Files are created with
// permission bits 0644 and directories with 0755 (before the umask).
type OS struct{}

// MkdirAll creates dir and any parents it lacks.
func (OS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }

// IsDir reports whether name is a directory.
func (OS) IsDir(name string) (bool, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return false, err
	}
	return fi.IsDir(), nil
}

// Create creates or truncates name for reading and writing.
func (OS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f}, nil
}

// CreateNew creates name for reading and writing (O_EXCL): an error
// wrapping fs.ErrExist when something of that name exists.
func (OS) CreateNew(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f}, nil
}

// Open opens an existing file for reading and writing.
func (OS) Open(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f}, nil
}

// ReadFile returns the contents of name.
func (OS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

// Rename renames oldname to newname, replacing newname.
func (OS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// Remove removes name.
func (OS) Remove(name string) error { return os.Remove(name) }

// List returns the names in dir, sorted.
func (OS) List(dir string) ([]string, error) {
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

// SyncDir is the function [SyncDir].
func (OS) SyncDir(dir string) error { return SyncDir(dir) }

// Lock takes the lock of name with [LockFile].
func (OS) Lock(name string) (io.Closer, error) {
	f, err := LockFile(filepath.Clean(name), 0o644)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// SyncDir flushes a directory's entries to stable storage, so that the
// creations, renames and removals in it survive a power cut.
func SyncDir(dir string) error {
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

// osFile is a File of OS.
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
