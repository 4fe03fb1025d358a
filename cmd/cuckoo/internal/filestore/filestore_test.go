package filestore_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filestore"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
	"github.com/dedupkit/cuckoo/store"
)

// goFiles returns the regular files under $(go env GOROOT)/src: all of
// them with CUCKOO_LONG=1, those of a few packages with -short, and else
// the first 16 MB of them in the walk's order.
func goFiles(t *testing.T) []string {
	root := filepath.Join(runtime.GOROOT(), "src")
	limit := int64(16 << 20)
	switch {
	case testing.Short():
		root = filepath.Join(root, "net")
	case testlong.Enabled():
		limit = math.MaxInt64
	}
	var names []string
	var size int64
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if size >= limit {
			return fs.SkipAll
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			names = append(names, p)
			size += info.Size()
		}
		return nil
	})
	if err != nil || len(names) == 0 {
		t.Skipf("no Go source tree at %s: %v", root, err)
	}
	return names
}

// TestRoundTripGoSource imports Go's source tree (see goFiles), exports every file and compares it byte for byte, then imports
// it again: the second import adds almost nothing.
func TestRoundTripGoSource(t *testing.T) {
	names := goFiles(t)
	s, err := store.Open(t.TempDir(), store.WithSync(store.SyncNever))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fst, err := filestore.New(s)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			t.Fatal(err)
		}
		st, err := fst.Import(n, f)
		f.Close()
		if err != nil {
			t.Fatalf("import %s: %v", n, err)
		}
		total += st.Bytes
	}
	first := s.Stats().LogBytes
	var buf bytes.Buffer
	for _, n := range names {
		want, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		buf.Reset()
		if err := fst.Export(n, &buf); err != nil {
			t.Fatalf("export %s: %v", n, err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("%s: exported %d bytes differ from the file's %d", n, buf.Len(), len(want))
		}
	}
	changed := 0
	for _, n := range names {
		f, _ := os.Open(n)
		st, err := fst.Import(n, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !st.Unchanged || st.NewChunks != 0 {
			changed++
		}
	}
	second := s.Stats().LogBytes - first
	stats, err := fst.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files, %d bytes; log %d bytes; second import added %d bytes; %d chunks of %d bytes, dedup ratio %.3f",
		len(names), total, first, second, stats.Chunks, stats.ChunkBytes, stats.DedupRatio())
	if changed != 0 || second > first/1000 {
		t.Fatalf("second import changed %d files and added %d bytes", changed, second)
	}
	if stats.Files != len(names) || stats.FileBytes != uint64(total) {
		t.Fatalf("stats: %+v, want %d files of %d bytes", stats, len(names), total)
	}
	seen := 0
	fst.List(func(name string, size uint64) bool { seen++; return true })
	if seen != len(names) {
		t.Fatalf("List: %d files", seen)
	}
}

// TestShiftedContent: a file with bytes inserted near its start shares
// most chunks with the original.
func TestShiftedContent(t *testing.T) {
	s, err := store.Open(t.TempDir(), store.WithSync(store.SyncNever))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fst, err := filestore.New(s)
	if err != nil {
		t.Fatal(err)
	}
	rng := testseed.Rand(t)
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	a, err := fst.Import("a", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	shifted := append([]byte("inserted bytes"), data...)
	b, err := fst.Import("b", bytes.NewReader(shifted))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("original: %d chunks; shifted copy: %d chunks, %d new", a.Chunks, b.Chunks, b.NewChunks)
	if b.NewChunks > 2 {
		t.Fatalf("shifted copy added %d chunks of %d", b.NewChunks, b.Chunks)
	}
	var out bytes.Buffer
	if err := fst.Export("b", &out); err != nil || !bytes.Equal(out.Bytes(), shifted) {
		t.Fatalf("export: %v", err)
	}
}

// TestReadingWritesNothing: New, List, Stats and a failed Export leave a
// store that holds no files as it was (no chunker record, no log bytes);
// the first Import records the polynomial, and later opens use it.
func TestReadingWritesNothing(t *testing.T) {
	dir := t.TempDir()
	s, err := store.Open(dir, store.WithSync(store.SyncNever))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := s.Stats()
	fst, err := filestore.New(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := fst.List(func(string, uint64) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if _, err := fst.Stats(); err != nil {
		t.Fatal(err)
	}
	if err := fst.Export("absent", io.Discard); !errors.Is(err, filestore.ErrNoFile) {
		t.Fatalf("Export of an absent file: %v", err)
	}
	if st := s.Stats(); st.Keys != 0 || st.LogBytes != before.LogBytes {
		t.Fatalf("reading an empty store wrote to it: %+v, was %+v", st, before)
	}
	content := bytes.Repeat([]byte("the chunker's polynomial is recorded by the first import\n"), 5000)
	if _, err := fst.Import("a", bytes.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	again, err := filestore.New(s)
	if err != nil {
		t.Fatal(err)
	}
	st, err := again.Import("b", bytes.NewReader(content))
	if err != nil || st.Chunks < 2 || st.NewChunks != 0 {
		t.Fatalf("the same content under another name, after a reopen: %+v, %v (the polynomial is not kept)", st, err)
	}
}
