// Package atomicfile replaces the contents of a file all at once: readers,
// and the file system after a crash, see either the old contents or the
// complete new ones, never a mix, a truncated file or a half-written one.
//
// A replacement writes a temporary file in the same directory as the
// target (so that both are on one file system), flushes it to stable
// storage with fsync, renames it over the target (rename is atomic on
// POSIX file systems), and fsyncs the directory so that the rename itself
// survives a power cut. Until [File.Commit] renames it, the target is not
// touched: an error, a panic, Ctrl-C or a kill leaves the previous file
// byte for byte as it was (a killed process may leave its temporary file,
// named ".<name>.tmp-<random>", behind; nothing else).
//
// The CLI uses it for every file it writes: build, add, delete and
// dedup --save.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// File is a pending replacement of a file. Write to it, then call Commit
// to put it in place, or Abort to drop it. Commit and Abort may be called
// from different goroutines (a signal handler may Abort while the main
// goroutine Commits): exactly one of them takes effect, and the target is
// then either the old file or the complete new one. Write must not be
// called concurrently with itself.
type File struct {
	mu   sync.Mutex
	f    *os.File
	path string // the target, symbolic links resolved
	tmp  string // the temporary file
	done bool   // committed or aborted
}

// Create starts a replacement of path. The target need not exist; when it
// does, the new file gets its permission bits, and when path is a
// symbolic link, the file it points to is replaced and the link kept. A
// new file is created with perm (before the umask). Nothing is written to
// path until Commit.
func Create(path string, perm fs.FileMode) (*File, error) {
	target := path
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if t, err := filepath.EvalSymlinks(path); err == nil {
			target = t
		}
	}
	keepMode := false
	if fi, err := os.Stat(target); err == nil {
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file", path)
		}
		perm, keepMode = fi.Mode().Perm(), true
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	var f *os.File
	var tmp string
	for try := 0; ; try++ {
		tmp = filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(rand.Uint64()&0xffffffffff, 36))
		var err error
		f, err = os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || try == 100 {
			return nil, fmt.Errorf("cannot create a file in %s: %w", dir, unwrapPath(err))
		}
	}
	if keepMode {
		// OpenFile applied the umask; the old file's bits are what the
		// user had chosen, so keep them exactly.
		if err := f.Chmod(perm); err != nil {
			f.Close()
			os.Remove(tmp)
			return nil, err
		}
	}
	return &File{f: f, path: target, tmp: tmp}, nil
}

// unwrapPath strips the *fs.PathError around err, whose path is the
// temporary name the user never chose.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Write writes to the temporary file. It is not buffered: wrap the File
// in a bufio.Writer for small writes.
func (f *File) Write(p []byte) (int, error) { return f.f.Write(p) }

// Path returns the file that Commit replaces (symbolic links resolved).
func (f *File) Path() string { return f.path }

// TempPath returns the name of the temporary file being written.
func (f *File) TempPath() string { return f.tmp }

// Commit puts the new contents in place: fsync, close, rename over the
// target, fsync the directory. When it returns an error before the rename,
// the temporary file is removed and the target is unchanged. An error in
// the final directory fsync is returned too, but the target has then been
// replaced. Commit after Commit or Abort returns an error and does
// nothing.
func (f *File) Commit() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return errors.New("atomicfile: already committed or aborted")
	}
	f.done = true
	err := f.f.Sync()
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.tmp, f.path)
	}
	if err != nil {
		os.Remove(f.tmp)
		return fmt.Errorf("writing %s: %w", f.path, unwrapPath(err))
	}
	return syncDir(filepath.Dir(f.path))
}

// Abort drops the replacement: the temporary file is closed and removed,
// and the target stays as it was. It is a no-op after Commit or Abort, so
// it is safe to defer right after Create.
func (f *File) Abort() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return nil
	}
	f.done = true
	f.f.Close()
	return os.Remove(f.tmp)
}

// syncDir flushes a directory's entries, so that a rename in it is durable.
// Some file systems cannot sync a directory (they answer EINVAL); that is
// not an error.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("syncing directory %s: %w", dir, unwrapPath(err))
	}
	return nil
}

// WriteFile replaces path with what write writes, through a buffer of
// 1 MiB, atomically: when write returns an error (or panics), the
// temporary file is removed and path is left unchanged. See [Create] for
// perm.
func WriteFile(path string, perm fs.FileMode, write func(w io.Writer) error) (err error) {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer f.Abort() // a no-op once committed; cleans up after an error or panic
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", f.path, unwrapPath(err))
	}
	return f.Commit()
}
