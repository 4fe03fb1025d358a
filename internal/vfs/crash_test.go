//go:build !plan9

package vfs_test

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testseed"
	"github.com/dedupkit/cuckoo/internal/vfs"
)

// errStop is the panic of a crashFS at its chosen step.
var errStop = errors.New("stopped")

// crashFS is a MemFS that stops its process (panics with errStop) before
// its at-th step: a creation, a write, a file sync or close, a rename or
// a directory sync.
type crashFS struct {
	*vfs.MemFS
	steps, at int
}

func (c *crashFS) step() {
	c.steps++
	if c.steps == c.at {
		panic(errStop)
	}
}

func (c *crashFS) Create(name string) (vfs.File, error) {
	c.step()
	f, err := c.MemFS.Create(name)
	if err != nil {
		return nil, err
	}
	return &crashFile{File: f, c: c}, nil
}

func (c *crashFS) Open(name string) (vfs.File, error) {
	f, err := c.MemFS.Open(name)
	if err != nil {
		return nil, err
	}
	return &crashFile{File: f, c: c}, nil
}

func (c *crashFS) Rename(oldname, newname string) error {
	c.step()
	return c.MemFS.Rename(oldname, newname)
}

func (c *crashFS) SyncDir(dir string) error { c.step(); return c.MemFS.SyncDir(dir) }

type crashFile struct {
	vfs.File
	c *crashFS
}

func (f *crashFile) WriteAt(p []byte, off int64) (int, error) {
	f.c.step()
	return f.File.WriteAt(p, off)
}
func (f *crashFile) Sync() error  { f.c.step(); return f.File.Sync() }
func (f *crashFile) Close() error { f.c.step(); return f.File.Close() }

