package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
)

// TestDedupRedisWindowForgets: dedup --redis --window 3s drops a line
// whose key a run saw within the window, by Redis's clock, and prints it
// again once the window and its granularity have passed since it was
// last seen; every line counts as seen, printed or dropped.
func TestDedupRedisWindowForgets(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	s := redistest.NewServer(t, redistest.Config{})
	e := newEnv(t)
	// 28-bit fingerprints and a fixed seed: none of the 2,500 lines is a
	// false positive of another. With a drawn seed, each of the 3.1
	// million pairs of lines in the window together shares a fingerprint
	// and a bucket pair with probability 2/(2836·2^28), and a line went
	// missing in about 8 runs in a million.
	args := []string{"dedup", "--redis", redisURL(s), "--name", "w", "--window", "3s", "--capacity", "10000", "--fingerprint-bits", "28",
		"--seed", "0x3e"}
	lines := func(first, last int) string { return strings.Join(seqLines(first, last), "\n") + "\n" }
	r := e.run(lines(1, 2000), args...)
	r.want(t, 0, "dedup")
	if r.stdout != lines(1, 2000) {
		t.Fatalf("the first run printed %d lines, want 2000", strings.Count(r.stdout, "\n"))
	}
	firstDone := time.Now()
	start := time.Now()
	r = e.run(lines(1500, 2500), args...)
	r.want(t, 0, "dedup")
	if time.Since(start) < 3*time.Second && r.stdout != lines(2001, 2500) {
		t.Fatalf("the second run, within the window, printed %d lines, want lines 2001-2500", strings.Count(r.stdout, "\n"))
	}
	// Lines 1-10 were last seen by the first run: forgotten 3 s and a
	// granularity (3/14 s) after it.
	for time.Since(firstDone) < 3*time.Second+300*time.Millisecond {
		time.Sleep(50 * time.Millisecond)
	}
	r = e.run(lines(1, 10), args...)
	r.want(t, 0, "dedup")
	if r.stdout != lines(1, 10) {
		t.Fatalf("past the window, a run printed %q, want lines 1-10", r.stdout)
	}
}

// TestDedupRedisWindowEventTime: with --time-field, a window in Redis
// judges each line at its own time, and prints exactly what a window
// filter of the same parameters and seed does on the machine (dedup
// --window without --redis): the functions follow the library's window
// step by step, false positives included. The events span days, with
// keys that come back after less and more than the window, and times that
// go back a little.
func TestDedupRedisWindowEventTime(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	s := redistest.NewServer(t, redistest.Config{})
	e := newEnv(t)
	rng := testseed.Rand(t)
	// 5,000 events span about 20 hours, 20,000 (the long run's) 80: each
	// key comes back about every hour, within the window or past it.
	events := 5000
	if testlong.Enabled() {
		events = 20000
	}
	var b bytes.Buffer
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for range events {
		at = at.Add(time.Duration(rng.IntN(40)-5) * time.Second)
		fmt.Fprintf(&b, "%s id-%d\n", at.Format(time.RFC3339), rng.IntN(250))
	}
	e.write("events.txt", b.String())
	common := []string{"--window", "1h", "--time-field", "1", "--key", "2", "--capacity", "5000", "--fingerprint-bits", "12", "--seed", "0xe7"}
	local := e.run("", append([]string{"dedup"}, append(common, "events.txt")...)...)
	local.want(t, 0, "dedup")
	shared := e.run("", append([]string{"dedup", "--redis", redisURL(s), "--name", "events"}, append(common, "events.txt")...)...)
	shared.want(t, 0, "dedup")
	if shared.stdout != local.stdout {
		t.Fatalf("in Redis %d lines printed, on the machine %d: not the same", strings.Count(shared.stdout, "\n"), strings.Count(local.stdout, "\n"))
	}
	n := strings.Count(local.stdout, "\n")
	if n < events/10 || n > events*9/10 {
		t.Fatalf("%d lines printed: the events do not exercise the window", n)
	}
	t.Logf("%d of %d lines printed, the same in Redis and on the machine", n, events)
}

