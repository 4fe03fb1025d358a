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
// byte for byte as it was.
//
// Writers of one target take turns: each holds an advisory lock on it
// ([Lock], flock(2) on a lock file ".<name>.lock" beside it) from before
// it reads the old contents, if it does, until it has replaced them, so
// that two processes updating one file never lose each other's update.
// The lock is released when its holder ends, however it ends. Holding the
// lock, a writer uses one temporary file name, ".<name>.tmp": whatever a
// killed writer left behind is removed by the next one to take the lock,
// and the lock file is removed by each holder when it is done, so nothing
// accumulates. (On systems without flock there is no lock, and temporary
// files get random names, ".<name>.tmp-<random>", as a killed writer may
// leave behind.)
//
// The CLI uses it for every file it writes: build, add, delete and
// dedup's --save, --state and -o.
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

// ErrCommitted is returned by [File.Abort] when the replacement had
// already taken effect.
var ErrCommitted = errors.New("atomicfile: already committed")

// Lock is an advisory lock on one target file, held by at most one
// process (and one Lock) at a time.
type Lock struct {
	target string   // the file replaced, symbolic links resolved
	path   string   // the lock file
	f      *os.File // nil on systems without flock
}

// Acquire takes the lock of the file at path (which need not exist),
// waiting while another process holds it; waiting, if not nil, is called
// once before it waits. When path is a symbolic link, the lock is that of
// the file it points to. Holding the lock, it removes the temporary file a
// killed writer of the target may have left. Release it with Unlock.
func Acquire(path string, waiting func()) (*Lock, error) {
	target := path
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if t, err := filepath.EvalSymlinks(path); err == nil {
			target = t
		}
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	l := &Lock{target: target, path: filepath.Join(dir, "."+base+".lock")}
	if !flockSupported {
		return l, nil
	}
	for {
		f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("cannot lock %s: %w", path, unwrapPath(err))
		}
		if err := flock(f, false); errors.Is(err, errWouldBlock) {
			if waiting != nil {
				waiting()
				waiting = nil
			}
			err = flock(f, true)
		} else if err != nil && !noLocks(err) {
			f.Close()
			return nil, fmt.Errorf("cannot lock %s: %w", path, err)
		}
		// The holder before us removes the lock file when it is done: if
		// it did while we waited, we hold the lock of a file no longer
		// there, and must lock the one that is.
		if fi, err := f.Stat(); err == nil {
			if now, err := os.Stat(l.path); err == nil && os.SameFile(fi, now) {
				l.f = f
				break
			}
		}
		f.Close()
	}
	os.Remove(l.tempPath())
	return l, nil
}

// tempPath is the name of the temporary file of a writer holding the lock.
func (l *Lock) tempPath() string {
	dir, base := filepath.Split(l.target)
	if !flockSupported {
		base += "-" + strconv.FormatUint(rand.Uint64()&0xffffffffff, 36)
	}
	return filepath.Join(dir, "."+base+".tmp")
}

// Unlock removes the lock file and releases the lock. It is a no-op on a
// nil Lock and after the first call.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	os.Remove(l.path) // while held: see Acquire
	err := l.f.Close()
	l.f = nil
	return err
}

// File is a pending replacement of a file. Write to it, then call Commit
// to put it in place, or Abort to drop it. Commit and Abort may be called
// from different goroutines (a signal handler may Abort while the main
// goroutine Commits): exactly one of them takes effect, and the target is
// then either the old file or the complete new one. Write must not be
// called concurrently with itself.
type File struct {
	mu        sync.Mutex
	f         *os.File
	path      string // the target, symbolic links resolved
	tmp       string // the temporary file
	done      bool   // committed or aborted
	committed bool   // renamed over the target
	lock      *Lock  // released by Commit and Abort when the File took it
}

// Create starts a replacement of path, taking its lock (see [Acquire];
// waiting is called if it must wait for another process) until Commit or
// Abort. The target need not exist; when it does, the new file gets its
// permission bits, and when path is a symbolic link, the file it points to
// is replaced and the link kept. A new file is created with perm (before
// the umask). Nothing is written to path until Commit.
func Create(path string, perm fs.FileMode, waiting func()) (*File, error) {
	l, err := Acquire(path, waiting)
	if err != nil {
		return nil, err
	}
	f, err := l.Create(perm)
	if err != nil {
		l.Unlock()
		return nil, err
	}
	f.lock = l
	return f, nil
}

// Create starts a replacement of the locked file, like the function
// [Create], but leaves the lock held after Commit and Abort: the caller
// unlocks it.
func (l *Lock) Create(perm fs.FileMode) (*File, error) {
	keepMode := false
	if fi, err := os.Stat(l.target); err == nil {
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file", l.target)
		}
		perm, keepMode = fi.Mode().Perm(), true
	}
	tmp := l.tempPath()
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return nil, fmt.Errorf("cannot create a file in %s: %w", filepath.Dir(tmp), unwrapPath(err))
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
	return &File{f: f, path: l.target, tmp: tmp}, nil
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
	defer f.lock.Unlock()
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
	f.committed = true
	return syncDir(filepath.Dir(f.path))
}

// Abort drops the replacement: the temporary file is closed and removed,
// and the target stays as it was. After a Commit that replaced the target
// it returns ErrCommitted and changes nothing; after an Abort or a Commit
// that failed, it does nothing and returns nil. So it is safe to defer
// right after Create, and a caller interrupted at any point learns from
// it whether the target was replaced.
func (f *File) Abort() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		if f.committed {
			return ErrCommitted
		}
		return nil
	}
	f.done = true
	defer f.lock.Unlock()
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
// perm and waiting.
func WriteFile(path string, perm fs.FileMode, waiting func(), write func(w io.Writer) error) (err error) {
	f, err := Create(path, perm, waiting)
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
