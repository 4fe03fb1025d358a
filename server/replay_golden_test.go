package server

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var replayGolden = flag.String("replay.golden", "", "TestReplayGoldenWrite writes a data directory and what it holds to this directory")

// The golden data directories of testdata/replay, one per plan version of
// the log (internal/replay) and per log format (aof.go): each holds a log
// (log/), the snapshot taken after replaying it (snapshot/), and want.txt,
// every key's type, a digest of its dump and, for cuckoo filters, CF.INFO.
// plan0 was written by the server before the log recorded plan versions
// (commit d2ca4bc) and plan2 by the one of commit fa790a4, both in log
// format 1; plan2-format2 by this one; all with TestReplayGoldenWrite.
// The servers that read them must build the same filters, byte for byte,
// forever.
var replayGoldenDirs = []string{"plan0", "plan2", "plan2-format2"}

// TestReplayGolden: every golden log replays, and every golden snapshot
// loads, to the filters the server that wrote them held.
func TestReplayGolden(t *testing.T) {
	parallel(t)
	for _, name := range replayGoldenDirs {
		want, err := os.ReadFile(filepath.Join("testdata/replay", name, "want.txt"))
		if err != nil {
			t.Fatal(err)
		}
		for _, from := range []string{"log", "snapshot"} {
			t.Run(name+"/from="+from, func(t *testing.T) {
				parallel(t)
				cfg := testConfig(t)
				copyDir(t, filepath.Join("testdata/replay", name, from), cfg.Dir)
				_, addr := startServer(t, cfg)
				if got := goldenState(t, dial(t, addr)); got != string(want) {
					t.Fatalf("the %s of %s loads to\n%s\nwant\n%s", from, name, got, want)
				}
			})
		}
	}
}

// goldenCommands are the writes of TestReplayGoldenWrite's data
// directory, besides the CF.ADDs.
var goldenCommands = []string{
	// 3,856 keys: New plans 1,038 buckets, above the least count 1,026.
	"CF.RESERVE fixed 3856 EXPANSION 0 SEED 1",
	"CF.RESERVE rate 10000 FPR 0.001 EXPANSION 0 SEED 2",
	"CF.RESERVE two 2000 BUCKETSIZE 2 FINGERPRINT 8 EXPANSION 0 SEED 3",
	"CF.RESERVE odd 3000 BUCKETSIZE 3 FINGERPRINT 12 EXPANSION 0 SEED 4",
	"CF.RESERVE grow 100 EXPANSION 2 SEED 5",
	"CF.RESERVE win 1000 WINDOW 3153600000 SEED 6",
	"CF.INSERT ins CAPACITY 5000 ITEMS a b c",
	"CF.INSERTNX ins ITEMS a d",
	"BF.RESERVE bf 0.01 1000",
	"BF.MADD bf a b c",
}

