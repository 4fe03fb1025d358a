package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// windowAwk is the exact reference of dedup --window by event time, as
// docs/cli.md defines it: a line's time is the latest time on any line so
// far; a line is dropped when its key was on an earlier line (printed or
// dropped) whose time lies at most 14 epochs of g seconds before, counting
// epochs from the Unix epoch (g is the window over 14); every line makes
// its key's time its own. Field 1 is Unix seconds, field 2 the key.
const windowAwk = `{
	t = $1 + 0
	if (t > now) now = t
	e = int(now / g)
	drop = ($2 in last) && e - last[$2] <= 14
	last[$2] = e
	if (!drop) print
}`

// eventLog writes n lines "unix-seconds id rfc3339 payload" to name: ids
// from a skewed distribution over ids keys (some come every few minutes,
// most rarely), times from start on with random gaps averaging gap,
// about 2 % of the lines up to 3 hours late.
func eventLog(e *sandbox, name string, n, ids int, start time.Time, gap time.Duration, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 32))
	var b bytes.Buffer
	now := start
	for i := range n {
		now = now.Add(time.Duration(r.ExpFloat64() * float64(gap)))
		at := now
		if r.IntN(50) == 0 {
			at = at.Add(-time.Duration(r.Int64N(int64(3 * time.Hour))))
		}
		id := int(float64(ids) * r.Float64() * r.Float64() * r.Float64())
		fmt.Fprintf(&b, "%d id-%d %s line-%d\n", at.Unix(), id, at.UTC().Format(time.RFC3339), i)
	}
	e.write(name, b.String())
	return b.Bytes()
}

// awkWindow runs windowAwk over data with an epoch of g seconds.
func awkWindow(t *testing.T, data []byte, g int) string {
	t.Helper()
	cmd := exec.Command("awk", "-v", fmt.Sprintf("g=%d", g), windowAwk)
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("awk: %v", err)
	}
	return string(out)
}

// TestDedupWindowMatchesAwk compares dedup --window --time-field, over a
// generated event log of several windows, with the exact awk script: at
// --fpr 1e-7 and a fixed seed the outputs are equal. The window is 14
// hours, so that an epoch is a whole hour and awk's arithmetic is exact.
// It also reads the time in RFC 3339 from field 3, and runs the log in two
// halves carried by --state: the same output each time.
func TestDedupWindowMatchesAwk(t *testing.T) {
	e := newEnv(t)
	seed := exactSeed(t)
	n := 60_000
	if testing.Short() {
		n = 20_000
	}
	data := eventLog(e, "events.log", n, 5000, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), 10*time.Second, seed)
	want := awkWindow(t, data, 3600)
	args := []string{"dedup", "--window", "14h", "--key", "2", "--fpr", "1e-7", "--seed", fmt.Sprint(seed)}
	r := e.run("", append(args, "--time-field", "1", "events.log")...)
	r.want(t, exitOK, "dedup")
	if r.stdout != want {
		t.Fatalf("output differs from awk's: %d lines, want %d\n%s", strings.Count(r.stdout, "\n"), strings.Count(want, "\n"), firstDiff(r.stdout, want))
	}
	if kept := strings.Count(want, "\n"); kept < n/20 || kept > n*9/10 {
		t.Fatalf("%d of %d lines kept: the log does not test expiry", kept, n)
	}
	r = e.run("", append(args, "--time-field", "3", "--time-format", "rfc3339", "events.log")...)
	r.want(t, exitOK, "dedup")
	if r.stdout != want {
		t.Fatalf("with RFC 3339 times: output differs from awk's\n%s", firstDiff(r.stdout, want))
	}
	// In two runs carried by --state.
	lines := bytes.SplitAfter(data, []byte("\n"))
	half := len(lines) / 2
	e.write("first.log", string(bytes.Join(lines[:half], nil)))
	e.write("second.log", string(bytes.Join(lines[half:], nil)))
	r1 := e.run("", append(args, "--time-field", "1", "--state", "seen.ckoo", "first.log")...)
	r1.want(t, exitOK, "dedup")
	r2 := e.run("", "dedup", "--key", "2", "--time-field", "1", "--state", "seen.ckoo", "second.log")
	r2.want(t, exitOK, "dedup")
	if got := r1.stdout + r2.stdout; got != want {
		t.Fatalf("in two runs with --state: output differs from awk's\n%s", firstDiff(got, want))
	}
	info := e.run("", "info", "--json", "seen.ckoo")
	info.want(t, exitOK, "info")
	if !strings.Contains(info.stdout, `"kind":"cuckoo-window"`) || !strings.Contains(info.stdout, `"window_seconds":50400`) {
		t.Fatalf("info of the state: %s", info.stdout)
	}
}

