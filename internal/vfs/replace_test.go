package vfs_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dedupkit/cuckoo/internal/vfs"
)

// entries returns the names in dir, to check that no temporary file is
// left behind.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWriteFileReplaces(t *testing.T) {
	for _, exists := range []bool{false, true} {
		t.Run("exists="+map[bool]string{false: "false", true: "true"}[exists], func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f.bin")
			if exists {
				if err := os.WriteFile(path, []byte("old contents"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			want := bytes.Repeat([]byte("new"), 1<<20) // bigger than the buffer
			err := vfs.WriteFile(path, 0o644, nil, func(w io.Writer) error {
				_, err := w.Write(want)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := mustRead(t, path); !bytes.Equal(got, want) {
				t.Fatalf("file holds %d bytes, want %d", len(got), len(want))
			}
			if names := entries(t, dir); len(names) != 1 {
				t.Fatalf("directory holds %v, want only f.bin", names)
			}
			fi, _ := os.Stat(path)
			if exists && fi.Mode().Perm() != 0o600 {
				t.Fatalf("mode %v, want the old file's 0600", fi.Mode().Perm())
			}
		})
	}
}

// TestFailedWriteKeepsOldFile is the promise the CLI relies on: whatever
// goes wrong before Commit, the previous file is byte-identical and no
// temporary file is left.
func TestFailedWriteKeepsOldFile(t *testing.T) {
	old := []byte("the previous file\x00\xff with binary bytes\n")
	boom := errors.New("boom")
	cases := []struct {
		name  string
		write func(w io.Writer) error
	}{
		{"error=immediate", func(w io.Writer) error { return boom }},
		{"error=after-writing", func(w io.Writer) error {
			w.Write(bytes.Repeat([]byte("x"), 3<<20))
			return boom
		}},
		{"panic=after-writing", func(w io.Writer) error {
			w.Write(bytes.Repeat([]byte("y"), 5<<20))
			panic(boom)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "seen.ckoo")
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Fatal(err)
			}
			func() {
				defer func() {
					if r := recover(); r != nil && r != boom {
						panic(r)
					}
				}()
				if err := vfs.WriteFile(path, 0o644, nil, c.write); !errors.Is(err, boom) {
					t.Fatalf("WriteFile returned %v, want boom", err)
				}
			}()
			if got := mustRead(t, path); !bytes.Equal(got, old) {
				t.Fatal("the previous file changed")
			}
			if names := entries(t, dir); len(names) != 1 {
				t.Fatalf("directory holds %v, want only seen.ckoo", names)
			}
		})
	}
}

func TestAbortKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	os.WriteFile(path, []byte("old"), 0o644)
	f, err := vfs.Create(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("new"))
	if _, err := os.Stat(f.TempPath()); err != nil {
		t.Fatalf("temporary file missing while writing: %v", err)
	}
	if err := f.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := f.Abort(); err != nil {
		t.Fatalf("second Abort: %v", err)
	}
	if err := f.Commit(); err == nil {
		t.Fatal("Commit after Abort succeeded")
	}
	if got := string(mustRead(t, path)); got != "old" {
		t.Fatalf("file holds %q", got)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("directory holds %v", names)
	}
}

// TestCreateOverDirectoryFails checks that a directory is never replaced
// and that nothing is left behind.
func TestCreateOverDirectoryFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := vfs.Create(path, 0o644, nil); err == nil {
		t.Fatal("Create over a directory succeeded")
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("directory holds %v", names)
	}
}

func TestMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "dir", "f")
	err := vfs.WriteFile(path, 0o644, nil, func(io.Writer) error { return nil })
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("got %v, want an error wrapping fs.ErrNotExist", err)
	}
}

