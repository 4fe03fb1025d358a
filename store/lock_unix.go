//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package store

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/dedupkit/cuckoo/internal/vfs"
)

// lockExisting takes the exclusive flock(2) lock of the file at path, as
// vfs.LockFile does (an error wrapping vfs.ErrLocked while another holds
// it, after the same patience), on the file opened for reading only, and
// without creating it: no lock (and no error) when it does not exist.
func lockExisting(path string) (io.Closer, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nopCloser{}, nil
	}
	if err != nil {
		return nil, err
	}
	pause := time.Millisecond
	for deadline := time.Now().Add(lockPatience); ; {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == syscall.EINTR {
			continue
		}
		if err != syscall.EWOULDBLOCK || time.Now().After(deadline) {
			break
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
	switch {
	case err == syscall.EWOULDBLOCK:
		f.Close()
		return nil, vfs.ErrLocked
	case err != nil:
		f.Close()
		return nil, err
	}
	return f, nil
}

// lockPatience is how long lockExisting tries a lock that is held:
// vfs.LockFile's, for the same reason (a released lock a fork of its
// holder's process keeps for a moment).
const lockPatience = time.Second
