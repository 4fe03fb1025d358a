package vfs

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// SyncWritten makes the files at paths, written and renamed into place
// without a sync ([Replacement.CommitUnsynced]), and their directories'
// entries, durable. On Linux it is one syncfs(2) per file system they are
// on, which writes out everything dirty on it at once: far cheaper than an
// fsync per file and per directory, each of which waits for its own
// journal commit.
func SyncWritten(paths []string) error {
	done := map[uint64]bool{} // devices synced
	for _, p := range paths {
		dir := filepath.Dir(p)
		var st syscall.Stat_t
		if err := syscall.Stat(dir, &st); err != nil {
			return err
		}
		if done[uint64(st.Dev)] {
			continue
		}
		d, err := os.Open(dir)
		if err != nil {
			return err
		}
		err = unix.Syncfs(int(d.Fd()))
		d.Close()
		if err != nil {
			return fmt.Errorf("syncing the file system of %s: %w", dir, err)
		}
		done[uint64(st.Dev)] = true
	}
	return nil
}
