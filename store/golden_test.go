package store_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/store"
)

var update = flag.Bool("update", false, "rewrite the golden store of the current format version")

// goldenVersion is the format version this package writes: the manifest's
// and the checkpoint's.
const goldenVersion = "v2"

// goldenOps writes the golden store's operations to s (when not nil) and
// returns the state and first-put order they give: puts, overwrites and
// deletes over several small log files.
func goldenOps(t *testing.T, s *store.Store) *model {
	m := newModel()
	for i := range 300 {
		k := fmt.Sprintf("key-%03d", i%120)
		v := []byte(fmt.Sprintf("value %d %s", i, strings.Repeat("v", i%37)))
		if s != nil {
			if err := s.Put([]byte(k), v); err != nil {
				t.Fatal(err)
			}
		}
		m.put(k, v)
		if i%7 == 3 {
			k := fmt.Sprintf("key-%03d", i*3%120)
			if s != nil {
				if _, err := s.Delete([]byte(k)); err != nil {
					t.Fatal(err)
				}
			}
			m.del(k)
		}
	}
	return m
}

// writeGolden writes the golden store into dir.
func writeGolden(t *testing.T, dir string) {
	s, err := store.Open(dir, store.WithSeed(42), store.WithLogFileSize(4<<10), store.WithSync(store.SyncNever), store.WithAutoCompact(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	goldenOps(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "LOCK"))
}

// copyDir copies the files of src into a new temporary directory.
func copyDir(t *testing.T, src string) string {
	dst := t.TempDir()
	names, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(src, n.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, n.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// checkModel compares a store with the model: every key, the count and
// the order of Range.
func checkModel(t *testing.T, s *store.Store, m *model) {
	t.Helper()
	for k, want := range m.vals {
		if got, err := s.Get([]byte(k)); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("key %s: %q %v, want %q", k, got, err, want)
		}
	}
	if s.Len() != uint64(len(m.vals)) {
		t.Fatalf("%d keys, want %d", s.Len(), len(m.vals))
	}
	checkRange(t, s, m)
}

// TestGoldenStores opens the store committed for each format version (the
// same operations, written by the version that wrote them), with its
// checkpoint and without (as after a crash): every version is read
// forever, and an older one is upgraded in place. The store this version
// writes must be the committed one byte for byte: a change of format
// takes a new version. Run with -update to write the current version's
// (only when adding a version: committed stores never change).
func TestGoldenStores(t *testing.T) {
	t.Parallel()
	want := goldenOps(t, nil)
	if *update {
		dir := filepath.Join("testdata", "golden", goldenVersion)
		os.RemoveAll(dir)
		writeGolden(t, dir)
	}
	dirs, _ := filepath.Glob(filepath.Join("testdata", "golden", "v*"))
	if len(dirs) < 2 {
		t.Fatalf("found %d golden stores, want v1 and v2 at least", len(dirs))
	}
	for _, golden := range dirs {
		for _, withIndex := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/checkpoint=%v", filepath.Base(golden), withIndex), func(t *testing.T) {
				dir := copyDir(t, golden)
				if !withIndex {
					os.Remove(filepath.Join(dir, "INDEX"))
				}
				s, err := store.Open(dir, store.WithAutoCompact(0, 0))
				if err != nil {
					t.Fatal(err)
				}
				checkModel(t, s, want)
				if err := s.Verify(); err != nil {
					t.Fatal(err)
				}
				if err := s.Put([]byte("new"), []byte("write")); err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				man, _ := os.ReadFile(filepath.Join(dir, "MANIFEST"))
				if len(man) < 12 || man[8] != 2 {
					t.Fatalf("the manifest is not in version 2 after an Open")
				}
				s, err = store.Open(dir, store.WithMustExist())
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if v, err := s.Get([]byte("new")); err != nil || string(v) != "write" {
					t.Fatalf("after the upgrade: %q %v", v, err)
				}
				want.put("new", []byte("write"))
				checkModel(t, s, want)
				want.del("new")
			})
		}
	}
	t.Run("current="+goldenVersion, func(t *testing.T) {
		dir := t.TempDir()
		writeGolden(t, dir)
		golden := filepath.Join("testdata", "golden", goldenVersion)
		names, _ := os.ReadDir(golden)
		got, _ := os.ReadDir(dir)
		if len(got) != len(names) {
			t.Fatalf("wrote %d files, the golden store has %d", len(got), len(names))
		}
		for _, n := range names {
			a, _ := os.ReadFile(filepath.Join(golden, n.Name()))
			b, err := os.ReadFile(filepath.Join(dir, n.Name()))
			if !bytes.Equal(a, b) {
				t.Errorf("%s differs from the golden store's (%v): a change of format needs a new version", n.Name(), err)
			}
		}
	})
}

var _ = errors.Is
