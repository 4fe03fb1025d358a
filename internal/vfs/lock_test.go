package vfs_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/vfs"
)

// TestLockFileExcludes: a second lock of one file fails with ErrLocked, through LockFile and through OS.Lock, until the first is
// released; then it is taken again.
func TestLockFileExcludes(t *testing.T) {
	t.Parallel()
	if !vfs.FlockSupported {
		t.Skip("no flock on this system: LockFile does not lock")
	}
	path := filepath.Join(t.TempDir(), "LOCK")
	first, err := vfs.LockFile(path, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := vfs.LockFile(path, 0o640); !errors.Is(err, vfs.ErrLocked) {
		if f != nil {
			f.Close()
		}
		t.Fatalf("second LockFile: %v, want ErrLocked", err)
	}
	if c, err := (vfs.OS{}).Lock(path); !errors.Is(err, vfs.ErrLocked) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("OS.Lock of a locked file: %v, want ErrLocked", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := (vfs.OS{}).Lock(path)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	c.Close()
}

// TestLockFileMissingDir: a lock in a directory that does not exist is an
// error, not ErrLocked.
func TestLockFileMissingDir(t *testing.T) {
	_, err := vfs.LockFile(filepath.Join(t.TempDir(), "no", "LOCK"), 0o640)
	if err == nil || errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("got %v, want an error other than ErrLocked", err)
	}
}

// TestLockSerializes: a second writer of a target waits, told so, until
// the first unlocks; different targets do not wait for each other. (flock
// locks belong to open files, so two Locks in one process exclude each
// other as two processes' do; the command's end-to-end test runs two
// processes.)
func TestLockSerializes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	first, err := vfs.Acquire(path, func() { t.Error("the first Acquire waited") })
	if err != nil {
		t.Fatal(err)
	}
	other, err := vfs.Acquire(filepath.Join(dir, "g"), func() { t.Error("a lock of another target waited") })
	if err != nil {
		t.Fatal(err)
	}
	other.Unlock()
	waiting := make(chan struct{})
	acquired := make(chan *vfs.WriterLock)
	go func() {
		l, err := vfs.Acquire(path, func() { close(waiting) })
		if err != nil {
			t.Error(err)
		}
		acquired <- l
	}()
	<-waiting
	select {
	case <-acquired:
		t.Fatal("the second Acquire did not wait for the first Unlock")
	case <-time.After(50 * time.Millisecond):
	}
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	second := <-acquired
	// The lock file the first removed is made anew for the second.
	f, err := second.Create(0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("second"))
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := second.Unlock(); err != nil {
		t.Fatal(err)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("directory holds %v", names)
	}
}

// TestLockChurn: many goroutines each take the lock, add one to a counter
// file and commit; the lock file is removed and re-created all along, and
// no increment is lost. Run it with -race.
func TestLockChurn(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "counter")
	os.WriteFile(path, []byte("0"), 0o644)
	const writers, rounds = 8, 25
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				l, err := vfs.Acquire(path, nil)
				if err != nil {
					t.Error(err)
					return
				}
				b, err := os.ReadFile(path)
				if err != nil {
					t.Error(err)
					return
				}
				n, _ := strconv.Atoi(string(b))
				f, err := l.Create(0o644)
				if err != nil {
					t.Error(err)
					return
				}
				f.Write([]byte(strconv.Itoa(n + 1)))
				if err := f.Commit(); err != nil {
					t.Error(err)
				}
				l.Unlock()
			}
		}()
	}
	wg.Wait()
	if got := string(mustRead(t, path)); got != strconv.Itoa(writers*rounds) {
		t.Fatalf("counter %s after %d increments", got, writers*rounds)
	}
}

// TestLockFileOutlastsAChildsCopy: a lock released by its holder while a
// child process still has the open file (as a child of os/exec does
// between its fork and its exec) is taken once the child lets go, and a
// lock the child keeps is ErrLocked after LockFile's patience.
func TestLockFileOutlastsAChildsCopy(t *testing.T) {
	if !vfs.FlockSupported {
		t.Skip("no flock on this system: LockFile does not lock")
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	for _, c := range []struct {
		hold string
		want error
	}{{"0.2", nil}, {"5", vfs.ErrLocked}} {
		path := filepath.Join(t.TempDir(), "LOCK")
		first, err := vfs.LockFile(path, 0o640)
		if err != nil {
			t.Fatal(err)
		}
		child := exec.Command(sleep, c.hold)
		child.ExtraFiles = []*os.File{first} // the child shares the locked open file
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		first.Close() // released here, still held through the child's copy
		f, err := vfs.LockFile(path, 0o640)
		if !errors.Is(err, c.want) {
			t.Errorf("child holding the lock %s s: LockFile: %v, want %v", c.hold, err, c.want)
		}
		if f != nil {
			f.Close()
		}
		child.Process.Kill()
		child.Wait()
	}
}
