package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/bloom"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/ptytest"
	"github.com/dedupkit/cuckoo/internal/testlong"
)

// docs/api.md: Add and AddUnique have one shape in both filter packages,
// so a counting Bloom filter is a cuckoo.Set, and no wrapper is needed to
// use the two alike.
var _ cuckoo.Set = (*bloom.Counting)(nil)

// What the command line promises about its files and its outputs, each
// run as a user would: a full filter stops the run, an update of a file
// is whole and waits for another in progress, a failed write or a killed
// run leaves nothing behind, progress draws on a terminal, a seed info
// prints rebuilds the same file, and messages name what the user typed.
// (Each of these was once broken; the history is in git.)

// numbered returns the lines "key-0".."key-(n-1)", one per line.
func numbered(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "key-%d\n", i)
	}
	return b.String()
}

// fullMessage is the shape of the message of a full filter: the same for
// every kind.
var fullMessage = regexp.MustCompile(`^cuckoo (dedup|build|add): the filter is full at (many\.txt|standard input) line [0-9,]+: it holds [0-9,]+ (lines|keys), its capacity is [0-9,]+; .+\n$`)

// TestFullBloomFilterStops: a Bloom filter of fixed size stops dedup,
// build and add past its capacity with status 4 and the cuckoo filter's
// message, and changes no file (it used to take every key, its rate rising
// to 100 %).
func TestFullBloomFilterStops(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"cuckoo", "blocked", "classic", "counting"} {
		t.Run("kind="+kind, func(t *testing.T) {
			e := newEnv(t)
			in := numbered(5000)
			e.write("many.txt", in)
			filterFlag := "--bloom=" + kind
			if kind == "cuckoo" {
				filterFlag = "--fingerprint-bits=16"
			}
			r := e.run("", "dedup", filterFlag, "--capacity", "1000", "--seed", "1", "--save", "seen.f", "many.txt")
			r.want(t, exitFull, "dedup")
			if !fullMessage.MatchString(r.stderr) || !strings.Contains(r.stderr, "--capacity") {
				t.Fatalf("dedup: stderr %q", r.stderr)
			}
			if !strings.HasPrefix(in, r.stdout) || strings.Count(r.stdout, "\n") < 1000 {
				t.Fatalf("dedup wrote %d lines, not the first of the input", strings.Count(r.stdout, "\n"))
			}
			e.write("f.bloom", "old")
			r = e.run("", "build", "-o", "f.bloom", filterFlag, "--capacity", "1000", "many.txt")
			r.want(t, exitFull, "build")
			if !fullMessage.MatchString(r.stderr) || string(e.read("f.bloom")) != "old" {
				t.Fatalf("build: stderr %q, file %q", r.stderr, trunc(string(e.read("f.bloom"))))
			}
			e.run("", "build", "-o", "small.bloom", filterFlag, "--capacity", "1000", "--seed", "2").want(t, exitOK, "build")
			before := e.read("small.bloom")
			r = e.run(in, "add", "small.bloom")
			r.want(t, exitFull, "add")
			if !fullMessage.MatchString(r.stderr) || !bytes.Equal(e.read("small.bloom"), before) {
				t.Fatalf("add: stderr %q; file changed: %v", r.stderr, !bytes.Equal(e.read("small.bloom"), before))
			}
			if names := e.files(); len(names) != 3 {
				t.Fatalf("files left: %v", names)
			}
		})
	}
}

// TestOverfilledFileWarns: a Bloom file filled far past its capacity
// (here by the library; the command refuses to) gets a warning from every
// command that loads it; one at its capacity does not.
func TestOverfilledFileWarns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		name string
		keys int
	}{{"over.bloom", 10_000}, {"ok.bloom", 100}} {
		f, _ := bloom.New(100, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(1))
		for i := range c.keys {
			f.AddString(fmt.Sprint("key-", i))
		}
		b, _ := f.MarshalBinary()
		e.write(c.name, string(b))
	}
	for _, args := range [][]string{{"query", "over.bloom", "--key", "key-1"}, {"info", "over.bloom"}, {"dedup", "--load", "over.bloom", "-"}} {
		r := e.run("key-1\n", args...)
		r.want(t, exitOK, args[0])
		if !strings.HasPrefix(r.stderr, "cuckoo "+args[0]+": warning: over.bloom answers with a false-positive rate of") ||
			!strings.Contains(r.stderr, "far above the 1.0 % it was built for") || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: stderr %q", args, r.stderr)
		}
	}
	if r := e.run("", "query", "ok.bloom", "--key", "key-1"); r.stderr != "" || r.code != exitOK {
		t.Errorf("a Bloom file at its capacity: status %d, stderr %q", r.code, r.stderr)
	}
}

