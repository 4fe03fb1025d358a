package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
)

// state returns every key with its type and its whole dump: two servers
// hold equal filters exactly when their states are equal.
func state(t *testing.T, c *conn) map[string]string {
	t.Helper()
	keys := render(c.do("KEYS", "*"))
	st := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(keys), "\n") {
		if line == "(empty array)" || line == "" {
			continue
		}
		_, q, _ := strings.Cut(line, ") ")
		key := strings.Trim(q, `"`)
		typ := strings.TrimSpace(c.do("TYPE", key))
		cmd := "CF.SCANDUMP"
		if typ == "+MBbloom--" {
			cmd = "BF.SCANDUMP"
		}
		_, chunks := scanDumpAll(t, c, cmd, key)
		st[key] = typ + " " + strings.Join(chunks, "")
	}
	return st
}

func sameState(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d keys, want %d", what, len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: key %q differs", what, k)
		}
	}
}

// writeLoad runs a random mix of writes on a few keys.
func writeLoad(t *testing.T, c *conn, rng *rand.Rand, n int) {
	t.Helper()
	keys := []string{"a", "b", "c", "d"}
	for i := range n {
		k := keys[rng.IntN(len(keys))]
		item := fmt.Sprint("item", rng.IntN(300))
		switch r := rng.IntN(100); {
		case r < 45:
			c.do("CF.ADD", "cf:"+k, item)
		case r < 55:
			c.do("CF.ADDNX", "cf:"+k, item)
		case r < 65:
			c.do("CF.DEL", "cf:"+k, item)
		case r < 72:
			c.do("CF.INSERT", "cf:"+k, "ITEMS", item, item+"x")
		case r < 85:
			c.do("BF.ADD", "bf:"+k, item)
		case r < 88:
			c.do("BF.MADD", "bf:"+k, item, item+"y")
		case r < 90:
			c.do("DEL", "cf:"+k)
		case r < 92:
			c.do("RENAME", "cf:"+k, "cf:"+keys[rng.IntN(len(keys))])
		case r < 93:
			c.do("CF.RESERVE", fmt.Sprint("fixed", i), "100", "EXPANSION", "0")
		case r < 94:
			c.do("BF.RESERVE", fmt.Sprint("fixedbf", i), "0.01", "50", "NONSCALING")
		case r < 95 && n > 1000:
			c.do("FLUSHALL")
		default:
			c.do("CF.ADD", "cf:"+k, item)
		}
	}
}

// TestRestartRecovers: after random writes, a restart from the log alone,
// then from a snapshot plus the log, gives back the exact same filters.
func TestRestartRecovers(t *testing.T) {
	testlong.SkipQuickRun(t)
	parallel(t)
	rng := testseed.Rand(t)
	for _, sync := range []SyncPolicy{SyncEverySecond, SyncAlways, SyncNever} {
		t.Run("appendfsync="+sync.String(), func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Sync = sync
			s, addr := startServer(t, cfg)
			c := dial(t, addr)
			writeLoad(t, c, rng, 800)
			want := state(t, c)
			s.Close() // no snapshot: the log alone
			s, addr = startServer(t, cfg)
			c = dial(t, addr)
			sameState(t, "log only", state(t, c), want)

			writeLoad(t, c, rng, 400)
			if got := c.do("SAVE"); got != "+OK\r\n" {
				t.Fatal(got)
			}
			writeLoad(t, c, rng, 400)
			want = state(t, c)
			s.Close()
			s, addr = startServer(t, cfg)
			c = dial(t, addr)
			sameState(t, "snapshot and log", state(t, c), want)

			stopServer(t, s) // a graceful stop takes no snapshot in this config
			cfg.SaveOnShutdown = true
			s, addr = startServer(t, cfg)
			stopServer(t, s)
			_, addr = startServer(t, cfg)
			sameState(t, "snapshot on shutdown", state(t, dial(t, addr)), want)
		})
	}
}

