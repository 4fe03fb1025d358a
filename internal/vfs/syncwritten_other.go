//go:build !linux

package vfs

import (
	"os"
	"path/filepath"
)

// SyncWritten makes the files at paths, written and renamed into place
// without a sync ([Replacement.CommitUnsynced]), and their directories'
// entries, durable: an fsync of each file, then of each directory.
func SyncWritten(paths []string) error {
	dirs := map[string]bool{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return err
		}
		dirs[filepath.Dir(p)] = true
	}
	for d := range dirs {
		if err := syncDirAfterRename(d); err != nil {
			return err
		}
	}
	return nil
}