// TestUnwritableOutputFailsWithStatus3: every command whose output cannot be written
// (/dev/full: no space left) exits with status 3 and one line saying so.
func TestUnwritableOutputFailsWithStatus3(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full here")
	}
	defer full.Close()
	e := newEnv(t)
	e.write("in.txt", "a\nb\na\n")
	e.run("", "build", "-o", "f.ckoo", "in.txt").want(t, exitOK, "build")
	e.run("", "store", "put", "s.d", "k", "v").want(t, exitOK, "store")
	for _, args := range [][]string{
		// An answer that cannot be written exits 3, also where the answer
		// alone would exit 1 (an absent key).
		{"query", "f.ckoo", "--key", "zzz"}, {"query", "f.ckoo", "--key", "a"}, {"store", "has", "s.d", "nope"},
		{"store", "has", "s.d", "k"}, {"store", "get", "s.d", "k"}, {"store", "stats", "s.d"},
		{"dedup", "--exact", "in.txt"}, {"dedup", "--exact-dir", "x.d", "in.txt"},
		{"dedup", "--count", "in.txt"}, {"dedup", "in.txt"}, {"info", "f.ckoo"}, {"info", "--json", "f.ckoo"},
		{"plan", "--items", "1000"}, {"plan", "--items", "1000", "--json"}, {"bench", "--items", "1000"},
		{"bench", "--items", "1000", "--json"}, {"version"}, {"--help"}, {"help", "dedup"}, {"dedup", "--help"},
		{"query", "f.ckoo", "in.txt"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd := exec.Command(binary, args...)
			cmd.Dir = e.dir
			cmd.Stdout = full
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cmd.Run()
			name := args[0]
			if name == "--help" {
				name = "cuckoo"
			}
			r := result{stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
			r.want(t, exitData, name)
			if !strings.Contains(r.stderr, "writing the output: no space left on device") {
				t.Fatalf("stderr %q", r.stderr)
			}
		})
	}
}

// TestKilledRunsLeaveNoLitter kills dedup -o with SIGKILL 20 times
// while it writes its temporary file: each kill leaves at most one
// temporary file, reused by the next run on the same target, and the next
// run to finish leaves none (20 kills used to leave 20 files).
func TestKilledRunsLeaveNoLitter(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	e := newEnv(t)
	e.write("in.txt", "a\nb\n")
	chunk := bytes.Repeat([]byte("a line of input that is never the same\n"), 1<<12)
	for i := range 20 {
		cmd := exec.Command(binary, "dedup", "-o", "out.txt")
		cmd.Dir = e.dir
		stdin, _ := cmd.StdinPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The temporary file exists from the start; writing a few chunks
		// puts the command in its loop, with data in the file.
		for range 4 {
			stdin.Write(chunk)
		}
		waitFor(t, func() bool { return len(temporaries(e)) > 0 })
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		stdin.Close()
		if temps := temporaries(e); len(temps) > 1 {
			t.Fatalf("after kill %d: temporary files %v", i+1, temps)
		}
	}
	// A fixed seed: see TestDedupInputs.
	e.run("", "dedup", "--seed", "1", "-o", "out.txt", "in.txt").want(t, exitOK, "dedup")
	if names := e.files(); len(names) != 2 || string(e.read("out.txt")) != "a\nb\n" {
		t.Fatalf("after a run that finished: files %v", names)
	}
}

// temporaries lists the temporary files of out.txt in the sandbox.
func temporaries(e *sandbox) []string {
	var temps []string
	for _, n := range e.files() {
		if strings.HasPrefix(n, ".out.txt.tmp") {
			temps = append(temps, n)
		}
	}
	return temps
}

// waitFor polls cond for up to 20 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Since(start) > 20*time.Second {
			t.Fatal("timed out")
		}
	}
}

