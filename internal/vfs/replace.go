package vfs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// ErrCommitted is returned by [Replacement.Abort] when the replacement had
// already taken effect.
var ErrCommitted = errors.New("vfs: already committed")

// Replace replaces the file name in fsys with what write writes to a new
// file, name+".tmp": it syncs that file, closes it, renames it over name
// and syncs the directory. When write or any step before the rename
// fails, the temporary file is removed, name is unchanged and renamed is
// false. When renamed is true, name holds the new contents, and err is
// the error of the directory sync, if any: the rename may then not
// survive a crash.
func Replace(fsys FS, name string, write func(f File) error) (renamed bool, err error) {
	tmp := name + ".tmp"
	f, err := fsys.Create(tmp)
	if err != nil {
		return false, err
	}
	if err := write(f); err != nil {
		f.Close()
		fsys.Remove(tmp)
		return false, err
	}
	if err := renameOver(fsys, f, tmp, name); err != nil {
		return false, err
	}
	return true, fsys.SyncDir(filepath.Dir(name))
}

// renameOver syncs and closes f, the file tmp, and renames it to name;
// when a step fails, it removes tmp.
func renameOver(fsys FS, f File, tmp, name string) error {
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, name)
	}
	if err != nil {
		fsys.Remove(tmp)
	}
	return err
}

// Replacement is a pending replacement of a file of the operating system,
// made by [Create] or [WriterLock.Create]. Write to it, then call Commit
// to put it in place, or Abort to drop it. Commit and Abort may be called
// from different goroutines (a signal handler may Abort while the main
// goroutine Commits): exactly one of them takes effect, and the target is
// then either the old file or the complete new one. Write must not be
// called concurrently with itself.
type Replacement struct {
	mu        sync.Mutex
	f         *os.File
	path      string      // the target, symbolic links resolved
	tmp       string      // the temporary file
	done      bool        // committed or aborted
	committed bool        // renamed over the target
	existed   bool        // the target was a file when the replacement began
	lock      *WriterLock // released by Commit and Abort when the Replacement took it
}

// Create starts a replacement of path, taking its writers' lock (see
// [Acquire]; waiting is called if it must wait for another process) until
// Commit or Abort. The target need not exist; when it does, the new file
// gets its permission bits, and when path is a symbolic link, the file it
// points to is replaced and the link kept. A new file is created with
// perm (before the umask). Nothing is written to path until Commit; until
// then an error, a panic, Ctrl-C or a kill leaves the previous file byte
// for byte as it was.
func Create(path string, perm fs.FileMode, waiting func()) (*Replacement, error) {
	l, err := Acquire(path, waiting)
	if err != nil {
		return nil, err
	}
	r, err := l.Create(perm)
	if err != nil {
		l.Unlock()
		return nil, err
	}
	r.lock = l
	return r, nil
}

// CreateUnder starts a replacement of the file at path, like [Create],
// for a caller that keeps other writers away by a lock of its own (one
// [Acquire] of the directory it fills): it takes no writers' lock of
// path, so that a batch of many files does not create and remove a lock
// file for each (on ext4, creating files among many just removed is
// slow). The temporary file has the name Create gives it, and one a
// killed writer left is removed first.
func CreateUnder(path string, perm fs.FileMode) (*Replacement, error) {
	l := unlocked(path)
	os.Remove(l.tempPath())
	return l.Create(perm)
}

// Create starts a replacement of the locked file, like the function
// [Create], but leaves the lock held after Commit and Abort: the caller
// unlocks it.
func (l *WriterLock) Create(perm fs.FileMode) (*Replacement, error) {
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
	return &Replacement{f: f, path: l.target, tmp: tmp, existed: keepMode}, nil
}

// Write writes to the temporary file. It is not buffered: wrap the
// Replacement in a bufio.Writer for small writes.
func (r *Replacement) Write(p []byte) (int, error) { return r.f.Write(p) }

// Path returns the file that Commit replaces (symbolic links resolved).
func (r *Replacement) Path() string { return r.path }

// Existed reports whether the target was a file when the replacement
// began: whether an Abort leaves a file as it was, or no file.
func (r *Replacement) Existed() bool { return r.existed }

// TempPath returns the name of the temporary file being written.
func (r *Replacement) TempPath() string { return r.tmp }

// Commit puts the new contents in place: fsync, close, rename over the
// target, fsync the directory. When it returns an error before the
// rename, the temporary file is removed and the target is unchanged. An
// error in the final directory fsync is returned too, but the target has
// then been replaced. Commit after Commit or Abort returns an error and
// does nothing.
func (r *Replacement) Commit() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return errors.New("vfs: already committed or aborted")
	}
	r.done = true
	defer r.lock.Unlock()
	if err := renameOver(OS{}, &osFile{f: r.f}, r.tmp, r.path); err != nil {
		return fmt.Errorf("writing %s: %w", r.path, unwrapPath(err))
	}
	r.committed = true
	return syncDirAfterRename(filepath.Dir(r.path))
}

// CommitUnsynced puts the new contents in place as Commit does, but
// syncs neither the file nor its directory, for a caller that replaces
// many files and makes them durable at once with [SyncWritten]. Until
// then readers, errors and interrupts see what Commit promises (the old
// contents or the complete new ones), but a crash may leave the target
// with either, or, on file systems that do not order a rename after the
// data it renames, empty.
func (r *Replacement) CommitUnsynced() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return errors.New("vfs: already committed or aborted")
	}
	r.done = true
	defer r.lock.Unlock()
	err := r.f.Close()
	if err == nil {
		err = os.Rename(r.tmp, r.path)
	}
	if err != nil {
		os.Remove(r.tmp)
		return fmt.Errorf("writing %s: %w", r.path, unwrapPath(err))
	}
	r.committed = true
	return nil
}

// Abort drops the replacement: the temporary file is closed and removed,
// and the target stays as it was. After a Commit that replaced the target
// it returns ErrCommitted and changes nothing; after an Abort or a Commit
// that failed, it does nothing and returns nil. So it is safe to defer
// right after Create, and a caller interrupted at any point learns from
// it whether the target was replaced.
func (r *Replacement) Abort() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		if r.committed {
			return ErrCommitted
		}
		return nil
	}
	r.done = true
	defer r.lock.Unlock()
	r.f.Close()
	return os.Remove(r.tmp)
}

// syncDirAfterRename syncs dir with [SyncDir], except where that cannot
// be done: a directory this process cannot open, or a file system that
// cannot sync a directory (it answers EINVAL) is no error.
func syncDirAfterRename(dir string) error {
	err := SyncDir(dir)
	var pe *fs.PathError
	switch {
	case err == nil, errors.Is(err, errors.ErrUnsupported), errors.Is(err, syscall.EINVAL):
		return nil
	case errors.As(err, &pe) && pe.Op == "open":
		return nil
	}
	return fmt.Errorf("syncing directory %s: %w", dir, unwrapPath(err))
}

// WriteFile replaces path with what write writes, through a buffer of
// 1 MiB, atomically: when write returns an error (or panics), the
// temporary file is removed and path is left unchanged. See [Create] for
// perm and waiting.
func WriteFile(path string, perm fs.FileMode, waiting func(), write func(w io.Writer) error) (err error) {
	r, err := Create(path, perm, waiting)
	if err != nil {
		return err
	}
	defer r.Abort() // a no-op once committed; cleans up after an error or panic
	bw := bufio.NewWriterSize(r, 1<<20)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", r.path, unwrapPath(err))
	}
	return r.Commit()
}
