package store_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
	"github.com/dedupkit/cuckoo/store"
)

// ackedStore is a store in a MemFS built by random puts, overwrites and
// deletes with SyncAlways, and the state every acknowledged write gives.
type ackedStore struct {
	fs   *store.MemFS
	want map[string]string
}

// buildAcked writes ops random operations on keys of a space of nkeys
// into a new store of small log files. The store is left open (as a crash
// would leave it) unless closeIt.
func buildAcked(t *testing.T, rng *rand.Rand, ops, nkeys int, closeIt bool, opts ...store.Option) ackedStore {
	t.Helper()
	fs := store.NewMemFS()
	opts = append([]store.Option{store.WithFS(fs), store.WithSync(store.SyncAlways), store.WithLogFileSize(4 << 10),
		store.WithAutoCompact(0, 0), store.WithSeed(3)}, opts...)
	s, err := store.Open("db", opts...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := range ops {
		k := fmt.Sprintf("key-%d", rng.IntN(nkeys))
		if _, ok := want[k]; ok && rng.IntN(4) == 0 {
			if ok, err := s.Delete([]byte(k)); err != nil || !ok {
				t.Fatalf("delete %s: %v %v", k, ok, err)
			}
			delete(want, k)
			continue
		}
		v := fmt.Sprintf("v%d-%s", i, strings.Repeat("x", rng.IntN(150)))
		if err := s.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	if closeIt {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return ackedStore{fs, want}
	}
	// The crash: what was synced (all that was acknowledged) is kept.
	return ackedStore{fs.CrashLosingUnsynced(), want}
}

// log files returns the store's log files in log order (their ids
// grow, and no compaction ran).
func logFiles(fs *store.MemFS) []string {
	var files []string
	for _, n := range fs.Names() {
		if filepath.Ext(n) == ".log" {
			files = append(files, n)
		}
	}
	return files
}

// cuts returns the offsets at which to cut a log file: every ~100th
// offset (a random one in each window of 100 bytes past the header) and
// every record boundary, the cuts that leave whole records.
func cuts(rng *rand.Rand, file []byte) []int64 {
	var cs []int64
	for w := int64(logHeader); w < int64(len(file)); w += 100 {
		cs = append(cs, w+rng.Int64N(min(100, int64(len(file))-w)))
	}
	cs = append(cs, int64(logHeader))
	for _, e := range store.RecordEnds(file) {
		if e < int64(len(file)) {
			cs = append(cs, e)
		}
	}
	slices.Sort(cs)
	return slices.Compact(cs)
}

// openChecked opens the store in fs and reports whether Open refused it
// with ErrCorrupt; if it opened it, every acknowledged write must be
// there: each key with its last value, no deleted key back.
func openChecked(t *testing.T, fs *store.MemFS, want map[string]string, what string) (corrupt bool) {
	t.Helper()
	s := openOrRefused(t, fs, what)
	if s == nil {
		return true
	}
	defer s.Close()
	checkAcked(t, s, want, what, false)
	return false
}

// openOrRefused opens the store in fs; nil when Open refused it with an
// error naming the file and wrapping ErrCorrupt (any other error fails
// the test).
func openOrRefused(t *testing.T, fs *store.MemFS, what string) *store.Store {
	t.Helper()
	s, err := store.Open("db", store.WithFS(fs), store.WithAutoCompact(0, 0))
	if errors.Is(err, store.ErrCorrupt) {
		var ce *store.CorruptError
		if !errors.As(err, &ce) || ce.File == "" {
			t.Fatalf("%s: %v does not name the file", what, err)
		}
		return nil
	}
	if err != nil {
		t.Fatalf("%s: Open: %v", what, err)
	}
	return s
}

// checkAcked compares an opened store with the acknowledged writes: each
// key reads its last value (or, with reported, ErrCorrupt: damage the
// store reports), and the count is theirs (no deleted key back).
func checkAcked(t *testing.T, s *store.Store, want map[string]string, what string, reported bool) {
	t.Helper()
	for k, v := range want {
		got, err := s.Get([]byte(k))
		if reported && errors.Is(err, store.ErrCorrupt) {
			continue
		}
		if err != nil || string(got) != v {
			t.Fatalf("%s: opened without an error, but acknowledged %s is %.20q, %v; want %.20q", what, k, got, err, v)
		}
	}
	if n := s.Len(); n != uint64(len(want)) {
		t.Fatalf("%s: opened without an error with %d keys; %d acknowledged (deleted keys are back)", what, n, len(want))
	}
}

// cutAndOpen cuts log file of base at each of cuts (a copy each time)
// and opens the store: each time Open refuses it (ErrCorrupt) or has
// every acknowledged write. It counts both outcomes.
func cutAndOpen(t *testing.T, base ackedStore, file string, cuts []int64) (corrupt, opened int) {
	t.Helper()
	full := base.fs.ReadFileBytes(file)
	for _, c := range cuts {
		fs := base.fs.Clone()
		fs.WriteFileBytes(file, full[:c])
		if openChecked(t, fs, base.want, fmt.Sprintf("%s cut at %d of %d", file, c, len(full))) {
			corrupt++
		} else {
			opened++
		}
	}
	return corrupt, opened
}

// TestTruncateSealedAfterCrash cuts each sealed log file of a store left
// by a crash at every ~100th offset and at every record boundary: Open
// either returns ErrCorrupt or has every acknowledged write.
func TestTruncateSealedAfterCrash(t *testing.T) {
	t.Parallel()
	ops := 400
	if testlong.Enabled() {
		ops = 3000
	}
	rng := testseed.Rand(t)
	base := buildAcked(t, rng, ops, ops/5, false)
	files := logFiles(base.fs)
	if len(files) < 3 {
		t.Fatalf("%d log files", len(files))
	}
	corrupt, opened := 0, 0
	for _, file := range files[:len(files)-1] {
		c, o := cutAndOpen(t, base, file, cuts(rng, base.fs.ReadFileBytes(file)))
		corrupt, opened = corrupt+c, opened+o
	}
	t.Logf("%d sealed log files; %d cuts refused (ErrCorrupt), %d opened intact", len(files)-1, corrupt, opened)
}

// TestTruncateLastAfterClose cuts the last log file of a cleanly closed
// store at every ~100th offset and every record boundary: Open either
// returns ErrCorrupt or has every acknowledged write.
func TestTruncateLastAfterClose(t *testing.T) {
	t.Parallel()
	ops := 400
	if testlong.Enabled() {
		ops = 3000
	}
	rng := testseed.Rand(t)
	base := buildAcked(t, rng, ops, ops/5, true)
	files := logFiles(base.fs)
	last := files[len(files)-1]
	full := base.fs.ReadFileBytes(last)
	corrupt, opened := cutAndOpen(t, base, last, cuts(rng, full))
	t.Logf("last log file of %d bytes; %d cuts refused (ErrCorrupt), %d opened intact", len(full), corrupt, opened)
}
