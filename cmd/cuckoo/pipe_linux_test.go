package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestGrowPipeEnlargesAPipeOnly: a pipe read as standard input gets the
// 1 MiB buffer (unless the system's limit is lower), and growPipe leaves
// a regular file and a nil file alone.
func TestGrowPipeEnlargesAPipeOnly(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	growPipe(r)
	got, err := unix.FcntlInt(r.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Skipf("F_GETPIPE_SZ: %v", err)
	}
	if got < pipeBytes {
		// Refused only where the system's limit is lower (and the process
		// unprivileged): then the pipe keeps its size.
		var limit int
		b, _ := os.ReadFile("/proc/sys/fs/pipe-max-size")
		if _, err := fmt.Sscan(string(b), &limit); err != nil || limit >= pipeBytes {
			t.Errorf("pipe buffer %d bytes after growPipe, want %d (pipe-max-size %q)", got, pipeBytes, b)
		}
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	growPipe(f) // a regular file: nothing to do, and no panic
	growPipe(nil)
}
