package server

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// commandStat returns the entry of Stats.Commands for command and
// result, or a zero one.
func commandStat(st Stats, command, result string) CommandStats {
	for _, cs := range st.Commands {
		if cs.Command == command && cs.Result == result {
			return cs
		}
	}
	return CommandStats{}
}

// checkHistogram fails when h's buckets are not cumulative counts within
// Count, one per bound.
func checkHistogram(t *testing.T, what string, h Histogram) {
	t.Helper()
	if len(h.Buckets) != len(DurationBounds()) {
		t.Fatalf("%s: %d buckets for %d bounds", what, len(h.Buckets), len(DurationBounds()))
	}
	prev := uint64(0)
	for i, n := range h.Buckets {
		if n < prev || n > h.Count {
			t.Fatalf("%s: bucket %d holds %d after %d, count %d", what, i, n, prev, h.Count)
		}
		prev = n
	}
	if h.Sum < 0 || h.Count == 0 && h.Sum != 0 {
		t.Fatalf("%s: %d durations summing to %v", what, h.Count, h.Sum)
	}
}

// TestStatsCommandsByResult: with CommandStats, every command is counted
// under its name and result: ok, error, wrong_type, and unknown names
// under "unknown", and a sample of them is timed; the errors are counted
// by kind; a pipeline's commands each count once.
func TestStatsCommandsByResult(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	cfg.CommandStats = true
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	c.do("CF.RESERVE", "cf", "1000")
	for _, item := range []string{"a", "b", "c"} {
		c.do("CF.ADD", "cf", item)
	}
	c.do("CF.EXISTS", "cf", "a")
	if got := c.do("BF.ADD", "cf", "x"); !strings.HasPrefix(got, "-WRONGTYPE") {
		t.Fatalf("BF.ADD on a cuckoo filter: %q", got)
	}
	c.do("CF.INFO", "missing")
	c.do("NO.SUCH.COMMAND", "x")
	c.do("CF.ADD", "cf")
	var pipe bytes.Buffer
	for i := range 3200 {
		pipe.Write(encode("CF.EXISTS", "cf", fmt.Sprint(i)))
	}
	c.send(pipe.Bytes())
	for range 3200 {
		if _, err := c.reply(); err != nil {
			t.Fatal(err)
		}
	}
	st := s.Stats()
	for _, want := range []struct {
		command, result string
		count           uint64
	}{
		{"cf.reserve", "ok", 1}, {"cf.add", "ok", 3}, {"cf.exists", "ok", 3201}, {"bf.add", "wrong_type", 1},
		{"cf.info", "error", 1}, {"unknown", "error", 1}, {"cf.add", "error", 1},
	} {
		cs := commandStat(st, want.command, want.result)
		if cs.Count != want.count || cs.Durations.Count > cs.Count {
			t.Errorf("%s %s: counted %d (%d timed), want %d", want.command, want.result, cs.Count, cs.Durations.Count, want.count)
		}
		checkHistogram(t, want.command+" "+want.result, cs.Durations)
	}
	// The durations are of a sample: about 1 command in 16, 200 of 3,201
	// CF.EXISTS give or take 40 (5 standard deviations, TestCommandSampleGaps).
	if timed := commandStat(st, "cf.exists", "ok").Durations.Count; timed < 160 || timed > 240 {
		t.Errorf("%d CF.EXISTS of 3,201 timed", timed)
	}
	if len(st.Commands) != 7 {
		t.Errorf("%d entries, want 7: %+v", len(st.Commands), st.Commands)
	}
	for i := 1; i < len(st.Commands); i++ {
		a, b := st.Commands[i-1], st.Commands[i]
		if a.Command > b.Command || a.Command == b.Command && a.Result >= b.Result {
			t.Errorf("entries out of order: %s %s before %s %s", a.Command, a.Result, b.Command, b.Result)
		}
	}
	for kind, want := range map[string]int64{"wrong_type": 1, "not_found": 1, "unknown_command": 1, "other": 1, "oom": 0} {
		if st.Errors[kind] != want {
			t.Errorf("errors of kind %s: %d, want %d", kind, st.Errors[kind], want)
		}
	}
	if len(st.Errors) != len(ErrorKinds()) {
		t.Errorf("%d error kinds reported, %d exist", len(st.Errors), len(ErrorKinds()))
	}
}