// TestConcurrentUpdatesSerialize starts a run that updates a file
// and holds it (its input is a pipe left open), then a second run on the
// same file: the second waits, says so, and goes on only when the first
// has written, so no update is lost (two dedup --state runs used to keep
// only the last one's lines; two adds, only one key).
func TestConcurrentUpdatesSerialize(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		first        []string
		second       []string
		firstInput   string
		secondInput  string
		secondStdout string
	}{
		// Seeds for the runs that create a filter (see TestDedupInputs).
		{"dedup-state", []string{"dedup", "--state", "st.ckoo", "--seed", "1"}, []string{"dedup", "--state", "st.ckoo", "b.txt"},
			"a1\nshared\n", "b1\nshared\n", "b1\n"},
		{"dedup-output", []string{"dedup", "-o", "st.ckoo", "--seed", "1"}, []string{"dedup", "-o", "st.ckoo", "--seed", "2", "b.txt"},
			"a1\nshared\n", "b1\nshared\n", ""},
		{"add", []string{"add", "st.ckoo"}, []string{"add", "st.ckoo", "b.txt"},
			"a1\nshared\n", "b1\nshared\n", ""},
	} {
		t.Run("case="+c.name, func(t *testing.T) {
			e := newEnv(t)
			e.write("b.txt", c.secondInput)
			if c.first[0] == "add" {
				e.run("", "build", "-o", "st.ckoo", "--grow").want(t, exitOK, "build")
			}
			first := exec.Command(binary, c.first...)
			first.Dir = e.dir
			stdin, _ := first.StdinPipe()
			var firstErr bytes.Buffer
			first.Stderr = &firstErr
			if err := first.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait until the first run holds the lock: a flock on its lock
			// file fails. (The file exists a moment before it is locked,
			// and a second run started in that moment could take the lock
			// first and not wait.) The wait has no shorter limit than
			// waitFor's: on a loaded machine the first run may take long to
			// start.
			waitFor(t, func() bool { return lockHeld(filepath.Join(e.dir, ".st.ckoo.lock")) })
			second := exec.Command(binary, c.second...)
			second.Dir = e.dir
			var secondOut bytes.Buffer
			second.Stdout = &secondOut
			errPipe, _ := second.StderrPipe()
			if err := second.Start(); err != nil {
				t.Fatal(err)
			}
			// It waits for the first, and says so on standard error, which
			// ends when it exits.
			lines := make(chan string)
			go func() {
				sc := bufio.NewScanner(errPipe)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			var secondErr []string
			for line := range lines {
				secondErr = append(secondErr, line)
				if strings.Contains(line, "waiting for another run that is writing st.ckoo") {
					break
				}
			}
			if len(secondErr) == 0 || !strings.Contains(secondErr[len(secondErr)-1], "waiting") {
				t.Errorf("the second run finished while the first held the file: stderr %q", secondErr)
			}
			io.WriteString(stdin, c.firstInput)
			stdin.Close()
			if code := waitExit(t, first); code != exitOK {
				t.Fatalf("first run: status %d, stderr %q", code, firstErr.String())
			}
			for line := range lines {
				secondErr = append(secondErr, line)
			}
			if code := waitExit(t, second); code != exitOK {
				t.Fatalf("second run: status %d, stderr %q", code, secondErr)
			}
			if c.first[0] == "dedup" && c.first[1] == "-o" {
				if got := string(e.read("st.ckoo")); got != c.secondInput {
					t.Fatalf("the output holds %q, want the second run's", got)
				}
				return
			}
			if secondOut.String() != c.secondStdout {
				t.Fatalf("second run printed %q, want %q", secondOut.String(), c.secondStdout)
			}
			// Both runs' keys are in the file.
			r := e.run("a1\nb1\nshared\n", "query", "st.ckoo", "--absent")
			if r.code != exitOK || r.stdout != "" {
				t.Fatalf("keys missing from the file: %q (status %d, %s)", r.stdout, r.code, r.stderr)
			}
			if names := e.files(); len(names) != 2 {
				t.Fatalf("files left: %v", names)
			}
		})
	}
}

// TestProgressOnTerminalWhenOutputDiscarded: with standard error a terminal and
// standard output /dev/null, dedup draws its progress (it used to take
// /dev/null for the terminal and stay silent).
func TestProgressOnTerminalWhenOutputDiscarded(t *testing.T) {
	t.Parallel()
	master, slave := ptytest.OpenOrSkip(t)
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	cmd := exec.Command(binary, "dedup")
	cmd.Stdout, cmd.Stderr = null, slave
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	// Read the terminal until the bar shows, then end the input. (A sleep
	// of 700 ms stood here: the bar first draws 250 ms after the command
	// starts, and on a loaded machine starting it can take longer than the
	// rest of the 700 ms; Finish erases the bar without drawing it.)
	chunks := make(chan string)
	go func() {
		defer close(chunks)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				chunks <- string(buf[:n])
			}
			if err != nil { // EIO once the command exits
				return
			}
		}
	}()
	io.WriteString(stdin, numbered(1000))
	var out strings.Builder
	timeout := time.After(20 * time.Second)
