//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package store

import "os"

// lockFile does nothing where flock is not available: one process at a
// time is then the user's to ensure.
func lockFile(f *os.File) error { return nil }

// mmapFile returns nil: reads go through ReadAt.
func mmapFile(f *os.File, max int) []byte { return nil }

func munmapFile(b []byte) {}
