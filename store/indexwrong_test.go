package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
)

// An index checkpoint whose checksum passes (a bug wrote it, or memory
// was damaged before it was) but whose entries point at other records of
// the log than their keys' latest: the read path, Open, Verify and
// Repair against a Go map model.

// randomOps applies ops random writes of keys key-0 to key-(keys−1) to s
// (puts, overwrites, deletes and PutIfAbsent calls, values of random
// lengths) and returns the model: what s holds.
func randomOps(t *testing.T, s *Store, rng *rand.Rand, ops, keys int) map[string]string {
	t.Helper()
	want := map[string]string{}
	for i := range ops {
		k := fmt.Sprintf("key-%d", rng.IntN(keys))
		switch _, ok := want[k]; {
		case ok && rng.IntN(4) == 0:
			if ok, err := s.Delete([]byte(k)); err != nil || !ok {
				t.Fatalf("Delete(%s): %v, %v", k, ok, err)
			}
			delete(want, k)
		case rng.IntN(5) == 0:
			v := fmt.Sprintf("first %d", i)
			stored, err := s.PutIfAbsent([]byte(k), []byte(v))
			if err != nil || stored == ok {
				t.Fatalf("PutIfAbsent(%s): %v, %v", k, stored, err)
			}
			if stored {
				want[k] = v
			}
		default:
			v := fmt.Sprintf("v%d-%s", i, strings.Repeat("x", rng.IntN(100)))
			if err := s.Put([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			want[k] = v
		}
	}
	return want
}

// logRecord is a record of the log a checkpoint covers, at the location
// the checkpoint's entries name it by.
type logRecord struct {
	loc    uint64
	kind   byte
	seq    uint64
	key    string
	latest bool // the last record of its key
}

// logRecords returns the records of the log files of store "db" in fs
// that ck covers, in log order.
func logRecords(t *testing.T, fs *MemFS, ck checkpoint) []logRecord {
	t.Helper()
	var recs []logRecord
	for _, f := range ck.files {
		b := fs.ReadFileBytes("db/" + logFileName(f.id))
		for p := int64(logHeaderSize); p < f.size; {
			r, err := decodeRecord(b[p:f.size])
			if err != nil {
				t.Fatalf("%s at %d: %v", logFileName(f.id), p, err)
			}
			recs = append(recs, logRecord{loc: location(f.slot, p), kind: r.kind, seq: r.seq, key: string(r.key)})
			p += int64(r.size)
		}
	}
	seen := map[string]bool{}
	for i := len(recs) - 1; i >= 0; i-- {
		recs[i].latest = !seen[recs[i].key]
		seen[recs[i].key] = true
	}
	return recs
}

// resealed decodes raw, an INDEX file of a store of seed seed, lets
// change change its index, and encodes it again, with a checksum that
// passes: as a bug would write it.
func resealed(t *testing.T, raw []byte, seed uint64, change func(ix *index)) []byte {
	t.Helper()
	ck, ix, err := decodeIndex(bytes.NewReader(raw), int64(len(raw)), seed)
	if err != nil {
		t.Fatal(err)
	}
	change(ix)
	var b bytes.Buffer
	if err := encodeIndex(&b, ck, ix); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// isIndexError reports whether err is the *CorruptError of an index
// that disagrees with an intact log, as a caller sees it.
func isIndexError(err error) bool {
	var ce *CorruptError
	return errors.As(err, &ce) && errors.Is(err, ErrCorrupt) && strings.HasPrefix(ce.Detail, "the index is wrong, not the log: ")
}

// wrongCheckpoint is a store "db" of a MemFS closed with a checkpoint,
// its model, and what the tests redirect entries to.
type wrongCheckpoint struct {
	fs   *MemFS
	seed uint64
	want map[string]string
	raw  []byte
	ix   *index
	recs []logRecord
}

func newWrongCheckpoint(t *testing.T, rng *rand.Rand, ops, keys int) *wrongCheckpoint {
	t.Helper()
	w := &wrongCheckpoint{fs: NewMemFS(), seed: rng.Uint64()}
	s, err := Open("db", WithFS(w.fs), WithSeed(w.seed), WithLogFileSize(16<<10), WithAutoCompact(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	w.want = randomOps(t, s, rng, ops, keys)
	var ck checkpoint
	w.raw, ck, w.ix = closedCheckpoint(t, s, w.fs, w.seed)
	w.recs = logRecords(t, w.fs, ck)
	return w
}

// keyOf returns the key of the record at loc.
func (w *wrongCheckpoint) keyOf(t *testing.T, loc uint64) string {
	for _, r := range w.recs {
		if r.loc == loc {
			return r.key
		}
	}
	t.Fatalf("no record at location %#x", loc)
	return ""
}

// otherKeys returns, for each entry of the index that pick picks, a
// record of the log of another key whose hash does not give the entry
// (an entry no tag collision explains): the redirections, by entry.
func (w *wrongCheckpoint) otherKeys(t *testing.T, rng *rand.Rand, pick func(ref slotRef) bool) map[slotRef]logRecord {
	moves := map[slotRef]logRecord{}
	w.ix.each(func(ref slotRef) error {
		if !pick(ref) {
			return nil
		}
		key := w.keyOf(t, ref.loc)
		for {
			r := w.recs[rng.IntN(len(w.recs))]
			if r.key != key && !w.ix.holds(ref, hashOf(w.seed, r.key)) {
				moves[ref] = r
				return nil
			}
		}
	})
	return moves
}

// unsampled returns a pick of the entries Open's sample does not check,
// one in every.
func (w *wrongCheckpoint) unsampled(rng *rand.Rand, every int) func(slotRef) bool {
	var out [checkpointSample]slotRef
	sampled := map[slotRef]bool{}
	for _, r := range w.ix.sample(&out) {
		sampled[r] = true
	}
	return func(ref slotRef) bool { return !sampled[ref] && rng.IntN(every) == 0 }
}

// with returns a copy of the MemFS with INDEX replaced by b.
func (w *wrongCheckpoint) with(b []byte) *MemFS {
	fs := w.fs.Clone()
	fs.WriteFileBytes("db/INDEX", b)
	return fs
}

// redirect returns the checkpoint with the entries of moves pointing at
// their records.
func (w *wrongCheckpoint) redirect(t *testing.T, moves map[slotRef]logRecord) []byte {
	return resealed(t, w.raw, w.seed, func(ix *index) {
		for ref, r := range moves {
			ix.setLoc(ref, r.loc)
		}
	})
}

// hasModel checks that s holds exactly want: every key reads its value,
// Len, Range, and Verify passes.
func hasModel(t *testing.T, s *Store, want map[string]string, what string) {
	t.Helper()
	for k, v := range want {
		if got, err := s.Get([]byte(k)); err != nil || string(got) != v {
			t.Fatalf("%s: Get(%s): %.20q, %v; want %.20q", what, k, got, err, v)
		}
	}
	if n := s.Len(); n != uint64(len(want)) {
		t.Fatalf("%s: Len %d; want %d", what, n, len(want))
	}
	n := 0
	if err := s.Range(func(k, v []byte) bool {
		n++
		if want[string(k)] != string(v) {
			t.Errorf("%s: Range gives %s = %.20q; want %.20q", what, k, v, want[string(k)])
		}
		return true
	}); err != nil || n != len(want) {
		t.Fatalf("%s: Range visited %d keys, %v; want %d", what, n, err, len(want))
	}
	if err := s.Verify(); err != nil {
		t.Fatalf("%s: Verify: %v", what, err)
	}
}

// repairsIndex closes s, runs Repair on fs, which must remove INDEX as
// the damage Verify found in the index, and checks that the store opened
// again holds want.
func repairsIndex(t *testing.T, s *Store, fs *MemFS, want map[string]string, what string) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	dry, err := Repair("db", WithRepairFS(fs), WithDryRun())
	if err != nil || !dry.Index || !isIndexError(dry.Damage) {
		t.Fatalf("%s: Repair --dry-run: %+v, %v; want the index's damage", what, dry, err)
	}
	if _, ok := fileIn(fs, "db/INDEX"); !ok {
		t.Fatalf("%s: the dry run removed INDEX", what)
	}
	rep, err := Repair("db", WithRepairFS(fs))
	if err != nil || !rep.Index || rep.Cut || rep.File != "db/INDEX" || !isIndexError(rep.Damage) {
		t.Fatalf("%s: Repair: %+v, %v; want INDEX removed", what, rep, err)
	}
	if _, ok := fileIn(fs, "db/INDEX"); ok {
		t.Fatalf("%s: Repair left INDEX", what)
	}
	s, err = Open("db", WithFS(fs))
	if err != nil {
		t.Fatalf("%s: Open after Repair: %v", what, err)
	}
	defer s.Close()
	hasModel(t, s, want, what+", repaired")
}

func fileIn(fs *MemFS, name string) ([]byte, bool) {
	for _, n := range fs.Names() {
		if n == name {
			return fs.ReadFileBytes(name), true
		}
	}
	return nil, false
}

// TestEntryAtAnotherKeysRecordIsCorruptNotAbsent: a checkpoint with one
// entry in eight (among those Open's sample does not check) pointing at
// a record of another key (its latest, an overwritten one, a tombstone)
// whose hash does not give the entry. Open uses it (no record follows
// it). Then no key put reads as absent: each reads its value, or, the
// keys whose entries were moved always, ErrCorrupt saying the index is
// wrong; Put, PutIfAbsent and Delete of those keys return the same error
// and change nothing; Verify finds the index wrong, and Repair, removing
// INDEX, gives back every key of the model. The previous version read
// those keys as absent, and Verify found nothing.
func TestEntryAtAnotherKeysRecordIsCorruptNotAbsent(t *testing.T) {
	t.Parallel()
	rng := testseed.Rand(t)
	rounds, ops := 1, 3000
	if testlong.Enabled() {
		rounds, ops = 8, 20000
	}
	for round := range rounds {
		w := newWrongCheckpoint(t, rng, ops, ops/3)
		moves := w.otherKeys(t, rng, w.unsampled(rng, 8))
		if len(moves) == 0 {
			t.Fatal("no entry moved")
		}
		moved := map[string]bool{}
		for ref := range moves {
			moved[w.keyOf(t, ref.loc)] = true
		}
		fs := w.with(w.redirect(t, moves))
		s, err := Open("db", WithFS(fs))
		if err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("round %d, %d of %d entries moved", round, len(moves), len(w.want))
		if st := s.Stats(); st.CheckpointUnused != "" || st.Replayed != 0 {
			t.Fatalf("%s: Open did not use the checkpoint (%q, %d records replayed); the sample must not see the entries moved", what, st.CheckpointUnused, st.Replayed)
		}
		for k, v := range w.want {
			got, err := s.Get([]byte(k))
			has, herr := s.Has([]byte(k))
			switch {
			case moved[k] && (!isIndexError(err) || !isIndexError(herr)):
				t.Fatalf("%s: Get(%s), whose entry points at another key's record: %.20q, %v; Has: %v, %v; want ErrCorrupt", what, k, got, err, has, herr)
			case errors.Is(err, ErrNotFound) || errors.Is(herr, ErrNotFound) || !has && herr == nil:
				t.Fatalf("%s: Get(%s), a key put: absent", what, k)
			case err == nil && string(got) != v:
				t.Fatalf("%s: Get(%s): %.20q; want %.20q", what, k, got, v)
			case err != nil && !isIndexError(err):
				t.Fatalf("%s: Get(%s): %v", what, k, err)
			}
		}
		n := s.Len()
		for k := range moved {
			if err := s.Put([]byte(k), []byte("lost")); !isIndexError(err) {
				t.Fatalf("%s: Put(%s): %v; want ErrCorrupt", what, k, err)
			}
			if stored, err := s.PutIfAbsent([]byte(k), []byte("twice")); stored || !isIndexError(err) {
				t.Fatalf("%s: PutIfAbsent(%s): %v, %v; want ErrCorrupt", what, k, stored, err)
			}
			if deleted, err := s.Delete([]byte(k)); deleted || !isIndexError(err) {
				t.Fatalf("%s: Delete(%s): %v, %v; want ErrCorrupt", what, k, deleted, err)
			}
		}
		if s.Len() != n {
			t.Fatalf("%s: the refused writes changed Len from %d to %d", what, n, s.Len())
		}
		if err := s.Verify(); !isIndexError(err) {
			t.Fatalf("%s: Verify: %v; want the index found wrong", what, err)
		}
		repairsIndex(t, s, fs, w.want, what)
	}
}

// TestCheckpointAtOtherRecordsRebuildsAtOpen: a checkpoint whose entries
// all point at records of other keys (or tombstones), and one of another
// store of the same seed and file names, whose entries land on records
// of this one: the entries Open samples find it wrong, and Open reads
// the whole log instead, saying why in Stats; every key of the model
// reads its value, and Verify passes.
func TestCheckpointAtOtherRecordsRebuildsAtOpen(t *testing.T) {
	t.Parallel()
	rng := testseed.Rand(t)
	w := newWrongCheckpoint(t, rng, 2000, 600)
	all := w.redirect(t, w.otherKeys(t, rng, func(slotRef) bool { return true }))

	// Another store of the same seed, its records of the same lengths
	// as this one's (fillFixed's), for other keys.
	other, this := NewMemFS(), NewMemFS()
	for _, c := range []struct {
		fs  *MemFS
		key string
	}{{other, "oth%03d"}, {this, "key%03d"}} {
		s, err := Open("db", WithFS(c.fs), WithSeed(3))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 300 {
			if err := s.Put([]byte(fmt.Sprintf(c.key, i)), []byte(fmt.Sprintf("value %13d", i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	this.WriteFileBytes("db/INDEX", other.ReadFileBytes("db/INDEX"))
	thisWant := map[string]string{}
	for i := range 300 {
		thisWant[fmt.Sprintf("key%03d", i)] = fmt.Sprintf("value %13d", i)
	}

	for _, c := range []struct {
		what    string
		fs      *MemFS
		want    map[string]string
		records int
	}{
		{"every entry at another key's record", w.with(all), w.want, len(w.recs)},
		{"the checkpoint of another store", this, thisWant, 300},
	} {
		s, err := Open("db", WithFS(c.fs))
		if err != nil {
			t.Fatalf("%s: Open: %v", c.what, err)
		}
		st := s.Stats()
		if !strings.Contains(st.CheckpointUnused, "disagrees with the log") || st.Replayed != uint64(c.records) {
			t.Fatalf("%s: CheckpointUnused %q, %d records replayed; want the reason, %d", c.what, st.CheckpointUnused, st.Replayed, c.records)
		}
		hasModel(t, s, c.want, c.what)
		s.Close()
	}
}

// TestReplayPastWrongEntryRebuildsIndex: a checkpoint with one entry
// (one Open's sample does not check) pointing at another key's record,
// and, after it, a record of that entry's key (an overwrite, a delete),
// as after a crash: the replay meets the entry, and Open reads the whole
// log instead, saying why in Stats; every key of the model, with that
// record, reads its value. The previous version added a second entry for
// the key, or lost its delete.
func TestReplayPastWrongEntryRebuildsIndex(t *testing.T) {
	t.Parallel()
	rng := testseed.Rand(t)
	w := newWrongCheckpoint(t, rng, 2000, 600)
	pick := w.unsampled(rng, 1)
	var moves map[slotRef]logRecord
	for len(moves) == 0 {
		one := false
		moves = w.otherKeys(t, rng, func(ref slotRef) bool {
			if one || !pick(ref) || rng.IntN(50) != 0 {
				return false
			}
			one = true
			return true
		})
	}
	var key string
	var seq uint64
	for ref := range moves {
		key = w.keyOf(t, ref.loc)
	}
	for _, r := range w.recs {
		if r.key == key && r.latest {
			seq = r.seq
		}
	}
	var logName string
	for _, n := range w.fs.Names() {
		if strings.HasSuffix(n, ".log") {
			logName = n // the names sort: the last is the active log file
		}
	}
	bad := w.redirect(t, moves)
	for _, c := range []struct {
		what string
		rec  []byte
		set  func(map[string]string)
	}{
		{"an overwrite", appendRecord(nil, kindPutOver, seq, []byte(key), []byte("after")), func(m map[string]string) { m[key] = "after" }},
		{"a delete", appendRecord(nil, kindDelete, 0, []byte(key), nil), func(m map[string]string) { delete(m, key) }},
	} {
		fs := w.with(bad)
		fs.WriteFileBytes(logName, append(fs.ReadFileBytes(logName), c.rec...))
		want := map[string]string{}
		for k, v := range w.want {
			want[k] = v
		}
		c.set(want)
		s, err := Open("db", WithFS(fs))
		if err != nil {
			t.Fatalf("%s of %s after the checkpoint: Open: %v", c.what, key, err)
		}
		if st := s.Stats(); !strings.Contains(st.CheckpointUnused, "disagrees with the log") || st.Replayed != uint64(len(w.recs)+1) {
			t.Fatalf("%s of %s after the checkpoint: CheckpointUnused %q, %d records replayed; want the reason, %d", c.what, key, st.CheckpointUnused, st.Replayed, len(w.recs)+1)
		}
		hasModel(t, s, want, c.what+" of "+key+" after the checkpoint")
		s.Close()
	}
}

// TestVerifyFindsIndexDisagreeingWithLog: checkpoints whose entries Open
// cannot tell from right ones (each points at an intact Put record of a
// key whose hash gives the entry) but which disagree with the log: an
// entry at an overwritten record of its key, one added for a key the log
// deletes, one added twice, one removed. Open uses each; Verify finds
// the index wrong, naming what is wrong, and Repair, removing INDEX,
// gives back every key of the model. Get cannot tell these: it reads
// the overwritten value, or the deleted key, or reads the removed key as
// absent.
func TestVerifyFindsIndexDisagreeingWithLog(t *testing.T) {
	t.Parallel()
	rng := testseed.Rand(t)
	w := newWrongCheckpoint(t, rng, 2000, 600)
	var over, deleted logRecord // an overwritten record of a live key; the last Put of a deleted key
	for _, r := range w.recs {
		_, live := w.want[r.key]
		switch {
		case r.kind == kindDelete || r.latest:
		case live && over.loc == 0:
			over = r
		case !live && deleted.loc == 0:
			deleted = r
		}
	}
	if over.loc == 0 || deleted.loc == 0 {
		t.Fatal("no overwritten record, or no deleted key")
	}
	refOf := func(ix *index, key string) slotRef {
		var c [maxCandidates]slotRef
		for _, ref := range c[:ix.candidates(hashOf(w.seed, key), &c)] {
			if w.keyOf(t, ref.loc) == key {
				return ref
			}
		}
		t.Fatalf("no entry of %s", key)
		return slotRef{}
	}
	var live string
	for k := range w.want {
		live = k
		break
	}
	latest := refOf(w.ix, live).loc
	for _, c := range []struct {
		what, detail string
		change       func(ix *index)
	}{
		{"an entry at an overwritten record of its key", "not at its latest", func(ix *index) { ix.setLoc(refOf(ix, over.key), over.loc) }},
		{"an entry added for a deleted key", "a key the log deletes after it", func(ix *index) { ix.add(hashOf(w.seed, deleted.key), deleted.loc) }},
		{"a key's entry added twice", "two entries", func(ix *index) { ix.add(hashOf(w.seed, live), latest) }},
		{"a key's entry removed", "is not found through the index", func(ix *index) { ix.remove(refOf(ix, live)) }},
	} {
		fs := w.with(resealed(t, w.raw, w.seed, c.change))
		s, err := Open("db", WithFS(fs))
		if err != nil {
			t.Fatalf("%s: Open: %v", c.what, err)
		}
		if st := s.Stats(); st.CheckpointUnused != "" {
			t.Fatalf("%s: Open did not use the checkpoint: %s", c.what, st.CheckpointUnused)
		}
		if err := s.Verify(); !isIndexError(err) || !strings.Contains(err.Error(), c.detail) {
			t.Fatalf("%s: Verify: %v; want the index found wrong: %q", c.what, err, c.detail)
		}
		repairsIndex(t, s, fs, w.want, c.what)
	}
}

// hashOf is Store.hash of key, for a store of seed seed.
func hashOf(seed uint64, key string) uint64 {
	return (&Store{seed: seed}).hash([]byte(key))
}

// TestVerifyDuringWritesFindsNothing: Verify of a sound store while
// writers put, overwrite and delete keys (growing the index through its
// splits, with checkpoints and compactions between the Verify calls)
// finds no damage, the index included: it compares the
// log as it was when it began with a snapshot of the index taken then
// (run with -race). Then the store holds every writer's model.
func TestVerifyDuringWritesFindsNothing(t *testing.T) {
	t.Parallel()
	s, err := Open("db", WithFS(NewMemFS()), WithLogFileSize(1<<20), WithAutoCompact(0.5, 256<<10), WithCheckpoints(0.05, 1000))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Each writer stops after maxWrites, or at done, or at an error.
	const writers, verifies, maxWrites = 2, 8, 300_000
	wants := make([]map[string]string, writers)
	done := make(chan struct{})
	progress := make(chan struct{}, 1) // a writer wrote 1,000 more records
	errs := make(chan error, writers)
	for w := range writers {
		wants[w] = map[string]string{}
		go func() {
			want := wants[w]
			for i := 1; i <= maxWrites; i++ {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				k := fmt.Sprintf("w%d-%d", w, i%8000)
				var err error
				if _, ok := want[k]; ok && i%5 == 0 {
					_, err = s.Delete([]byte(k))
					delete(want, k)
				} else {
					v := fmt.Sprintf("value %d", i)
					err = s.Put([]byte(k), []byte(v))
					want[k] = v
				}
				if err != nil {
					errs <- err
					return
				}
				if i%1000 == 0 {
					select {
					case progress <- struct{}{}:
					default:
					}
				}
			}
			errs <- nil
		}()
	}
	stopped := 0
	for i := range verifies {
		if stopped < writers {
			select {
			case <-progress: // the store has changed since the last Verify
			case err := <-errs:
				if err != nil {
					t.Fatal(err)
				}
				stopped++
			}
		}
		if err := s.Verify(); err != nil {
			t.Errorf("Verify %d during writes: %v", i, err)
			break
		}
	}
	close(done)
	for ; stopped < writers; stopped++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	all := map[string]string{}
	for _, want := range wants {
		for k, v := range want {
			all[k] = v
		}
	}
	hasModel(t, s, all, "after the writes")
	st := s.Stats()
	t.Logf("%d keys, %d checkpoints, %d compactions", st.Keys, st.Checkpoints, st.Compactions)
}