// TestSnapshotDuringWrites takes snapshots while clients write, then
// restarts: whatever the timing, the state comes back exactly (every write
// is in the snapshot or replayed after it, never both, never neither).
func TestSnapshotDuringWrites(t *testing.T) {
	parallel(t)
	seed := testseed.Seed(t)
	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			writeLoad(t, dial(t, addr), testseed.New(seed+uint64(w)), 700)
		}()
	}
	admin := dial(t, addr)
	saves := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for loop := true; loop; {
		select {
		case <-done:
			loop = false
		default:
			if got := admin.do("BGSAVE"); got == "+Background saving started\r\n" {
				saves++
			}
			waitFor(t, "the snapshot", func() bool { return !s.save.running.Load() })
		}
	}
	if saves < 2 {
		t.Logf("only %d snapshots overlapped the writes", saves)
	}
	want := state(t, admin)
	s.Close()
	_, addr = startServer(t, cfg)
	sameState(t, "after snapshots during writes", state(t, dial(t, addr)), want)
}

// logPath returns the newest log file of dir.
func logPath(t *testing.T, dir string) string {
	epochs, err := logFiles(dir)
	if err != nil || len(epochs) == 0 {
		t.Fatalf("no log in %s: %v", dir, err)
	}
	return filepath.Join(dir, logName(epochs[len(epochs)-1]))
}

// TestTornTail: a log that ends in a torn write (a crash during a write:
// the file ends inside a record, or holds zeros where a machine crash
// left its last blocks unwritten) loses only that record, is cut, and
// the cut is reported with its proof.
func TestTornTail(t *testing.T) {
	parallel(t)
	rec := encodeRecordForTest(1, "CF.ADD", "k", "lost")
	zeroedFrom := func(n int) []byte {
		b := append([]byte(nil), rec...)
		clear(b[n:])
		return append(b, make([]byte, 100)...)
	}
	for _, tc := range []struct {
		tail  string
		extra []byte
		proof string
	}{
		{"half", rec[:len(rec)/2], "the file ends inside a record whose header is whole"},
		{"header", rec[:5], "the file ends inside a record's header"},
		{"zeros", make([]byte, 300), "the file is zeros from byte"},
		{"zeroed-header", zeroedFrom(6), "a header checksum mismatch, and the file is zeros from byte"},
		{"zeroed-body", zeroedFrom(recordHeader + 10), "a checksum mismatch, and the file is zeros from byte"},
		{"zeroed-last-byte", zeroedFrom(len(rec) - 1), "a checksum mismatch, and the file is zeros from byte"},
	} {
		t.Run("tail="+tc.tail, func(t *testing.T) {
			cfg := testConfig(t)
			var log logSink
			cfg.Logf = log.logf
			s, addr := startServer(t, cfg)
			c := dial(t, addr)
			for i := range 50 {
				c.do("CF.ADD", "k", fmt.Sprint(i))
			}
			want := state(t, c)
			s.Close()
			path := logPath(t, cfg.Dir)
			before, _ := os.ReadFile(path)
			os.WriteFile(path, append(before, tc.extra...), 0o640)
			_, addr = startServer(t, cfg)
			sameState(t, "after a torn tail", state(t, dial(t, addr)), want)
			after, _ := os.ReadFile(path)
			if len(after) < len(before) || string(after[:len(before)]) != string(before) {
				t.Fatal("the good records were changed")
			}
			cut := fmt.Sprintf("cut the torn end of %s at byte %d, %d bytes (%s", logName(0), len(before), len(tc.extra), tc.proof)
			if !strings.Contains(log.String(), cut) {
				t.Fatalf("the cut was not reported as %q; log:\n%s", cut, log.String())
			}
		})
	}
}

// encodeRecordForTest returns a log record as the server writes it.
func encodeRecordForTest(epoch uint64, args ...string) []byte {
	a := &aof{}
	bargs := make([][]byte, len(args))
	for i, s := range args {
		bargs[i] = []byte(s)
	}
	a.append(epoch, bargs)
	return a.mu.buf
}

