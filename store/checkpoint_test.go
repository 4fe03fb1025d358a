package store_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
	"github.com/dedupkit/cuckoo/store"
)

// TestCheckpointBoundsReplay: with checkpoints every max(200, keys/10)
// records, the records written since the last checkpoint never reach
// that, and a crash at any point costs Open the replay of exactly those
// records, with every acknowledged write there. A compaction writes a
// checkpoint of its own.
func TestCheckpointBoundsReplay(t *testing.T) {
	t.Parallel()
	rng := testseed.Rand(t)
	fs := store.NewMemFS()
	opts := []store.Option{store.WithFS(fs), store.WithSync(store.SyncAlways), store.WithLogFileSize(16 << 10),
		store.WithAutoCompact(0, 0), store.WithCheckpoints(0.1, 200), store.WithInlineCheckpoints()}
	s, err := store.Open("db", opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := map[string]string{}
	crashes := 0
	for i := range 6000 {
		k := fmt.Sprintf("key-%d", rng.IntN(3000))
		switch _, ok := want[k]; {
		case ok && rng.IntN(4) == 0:
			if _, err := s.Delete([]byte(k)); err != nil {
				t.Fatal(err)
			}
			delete(want, k)
		case i == 3000:
			if err := s.Compact(); err != nil {
				t.Fatal(err)
			}
			if st := s.Stats(); st.SinceCheckpoint != 0 || st.Checkpoints == 0 {
				t.Fatalf("after a compaction: %d records since the last of %d checkpoints", st.SinceCheckpoint, st.Checkpoints)
			}
		default:
			v := fmt.Sprintf("v%d", i)
			if err := s.Put([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			want[k] = v
		}
		st := s.Stats()
		if due := max(200, st.Keys/10); st.SinceCheckpoint >= due {
			t.Fatalf("op %d: %d records since the last checkpoint; one is due every %d", i, st.SinceCheckpoint, due)
		}
		if rng.IntN(300) != 0 && i != 3000 {
			continue
		}
		crashes++
		c := fs.CrashLosingUnsynced()
		if openChecked(t, c.Clone(), want, fmt.Sprintf("crash at op %d", i)) {
			t.Fatalf("op %d: a crash left a store Open refuses", i)
		}
		s2, err := store.Open("db", store.WithFS(c))
		if err != nil {
			t.Fatal(err)
		}
		if got := s2.Stats().Replayed; got != st.SinceCheckpoint {
			t.Fatalf("op %d: Open after a crash replayed %d records; %d were written after the last checkpoint", i, got, st.SinceCheckpoint)
		}
		s2.Close()
	}
	t.Logf("%d crashes, %d checkpoints", crashes, s.Stats().Checkpoints)
}

// crashedWithCheckpoints is a store left by a crash, written with
// checkpoints every 100 records or so: a checkpoint covers most of its
// sealed log files.
func crashedWithCheckpoints(t *testing.T, ops int) ackedStore {
	t.Helper()
	return buildAcked(t, testseed.Rand(t), ops, ops/5, false, store.WithCheckpoints(0.05, 100), store.WithInlineCheckpoints())
}

// TestTruncateWithCheckpoints cuts each log file of a store left by a crash
// after periodic checkpoints at every ~100th offset and every record
// boundary: Open either returns ErrCorrupt or has every acknowledged
// write. A cut of the active log file below what the checkpoint covers
// is ErrCorrupt; past it, a torn tail.
func TestTruncateWithCheckpoints(t *testing.T) {
	t.Parallel()
	ops := 400
	if testlong.Enabled() {
		ops = 3000
	}
	rng := testseed.Rand(t)
	base := crashedWithCheckpoints(t, ops)
	corrupt, opened := 0, 0
	for _, file := range logFiles(base.fs) {
		c, o := cutAndOpen(t, base, file, cuts(rng, base.fs.ReadFileBytes(file)))
		corrupt, opened = corrupt+c, opened+o
	}
	if corrupt == 0 {
		t.Fatal("no cut was refused")
	}
	t.Logf("%d cuts refused (ErrCorrupt), %d opened intact", corrupt, opened)
}

// flips returns offsets of a file at which to flip a bit: every one of
// its first head bytes, then one in every ~100.
func flips(n, head int) []int {
	var fs []int
	for i := 0; i < n; i++ {
		fs = append(fs, i)
		if i >= head {
			i += 96
		}
	}
	return fs
}

// openFlipped opens a store with a flipped bit in one of its log's
// records: Open either returns ErrCorrupt, or opens, and then every
// acknowledged key reads its value or ErrCorrupt (never another value,
// never absent), and Verify reports the damage.
func openFlipped(t *testing.T, fs *store.MemFS, want map[string]string, what string) (refused bool) {
	t.Helper()
	s := openOrRefused(t, fs, what)
	if s == nil {
		return true
	}
	defer s.Close()
	checkAcked(t, s, want, what, true)
	var ce *store.CorruptError
	if err := s.Verify(); !errors.As(err, &ce) || !strings.HasSuffix(ce.File, ".log") {
		t.Fatalf("%s: Open took the damaged store, and Verify says %v", what, err)
	}
	return false
}

// TestFlippedBitsLog flips a bit at every ~100th offset (and in every
// byte of the header) of every sealed log file of a store left by a crash
// with periodic checkpoints and of one left by a crash with none, and of
// every log file of one closed cleanly. Open refuses the store, or the
// damage shows in Get of the keys it touches and in Verify: never a
// wrong value. (The records of the active log file that no checkpoint
// covers are those a crash may tear: a damaged last one is cut.)
func TestFlippedBitsLog(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	ops := 300
	if testlong.Enabled() {
		ops = 2000
	}
	rng := testseed.Rand(t)
	bases := map[string]ackedStore{
		"crash/checkpoints=periodic": crashedWithCheckpoints(t, ops),
		"crash/checkpoints=none":     buildAcked(t, rng, ops, ops/5, false, store.WithCheckpoints(0, 0)),
		"close":                      buildAcked(t, rng, ops, ops/5, true),
	}
	for name, base := range bases {
		t.Run(name, func(t *testing.T) {
			refused, opened := 0, 0
			files := logFiles(base.fs)
			if strings.HasPrefix(name, "crash") {
				files = files[:len(files)-1]
			}
			for _, file := range files {
				full := base.fs.ReadFileBytes(file)
				for _, at := range flips(len(full), logHeader) {
					fs := base.fs.Clone()
					b := append([]byte(nil), full...)
					b[at] ^= 1 << rng.IntN(8)
					fs.WriteFileBytes(file, b)
					if openFlipped(t, fs, base.want, fmt.Sprintf("%s, bit of byte %d flipped", file, at)) {
						refused++
					} else {
						opened++
					}
				}
			}
			t.Logf("%d flips refused by Open, %d reported by Get and Verify", refused, opened)
		})
	}
}

// TestDamagedCheckpoint flips a bit in every byte of the checkpoint's
// header and log file table and in one byte in every ~100 of the rest,
// and cuts it short: Open falls back to the log (a damaged checkpoint is
// a cache lost) and has every acknowledged write, or refuses the store.
func TestDamagedCheckpoint(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	base := crashedWithCheckpoints(t, 400)
	const idx = "db/INDEX"
	full := base.fs.ReadFileBytes(idx)
	if full == nil {
		t.Fatal("no checkpoint")
	}
	rng := testseed.Rand(t)
	step := 1
	if !testlong.Enabled() {
		step = 37 // a sample of the offsets past the head
	}
	for i, at := range flips(len(full), 300) {
		if at >= 300 && i%step != 0 {
			continue
		}
		fs := base.fs.Clone()
		b := append([]byte(nil), full...)
		b[at] ^= 1 << rng.IntN(8)
		fs.WriteFileBytes(idx, b)
		if openChecked(t, fs, base.want, fmt.Sprintf("checkpoint with a bit of byte %d flipped", at)) {
			t.Fatalf("byte %d of the checkpoint flipped: Open refused the store", at)
		}
	}
	for _, n := range []int{0, 7, 40, 300, len(full) / 2, len(full) - 1} {
		fs := base.fs.Clone()
		fs.WriteFileBytes(idx, full[:n])
		if openChecked(t, fs, base.want, fmt.Sprintf("checkpoint cut at %d", n)) {
			t.Fatalf("checkpoint cut at %d: Open refused the store", n)
		}
	}
}

// TestCheckpointLengths: the lengths a checkpoint and the manifest
// record are checked against the files, and reported with the file and
// the offset.
func TestCheckpointLengths(t *testing.T) {
	t.Parallel()
	base := buildAcked(t, testseed.Rand(t), 300, 60, true)
	files := logFiles(base.fs)
	last, sealed := files[len(files)-1], files[0]
	wantCorrupt := func(fs *store.MemFS, file string, offset int64, what string) {
		t.Helper()
		_, err := store.Open("db", store.WithFS(fs))
		var ce *store.CorruptError
		if !errors.As(err, &ce) || ce.File != file || ce.Offset != offset {
			t.Fatalf("%s: %v; want ErrCorrupt naming %s at offset %d", what, err, file, offset)
		}
	}
	fs := base.fs.Clone()
	b := fs.ReadFileBytes(last)
	fs.WriteFileBytes(last, b[:len(b)-1])
	wantCorrupt(fs, last, int64(len(b)-1), "the active log file a byte shorter than the checkpoint says")

	for _, withIndex := range []bool{true, false} {
		fs = base.fs.Clone()
		if !withIndex {
			fs.Remove("db/INDEX")
		}
		b = fs.ReadFileBytes(sealed)
		fs.WriteFileBytes(sealed, append(b, b[logHeader:logHeader+30]...))
		wantCorrupt(fs, sealed, int64(len(b)), fmt.Sprintf("a sealed log file longer than recorded (checkpoint %v)", withIndex))
		fs.WriteFileBytes(sealed, b[:len(b)-30])
		wantCorrupt(fs, sealed, int64(len(b)-30), fmt.Sprintf("a sealed log file shorter than recorded (checkpoint %v)", withIndex))
	}

	// Two records swapped in a sealed log file: each intact, but not what
	// was sealed. Open reads the log file whole without a checkpoint, and
	// with one when the entries it samples find a key's entry pointing at
	// the other key's record (Open then reads the whole log instead);
	// Verify always. (fillFixed's records are all of one length.)
	fs = store.NewMemFS()
	s, err := store.Open("db", store.WithFS(fs), store.WithSeed(1), store.WithLogFileSize(4<<10))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if err := s.Put([]byte(fmt.Sprintf("key%03d", i)), []byte(fmt.Sprintf("value %13d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sealed = logFiles(fs)[0]
	b = fs.ReadFileBytes(sealed)
	first := append([]byte(nil), b[logHeader:logHeader+recSize]...)
	copy(b[logHeader:], b[logHeader+recSize:logHeader+2*recSize])
	copy(b[logHeader+recSize:], first)
	fs.WriteFileBytes(sealed, b)
	noIndex := fs.Clone()
	noIndex.Remove("db/INDEX")
	wantCorrupt(noIndex, sealed, logHeader, "two records swapped")
	var ce *store.CorruptError
	s, err = store.Open("db", store.WithFS(fs))
	if errors.As(err, &ce) && ce.File == sealed && ce.Offset == logHeader {
		return // the sample found it
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Verify(); !errors.As(err, &ce) || ce.File != sealed {
		t.Fatalf("Verify of a sealed log file with two records swapped: %v", err)
	}
}

// TestStaleCheckpoint: a checkpoint of the log before a compaction (a
// crash came after the compaction switched to the new log and before it
// wrote its own) is not used: Open replays the whole log.
func TestStaleCheckpoint(t *testing.T) {
	t.Parallel()
	base := buildAcked(t, testseed.Rand(t), 300, 60, true)
	old := base.fs.ReadFileBytes("db/INDEX")
	s, err := store.Open("db", store.WithFS(base.fs), store.WithLogFileSize(4<<10))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	c := base.fs.CrashLosingUnsynced()
	s.Close()
	c.WriteFileBytes("db/INDEX", old)
	if openChecked(t, c.Clone(), base.want, "a stale checkpoint") {
		t.Fatal("Open refused a store with a checkpoint of the log before a compaction")
	}
	s, err = store.Open("db", store.WithFS(c))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st := s.Stats(); st.Replayed != uint64(len(base.want)) || !strings.Contains(st.CheckpointUnused, "another log") {
		t.Fatalf("replayed %d records, CheckpointUnused %q; the compacted log holds %d, and the checkpoint is of another log",
			st.Replayed, st.CheckpointUnused, len(base.want))
	}
}

// TestCheckpointConcurrent: checkpoints written in the background while
// two writers and two readers go on (run with -race): readers always see
// the values written, and a crash at the end loses no acknowledged write.
func TestCheckpointConcurrent(t *testing.T) {
	t.Parallel()
	fs := store.NewMemFS()
	s, err := store.Open("db", store.WithFS(fs), store.WithSync(store.SyncAlways), store.WithLogFileSize(64<<10),
		store.WithAutoCompact(0.5, 64<<10), store.WithCheckpoints(0.2, 300))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const perWriter = 3000
	wants := make([]map[string]string, 2)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	var done atomic.Bool
	for w := range wants {
		wants[w] = map[string]string{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				k := fmt.Sprintf("w%d-%d", w, i%700)
				v := fmt.Sprintf("v%d", i)
				if i%5 == 4 {
					if _, err := s.Delete([]byte(k)); err != nil {
						errs <- err
						return
					}
					delete(wants[w], k)
					continue
				}
				if err := s.Put([]byte(k), []byte(v)); err != nil {
					errs <- err
					return
				}
				wants[w][k] = v
			}
		}()
	}
	var rg sync.WaitGroup
	for r := range 2 {
		rg.Add(1)
		go func() {
			defer rg.Done()
			for i := 0; !done.Load(); i++ {
				v, err := s.Get([]byte(fmt.Sprintf("w%d-%d", r, i%700)))
				if err != nil && !errors.Is(err, store.ErrNotFound) || err == nil && !strings.HasPrefix(string(v), "v") {
					errs <- fmt.Errorf("reader: %q %v", v, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	done.Store(true)
	rg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// A checkpoint the writes started may still be under way (on a busy
	// machine its goroutine may start after the writers end).
	st := s.Stats()
	for deadline := time.Now().Add(time.Minute); st.Checkpoints == 0 && time.Now().Before(deadline); st = s.Stats() {
		time.Sleep(5 * time.Millisecond)
	}
	if st.Checkpoints == 0 || st.CheckpointError != nil {
		t.Fatalf("%d checkpoints, error %v", st.Checkpoints, st.CheckpointError)
	}
	want := map[string]string{}
	for _, w := range wants {
		for k, v := range w {
			want[k] = v
		}
	}
	if openChecked(t, fs.CrashLosingUnsynced(), want, "a crash after concurrent writes and checkpoints") {
		t.Fatal("Open refused the store")
	}
	t.Logf("%d checkpoints, %d compactions", st.Checkpoints, st.Compactions)
}

// TestInheritedTail: records a killed process wrote and did not sync are
// synced by the next process before a checkpoint records their length,
// so that a crash of the machine later cannot leave the log shorter
// than its checkpoint says.
func TestInheritedTail(t *testing.T) {
	t.Parallel()
	for _, closeIt := range []bool{true, false} {
		fs := store.NewMemFS()
		s, err := store.Open("db", store.WithFS(fs), store.WithSync(store.SyncNever), store.WithBufferSize(512))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			if err := s.Put([]byte(fmt.Sprint("k", i)), []byte("a value of some length")); err != nil {
				t.Fatal(err)
			}
		}
		// Killed: the records it wrote are in the files, not synced.
		fs = fs.ProcessCrash()
		s, err = store.Open("db", store.WithFS(fs), store.WithSync(store.SyncNever))
		if err != nil {
			t.Fatal(err)
		}
		if closeIt {
			err = s.Close()
		} else {
			err = s.Checkpoint()
		}
		if err != nil {
			t.Fatal(err)
		}
		s2, err := store.Open("db", store.WithFS(fs.CrashLosingUnsynced()))
		if err != nil {
			t.Fatalf("a crash of the machine after the next process's checkpoint (close %v): %v", closeIt, err)
		}
		if s2.Len() == 0 {
			t.Fatal("the records of the killed process were not synced")
		}
		s2.Close()
	}
}