wait:
	for !strings.Contains(out.String(), "lines/s") {
		select {
		case c, ok := <-chunks:
			if !ok {
				break wait
			}
			out.WriteString(c)
		case <-timeout:
			break wait
		}
	}
	stdin.Close()
	if code := waitExit(t, cmd); code != exitOK {
		t.Fatalf("status %d", code)
	}
	for c := range chunks {
		out.WriteString(c)
	}
	if !strings.Contains(out.String(), "dedup ") || !strings.Contains(out.String(), "lines/s") {
		t.Fatalf("no progress on the terminal: %q", out.String())
	}
}

// TestSeedFromInfoRebuildsSameFile: --seed takes the hexadecimal form info prints, and a
// file rebuilt with it is the same file.
func TestSeedFromInfoRebuildsSameFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("keys.txt", numbered(100))
	e.run("", "build", "-o", "a.ckoo", "--seed", "12345", "keys.txt").want(t, exitOK, "build")
	r := e.run("", "info", "a.ckoo")
	m := regexp.MustCompile(`(?m)^seed +(0x[0-9a-f]{16})$`).FindStringSubmatch(r.stdout)
	if m == nil || m[1] != "0x0000000000003039" {
		t.Fatalf("info: %s", r.stdout)
	}
	e.run("", "build", "-o", "b.ckoo", "--seed", m[1], "keys.txt").want(t, exitOK, "build")
	if !bytes.Equal(e.read("a.ckoo"), e.read("b.ckoo")) {
		t.Fatal("the file built with the seed info printed differs")
	}
	e.run("", "build", "-o", "c.ckoo", "--seed", "0xffffffffffffffff", "keys.txt").want(t, exitOK, "build")
	if r := e.run("", "info", "--json", "c.ckoo"); !strings.Contains(r.stdout, `"seed":"0xffffffffffffffff"`) {
		t.Fatalf("info --json: %s", r.stdout)
	}
	r = e.run("", "build", "-o", "d.ckoo", "--seed", "0xzz", "keys.txt")
	r.want(t, exitUsage, "build")
	if !strings.Contains(r.stderr, `bad --seed value "0xzz"`) {
		t.Fatalf("stderr %q", r.stderr)
	}
}

// TestMessagesNameWhatWasTyped: errors name what the user typed, and counts of one
// are singular.
func TestMessagesNameWhatWasTyped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("one.txt", "a\n")
	for _, c := range []struct {
		args     []string
		contains string
	}{
		{[]string{"dedup", "--fpr", "1e-10", "one.txt"}, "bad --fpr 1e-10: below 1.8e-09, the lowest rate a cuckoo filter reaches"},
		{[]string{"build", "-o", "f", "--fpr", "1e-10", "one.txt"}, "bad --fpr 1e-10: below"},
		{[]string{"dedup", "--bloom=scalable", "--fpr", "1e-16", "one.txt"}, "bad --fpr 1e-16: below 1e-15, the lowest rate a Bloom filter reaches"},
		{[]string{"build", "-o"}, "flag -o needs a value"},
		{[]string{"dedup", "-q=maybe"}, `bad -q value "maybe": want true or false`},
	} {
		r := e.run("", c.args...)
		r.want(t, exitUsage, c.args[0])
		if !strings.Contains(r.stderr, c.contains) {
			t.Errorf("%v: stderr %q does not say %q", c.args, r.stderr, c.contains)
		}
	}
	r := e.run("", "build", "-o", "f.ckoo", "--stats", "one.txt")
	r.want(t, exitOK, "build")
	if !strings.Contains(r.stderr, ": cuckoo, 1 item from 1 line, ") {
		t.Fatalf("build --stats: %q", r.stderr)
	}
	r = e.run("", "add", "f.ckoo", "--stats", "--key", "b")
	if !strings.Contains(r.stderr, "cuckoo add: 1 item added from 1 key\n") {
		t.Fatalf("add --stats: %q", r.stderr)
	}
	r = e.run("", "dedup", "--stats", "one.txt")
	if !strings.Contains(r.stderr, "cuckoo dedup: 1 line in (") || !strings.Contains(r.stderr, ", 1 key, ") {
		t.Fatalf("dedup --stats: %q", r.stderr)
	}
}