// firstDiff describes where two outputs first differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d: got %q, want %q", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("one is a prefix of the other (%d and %d lines)", len(g), len(w))
}

// TestDedupWindowArrivalTime: by arrival time, a line seen in an earlier
// run is a repeat while the window lasts, and new once it has passed.
func TestDedupWindowArrivalTime(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "x\ny\nx\n")
	start := time.Now() // before the first run adds x and y
	// A fixed seed (see TestDedupInputs): the window of a 3-line file has
	// 4 buckets of 17-bit fingerprints, where y is a false positive of x
	// with probability 2/(4·2^17), and a drawn seed dropped y in 5 of
	// 10^6 runs.
	r := e.run("", "dedup", "--window", "1s", "--state", "seen.ckoo", "--seed", "1", "a.txt")
	r.want(t, exitOK, "dedup")
	if r.stdout != "x\ny\n" {
		t.Fatalf("first run: %q", r.stdout)
	}
	r = e.run("", "dedup", "--state", "seen.ckoo", "a.txt")
	r.want(t, exitOK, "dedup")
	// The second run is within the window only if it ended less than a
	// second after the first began: on a loaded machine the two runs can
	// be a second apart, and x and y are then rightly new again. Read the
	// clock after the run returned, so that a check made is one the window
	// promises.
	if young := time.Since(start) < time.Second; young && r.stdout != "" {
		t.Fatalf("second run, within the window: %q", r.stdout)
	} else if !young {
		t.Logf("the second run ended %v after the first began, past the 1 s window: its output %q is not checked", time.Since(start), r.stdout)
	}
	// A window of 1 s forgets within 1 s + 1/14 s.
	time.Sleep(1200 * time.Millisecond)
	r = e.run("", "dedup", "--state", "seen.ckoo", "--stats", "a.txt")
	r.want(t, exitOK, "dedup")
	if r.stdout != "x\ny\n" {
		t.Fatalf("third run, after the window: %q", r.stdout)
	}
	if !strings.Contains(r.stderr, "window 1s (keys are forgotten between 1s and") {
		t.Fatalf("--stats: %s", r.stderr)
	}
}

