package store

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/internal/hash"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
)

// TestCheckpointPastLogRebuildsIndex: an index checkpoint that passes
// its checksum (written by hand, or by a bug) but points a key past the
// end of its log file is not used: Open rebuilds the index from the log,
// as without a checkpoint, says why in Stats, and every key reads its
// value. The previous version used it: Get of that key, and Open
// replaying a record of it, returned ErrCorrupt (and the version before
// panicked).
func TestCheckpointPastLogRebuildsIndex(t *testing.T) {
	t.Parallel()
	fs := NewMemFS()
	s, err := Open("db", WithFS(fs), WithSeed(7))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if err := s.Put([]byte(k), []byte("value of "+k)); err != nil {
			t.Fatal(err)
		}
	}
	_, ck, ix := closedCheckpoint(t, s, fs, 7)
	var c [maxCandidates]slotRef
	if n := ix.candidates(hash.Sum64([]byte("b"), 7), &c); n != 1 {
		t.Fatalf("%d candidates for b", n)
	}
	f := ck.files[0]
	ix.setLoc(c[0], location(f.slot, f.size+100))
	var hostile bytes.Buffer
	if err := encodeIndex(&hostile, ck, ix); err != nil {
		t.Fatal(err)
	}
	fs.WriteFileBytes("db/INDEX", hostile.Bytes())

	s, err = Open("db", WithFS(fs))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if v, err := s.Get([]byte(k)); err != nil || string(v) != "value of "+k {
			t.Fatalf("Get(%s), b's entry past the end of the log file: %q, %v", k, v, err)
		}
	}
	if st := s.Stats(); !strings.Contains(st.CheckpointUnused, "outside the records") || st.Replayed != 2 {
		t.Fatalf("Stats after a checkpoint pointing past the log: CheckpointUnused %q, Replayed %d; want the reason, 2 records",
			st.CheckpointUnused, st.Replayed)
	}
	s.Close()
	// A record of b after the checkpoint: Open replays the whole log, b
	// deleted.
	fs.WriteFileBytes("db/INDEX", hostile.Bytes())
	log := fs.ReadFileBytes("db/0000000000000000.log")
	fs.WriteFileBytes("db/0000000000000000.log", appendRecord(log[:f.size], kindDelete, 0, []byte("b"), nil))
	s, err = Open("db", WithFS(fs))
	if err != nil {
		t.Fatalf("Open replaying a delete of b: %v", err)
	}
	defer s.Close()
	if v, err := s.Get([]byte("a")); err != nil || string(v) != "value of a" {
		t.Fatalf("Get(a): %q, %v", v, err)
	}
	if ok, err := s.Has([]byte("b")); ok || err != nil {
		t.Fatalf("Has(b) after its delete: %v, %v", ok, err)
	}
}

