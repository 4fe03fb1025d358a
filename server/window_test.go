package server

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/testlong"
)

func TestParseCFReserveWindow(t *testing.T) {
	parallel(t)
	fs := DefaultFilterSettings()
	for _, tc := range []struct {
		in     string
		window time.Duration
		err    error
	}{
		{"CF.RESERVE k 100 WINDOW 3600", time.Hour, nil},
		{"CF.RESERVE k 100 EXPANSION 0 WINDOW 60 FPR 0.01", time.Minute, nil},
		{"CF.RESERVE k 100 window 1", time.Second, nil},
		{"CF.RESERVE k 100 WINDOW 0", 0, errCFWindowRange},
		{"CF.RESERVE k 100 WINDOW -5", 0, errCFWindowRange},
		{"CF.RESERVE k 100 WINDOW 1.5", 0, errCFWindowRange},
		{"CF.RESERVE k 100 WINDOW 3153600001", 0, errCFWindowRange},
		{"CF.RESERVE k 100 WINDOW 60 EXPANSION 2", 0, errCFWindowExpansion},
		{"CF.RESERVE k 100 WINDOW", 0, errArity},
	} {
		r, err := parseCFReserve(args(tc.in), &fs)
		if !errors.Is(err, tc.err) {
			t.Errorf("%q: error %v, want %v", tc.in, err, tc.err)
			continue
		}
		if err == nil && (r.p.window != tc.window || r.p.expansion != 0) {
			t.Errorf("%q: window %v, expansion %d", tc.in, r.p.window, r.p.expansion)
		}
	}
}

// TestWindowCommands runs the CF commands on a window filter: the same
// replies as on any cuckoo filter, CF.INFO's two more fields, dumps. The
// seed is fixed: with a random one, the 0 replies for absent items (and
// the 1 of CF.COUNT) would be wrong whenever two of the items share a
// fingerprint and a bucket pair.
func TestWindowCommands(t *testing.T) {
	parallel(t)
	_, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	for _, step := range []struct{ cmd, want string }{
		{"CF.RESERVE w 1000 WINDOW 3600 SEED 1", "+OK\r\n"},
		{"CF.RESERVE w 1000 WINDOW 3600 SEED 1", "-ERR item exists\r\n"},
		{"TYPE w", "+MBbloomCF\r\n"},
		{"CF.ADD w a", ":1\r\n"},
		{"CF.ADD w a", ":1\r\n"}, // refreshes a's age
		{"CF.ADDNX w a", ":0\r\n"},
		{"CF.ADDNX w b", ":1\r\n"},
		{"CF.EXISTS w a", ":1\r\n"},
		{"CF.EXISTS w zz", ":0\r\n"},
		{"CF.MEXISTS w a b zz", "*3\r\n:1\r\n:1\r\n:0\r\n"},
		{"CF.COUNT w a", ":1\r\n"},
		{"CF.INSERT w ITEMS c d", "*2\r\n:1\r\n:1\r\n"},
		{"CF.INSERTNX w ITEMS c e", "*2\r\n:0\r\n:1\r\n"},
		{"CF.DEL w a", ":1\r\n"},
		{"CF.DEL w a", ":0\r\n"},
		{"CF.COUNT w a", ":0\r\n"},
		{"CF.WINDOWAT w 1", "-ERR unknown command 'CF.WINDOWAT', with args beginning with: 'w' '1' \r\n"},
		{"CF.RESERVE x 1000 WINDOW 60 EXPANSION 4", "-" + string(errCFWindowExpansion) + "\r\n"},
	} {
		if got := c.do(strings.Fields(step.cmd)...); got != step.want {
			t.Fatalf("%s: %q, want %q", step.cmd, got, step.want)
		}
	}
	info := render(c.do("CF.INFO", "w"))
	for _, want := range []string{"Number of items inserted\n", "(integer) 4\n", "Expansion rate\n", "Window\n", "(integer) 3600000\n", "Granularity\n", "(integer) 257142\n"} {
		if !strings.Contains(info, want) {
			t.Fatalf("CF.INFO lacks %s:\n%s", want, info)
		}
	}
	// A dump loads into another key, a window filter holding the same.
	iters, chunks := scanDumpAll(t, c, "CF.SCANDUMP", "w")
	for i, chunk := range chunks {
		if got := c.do("CF.LOADCHUNK", "w2", iters[i], chunk); got != "+OK\r\n" {
			t.Fatalf("LOADCHUNK: %q", got)
		}
	}
	if got := c.do("CF.MEXISTS", "w2", "b", "c", "d", "e", "a"); got != "*5\r\n:1\r\n:1\r\n:1\r\n:1\r\n:0\r\n" {
		t.Fatalf("the loaded window: %q", got)
	}
	if !strings.Contains(render(c.do("CF.INFO", "w2")), "Window\n") {
		t.Fatal("the loaded filter is not a window")
	}
}

// TestWindowPersists: a window filter comes back from the log and from a
// snapshot exactly, and with the ages its items had: the log records when
// they were written, so an item older than the window when the server
// restarts is gone, not written anew by the replay.
func TestWindowPersists(t *testing.T) {
	testlong.SkipQuickRun(t)
	parallel(t)
	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	c.do("CF.RESERVE", "w", "1000", "WINDOW", "1")
	c.do("CF.RESERVE", "long", "1000", "WINDOW", "86400")
	for i := range 200 {
		c.do("CF.ADD", "w", fmt.Sprint("old", i))
		c.do("CF.ADD", "long", fmt.Sprint("item", i))
	}
	// A 1-second window forgets within 1 + 1/14 s.
	time.Sleep(1200 * time.Millisecond)
	fresh := time.Now()
	for i := range 100 {
		c.do("CF.ADD", "w", fmt.Sprint("new", i))
		c.do("CF.ADDNX", "long", fmt.Sprint("item", i+150))
		c.do("CF.DEL", "long", fmt.Sprint("item", i))
	}
	check := func(what string, c *conn) {
		t.Helper()
		for i := range 100 {
			got := c.do("CF.EXISTS", "w", fmt.Sprint("new", i))
			// The new items are younger than the window only while less
			// than a second has passed since the first was written: a
			// machine so busy that a second has gone by since then lets
			// them go.
			if young := time.Since(fresh) < time.Second; got != ":1\r\n" && young {
				t.Fatalf("%s: new%d: %q", what, i, got)
			} else if !young {
				t.Logf("%s: more than a second since the new items were written: their presence is not checked from new%d", what, i)
				break
			}
		}
		old := 0
		for i := range 200 {
			if c.do("CF.EXISTS", "w", fmt.Sprint("old", i)) == ":1\r\n" {
				old++
			}
		}
		if old > 2 { // false positives at most
			t.Fatalf("%s: %d of 200 items older than the window are found", what, old)
		}
	}
	check("before", c)
	want := state(t, c)
	s.Close() // no snapshot: the log alone
	s, addr = startServer(t, cfg)
	c = dial(t, addr)
	sameState(t, "log only", state(t, c), want)
	check("after the log", c)
	if got := c.do("SAVE"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	for i := range 50 {
		c.do("CF.ADD", "long", fmt.Sprint("later", i))
	}
	want = state(t, c)
	s.Close()
	_, addr = startServer(t, cfg)
	c = dial(t, addr)
	sameState(t, "snapshot and log", state(t, c), want)
	check("after the snapshot", c)
}
