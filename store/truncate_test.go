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
// into a new store of small segments. The store is left open (as a crash
// would leave it) unless closeIt.
func buildAcked(t *testing.T, rng *rand.Rand, ops, nkeys int, closeIt bool, opts ...store.Option) ackedStore {
	t.Helper()
	fs := store.NewMemFS()
	opts = append([]store.Option{store.WithFS(fs), store.WithSync(store.SyncAlways), store.WithSegmentSize(4 << 10),
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

// segments returns the store's segment files in log order (their ids
// grow, and no compaction ran).
func segments(fs *store.MemFS) []string {
	var segs []string
	for _, n := range fs.Names() {
		if filepath.Ext(n) == ".log" {
			segs = append(segs, n)
		}
	}
	return segs
}

// cuts returns the offsets at which to cut a segment: every ~100th
// offset (a random one in each window of 100 bytes past the header) and
// every record boundary, the cuts that leave whole records.
func cuts(rng *rand.Rand, seg []byte) []int64 {
	var cs []int64
	for w := int64(segHeader); w < int64(len(seg)); w += 100 {
		cs = append(cs, w+rng.Int64N(min(100, int64(len(seg))-w)))
	}
	cs = append(cs, int64(segHeader))
	for _, e := range store.RecordEnds(seg) {
		if e < int64(len(seg)) {
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
	s, err := store.Open("db", store.WithFS(fs), store.WithAutoCompact(0, 0))
	if errors.Is(err, store.ErrCorrupt) {
		var ce *store.CorruptError
		if !errors.As(err, &ce) || ce.File == "" {
			t.Fatalf("%s: %v does not name the file", what, err)
		}
		return true
	}
	if err != nil {
		t.Fatalf("%s: Open: %v", what, err)
	}
	defer s.Close()
	for k, v := range want {
		got, err := s.Get([]byte(k))
		if err != nil || string(got) != v {
			t.Fatalf("%s: opened without an error, but acknowledged %s is %.20q, %v; want %.20q", what, k, got, err, v)
		}
	}
	if n := s.Len(); n != uint64(len(want)) {
		t.Fatalf("%s: opened without an error with %d keys; %d acknowledged (deleted keys are back)", what, n, len(want))
	}
	return false
}

// TestTruncateSealedAfterCrash cuts each sealed segment of a store left
// by a crash at every ~100th offset and at every record boundary: Open
// either returns ErrCorrupt or has every acknowledged write.
func TestTruncateSealedAfterCrash(t *testing.T) {
	ops := 400
	if testlong.Enabled() {
		ops = 3000
	}
	rng := testseed.Rand(t)
	base := buildAcked(t, rng, ops, ops/5, false)
	segs := segments(base.fs)
	if len(segs) < 3 {
		t.Fatalf("%d segments", len(segs))
	}
	corrupt, opened := 0, 0
	for _, seg := range segs[:len(segs)-1] {
		full := base.fs.ReadFileBytes(seg)
		for _, c := range cuts(rng, full) {
			fs := base.fs.Clone()
			fs.WriteFileBytes(seg, full[:c])
			if openChecked(t, fs, base.want, fmt.Sprintf("%s cut at %d of %d", seg, c, len(full))) {
				corrupt++
			} else {
				opened++
			}
		}
	}
	t.Logf("%d sealed segments; %d cuts refused (ErrCorrupt), %d opened intact", len(segs)-1, corrupt, opened)
}

// TestTruncateLastAfterClose cuts the last segment of a cleanly closed
// store at every ~100th offset and every record boundary: Open either
// returns ErrCorrupt or has every acknowledged write.
func TestTruncateLastAfterClose(t *testing.T) {
	ops := 400
	if testlong.Enabled() {
		ops = 3000
	}
	rng := testseed.Rand(t)
	base := buildAcked(t, rng, ops, ops/5, true)
	segs := segments(base.fs)
	last := segs[len(segs)-1]
	full := base.fs.ReadFileBytes(last)
	corrupt, opened := 0, 0
	for _, c := range cuts(rng, full) {
		fs := base.fs.Clone()
		fs.WriteFileBytes(last, full[:c])
		if openChecked(t, fs, base.want, fmt.Sprintf("last segment %s cut at %d of %d", last, c, len(full))) {
			corrupt++
		} else {
			opened++
		}
	}
	t.Logf("last segment of %d bytes; %d cuts refused (ErrCorrupt), %d opened intact", len(full), corrupt, opened)
}