// TestDamagedCheckpointKeepsEveryKey damages the checkpoint of a store
// of several log files, whose log is intact, in many ways, and opens it
// each time: Open never refuses the store, every key of the model (a Go
// map) reads its value, no other key is there, and when the checkpoint
// was not used Stats says why (Open read the whole log). The damage: the
// file cut at every offset of its head and one in every ~100 after
// (every offset with CUCKOO_LONG=1), a bit flipped at the same offsets,
// and, checksum recomputed (a checkpoint a bug wrote), the location of
// each entry set past the end of what the checkpoint covers, before the
// first record, or in a log file slot it does not name, and each bit of
// the log file slot and the high bits of the offset flipped where that
// points past what it covers (for one entry in 16, every entry with
// CUCKOO_LONG=1).
func TestDamagedCheckpointKeepsEveryKey(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	rng := testseed.Rand(t)
	fs := NewMemFS()
	s, err := Open("db", WithFS(fs), WithSeed(5), WithLogFileSize(4<<10), WithAutoCompact(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := randomOps(t, s, rng, 600, 200)
	full, ck, ix := closedCheckpoint(t, s, fs, 5)
	if len(ck.files) < 3 {
		t.Fatalf("the checkpoint covers %d log files; want several", len(ck.files))
	}
	covered := map[uint64]int64{}
	for _, f := range ck.files {
		covered[f.slot] = f.size
	}
	check := func(b []byte, used bool, what string) {
		t.Helper()
		c := fs.Clone()
		c.WriteFileBytes("db/INDEX", b)
		s, err := Open("db", WithFS(c))
		if err != nil {
			t.Fatalf("%s: Open: %v", what, err)
		}
		defer s.Close()
		hasModel(t, s, want, what)
		if st := s.Stats(); !used && st.CheckpointUnused == "" {
			t.Fatalf("%s: Open read the whole log (%d records) and Stats gives no reason", what, st.Replayed)
		}
	}
	check(full, true, "the checkpoint intact")
	offsets := flipsAt(len(full), 300, testlong.Enabled())
	for _, at := range offsets {
		check(full[:at], false, fmt.Sprintf("checkpoint cut at %d", at))
		b := append([]byte(nil), full...)
		b[at] ^= 1 << rng.IntN(8)
		check(b, false, fmt.Sprintf("checkpoint with a bit of byte %d flipped", at))
	}
	sample := 1 // every entry, or one in sample
	if !testlong.Enabled() {
		sample = 16
	}
	var free uint64 // a slot no log file has
	for covered[free] != 0 {
		free++
	}
	entries := 0
	for j := range ix.buckets() {
		for i, v := range ix.bucket(j) {
			if v == 0 {
				continue
			}
			entries++
			if entries%sample != 0 {
				continue
			}
			loc := v >> locShift
			ref := slotRef{j: j, k: i, loc: loc}
			slot, pos := loc>>32, int64(loc&(1<<32-1))
			bad := map[uint64]string{
				location(slot, covered[slot]):                       "at the end of what the checkpoint covers",
				location(slot, covered[slot]+int64(rng.IntN(1000))): "past what the checkpoint covers",
				location(slot, logHeaderSize-1):                     "before the first record",
				location(free, pos):                                 "in a log file slot the checkpoint does not name",
			}
			for b := 0; b < 40; b++ {
				if b >= 12 { // the slot, and offsets of 4 KiB on
					n := loc ^ 1<<b
					if s, p := n>>32, int64(n&(1<<32-1)); covered[s] == 0 || p >= covered[s] {
						bad[n] = fmt.Sprintf("with bit %d of its location flipped", b)
					}
				}
			}
			for n, what := range bad {
				check(resealed(t, full, 5, func(ix *index) { ix.setLoc(ref, n) }), false, fmt.Sprintf("entry %d (bucket %d, slot %d, location %#x) %s (%#x), checksum passing", entries, j, i, loc, what, n))
			}
		}
	}
	if entries != len(want) {
		t.Fatalf("%d entries in the index's buckets; %d keys", entries, len(want))
	}
	t.Logf("%d keys, %d log files; checkpoint of %d bytes damaged at %d offsets", len(want), len(ck.files), len(full), len(offsets))
}

// closedCheckpoint closes s, a store "db" of fs with seed seed, and
// returns the checkpoint Close wrote: its bytes, decoded.
func closedCheckpoint(t *testing.T, s *Store, fs *MemFS, seed uint64) ([]byte, checkpoint, *index) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	raw := fs.ReadFileBytes("db/INDEX")
	ck, ix, err := decodeIndex(bytes.NewReader(raw), int64(len(raw)), seed)
	if err != nil {
		t.Fatal(err)
	}
	return raw, ck, ix
}

// flipsAt returns the offsets of a file of n bytes at which to damage
// it: every one of its first head bytes, then one in every ~100 (every
// one, with all).
func flipsAt(n, head int, all bool) []int {
	var at []int
	for i := 0; i < n; i++ {
		at = append(at, i)
		if i >= head && !all {
			i += 96
		}
	}
	return at
}