// TestDamagedLog: damage before the end stops the server from starting,
// with a message naming the file, the offset and --repair; with Repair it
// starts from the records before the damage.
func TestDamagedLog(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	for i := range 100 {
		c.do("CF.ADD", "k", fmt.Sprint(i))
	}
	s.Close()
	path := logPath(t, cfg.Dir)
	data, _ := os.ReadFile(path)
	// Damage the record of item 60 (record 0 creates the filter).
	var offsets []int64
	readLog(path, 1<<20, func(off int64, _ uint64, _ [][]byte) error { offsets = append(offsets, off); return nil })
	damaged := append([]byte(nil), data...)
	damaged[offsets[61]+12] ^= 0xff
	os.WriteFile(path, damaged, 0o640)

	_, err := New(cfg)
	if !errors.Is(err, ErrDataDir) {
		t.Fatalf("New on a damaged log: %v, want ErrDataDir", err)
	}
	for _, want := range []string{logName(0), fmt.Sprintf("byte %d", offsets[61]), "checksum", "--repair"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
	cfg.Repair = true
	_, addr = startServer(t, cfg)
	c = dial(t, addr)
	for i := range 60 {
		if c.do("CF.EXISTS", "k", fmt.Sprint(i)) != ":1\r\n" {
			t.Fatalf("item %d of the intact prefix is lost", i)
		}
	}
	if got := c.do("CF.INFO", "k"); !strings.Contains(got, "Number of items inserted\r\n:60\r\n") {
		t.Fatalf("after repair: %q", got)
	}
}

// TestDamagedSnapshot: a damaged snapshot stops the server from starting.
func TestDamagedSnapshot(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	// BF.CARD counts the adds that answered 1; a false positive (one of
	// 100 adds at the default 1 %, in a few runs in a hundred) answers 0.
	card := 0
	for i := range 100 {
		if c.do("BF.ADD", "b", fmt.Sprint(i)) == ":1\r\n" {
			card++
		}
	}
	c.do("SAVE")
	s.Close()
	path := filepath.Join(cfg.Dir, snapName)
	data, _ := os.ReadFile(path)
	for _, cut := range []int{len(data) / 2, len(data) - 1} {
		damaged := append([]byte(nil), data...)
		damaged[cut] ^= 0x10
		os.WriteFile(path, damaged, 0o640)
		_, err := New(cfg)
		if !errors.Is(err, ErrDataDir) || !strings.Contains(err.Error(), snapName) {
			t.Fatalf("damage at byte %d: %v", cut, err)
		}
	}
	os.WriteFile(path, data[:len(data)-10], 0o640)
	if _, err := New(cfg); !errors.Is(err, ErrDataDir) {
		t.Fatalf("a truncated snapshot: %v", err)
	}
	os.WriteFile(path, data, 0o640)
	_, addr = startServer(t, cfg)
	if got := dial(t, addr).do("BF.CARD", "b"); got != fmt.Sprintf(":%d\r\n", card) || card < 90 {
		t.Fatalf("the intact snapshot: %q, %d added", got, card)
	}
}

// TestSnapshotsOnly: with the log off, a snapshot keeps the data; a
// restart from a directory with logs folds them into a snapshot.
func TestSnapshotsOnly(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	c.do("CF.ADD", "logged", "x")
	s.Close()
	cfg.AppendOnly = false
	s, addr = startServer(t, cfg)
	c = dial(t, addr)
	if got := c.do("CF.EXISTS", "logged", "x"); got != ":1\r\n" {
		t.Fatalf("a logged write after turning the log off: %q", got)
	}
	if epochs, _ := logFiles(cfg.Dir); len(epochs) != 0 {
		t.Fatalf("log files %v left after folding them into a snapshot", epochs)
	}
	c.do("CF.ADD", "saved", "x")
	c.do("SAVE")
	c.do("CF.ADD", "unsaved", "x")
	s.Close()
	_, addr = startServer(t, cfg)
	c = dial(t, addr)
	if c.do("CF.EXISTS", "saved", "x") != ":1\r\n" || c.do("EXISTS", "unsaved") != ":0\r\n" {
		t.Fatal("snapshots only: the state is not the last snapshot's")
	}
}

// TestDirLocked: two servers cannot share a data directory.
func TestDirLocked(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	startServer(t, cfg)
	if _, err := New(cfg); !errors.Is(err, ErrDataDir) || !strings.Contains(err.Error(), "another") {
		t.Fatalf("a second server on the directory: %v", err)
	}
}

// TestInfoDescribesFilter: CF.INFO and BF.INFO describe what a filter
// holds, not how it got there: the same replies, Size included, after a
// dump is loaded into another key, after a restart that replays the log,
// and after one that loads a snapshot.
func TestInfoDescribesFilter(t *testing.T) {
	testlong.SkipQuickRun(t)
	parallel(t)
	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	c.do("CF.RESERVE", "fixed", "5000", "EXPANSION", "0", "BUCKETSIZE", "3")
	c.do("CF.RESERVE", "wide", "5000", "BUCKETSIZE", "16")
	c.do("BF.RESERVE", "bloom", "0.01", "500")
	// The inserts past capacity make the growing filters add tables and
	// keep search scratch, and the deletes free slots again.
	var cmds [][]string
	for i := range 20_000 {
		item := fmt.Sprint("item", i%7000)
		for _, k := range []string{"auto", "wide"} {
			cmds = append(cmds, []string{"CF.ADD", k, item})
		}
		if i < 4000 {
			cmds = append(cmds, []string{"CF.ADD", "fixed", item})
		}
		cmds = append(cmds, []string{"BF.ADD", "bloom", item})
		if i%5 == 0 {
			cmds = append(cmds, []string{"CF.DEL", "auto", item})
		}
	}
	c.pipeline(cmds)
	infos := func(c *conn) map[string]string {
		m := map[string]string{}
		for _, k := range []string{"fixed", "auto", "wide"} {
			m[k] = c.do("CF.INFO", k)
		}
		m["bloom"] = c.do("BF.INFO", "bloom")
		return m
	}
	want := infos(c)
	if strings.Contains(want["auto"], "+Number of filters\r\n:1\r\n") {
		t.Fatalf("the filter CF.ADD made did not grow: %q", want["auto"])
	}
	for k, info := range want {
		dump, load, inf := "CF.SCANDUMP", "CF.LOADCHUNK", "CF.INFO"
		if k == "bloom" {
			dump, load, inf = "BF.SCANDUMP", "BF.LOADCHUNK", "BF.INFO"
		}
		iters, chunks := scanDumpAll(t, c, dump, k)
		for i := range chunks {
			if got := c.do(load, k+"-copy", iters[i], chunks[i]); got != "+OK\r\n" {
				t.Fatalf("%s %s chunk %d: %q", load, k, i, got)
			}
		}
		if got := c.do(inf, k+"-copy"); got != info {
			t.Errorf("%s of %s after a dump and load: %q\nwant %q", inf, k, got, info)
		}
		c.do("DEL", k+"-copy")
	}

	// A restart that replays the whole log, then one from a snapshot.
	stopServer(t, s)
	s, addr = startServer(t, cfg)
	c = dial(t, addr)
	if got := infos(c); !maps.Equal(got, want) {
		t.Errorf("after replaying the log: %q\nwant %q", got, want)
	}
	if got := c.do("SAVE"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	stopServer(t, s)
	_, addr = startServer(t, cfg)
	c = dial(t, addr)
	if got := infos(c); !maps.Equal(got, want) {
		t.Errorf("after loading a snapshot: %q\nwant %q", got, want)
	}
}

// obstruct makes path a directory, removing the file there, so that
// creating a file at path fails, and returns path (os.Remove lifts it).
func obstruct(t *testing.T, path string) string {
	t.Helper()
	os.Remove(path)
	if err := os.Mkdir(path, 0o750); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFailedSnapshotIsReported: a snapshot that fails before it writes
// anything (the next log file cannot be created; the snapshot's own file
// cannot) reports the failure where a successful one reports success:
// SAVE's error reply, INFO's rdb_last_bgsave_status, Stats' LastOK. The
// next snapshot that succeeds reports ok again.
func TestFailedSnapshotIsReported(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	status := func() string {
		info := c.do("INFO", "persistence")
		i := strings.Index(info, "rdb_last_bgsave_status:")
		if i < 0 {
			t.Fatalf("INFO persistence: %q", info)
		}
		return strings.Fields(info[i+len("rdb_last_bgsave_status:"):])[0]
	}
	for _, what := range []string{"the next log file", "the snapshot"} {
		name := snapName
		if what == "the next log file" {
			name = logName(s.ks.epoch.Load() + 1)
		}
		c.do("CF.ADD", "k", what)
		path := obstruct(t, filepath.Join(cfg.Dir, name))
		if r := c.do("SAVE"); !strings.HasPrefix(r, "-") {
			t.Fatalf("%s is a directory: SAVE answered %q", what, r)
		}
		if got := status(); got != "err" {
			t.Errorf("%s is a directory: rdb_last_bgsave_status %s after a failed SAVE", what, got)
		}
		if s.Stats().Snapshot.LastOK {
			t.Errorf("%s is a directory: Stats' LastOK after a failed SAVE", what)
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if r := c.do("SAVE"); r != "+OK\r\n" {
			t.Fatalf("SAVE: %q", r)
		}
		if got := status(); got != "ok" || !s.Stats().Snapshot.LastOK {
			t.Errorf("after a snapshot that succeeded: rdb_last_bgsave_status %s, LastOK %v", got, s.Stats().Snapshot.LastOK)
		}
	}
}

// TestReplyWaitsForTheWritesItSaw: a reply that tells of another
// connection's write (CF.ADDNX answering 0 for an item another client's
// CF.ADD just added) waits until the log holds that write, as its own
// writes' replies do: a kill -9 before the log write loses the write, and
// no client may have been told of it. The log's write is held back while
// the second client's command runs; its reply must not come until the
// write is released. Both with event loops (the two connections on two
// loops) and with a goroutine per connection.
func TestReplyWaitsForTheWritesItSaw(t *testing.T) {
	for _, loops := range []bool{true, false} {
		t.Run(fmt.Sprint("loops=", loops), func(t *testing.T) {
			if loops && !useLoops {
				t.Skip("no event loops on this system")
			}
			old := useLoops
			useLoops = loops
			defer func() { useLoops = old }()
			cfg := testConfig(t)
			cfg.Sync = SyncEverySecond
			_, addr := startServer(t, cfg)
			a, b := dial(t, addr), dial(t, addr)
			a.do("PING")
			b.do("PING")

			held, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			hold := func() error {
				once.Do(func() { close(held); <-release })
				return nil
			}
			logWriteHook.Store(&hold)
			defer logWriteHook.Store(nil)
			a.send(encode("CF.ADD", "k", "x"))
			select {
			case <-held:
			case <-time.After(testDeadline):
				t.Fatal("the log was never written")
			}
			b.send(encode("CF.ADDNX", "k", "x"))
			if r, err := b.replyWithin(300 * time.Millisecond); err == nil {
				close(release)
				t.Fatalf("CF.ADDNX answered %q before the log held the CF.ADD it found", r)
			}
			close(release)
			if r, err := a.reply(); err != nil || r != ":1\r\n" {
				t.Fatalf("CF.ADD: %q, %v", r, err)
			}
			if r, err := b.reply(); err != nil || r != ":0\r\n" {
				t.Fatalf("CF.ADDNX: %q, %v", r, err)
			}
		})
	}
}

// TestLogWriteFailure: when a write of the log fails, the write is not
// acknowledged (its connection is closed without the reply), every later
// write is refused with MISCONF while reads go on, INFO says so, and a
// restart gives back every acknowledged write and not the one that
// failed.
func TestLogWriteFailure(t *testing.T) {
	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	a, b := dial(t, addr), dial(t, addr)
	if r := a.do("CF.RESERVE", "k", "1000", "SEED", "1"); r != "+OK\r\n" { // no false positive for "failed"
		t.Fatalf("CF.RESERVE: %q", r)
	}
	if r := a.do("CF.ADD", "k", "kept"); r != ":1\r\n" {
		t.Fatalf("CF.ADD: %q", r)
	}
	fail := func() error { return errors.New("injected: no space left on device") }
	logWriteHook.Store(&fail)
	defer logWriteHook.Store(nil)
	a.send(encode("CF.ADD", "k", "failed"))
	if r, err := a.reply(); err == nil {
		t.Fatalf("the write the log could not keep was answered %q", r)
	}
	if r := b.do("CF.ADD", "k", "later"); !strings.HasPrefix(r, "-MISCONF") {
		t.Fatalf("a write after the failure: %q, want MISCONF", r)
	}
	if r := b.do("CF.EXISTS", "k", "kept"); r != ":1\r\n" {
		t.Fatalf("a read after the failure: %q", r)
	}
	if info := b.do("INFO", "persistence"); !strings.Contains(info, "aof_last_write_status:err") {
		t.Fatalf("INFO persistence after the failure: %q", info)
	}
	logWriteHook.Store(nil)
	s.Close()
	_, addr = startServer(t, cfg)
	c := dial(t, addr)
	if got, want := c.do("CF.MEXISTS", "k", "kept", "failed", "later"), "*3\r\n:1\r\n:0\r\n:0\r\n"; got != want {
		t.Fatalf("after the restart: CF.MEXISTS %q, want %q", got, want)
	}
	if r := c.do("CF.ADD", "k", "again"); r != ":1\r\n" {
		t.Fatalf("a write after the restart: %q", r)
	}
}

// TestNoLogSnapshotFailureRefusesWrites: without the append-only log, a
// failed snapshot makes the server refuse writes (MISCONF) while reads go
// on, until a snapshot succeeds: the snapshots are the only copy of the
// data, and no write is acknowledged that none can keep.
func TestNoLogSnapshotFailureRefusesWrites(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	cfg.AppendOnly = false
	_, addr := startServer(t, cfg)
	c := dial(t, addr)
	if r := c.do("CF.ADD", "k", "a"); r != ":1\r\n" {
		t.Fatalf("CF.ADD: %q", r)
	}
	path := obstruct(t, filepath.Join(cfg.Dir, snapName))
	if r := c.do("SAVE"); !strings.HasPrefix(r, "-") {
		t.Fatalf("SAVE with the snapshot a directory: %q", r)
	}
	if r := c.do("CF.ADD", "k", "b"); !strings.HasPrefix(r, "-MISCONF") {
		t.Fatalf("a write after the failed snapshot: %q, want MISCONF", r)
	}
	if r := c.do("CF.EXISTS", "k", "a"); r != ":1\r\n" {
		t.Fatalf("a read after the failed snapshot: %q", r)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if r := c.do("SAVE"); r != "+OK\r\n" {
		t.Fatalf("SAVE: %q", r)
	}
	if r := c.do("CF.ADD", "k", "b"); r != ":1\r\n" {
		t.Fatalf("a write after a snapshot succeeded: %q", r)
	}
}

// TestNoLogShutdownRetriesSnapshot: without the append-only log, a
// Shutdown whose snapshot fails keeps the writes in memory and tries
// again until it succeeds; the next start has them. Close ends the
// retrying, and Shutdown then returns the snapshot's error.
func TestNoLogShutdownRetriesSnapshot(t *testing.T) {
	parallel(t)
	for _, fix := range []bool{true, false} {
		t.Run(fmt.Sprint("obstacle removed=", fix), func(t *testing.T) {
			cfg := testConfig(t)
			cfg.AppendOnly = false
			cfg.SaveOnShutdown = true
			retrying := make(chan struct{})
			var once sync.Once
			logf := cfg.Logf
			cfg.Logf = func(format string, args ...any) {
				logf(format, args...)
				if strings.Contains(format, "trying again") {
					once.Do(func() { close(retrying) })
				}
			}
			s, addr := startServer(t, cfg)
			c := dial(t, addr)
			if r := c.do("CF.ADD", "k", "a"); r != ":1\r\n" {
				t.Fatalf("CF.ADD: %q", r)
			}
			path := obstruct(t, filepath.Join(cfg.Dir, snapName))
			stopped := make(chan error, 1)
			go func() { stopped <- s.Shutdown(context.Background()) }()
			select {
			case <-retrying:
			case err := <-stopped:
				t.Fatalf("Shutdown returned %v without trying the snapshot again", err)
			case <-time.After(testDeadline):
				t.Fatal("no retry")
			}
			if !fix {
				s.Close()
				if err := <-stopped; err == nil {
					t.Fatal("Shutdown ended by Close returned no error, with no snapshot taken")
				}
				return
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := <-stopped; err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			cfg.Logf = logf
			_, addr = startServer(t, cfg)
			if r := dial(t, addr).do("CF.EXISTS", "k", "a"); r != ":1\r\n" {
				t.Fatalf("after the restart: CF.EXISTS %q", r)
			}
		})
	}
}

// TestKeyVisibleOnlyOnceLogged: a key a command creates is visible to the
// other connections (EXISTS, TYPE, KEYS, which take no lock of the key)
// only once its creation is in the log, so that their replies, which wait
// for the log records appended before them, never tell of a creation a
// kill -9 then loses. Each command that creates a key is run alone, and
// the log must have grown when the key appears.
func TestKeyVisibleOnlyOnceLogged(t *testing.T) {
	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	c.do("CF.RESERVE", "cf-src", "100")
	c.do("BF.RESERVE", "bf-src", "0.01", "100")
	_, cfChunks := scanDumpAll(t, c, "CF.SCANDUMP", "cf-src")
	_, bfChunks := scanDumpAll(t, c, "BF.SCANDUMP", "bf-src")
	if len(cfChunks) != 1 || len(bfChunks) != 1 {
		t.Fatalf("dumps of %d and %d chunks, want 1", len(cfChunks), len(bfChunks))
	}
	var mu sync.Mutex
	var before int64
	var unlogged []string
	hook := func(key []byte) {
		mu.Lock()
		defer mu.Unlock()
		if s.aof.appended.Load() == before {
			unlogged = append(unlogged, string(key))
		}
	}
	keyCreatedHook.Store(&hook)
	defer keyCreatedHook.Store(nil)
	for _, cmd := range [][]string{
		{"CF.RESERVE", "a", "100"},
		{"CF.ADD", "b", "x"},
		{"CF.ADDNX", "c", "x"},
		{"CF.INSERT", "d", "ITEMS", "x"},
		{"CF.INSERTNX", "e", "CAPACITY", "100", "ITEMS", "x"},
		{"CF.RESERVE", "f", "100", "WINDOW", "60"},
		{"CF.LOADCHUNK", "g", fmt.Sprint(len(cfChunks[0]) + 1), cfChunks[0]},
		{"BF.RESERVE", "h", "0.01", "100"},
		{"BF.ADD", "i", "x"},
		{"BF.MADD", "j", "x"},
		{"BF.INSERT", "k", "ITEMS", "x"},
		{"BF.LOADCHUNK", "l", fmt.Sprint(len(bfChunks[0]) + 1), bfChunks[0]},
	} {
		mu.Lock()
		before = s.aof.appended.Load()
		mu.Unlock()
		if r := c.do(cmd...); strings.HasPrefix(r, "-") {
			t.Fatalf("%q: %q", cmd[:2], r)
		}
	}
	if len(unlogged) > 0 {
		t.Fatalf("keys visible before their creation was logged: %q", unlogged)
	}
}

// TestMissingLogFile: a log file missing between the snapshot and the
// files after it (or between two files) stops the server, naming it, as
// damage does: the writes after it build on writes it held. --repair
// keeps what comes before it. Without a snapshot (moved aside), the log
// may start at any epoch.
func TestMissingLogFile(t *testing.T) {
	parallel(t)
	t.Run("after the snapshot", func(t *testing.T) {
		cfg := testConfig(t)
		s, addr := startServer(t, cfg)
		c := dial(t, addr)
		c.do("CF.RESERVE", "k", "1000")
		c.do("SAVE") // snapshot of epoch 1, log file 1
		c.do("CF.ADD", "k", "x")
		s.Close()
		// File 1 lost; file 2 holds the writes that follow it.
		if err := os.Rename(filepath.Join(cfg.Dir, logName(1)), filepath.Join(cfg.Dir, logName(2))); err != nil {
			t.Fatal(err)
		}
		_, err := New(cfg)
		if !errors.Is(err, ErrDataDir) || !strings.Contains(err.Error(), logName(1)+" is missing") || !strings.Contains(err.Error(), "--repair") {
			t.Fatalf("New with %s missing: %v", logName(1), err)
		}
		cfg.Repair = true
		_, addr = startServer(t, cfg)
		if got := dial(t, addr).do("EXISTS", "k"); got != ":1\r\n" {
			t.Fatalf("the snapshot's key after --repair: %q", got)
		}
		if _, err := os.Stat(filepath.Join(cfg.Dir, logName(2))); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("--repair kept the file after the missing one: %v", err)
		}
	})
	t.Run("between two files", func(t *testing.T) {
		cfg := testConfig(t)
		s, addr := startServer(t, cfg)
		dial(t, addr).do("CF.ADD", "k", "x")
		s.Close()
		if err := os.WriteFile(filepath.Join(cfg.Dir, logName(2)), nil, 0o640); err != nil {
			t.Fatal(err)
		}
		if _, err := New(cfg); !errors.Is(err, ErrDataDir) || !strings.Contains(err.Error(), logName(1)+" is missing") {
			t.Fatalf("New with %s missing: %v", logName(1), err)
		}
	})
	t.Run("no snapshot", func(t *testing.T) {
		cfg := testConfig(t)
		s, addr := startServer(t, cfg)
		c := dial(t, addr)
		c.do("CF.ADD", "k", "x")
		c.do("SAVE")
		c.do("CF.ADD", "k", "y")
		s.Close()
		// The snapshot moved aside: the log alone, from epoch 1.
		if err := os.Remove(filepath.Join(cfg.Dir, snapName)); err != nil {
			t.Fatal(err)
		}
		_, addr = startServer(t, cfg)
		if got := dial(t, addr).do("CF.EXISTS", "k", "y"); got != ":1\r\n" {
			t.Fatalf("the log's write without the snapshot: %q", got)
		}
	})
}