func TestDedupWindowErrors(t *testing.T) {
	e := newEnv(t)
	e.write("ev.log", "1700000000 a\n1700000100 b\nnot-a-time c\n")
	e.write("plain.ckoo", "")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--time-field", "1", "ev.log"}, exitUsage, "--time-field and --time-format are about --window"},
		{[]string{"--window", "1h", "--time-format", "unix", "ev.log"}, exitUsage, "give --time-field N"},
		{[]string{"--window", "0s", "ev.log"}, exitUsage, "a duration such as"},
		{[]string{"--window", "soon", "ev.log"}, exitUsage, "a duration such as"},
		{[]string{"--window", "1h", "--exact", "ev.log"}, exitUsage, "--window keeps its own seen-set"},
		{[]string{"--window", "1h", "--bloom", "ev.log"}, exitUsage, "--grow, --semi-sorted and --bloom do not apply"},
		{[]string{"--window", "1h", "--time-field", "0", "ev.log"}, exitUsage, "bad --time-field"},
		{[]string{"--window", "1h", "--time-field", "2-", "ev.log"}, exitUsage, "a time spans at most"},
		{[]string{"--window", "1h", "--time-field", "1", "--time-format", "soon", "ev.log"}, exitUsage, "not a time format"},
		{[]string{"--window", "1h", "--time-field", "1", "--key", "2", "ev.log"}, exitData, `line 3: field 1 is "not-a-time", not a time`},
	} {
		r := e.run("", append([]string{"dedup"}, c.args...)...)
		r.want(t, c.code, "dedup")
		if !strings.Contains(r.stderr, c.msg) {
			t.Errorf("dedup %v: %q, want %q", c.args, r.stderr, c.msg)
		}
	}
	// A state file keeps its window; a plain filter is not one.
	e.run("", "dedup", "--window", "1h", "--state", "w.ckoo", "ev.log")
	e.write("keys.txt", "a\n")
	e.run("", "build", "-o", "f.ckoo", "keys.txt").want(t, exitOK, "build")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--window", "2h", "--state", "w.ckoo", "keys.txt"}, "keeps a window of 1h0m0s, not 2h0m0s"},
		{[]string{"--window", "1h", "--load", "f.ckoo", "keys.txt"}, "--window needs a window filter"},
		{[]string{"--state", "w.ckoo", "--capacity", "5", "keys.txt"}, "--capacity 5 does not describe the filter in w.ckoo: it holds 3 keys a window"},
		{[]string{"--load", "w.ckoo", "--capacity", "3", "keys.txt"}, "describe a new filter"},
	} {
		r := e.run("", append([]string{"dedup"}, c.args...)...)
		r.want(t, exitUsage, "dedup")
		if !strings.Contains(r.stderr, c.msg) {
			t.Errorf("dedup %v: %q, want %q", c.args, r.stderr, c.msg)
		}
	}
	// A window holds its capacity of keys; past it, status 4 and the remedy.
	var many strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&many, "k%d\n", i)
	}
	e.write("many.txt", many.String())
	r := e.run("", "dedup", "--window", "1h", "--capacity", "100", "many.txt")
	r.want(t, exitFull, "dedup")
	if !strings.Contains(r.stderr, "larger --capacity: the most keys a window holds") {
		t.Fatalf("full window: %q", r.stderr)
	}
}

// TestDedupWindowUnknownZoneStopsTheRun: a --time-format zone
// abbreviation the local zone does not define stops the run as any line
// that is not a time does (status 3, naming the line and the
// abbreviation), rather than being read as UTC: "10:30 PST" on a machine
// in UTC was 10:30 UTC, within the hour of the line before it, and the
// line was dropped. With TZ naming the zone's location it is read so, and
// the line, 8.5 hours later, is printed.
func TestDedupWindowUnknownZoneStopsTheRun(t *testing.T) {
	e := newEnv(t)
	e.write("ev.log", "2026-11-30T10:00:00 UTC a\n2026-11-30T10:30:00 PST a\n")
	args := []string{"dedup", "--window", "1h", "--time-field", "1-2", "--time-format", "2006-01-02T15:04:05 MST", "--key", "3", "ev.log"}
	run := func(tz string) result {
		cmd := exec.Command(binary, args...)
		cmd.Dir = e.dir
		cmd.Env = append(os.Environ(), "TZ="+tz)
		return runCmd(t, cmd)
	}
	run("UTC").wantIn(t, exitData, "dedup", "line 2", "zone PST", "-0700", "TZ")
	if _, err := time.LoadLocation("America/Los_Angeles"); err != nil {
		t.Skip("no time zone database:", err)
	}
	r := run("America/Los_Angeles")
	r.want(t, exitOK, "dedup")
	if want := "2026-11-30T10:00:00 UTC a\n2026-11-30T10:30:00 PST a\n"; r.stdout != want {
		t.Errorf("TZ=America/Los_Angeles: %q, want %q", r.stdout, want)
	}
}