// TestReplayGoldenWrite writes a golden data directory to the directory
// -replay.golden names (it does nothing without it): the log of a set of
// creations and writes, with creations logged as the oldest servers did
// (no bucket count, no plan version) added by hand, then the snapshot and
// the state a restart on that log gives.
func TestReplayGoldenWrite(t *testing.T) {
	out := *replayGolden
	if out == "" {
		t.Skip("no -replay.golden directory")
	}
	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	doEach(t, c, "", goldenCommands...)
	for i := range 300 {
		for _, key := range []string{"fixed", "rate", "two", "odd", "grow", "win"} {
			if r := c.do("CF.ADD", key, fmt.Sprint(i)); strings.HasPrefix(r, "-") {
				t.Fatalf("CF.ADD %s %d: %q", key, i, r)
			}
		}
	}
	c.do("CF.DEL", "fixed", "7")
	c.do("CF.ADD", "auto", "x") // created with the settings and a random seed
	stopServer(t, s)
	path := logPath(t, cfg.Dir)
	var epoch uint64
	fmt.Sscanf(filepath.Base(path), logPrefix+"%d"+logSuffix, &epoch)
	old := []string{
		"CF.RESERVE least 3856 BUCKETSIZE 4 MAXITERATIONS 500 EXPANSION 0 FINGERPRINT 16 SEED 7",
		"CF.RESERVE leasttwo 3000 BUCKETSIZE 2 MAXITERATIONS 500 EXPANSION 0 FINGERPRINT 8 SEED 8",
		"CF.RESERVE leastgrow 100 BUCKETSIZE 4 MAXITERATIONS 20 EXPANSION 4 SEED 9",
	}
	for i := range 300 {
		for _, key := range []string{"least", "leasttwo", "leastgrow"} {
			old = append(old, fmt.Sprintf("CF.ADD %s %d", key, i))
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range old {
		f.Write(encodeRecordForTest(epoch, strings.Fields(cmd)...))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"log", "snapshot"} {
		if err := os.MkdirAll(filepath.Join(out, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyDir(t, cfg.Dir, filepath.Join(out, "log"), filepath.Base(path))
	s, addr = startServer(t, cfg)
	c = dial(t, addr)
	want := goldenState(t, c)
	if r := c.do("SAVE"); r != "+OK\r\n" {
		t.Fatalf("SAVE: %q", r)
	}
	stopServer(t, s)
	copyDir(t, cfg.Dir, filepath.Join(out, "snapshot"), snapName)
	if err := os.WriteFile(filepath.Join(out, "want.txt"), []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
}

// goldenState describes every key: its type, the SHA-256 of its whole
// dump, and CF.INFO for a cuckoo filter.
func goldenState(t *testing.T, c *conn) string {
	st := state(t, c)
	keys := make([]string, 0, len(st))
	for k := range st {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		typ, dump, _ := strings.Cut(st[k], " ")
		fmt.Fprintf(&b, "%s %s %x\n", k, typ, sha256.Sum256([]byte(dump)))
		if typ == "+MBbloomCF" {
			b.WriteString(render(c.do("CF.INFO", k)))
		}
	}
	return b.String()
}

// copyDir copies the named files of src (all of them when none is named)
// into dst.
func copyDir(t *testing.T, src, dst string, names ...string) {
	t.Helper()
	if len(names) == 0 {
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			names = append(names, e.Name())
		}
	}
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), data, 0o640); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReplayPlanVersion: the log records the plan version of each cuckoo
// filter it creates; a client cannot give one (nor a bucket count, to a
// window filter either); and a log of a plan version newer than the
// server's stops it from starting, naming the record.
func TestReplayPlanVersion(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	doEach(t, c, "-Unknown argument received\r\n",
		"CF.RESERVE k 100 PLAN 2",
		"CF.RESERVE k 100 EXPANSION 0 PLAN 1",
		"CF.RESERVE k 100 WINDOW 60 PLAN 2",
		"CF.RESERVE k 100 WINDOW 60 BUCKETS 64")
	doEach(t, c, "+OK\r\n", "CF.RESERVE fixed 100 EXPANSION 0", "CF.RESERVE grow 100", "CF.RESERVE win 100 WINDOW 60")
	stopServer(t, s)
	var creations []string
	_, err := readLog(logPath(t, cfg.Dir), 1<<20, func(_ int64, _ uint64, args [][]byte) error {
		creations = append(creations, string(joinArgs(args)))
		return nil
	})
	if err != nil || len(creations) != 3 {
		t.Fatalf("the log holds %q, %v", creations, err)
	}
	for _, rec := range creations {
		if !strings.Contains(rec, " PLAN 2 ") {
			t.Errorf("the creation %q records no plan version", rec)
		}
	}

	newer := testConfig(t)
	rec := encodeRecordForTest(0, strings.Fields("CF.RESERVE k 3856 BUCKETSIZE 4 MAXITERATIONS 500 EXPANSION 0 FINGERPRINT 16 PLAN 3 BUCKETS 1038 SEED 1")...)
	if err := os.WriteFile(filepath.Join(newer.Dir, logName(0)), rec, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := New(newer); err == nil || !strings.Contains(err.Error(), "ERR PLAN: a plan version newer than this server's (the log was written by a newer server)") {
		t.Fatalf("a log of a newer plan version: %v", err)
	}
}

// doEach runs each command line on c, and fails unless each reply is want
// (with want "", unless a reply is an error).
func doEach(t *testing.T, c *conn, want string, cmds ...string) {
	t.Helper()
	for _, cmd := range cmds {
		r := c.do(strings.Fields(cmd)...)
		if want == "" && strings.HasPrefix(r, "-") || want != "" && r != want {
			t.Fatalf("%s: %q", cmd, r)
		}
	}
}