// TestDedupRedisWindowEventTimeSegments: with --time-field, a window in
// Redis of several segments prints exactly what --window prints on the
// machine, with lines that come late (a time before the latest so far)
// and time that jumps by about the window. Time never goes back: a late
// line is judged at the latest time of any line so far, whichever
// segment its key falls in, not at the time its segment last saw.
// Before the client kept that time across segments, a late line whose
// key's segment had not seen the newest time was judged at the
// segment's older one: some late lines were dropped that --window
// prints, and later repeats inside the window were printed.
func TestDedupRedisWindowEventTimeSegments(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t, redistest.Config{})
	e := newEnv(t)
	// 600 lines of 50 keys, a minute apart or less, 10 % of them late (up
	// to 16 hours before the latest time); 3 % after a jump of an hour,
	// and 4 % after one of 15 or 16 hours (past the window), each followed
	// by two late lines, from before the jump, of keys among the last
	// ten: a late line whose key's segment has not seen the jump yet is
	// what the segments' own times judged wrongly (about 20 lines of the
	// output differed).
	rng := rand.New(rand.NewPCG(5, 6))
	var b bytes.Buffer
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).Unix()
	const lines, ids = 600, 50
	var recent []int
	line := func(t int64, id int) {
		fmt.Fprintf(&b, "%d id-%d x\n", t, id)
		if recent = append(recent, id); len(recent) > 10 {
			recent = recent[1:]
		}
	}
	for n := 0; n < lines; n++ {
		switch r := rng.IntN(100); {
		case r < 4 && n+3 <= lines && len(recent) > 1:
			before := at
			at += int64(15+rng.IntN(2)) * 3600
			line(at, rng.IntN(ids))
			for range 2 {
				line(before-int64(rng.IntN(3600)), recent[rng.IntN(len(recent)-1)])
			}
			n += 2
			continue
		case r < 7:
			at += 3600
		default:
			at += int64(rng.IntN(60))
		}
		t := at
		if rng.IntN(10) == 0 {
			t -= int64(rng.IntN(16 * 3600))
		}
		line(t, rng.IntN(ids))
	}
	e.write("events.txt", b.String())
	// 40,000 keys a window: 2 segments in Redis.
	common := []string{"--window", "14h", "--time-field", "1", "--key", "2", "--capacity", "40000", "--fpr", "1e-6", "--seed", "42"}
	local := e.run("", append([]string{"dedup"}, append(common, "events.txt")...)...)
	local.want(t, 0, "dedup")
	shared := e.run("", append([]string{"dedup", "--redis", redisURL(s), "--name", "events", "--stats"}, append(common, "events.txt")...)...)
	shared.want(t, 0, "dedup")
	if !strings.Contains(shared.stderr, "2 segments") {
		t.Fatalf("want a window of 2 segments: %s", shared.stderr)
	}
	if shared.stdout != local.stdout {
		l, r := strings.Split(local.stdout, "\n"), strings.Split(shared.stdout, "\n")
		i := 0
		for i < min(len(l), len(r)) && l[i] == r[i] {
			i++
		}
		t.Fatalf("in Redis %d lines printed, on the machine %d: they differ from printed line %d (%q on the machine, %q in Redis)",
			len(r)-1, len(l)-1, i+1, l[min(i, len(l)-1)], r[min(i, len(r)-1)])
	}
	n := strings.Count(local.stdout, "\n")
	if n < lines/10 || n > lines*9/10 {
		t.Fatalf("%d lines printed: the events do not exercise the window", n)
	}
	t.Logf("%d of %d lines printed, the same in Redis and on the machine", n, lines)
}

