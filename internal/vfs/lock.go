package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// ErrLocked is returned by [LockFile] and [FS].Lock when another holder
// has the lock.
var ErrLocked = errors.New("vfs: lock held")

// LockFile opens the file at path, creating it with perm (before the
// umask) if needed, and takes an exclusive flock(2) lock on it: ErrLocked
// when another process, or another open file of this one, holds it. The
// lock lasts until the returned file is closed or the process ends. Where
// flock(2) does not exist the file is opened but not locked.
//
// A lock belongs to an open file, which a child process shares from its
// fork until its exec closes the file: a lock its holder has released can
// stay held for that moment if another goroutine of the holder's process
// was starting a command (os/exec) as the file was closed. LockFile
// therefore tries again for up to lockPatience before it reports
// ErrLocked; a lock someone really holds costs the caller that long.
func LockFile(path string, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, perm)
	if err != nil {
		return nil, err
	}
	return lockPatiently(f)
}

// LockExisting takes the lock LockFile takes, with the same patience, on
// the file at path opened for reading only and not created: an error
// wrapping fs.ErrNotExist when there is none. It is for a reader that
// must change nothing (a dry run on a read-only copy of a directory).
func LockExisting(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return lockPatiently(f)
}

// lockPatiently takes the exclusive lock of f, trying again for up to
// lockPatience while another holds it (LockFile says why), and returns
// f, or closes it and returns ErrLocked or the lock's error.
func lockPatiently(f *os.File) (*os.File, error) {
	var err error
	pause := time.Millisecond
	for deadline := time.Now().Add(lockPatience); ; {
		err = flock(f, false)
		if !errors.Is(err, errWouldBlock) || time.Now().After(deadline) {
			break
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
	if err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, ErrLocked
		}
		return nil, err
	}
	return f, nil
}

// lockPatience is how long LockFile tries a lock that is held: far longer
// than a fork's wait for its exec, even on a loaded machine.
const lockPatience = time.Second

// WriterLock is the writers' lock of one target file, held by at most one
// process (and one WriterLock) at a time. It is taken on a lock file
// ".<name>.lock" beside the target, which each holder removes when it is
// done, so that nothing accumulates.
type WriterLock struct {
	target string   // the file replaced, symbolic links resolved
	path   string   // the lock file
	f      *os.File // nil on systems without flock
}

// Acquire takes the writers' lock of the file at path (which need not
// exist), waiting while another process holds it; waiting, if not nil,
// is called once before it waits. When path is a symbolic link, the lock
// is that of the file it points to. Holding the lock, it removes the
// temporary file a killed writer of the target may have left. Release it
// with Unlock. A file system without flock (some network file systems)
// is written without the lock.
func Acquire(path string, waiting func()) (*WriterLock, error) {
	l := unlocked(path)
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

// unlocked returns the WriterLock of path, not taken: its target (a
// symbolic link resolved) and its lock file's name.
func unlocked(path string) *WriterLock {
	target := linkTarget(path)
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	return &WriterLock{target: target, path: filepath.Join(dir, "."+base+".lock")}
}

// linkTarget returns the file path names when path is a symbolic link,
// or a chain of them: the last one's target, which need not exist yet (a
// dangling link names the file to create), each relative link read from
// its own directory. Otherwise, and for a chain longer than Linux
// follows (a loop, which the caller's open reports), it returns path.
func linkTarget(path string) string {
	target := path
	for range 40 {
		fi, err := os.Lstat(target)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return target
		}
		t, err := os.Readlink(target)
		if err != nil {
			return target
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(target), t)
		}
		target = t
	}
	return path
}

// tempPath is the name of the temporary file of a writer holding the
// lock: one name, so that the next holder removes what a killed writer
// left; where there is no lock, a random one, as two writers may run at
// once.
func (l *WriterLock) tempPath() string {
	dir, base := filepath.Split(l.target)
	if !flockSupported {
		base += "-" + strconv.FormatUint(rand.Uint64()&0xffffffffff, 36)
	}
	return filepath.Join(dir, "."+base+".tmp")
}

// Unlock removes the lock file and releases the lock. It is a no-op on a
// nil WriterLock and after the first call.
func (l *WriterLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	os.Remove(l.path) // while held: see Acquire
	err := l.f.Close()
	l.f = nil
	return err
}

// unwrapPath strips the *fs.PathError around err, whose path is a
// temporary or lock file name the user never chose.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