func TestSymlinkTargetReplaced(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real")
	link := filepath.Join(dir, "link")
	os.WriteFile(target, []byte("old"), 0o644)
	if err := os.Symlink("real", link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	err := vfs.WriteFile(link, 0o644, nil, func(w io.Writer) error {
		_, err := io.WriteString(w, "new")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link was replaced by a file (%v)", err)
	}
	if got := string(mustRead(t, target)); got != "new" {
		t.Fatalf("target holds %q", got)
	}
}

// A link whose file does not exist yet names the file to create: writing
// through it creates that file, through every link of a chain, and keeps
// the links.
func TestDanglingSymlinkTargetCreated(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	link, middle := filepath.Join(dir, "link"), filepath.Join(sub, "middle")
	if err := os.Symlink("sub/middle", link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if err := os.Symlink("real", middle); err != nil { // relative to sub
		t.Fatal(err)
	}
	err := vfs.WriteFile(link, 0o644, nil, func(w io.Writer) error {
		_, err := io.WriteString(w, "new")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{link, middle} {
		if fi, err := os.Lstat(l); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Fatalf("%s was replaced by a file (%v)", l, err)
		}
	}
	if got := string(mustRead(t, filepath.Join(sub, "real"))); got != "new" {
		t.Fatalf("the file the links name holds %q", got)
	}
}

// TestAbortRacesCommit runs Abort (as a signal handler would) against
// Commit: whichever wins, the target is the old file or the whole new one,
// and no temporary file is left. Run it with -race.
func TestAbortRacesCommit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	old := []byte("old")
	neu := bytes.Repeat([]byte("n"), 100_000)
	for i := range 50 {
		os.WriteFile(path, old, 0o644)
		f, err := vfs.Create(path, 0o644, nil)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(neu)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); f.Abort() }()
		commitErr := f.Commit()
		wg.Wait()
		got := mustRead(t, path)
		switch {
		case bytes.Equal(got, neu) && commitErr == nil:
		case bytes.Equal(got, old) && commitErr != nil:
		default:
			t.Fatalf("round %d: target holds %d bytes after Commit returned %v", i, len(got), commitErr)
		}
		if names := entries(t, dir); len(names) != 1 {
			t.Fatalf("round %d: directory holds %v", i, names)
		}
	}
}

// TestAbortAfterCommit: Abort tells a caller interrupted after Commit
// that the target was replaced.
func TestAbortAfterCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, err := vfs.Create(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("new"))
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := f.Abort(); !errors.Is(err, vfs.ErrCommitted) {
		t.Fatalf("Abort after Commit: %v, want ErrCommitted", err)
	}
	if got := string(mustRead(t, path)); got != "new" {
		t.Fatalf("file holds %q", got)
	}
}

// TestLeftoversRemoved: the temporary file and the lock file a killed
// writer leaves behind are gone after the next write of the same target
// (the command's end-to-end test kills real processes).
func TestLeftoversRemoved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	os.WriteFile(filepath.Join(dir, ".f.tmp"), bytes.Repeat([]byte("x"), 1000), 0o644)
	os.WriteFile(filepath.Join(dir, ".f.lock"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, ".g.tmp"), []byte("another target's"), 0o644)
	err := vfs.WriteFile(path, 0o644, nil, func(w io.Writer) error {
		_, err := io.WriteString(w, "new")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if names := entries(t, dir); len(names) != 2 || names[0] != ".g.tmp" || names[1] != "f" {
		t.Fatalf("directory holds %v, want .g.tmp and f", names)
	}
}

// TestCommitUnsyncedThenSyncWritten replaces files without syncing each,
// then syncs them together: each target holds its new contents (and
// keeps an old file's mode), nothing temporary is left, Abort after the
// commit reports it, and SyncWritten of a path that is gone is an error.
func TestCommitUnsyncedThenSyncWritten(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(sub, "old")
	if err := os.WriteFile(old, []byte("before"), 0o600); err != nil {
		t.Fatal(err)
	}
	paths := []string{filepath.Join(dir, "a"), old, filepath.Join(sub, "b")}
	for _, p := range paths {
		r, err := vfs.Create(p, 0o644, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Write([]byte("new " + filepath.Base(p))); err != nil {
			t.Fatal(err)
		}
		if err := r.CommitUnsynced(); err != nil {
			t.Fatal(err)
		}
		if err := r.Abort(); !errors.Is(err, vfs.ErrCommitted) {
			t.Fatalf("Abort after CommitUnsynced: %v", err)
		}
		if err := r.CommitUnsynced(); err == nil {
			t.Fatal("a second commit succeeded")
		}
	}
	if err := vfs.SyncWritten(paths); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if got := string(mustRead(t, p)); got != "new "+filepath.Base(p) {
			t.Errorf("%s: %q", p, got)
		}
	}
	if fi, _ := os.Stat(old); fi.Mode().Perm() != 0o600 {
		t.Errorf("the replaced file's mode: %v, want 0600", fi.Mode().Perm())
	}
	if got := entries(t, sub); len(got) != 2 {
		t.Errorf("left in %s: %v", sub, got)
	}
	if err := vfs.SyncWritten([]string{filepath.Join(dir, "gone", "x")}); err == nil {
		t.Error("SyncWritten of a missing directory's file: no error")
	}
}

// TestCreateUnderTakesNoLockFile replaces a file under the caller's own
// lock: no lock file is made beside it, the temporary file a killed
// writer left is removed first, and the target ends with the new bytes.
func TestCreateUnderTakesNoLockFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x")
	if err := os.WriteFile(filepath.Join(dir, ".x.tmp"), []byte("left by a killed writer"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := vfs.CreateUnder(p, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".x.lock")); err == nil {
		t.Error("CreateUnder made a lock file")
	}
	if _, err := r.Write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := r.CommitUnsynced(); err != nil {
		t.Fatal(err)
	}
	if got := string(mustRead(t, p)); got != "new" {
		t.Errorf("x: %q", got)
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("left in the directory: %v", got)
	}
}