// TestStatsWithoutCommandStats: without CommandStats no command is timed
// (the commands' path reads no clock), and errors are still counted.
func TestStatsWithoutCommandStats(t *testing.T) {
	parallel(t)
	s, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	c.do("CF.ADD", "k", "x")
	c.do("BF.ADD", "k", "x")
	st := s.Stats()
	if st.Commands != nil || st.Errors["wrong_type"] != 1 {
		t.Fatalf("commands %+v, errors %v", st.Commands, st.Errors)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for cl := range s.mu.clients {
		if cl.cmdStats != nil {
			t.Fatal("a client counts commands without CommandStats")
		}
	}
}

// TestStatsTypes: the keys, bytes, items, capacities and tables of each
// type; the fixed filters by fill; a growing filter's growths.
func TestStatsTypes(t *testing.T) {
	parallel(t)
	s, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	c.do("CF.RESERVE", "fixed", "100", "EXPANSION", "0")
	c.do("CF.RESERVE", "growing", "100")
	c.do("BF.RESERVE", "bloom", "0.01", "1000", "NONSCALING")
	// The window's seed is fixed: its count leaves out a key that shares a
	// slot with one before it (a false positive), which a drawn seed makes
	// possible, and this seed does not.
	c.do("CF.RESERVE", "window", "1000", "WINDOW", "3600", "SEED", "1")
	var cmds [][]string
	for i := range 80 {
		cmds = append(cmds, []string{"CF.ADD", "fixed", fmt.Sprint(i)}, []string{"BF.ADD", "bloom", fmt.Sprint(i)},
			[]string{"CF.ADD", "window", fmt.Sprint(i)})
	}
	for i := range 5000 {
		cmds = append(cmds, []string{"CF.ADD", "growing", fmt.Sprint(i)})
	}
	c.pipeline(cmds)
	st := s.Stats()
	if len(st.Types) != 3 || st.Types[0].Type != "cuckoo" || st.Types[1].Type != "bloom" || st.Types[2].Type != "window" {
		t.Fatalf("types %+v", st.Types)
	}
	cf, bf, win := st.Types[0], st.Types[1], st.Types[2]
	if cf.Keys != 2 || bf.Keys != 1 || win.Keys != 1 {
		t.Fatalf("keys: cuckoo %d, bloom %d, window %d", cf.Keys, bf.Keys, win.Keys)
	}
	if cf.Bytes+bf.Bytes+win.Bytes != s.ks.used.Load() || cf.Bytes <= 0 || bf.Bytes <= 0 || win.Bytes <= 0 {
		t.Fatalf("bytes: %d + %d + %d, the key space counts %d", cf.Bytes, bf.Bytes, win.Bytes, s.ks.used.Load())
	}
	// A cuckoo filter counts every add; a Bloom filter's count is exact
	// unless two items share all their bits, which 80 items in a filter
	// sized for 1000 at 1 % make unlikely but possible: at least 75.
	if cf.Items != 5080 || bf.Items < 75 || bf.Items > 80 || win.Items != 80 {
		t.Fatalf("items: cuckoo %d, bloom %d, window %d", cf.Items, bf.Items, win.Items)
	}
	if bf.Capacity != 1000 || win.Capacity != 1000 || cf.Capacity < 5100 {
		t.Fatalf("capacities: cuckoo %d, bloom %d, window %d", cf.Capacity, bf.Capacity, win.Capacity)
	}
	// The growing filter grew from 100 items to hold 5000: tables added,
	// counted as growths.
	if cf.Tables < 3 || cf.Growths != cf.Tables-2 || bf.Tables != 1 || win.Tables != 1 || bf.Growths != 0 {
		t.Fatalf("tables: cuckoo %d (%d growths), bloom %d (%d), window %d", cf.Tables, cf.Growths, bf.Tables, bf.Growths, win.Tables)
	}
	// Fixed filters by fill: the cuckoo filter is 80 % full (bucket 0.9
	// and up), the Bloom filter and the window 8 % (every bucket).
	for _, tc := range []struct {
		ts   TypeStats
		want []uint64
	}{
		{cf, []uint64{0, 0, 1, 1, 1, 1}}, {win, []uint64{1, 1, 1, 1, 1, 1}}, {bf, []uint64{1, 1, 1, 1, 1, 1}},
	} {
		if tc.ts.Fill.Count != 1 || fmt.Sprint(tc.ts.Fill.Buckets) != fmt.Sprint(tc.want) {
			t.Errorf("%s: fill %+v, want one filter in %v", tc.ts.Type, tc.ts.Fill, tc.want)
		}
	}
	if cf.FillSum != 0.8 {
		t.Errorf("cuckoo fill sum %v, want 0.8", cf.FillSum)
	}
	c.do("DEL", "growing", "fixed")
	if st := s.Stats(); st.Types[0].Keys != 0 || st.Types[0].Bytes != 0 || st.Types[0].Growths != cf.Growths {
		t.Fatalf("after DEL: %+v", st.Types[0])
	}
}

// TestStatsConnections: connections served, received, and refused past
// MaxClients.
func TestStatsConnections(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	cfg.MaxClients = 1
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	c.do("PING")
	readUntilClosed(t, dial(t, addr))
	st := s.Stats()
	if st.Clients != 1 || st.ConnectionsReceived != 2 || st.ConnectionsRejected != 1 || st.MaxClients != 1 {
		t.Fatalf("clients %d, received %d, rejected %d, max %d", st.Clients, st.ConnectionsReceived, st.ConnectionsRejected, st.MaxClients)
	}
}

// TestStatsProtocolAndOutputErrors: a malformed request and a client past
// its output limit are counted as errors of their kinds.
func TestStatsProtocolAndOutputErrors(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	cfg.MaxOutputBuffer = 1000
	s, addr := startServer(t, cfg)
	bad := dial(t, addr)
	bad.send([]byte("*1\r\n$-2\r\n"))
	readUntilClosed(t, bad)
	greedy := dial(t, addr)
	greedy.send(encode("ECHO", strings.Repeat("x", 2000)))
	readUntilClosed(t, greedy)
	waitFor(t, "both errors counted", func() bool {
		st := s.Stats()
		return st.Errors["protocol"] == 1 && st.Errors["output_limit"] == 1
	})
}

// TestStatsPersistence: the log's size and fsyncs, the snapshots, and the
// replay at start.
func TestStatsPersistence(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	cfg.Sync = SyncAlways
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	c.do("CF.RESERVE", "k", "1000")
	c.do("CF.ADD", "k", "a")
	st := s.Stats()
	if !st.Log.Enabled || st.Log.Size <= 0 || st.Log.Failed || st.Log.Fsyncs.Count < 2 || st.Log.LastFsync.IsZero() {
		t.Fatalf("log %+v", st.Log)
	}
	checkHistogram(t, "fsyncs", st.Log.Fsyncs)
	if st.Snapshot.Count != 0 || !st.Snapshot.Last.IsZero() || !st.Snapshot.LastOK {
		t.Fatalf("before any snapshot: %+v", st.Snapshot)
	}
	c.do("SAVE")
	c.do("CF.ADD", "k", "b")
	c.do("CF.ADD", "k", "c")
	st = s.Stats()
	if st.Snapshot.Count != 1 || st.Snapshot.Last.IsZero() || st.Snapshot.LastDuration <= 0 || st.Snapshot.Size <= 0 || st.Snapshot.Running {
		t.Fatalf("after SAVE: %+v", st.Snapshot)
	}
	stopServer(t, s)
	s2, _ := startServer(t, cfg)
	st = s2.Stats()
	// The snapshot holds the first two writes; the log after it, two.
	if st.Recovery.LogRecords != 2 || st.Recovery.Duration <= 0 || st.Snapshot.Last.IsZero() {
		t.Fatalf("after a restart: recovery %+v, snapshot %+v", st.Recovery, st.Snapshot)
	}
	cfg.Dir = ""
	if st := startServerStats(t, cfg); st.Log.Enabled || st.Recovery != (RecoveryStats{}) {
		t.Fatalf("without a data directory: log %+v, recovery %+v", st.Log, st.Recovery)
	}
}

func startServerStats(t *testing.T, cfg Config) Stats {
	s, _ := startServer(t, cfg)
	return s.Stats()
}

func TestReplyErrorKinds(t *testing.T) {
	for text, want := range map[string]string{
		string(errWrongType):       "wrong_type",
		string(errOOM):             "oom",
		string(errNoAuth):          "auth",
		string(errHelloNoAuth):     "auth",
		string(errWrongPass):       "auth",
		string(errNoPassword):      "auth",
		string(misconf(ErrClosed)): "log_failed",
		string(errCFFull):          "filter_full",
		string(errCFMaxExpansions): "filter_full",
		string(errBloomFull):       "filter_full",
		string(errNotFound):        "not_found",
		string(errNoSuchKey):       "not_found",
		string(errCFDelNotFound):   "not_found",
		string(unknownCommand([][]byte{[]byte("NOPE"), []byte("x")})): "unknown_command",
		string(unknownSubcommand([]byte("NOPE"), "client")):           "unknown_command",
		string(errSyntax):            "other",
		arityError{"cf.add"}.Error(): "other",
		string(errItemExists):        "other",
		"WRONGTYPEX":                 "other",
	} {
		if got := errorKindNames[replyErrorKind(text)]; got != want {
			t.Errorf("%q: %s, want %s", text, got, want)
		}
	}
}

// TestDurationHistogram: a duration equal to a bound is counted in that
// bound's bucket, one above it in the next; the buckets of a snapshot
// are cumulative, and what passes the last bound is in Count alone.
func TestDurationHistogram(t *testing.T) {
	var h durationHistogram
	for _, d := range []time.Duration{0, time.Microsecond, time.Microsecond + 1, 3 * time.Microsecond, 10 * time.Second, time.Minute} {
		h.observe(int64(d))
	}
	got := h.snapshot()
	want := Histogram{Count: 6, Sum: 70*time.Second + 5*time.Microsecond + 1, Buckets: make([]uint64, len(durationBounds))}
	for i, bound := range DurationBounds() {
		switch {
		case bound >= 10*time.Second:
			want.Buckets[i] = 5
		case bound >= 5*time.Microsecond:
			want.Buckets[i] = 4
		case bound >= 2500*time.Nanosecond:
			want.Buckets[i] = 3
		default:
			want.Buckets[i] = 2
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

// TestCommandSampleGaps: a client times about one command in 16, at gaps
// of 1 to 31 drawn anew each time, so that a repeating pattern of
// commands (here two that alternate) has each of them in the sample. With
// gaps uniform on [1, 31] (mean 16, variance 80), the count of timed
// commands among n has a standard deviation of about sqrt(n·80/16³): the
// bounds are 5 of them either side, for fixed seeds.
func TestCommandSampleGaps(t *testing.T) {
	const n = 100_000
	for seed := range int64(5) {
		cs := newCommandSample(seed)
		var timed, odd int
		for i := range n {
			if cs.begin() == 0 {
				continue
			}
			if cs.next < 1 || cs.next > 2*commandSampling-1 {
				t.Fatalf("seed %d: a gap of %d", seed, cs.next)
			}
			timed++
			odd += i % 2
		}
		if want, dev := n/commandSampling, 5*math.Sqrt(n*80.0/4096); math.Abs(float64(timed-want)) > dev {
			t.Errorf("seed %d: %d commands of %d timed, want %d ± %.0f", seed, timed, n, want, dev)
		}
		if odd < timed*2/5 || odd > timed*3/5 {
			t.Errorf("seed %d: of commands alternating A, B, %d of %d timed were B", seed, odd, timed)
		}
	}
}