// writeChunks writes b to f in pieces of 1 to 64 bytes, as a store writes
// a file record by record.
func writeChunks(rng *rand.Rand, f vfs.File, b []byte) error {
	for off := 0; off < len(b); {
		n := min(1+rng.IntN(64), len(b)-off)
		if _, err := f.WriteAt(b[off:off+n], int64(off)); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// crashEach runs update on a MemFS holding name = old, stopping it before
// each of its steps in turn and once after its last, and checks what a
// restart finds after each stop, under 20 random crashes and the one that
// loses everything unsynced: check gets the bytes of name (nil when
// absent) and whether update had returned.
func crashEach(t *testing.T, rng *rand.Rand, name string, old []byte, update func(fsys vfs.FS) error, check func(got []byte, returned bool)) {
	t.Helper()
	for at := 1; ; at++ {
		m := vfs.NewMemFS()
		m.WriteFileBytes(name, old)
		c := &crashFS{MemFS: m, at: at}
		returned := func() (ok bool) {
			defer func() {
				if r := recover(); r != nil && r != errStop {
					panic(r)
				}
			}()
			if err := update(c); err != nil {
				t.Fatalf("stop at step %d: update: %v", at, err)
			}
			return true
		}()
		after := []*vfs.MemFS{m.CrashLosingUnsynced()}
		for range 20 {
			after = append(after, m.Crash(rng))
		}
		for _, a := range after {
			b, err := a.ReadFile(name)
			if err != nil {
				b = nil
			}
			check(b, returned)
		}
		if returned {
			if at < 4 {
				t.Fatalf("update finished in %d steps: the test stops nothing", at-1)
			}
			return
		}
	}
}

// TestReplaceCrash: a crash at any step of Replace, keeping any part of
// what was not synced, leaves the old file or the whole new one, never a
// mix, a part or nothing; once Replace has returned, the new one.
func TestReplaceCrash(t *testing.T) {
	rng := testseed.Rand(t)
	for round := range 20 {
		old := bytes.Repeat([]byte{'o'}, 1+rng.IntN(300))
		neu := bytes.Repeat([]byte{'n'}, 1+rng.IntN(300))
		crashEach(t, rng, "d/f", old, func(fsys vfs.FS) error {
			renamed, err := vfs.Replace(fsys, "d/f", func(f vfs.File) error { return writeChunks(rng, f, neu) })
			if err == nil && !renamed {
				t.Fatal("Replace returned no error and no rename")
			}
			return err
		}, func(got []byte, returned bool) {
			switch {
			case bytes.Equal(got, neu):
			case bytes.Equal(got, old) && !returned:
			default:
				t.Fatalf("round %d: after a crash the file holds %q (returned %v)", round, got, returned)
			}
		})
	}
}

// TestCrashFSSeesTornWrites is the check of the check: the same crashes
// find a partly written file when it is rewritten in place, as Replace
// never does.
func TestCrashFSSeesTornWrites(t *testing.T) {
	rng := testseed.Rand(t)
	old := bytes.Repeat([]byte{'o'}, 200)
	neu := bytes.Repeat([]byte{'n'}, 200)
	torn := 0
	crashEach(t, rng, "d/f", old, func(fsys vfs.FS) error {
		f, err := fsys.Open("d/f")
		if err != nil {
			return err
		}
		if err := writeChunks(rng, f, neu); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		return f.Close()
	}, func(got []byte, returned bool) {
		if !bytes.Equal(got, old) && !bytes.Equal(got, neu) {
			torn++
		}
	})
	if torn == 0 {
		t.Fatal("no crash of an in-place rewrite left a mix of old and new")
	}
}

// TestReplaceFailureKeepsOld: when the writer fails, or the disk is full,
// or the file sync fails, Replace reports it, the file is unchanged and
// no temporary file is left.
func TestReplaceFailureKeepsOld(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		name  string
		setup func(m *vfs.MemFS)
		write func(f vfs.File) error
	}{
		{"writer", func(*vfs.MemFS) {}, func(vfs.File) error { return boom }},
		{"full disk", func(m *vfs.MemFS) { m.SetSpace(10) }, func(f vfs.File) error {
			_, err := f.WriteAt(make([]byte, 100), 0)
			return err
		}},
		{"sync", func(m *vfs.MemFS) { m.FailSyncs(boom) }, func(f vfs.File) error {
			_, err := f.WriteAt([]byte("new"), 0)
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := vfs.NewMemFS()
			m.WriteFileBytes("d/f", []byte("old"))
			c.setup(m)
			renamed, err := vfs.Replace(m, "d/f", c.write)
			if err == nil || renamed {
				t.Fatalf("Replace: renamed %v, error %v; want a failure", renamed, err)
			}
			if got := string(m.ReadFileBytes("d/f")); got != "old" {
				t.Fatalf("file holds %q", got)
			}
			if names := m.Names(); len(names) != 1 {
				t.Fatalf("files %v, want only d/f", names)
			}
		})
	}
}

// TestMemFSCrash: what each kind of crash keeps of unsynced bytes and
// names.
func TestMemFSCrash(t *testing.T) {
	m := vfs.NewMemFS()
	f, _ := m.Create("d/a")
	f.WriteAt([]byte("synced"), 0)
	f.Sync()
	m.SyncDir("d")
	f.WriteAt([]byte("+more"), 6)
	g, _ := m.Create("d/b") // never made durable
	g.WriteAt([]byte("b"), 0)
	g.Sync()

	lost := m.CrashLosingUnsynced()
	if got := string(lost.ReadFileBytes("d/a")); got != "synced" {
		t.Fatalf("after the worst crash d/a holds %q, want its synced bytes", got)
	}
	if names := lost.Names(); len(names) != 1 {
		t.Fatalf("after the worst crash the names are %v, want d/a only", names)
	}
	kept := m.ProcessCrash()
	if got := string(kept.ReadFileBytes("d/a")); got != "synced+more" {
		t.Fatalf("after a process crash d/a holds %q, want every byte written", got)
	}
	if names := kept.Names(); len(names) != 2 {
		t.Fatalf("after a process crash the names are %v, want both", names)
	}
	// A process crash keeps what is durable unchanged: the machine's
	// crash after it still loses the rest.
	if names := kept.CrashLosingUnsynced().Names(); len(names) != 1 {
		t.Fatalf("a machine crash after a process crash keeps %v", names)
	}
}

// TestMemFSLock: the crash-testing file system's lock excludes a second
// holder as the operating system's does, and a crash releases it.
func TestMemFSLock(t *testing.T) {
	m := vfs.NewMemFS()
	first, err := m.Lock("d/LOCK")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Lock("d/LOCK"); !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("second Lock: %v, want ErrLocked", err)
	}
	if c, err := m.ProcessCrash().Lock("d/LOCK"); err != nil {
		t.Fatalf("Lock after a crash: %v", err)
	} else {
		c.Close()
	}
	first.Close()
	if c, err := m.Lock("d/LOCK"); err != nil {
		t.Fatalf("Lock after release: %v", err)
	} else {
		c.Close()
	}
}

// TestCreateNew: CreateNew makes a file where there is none, and leaves
// an existing file as it was (fs.ErrExist), in both file systems.
func TestCreateNew(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		fsys vfs.FS
		path string
	}{
		{"MemFS", vfs.NewMemFS(), "d/new"},
		{"OS", vfs.OS{}, filepath.Join(dir, "new")},
	} {
		f, err := c.fsys.CreateNew(c.path)
		if err != nil {
			t.Fatalf("%s: CreateNew of a new name: %v", c.name, err)
		}
		if _, err := f.WriteAt([]byte("kept"), 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if _, err := c.fsys.CreateNew(c.path); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("%s: CreateNew of an existing file: %v, want fs.ErrExist", c.name, err)
		}
		if b, err := c.fsys.ReadFile(c.path); err != nil || string(b) != "kept" {
			t.Fatalf("%s: the existing file after CreateNew: %q %v", c.name, b, err)
		}
	}
}