// TestDedupRedisWindowFlags: the flags of dedup --redis --window, and
// the mistakes refused with status 2 (or 3 for a window not there).
func TestDedupRedisWindowFlags(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t, redistest.Config{})
	e := newEnv(t)
	url := redisURL(s)
	e.run("a\n", "dedup", "--redis", url, "--name", "w", "--window", "1h", "--capacity", "100").want(t, 0, "dedup")
	e.run("a\n", "dedup", "--redis", url, "--name", "f", "--capacity", "100").want(t, 0, "dedup")
	for _, c := range []struct {
		code int
		args []string
		says string
	}{
		{0, []string{"--name", "w", "--window", "1h"}, ""},
		{2, []string{"--name", "w", "--window", "2h"}, "keeps a window of 1h0m0s"},
		{2, []string{"--name", "w"}, "is a window filter"},
		{2, []string{"--name", "f", "--window", "1h"}, "is a cuckoo filter"},
		{3, []string{"--name", "nothing", "--window", "1h"}, "no window filter"},
		{2, []string{"--name", "w", "--window", "1h", "--exact"}, "--exact"},
		{2, []string{"--name", "w", "--time-field", "1"}, "--time-field"},
		{2, []string{"--name", "x", "--window", "1h", "--capacity", "100", "--bucket-size", "3"}, "bucket"},
		{2, []string{"--name", "x", "--window", "1h", "--capacity", "100", "--fingerprint-bits", "30"}, "fingerprint"},
		{2, []string{"--name", "w", "--window", "1h", "--capacity", "100", "--fpr", "0.01"}, "fingerprint bits 17"},
	} {
		r := e.run("a\n", append([]string{"dedup", "--redis", url}, c.args...)...)
		if r.code != c.code || !strings.Contains(r.stderr, c.says) {
			t.Errorf("%v: status %d, %q; want %d and %q", c.args, r.code, r.stderr, c.code, c.says)
		}
	}
}

// TestPushPullWindow: a window filter file (dedup --window --state) pushed
// into Redis and pulled back is the file, byte for byte; dedup --redis
// --window goes on with it, and a file pulled after is a window the local
// dedup --window --state goes on with.
func TestPushPullWindow(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t, redistest.Config{})
	e := newEnv(t)
	url := redisURL(s)
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for range 5000 {
		fmt.Fprintf(&b, "k%d\n", rng.IntN(3000))
	}
	e.write("in.txt", b.String())
	e.run("", "dedup", "--window", "1h", "--capacity", "4000", "--state", "w.ckoo", "in.txt").want(t, 0, "dedup")
	e.run("", "push", "w.ckoo", "--redis", url, "--name", "day").want(t, 0, "push")
	e.run("", "pull", "--redis", url, "--name", "day", "-o", "back.ckoo").want(t, 0, "pull")
	if !bytes.Equal(e.read("w.ckoo"), e.read("back.ckoo")) {
		t.Fatal("the pulled window differs from the pushed one")
	}
	// The keys pushed are seen in Redis.
	r := e.run("k1\nk2\nnever-seen\n", "dedup", "--redis", url, "--name", "day", "--window", "1h")
	r.want(t, 0, "dedup")
	want := "never-seen\n"
	for _, k := range []string{"k1", "k2"} {
		if !strings.Contains(b.String(), k+"\n") {
			want = k + "\n" + want
		}
	}
	if r.stdout != want {
		t.Fatalf("dedup --redis --window on the pushed window printed %q, want %q", r.stdout, want)
	}
	e.run("", "pull", "--redis", url, "--name", "day", "-o", "after.ckoo").want(t, 0, "pull")
	r = e.run("never-seen\nk1\n", "dedup", "--window", "1h", "--state", "after.ckoo")
	r.want(t, 0, "dedup")
	if r.stdout != "" {
		t.Fatalf("the pulled window, on the machine, printed %q", r.stdout)
	}
	e.run("", "push", "w.ckoo", "--redis", url, "--name", "day").want(t, 3, "push")
	e.run("", "push", "w.ckoo", "--redis", url, "--name", "day", "--replace").want(t, 0, "push")
	e.run("a\n", "dedup", "--redis", url, "--name", "split", "--window", "1h", "--capacity", "1000000").want(t, 0, "dedup")
	e.run("", "pull", "--redis", url, "--name", "split", "-o", "split.ckoo").want(t, 2, "pull")
}
