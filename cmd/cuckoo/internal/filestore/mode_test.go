package filestore_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filestore"
	"github.com/dedupkit/cuckoo/store"
)

// TestModes: ImportMode records the permission bits, Info returns them,
// Import records none, and a change of mode alone is a change.
func TestModes(t *testing.T) {
	s, err := store.Open(t.TempDir(), store.WithSync(store.SyncNever))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fst, err := filestore.New(s)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("some file contents\n"), 1000)
	if _, err := fst.ImportMode("run.sh", 0o755|0o4000, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if _, err := fst.Import("old.txt", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if info, err := fst.Info("run.sh"); err != nil || info != (filestore.Info{Size: uint64(len(data)), Perm: 0o755, HasPerm: true}) {
		t.Fatalf("Info(run.sh) = %+v, %v", info, err)
	}
	if info, err := fst.Info("old.txt"); err != nil || info.HasPerm || info.Size != uint64(len(data)) {
		t.Fatalf("Info(old.txt) = %+v, %v", info, err)
	}
	if _, err := fst.Info("nothing"); !errors.Is(err, filestore.ErrNoFile) {
		t.Fatalf("Info(nothing): %v", err)
	}
	st, err := fst.ImportMode("run.sh", 0o700, bytes.NewReader(data))
	if err != nil || st.Unchanged || st.NewChunks != 0 {
		t.Fatalf("a new mode: %+v, %v", st, err)
	}
	st, err = fst.ImportMode("run.sh", 0o700, bytes.NewReader(data))
	if err != nil || !st.Unchanged {
		t.Fatalf("the same mode again: %+v, %v", st, err)
	}
	var out bytes.Buffer
	if err := fst.Export("run.sh", &out); err != nil || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("Export: %v", err)
	}
	// A record whose mode is out of range is damaged.
	if err := s.Put([]byte("\x00fbad"), []byte("CKF2\xff\x7f")); err != nil {
		t.Fatal(err)
	}
	if _, err := fst.Info("bad"); !errors.Is(err, filestore.ErrDamaged) {
		t.Fatalf("Info(bad): %v", err)
	}
}
