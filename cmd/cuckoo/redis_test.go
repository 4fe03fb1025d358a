package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// goSourceLines returns the lines of some of Go's own source files: real
// text no one tuned for, with many repeated lines ("}", "return nil").
func goSourceLines(t *testing.T, max int) []string {
	t.Helper()
	root := filepath.Join(runtimeGOROOT(t), "src", "net", "http")
	var lines []string
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || len(lines) >= max || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err == nil {
			lines = append(lines, strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")...)
		}
		return nil
	})
	if len(lines) < 1000 {
		t.Skip("Go's source tree is not there")
	}
	return lines[:min(len(lines), max)]
}

func runtimeGOROOT(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skip("go env GOROOT:", err)
	}
	return strings.TrimSpace(string(out))
}

// redisURL is the --redis URL of s for the tests: with generous timeouts
// (redistest.ClientTimeout), where the command's are go-redis's defaults
// (3 s to read), which a busy machine may exceed. The tests of timeouts
// give their own; TestPushPull gives host:port too, the other form.
func redisURL(s *redistest.Server) string { return generousURL(s.Addr) }

// generousURL is the --redis URL of addr with redistest.ClientTimeout
// for every timeout.
func generousURL(addr string) string {
	d := redistest.ClientTimeout.String()
	return "redis://" + addr + "?dial_timeout=" + d + "&read_timeout=" + d + "&write_timeout=" + d
}

// testClient returns a client of s with generous timeouts, for the tests'
// own checks.
func testClient(s *redistest.Server) *redis.Client {
	d := redistest.ClientTimeout
	return redis.NewClient(&redis.Options{Addr: s.Addr, DialTimeout: d, ReadTimeout: d, WriteTimeout: d})
}

// TestPushPull builds a segmented filter file from Go's source lines,
// pushes it into a real Redis server, pulls it back (the same bytes),
// and checks the errors of the Redis commands.
func TestPushPull(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	s := redistest.NewServer(t, redistest.Config{})
	e := newEnv(t)
	lines := goSourceLines(t, 40000)
	e.write("keys.txt", strings.Join(lines, "\n")+"\n")
	e.run("", "build", "--segments", "4", "--capacity", "50000", "--seed", "7", "-o", "a.ckoo", "keys.txt").want(t, 0, "build")
	e.run("", "push", "a.ckoo", "--redis", redisURL(s), "--name", "src").want(t, 0, "push")
	e.run("", "pull", "--redis", redisURL(s), "--name", "src", "-o", "b.ckoo").want(t, 0, "pull")
	if !bytes.Equal(e.read("a.ckoo"), e.read("b.ckoo")) {
		t.Fatal("the pulled file differs from the pushed one")
	}
	e.run("", "query", "b.ckoo", "--key", lines[0]).want(t, 0, "query")
	e.run("", "push", "a.ckoo", "--redis", redisURL(s), "--name", "src").want(t, 3, "push")
	e.run("", "push", "a.ckoo", "--redis", redisURL(s), "--name", "src", "--replace").want(t, 0, "push")
	e.run("", "pull", "--redis", s.Addr, "--name", "nothing", "-o", "c.ckoo").want(t, 3, "pull")
	e.run("", "pull", "--redis", redisURL(s), "--name", "src").want(t, 2, "pull")
	e.run("", "push", "a.ckoo", "--name", "src").want(t, 2, "push")
	e.run("", "build", "--segments", "4", "--grow", "-o", "g.ckoo", "keys.txt").want(t, 2, "build")
	e.run("", "build", "--bloom", "--capacity", "50000", "-o", "bl.ckoo", "keys.txt").want(t, 0, "build")
	e.run("", "push", "bl.ckoo", "--redis", redisURL(s), "--name", "bl").want(t, 2, "push")
	e.run("", "push", "a.ckoo", "--redis", "127.0.0.1:1", "--name", "x").want(t, 3, "push")
	// Any bucket size a filter file takes goes to Redis and back bit for bit.
	e.run("", "build", "--segments", "2", "--capacity", "50000", "--bucket-size", "3", "-o", "three.ckoo", "keys.txt").want(t, 0, "build")
	e.run("", "push", "three.ckoo", "--redis", redisURL(s), "--name", "three").want(t, 0, "push")
	e.run("", "pull", "--redis", redisURL(s), "--name", "three", "-o", "three-back.ckoo").want(t, 0, "pull")
	if !bytes.Equal(e.read("three.ckoo"), e.read("three-back.ckoo")) {
		t.Fatal("the pulled 3-slot file differs from the pushed one")
	}
	if names := e.files(); len(names) != 6 {
		t.Fatalf("files left: %v", names)
	}
}

// TestDedupRedis runs two dedup processes at once on two halves of one
// stream, sharing a filter in Redis: together they print every distinct
// line exactly once (compared with an exact set), each in its input's
// order.
//
// Two distinct lines with the same fingerprint and bucket pair would make
// the second a false positive, missing from the output. The filter is
// large (a million keys, 32-bit fingerprints: about 270,000 buckets) so
// that for any 32,000 distinct lines (the long run's 60,000 lines; the
// quick run's 24,000 are fewer) that happens with probability about
// D²/(buckets·2^32) ≈ 1e-6, and its seed is fixed: whether it happens
// depends only on the seed and the set of lines, not on which process
// adds a line first, and with this seed and the net/http sources of Go
// 1.26 it does not. The same holds for a window filter in Redis
// (--window, an hour: no key expires during the test), with 28-bit
// fingerprints, its widest (about 1e-5; with this seed, none).
func TestDedupRedis(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	for _, mode := range redisSeenModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			dedupRedisShared(t, mode.flags)
		})
	}
}

func dedupRedisShared(t *testing.T, mode []string) {
	s := redistest.NewServer(t, redistest.Config{})
	e := newEnv(t)
	// Each process's half spans batches (8,192 lines) in the quick run's
	// 24,000 lines too.
	n := 24000
	if testlong.Enabled() {
		n = 60000
	}
	lines := goSourceLines(t, n)
	half := len(lines) / 2
	e.write("a.txt", strings.Join(lines[:half], "\n")+"\n")
	e.write("b.txt", strings.Join(lines[half:], "\n")+"\n")
	bits := "32"
	if len(mode) > 0 {
		bits = "28" // a window's widest
	}
	url := redisURL(s)
	args := append([]string{"dedup", "--redis", url, "--name", "shared", "--capacity", "1M", "--fingerprint-bits", bits, "--seed", "0xded0"}, mode...)
	var out [2]result
	var wg sync.WaitGroup
	for i, in := range []string{"a.txt", "b.txt"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = runIn(t, e.dir, nil, append(args[:len(args):len(args)], in)...) // a copy each: two appends must not share args' spare room
		}()
	}
	wg.Wait()
	distinct := map[string]bool{}
	for _, l := range lines {
		distinct[l] = true
	}
	printed := map[string]int{}
	for i, r := range out {
		r.want(t, 0, "dedup")
		got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		src := lines[:half]
		if i == 1 {
			src = lines[half:]
		}
		if !isSubsequence(got, src) {
			t.Fatalf("process %d printed lines out of its input's order", i)
		}
		for _, l := range got {
			printed[l]++
		}
	}
	if len(printed) != len(distinct) {
		var missing []string
		for l := range distinct {
			if printed[l] == 0 {
				missing = append(missing, l)
			}
		}
		sort.Strings(missing)
		t.Fatalf("%d distinct lines printed, want %d; missing %q", len(printed), len(distinct), missing[:min(5, len(missing))])
	}
	for l, n := range printed {
		if n != 1 {
			t.Fatalf("%q printed %d times", l, n)
		}
	}
	// A third run sees everything: --count counts every line as a repeat.
	r := e.run("", append(append([]string{"dedup", "--redis", url, "--name", "shared", "--count"}, mode...), "a.txt")...)
	r.want(t, 0, "dedup")
	if strings.TrimSpace(r.stdout) != strconv.Itoa(half) {
		t.Fatalf("--count printed %q, want %d", r.stdout, half)
	}
	with := func(args ...string) []string {
		return append(append([]string{"dedup", "--redis", url}, args[:len(args)-1]...), append(mode, args[len(args)-1])...)
	}
	e.run("", with("--name", "absent", "a.txt")...).want(t, 3, "dedup")
	e.run("", with("--name", "shared", "--capacity", "5", "a.txt")...).want(t, 2, "dedup")
	e.run("", with("--name", "shared", "--save", "x.ckoo", "a.txt")...).want(t, 2, "dedup")
}

func isSubsequence(sub, of []string) bool {
	j := 0
	for _, s := range sub {
		for j < len(of) && of[j] != s {
			j++
		}
		if j == len(of) {
			return false
		}
		j++
	}
	return true
}

// seqLines returns the lines of seq first last, as text.
func seqLines(first, last int) []string {
	var l []string
	for i := first; i <= last; i++ {
		l = append(l, strconv.Itoa(i))
	}
	return l
}

// firstOccurrences returns lines without their repeats, in input order:
// what awk '!seen[$0]++' prints.
func firstOccurrences(lines []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lines {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}

// feeding is a run of the command whose standard input the test writes.
type feeding struct {
	cmd            *exec.Cmd
	stdin          io.WriteCloser
	stdout, stderr bytes.Buffer
	done           chan struct{}
	code           int
}

// startFed starts the command in dir, with TMPDIR set to dir (where
// dedup saves the lines Redis did not confirm).
func startFed(t *testing.T, dir string, args ...string) *feeding {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	r := &feeding{cmd: exec.Command(binary, args...), done: make(chan struct{})}
	r.cmd.Dir = dir
	r.cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	r.stdin, _ = r.cmd.StdinPipe()
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		err := r.cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.code = ee.ExitCode()
		} else if err != nil {
			r.code = -1
		}
	}()
	return r
}

func (r *feeding) feed(t *testing.T, lines []string) {
	t.Helper()
	if _, err := io.WriteString(r.stdin, strings.Join(lines, "\n")+"\n"); err != nil {
		t.Fatalf("the command stopped early: %v; stderr %q", err, r.stderr.String())
	}
}

// wait closes standard input and waits for the command to exit.
func (r *feeding) wait() result {
	r.stdin.Close()
	<-r.done
	return result{r.stdout.String(), r.stderr.String(), r.code}
}

// openFilter opens the filter name in s with a client of its own.
func openFilter(t *testing.T, s *redistest.Server, name string) *redisfilter.Filter {
	t.Helper()
	rdb := testClient(s)
	t.Cleanup(func() { rdb.Close() })
	f, err := redisfilter.Open(context.Background(), rdb, name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// dedupThroughPause runs dedup --redis on lines, pausing the server
// (SIGSTOP) once the command's first batch reaches it, and resuming it
// a second later, or, with resumeAfterExit, only once the command has
// exited. The command's read timeout is 200 ms, so that go-redis's own
// retries (4 tries) give up within the pause too.
func dedupThroughPause(t *testing.T, lines []string, resumeAfterExit bool, flags ...string) (result, *redistest.Server) {
	t.Helper()
	s := redistest.NewServer(t, redistest.Config{})
	e := newEnv(t)
	// 32-bit fingerprints and a fixed seed: none of the inputs' distinct
	// lines is a false positive of another (checked by the comparisons
	// with the exact output).
	e.run("", "dedup", "--redis", redisURL(s), "--name", "paused", "--capacity", "1M", "--fingerprint-bits", "32", "--seed", "0x5eed").want(t, 0, "dedup")
	f := openFilter(t, s, "paused")
	args := append([]string{"dedup", "--redis", "redis://" + s.Addr + "?read_timeout=200ms", "--name", "paused"}, flags...)
	r := startFed(t, e.dir, args...)
	// The first batch goes to Redis at 8,192 lines less one read (256).
	const firstBatch = 8192
	r.feed(t, lines[:firstBatch])
	for {
		if n, err := f.Len(context.Background()); err == nil && n > 0 {
			break
		}
		select {
		case <-r.done:
			t.Fatalf("dedup exited early: %d, %s", r.code, r.stderr.String())
		case <-time.After(time.Millisecond):
		}
	}
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	// The rest, while the command waits for Redis (and, if it gives up,
	// reads no more).
	go func() {
		io.WriteString(r.stdin, strings.Join(lines[firstBatch:], "\n")+"\n")
		r.stdin.Close()
	}()
	if resumeAfterExit {
		<-r.done
	} else {
		time.Sleep(time.Second)
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	<-r.done
	return result{r.stdout.String(), r.stderr.String(), r.code}, s
}

// TestDedupRedisStall runs dedup --redis through a pause of the server
// during its second batch (longer than go-redis's read timeout and
// retries), on seq and on Go's own source lines (repeats included): it
// waits, goes on, and prints exactly the first occurrence of each line,
// as awk '!seen[$0]++' does. Before writes ran once, the copies go-redis
// sent again answered "present" for lines their first copy added, which
// were then missing from the output.
func TestDedupRedisStall(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	for _, c := range []struct {
		name  string
		lines []string
	}{{"seq", seqLines(1, 12000)}, {"go-source", goSourceLines(t, 20000)}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r, _ := dedupThroughPause(t, c.lines, false)
			r.want(t, 0, "dedup")
			want := strings.Join(firstOccurrences(c.lines), "\n") + "\n"
			if r.stdout != want {
				got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
				t.Fatalf("%d lines printed, want %d (the first occurrences)", len(got), strings.Count(want, "\n"))
			}
		})
	}
}

// TestDedupRedisOutage pauses the server during dedup's first batch for
// longer than --redis-wait (resuming it only after dedup exited): dedup
// exits 3, having printed the new lines Redis confirmed; the lines it sent
// and Redis did not confirm are in the file its message names, and the
// message names them and the first line not sent (if any). After the server
// resumes, every line recorded in Redis is printed or in that file, no
// line not sent is recorded, and following the message loses no line.
func TestDedupRedisOutage(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	lines := seqLines(1, 12000)
	r, s := dedupThroughPause(t, lines, true, "--redis-wait", "300ms")
	r.want(t, 3, "dedup")
	t.Log(r.stderr)
	var printed []string
	if r.stdout != "" {
		printed = strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	}
	if !slices.Equal(printed, lines[:len(printed)]) {
		t.Fatalf("the output is not the start of the input")
	}
	m := regexp.MustCompile(`lines (\d+)-(\d+) \(([\d,]+) lines\) were sent and not printed, and may or may not be recorded in Redis as seen: [^;]*; they are in (\S+?);? (?:no line from line (\d+) on \(counted over all inputs\) was sent)?`).FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("the message does not name the lines: %s", r.stderr)
	}
	first, _ := strconv.Atoi(m[1])
	last, _ := strconv.Atoi(m[2])
	// When the rest of the input fitted in the batches sent before Redis
	// stopped answering, every line was sent and the message has no
	// "not sent" part.
	notSent := len(lines) + 1
	if m[5] != "" {
		notSent, _ = strconv.Atoi(m[5])
	}
	if first != len(printed)+1 || notSent != last+1 {
		t.Fatalf("%d lines printed; the message names lines %d-%d as unconfirmed and %d on as not sent", len(printed), first, last, notSent)
	}
	saved, err := os.ReadFile(m[4])
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(lines[first-1:last], "\n") + "\n"; string(saved) != want {
		t.Fatalf("%s holds %d lines, not lines %d-%d", m[4], strings.Count(string(saved), "\n"), first, last)
	}
	// The server runs what waited in its sockets when it resumes.
	f := openFilter(t, s, "paused")
	in := make([][]byte, len(lines))
	for i, l := range lines {
		in[i] = []byte(l)
	}
	found := make([]bool, len(in))
	if err := f.ContainsBatch(context.Background(), in, found, make([]error, len(in))); err != nil {
		t.Fatal(err)
	}
	recorded := 0
	for i, ok := range found {
		switch {
		case ok && i+1 >= notSent:
			t.Fatalf("line %d was not sent, and is recorded", i+1)
		case ok:
			recorded++
		}
	}
	t.Logf("%d lines printed, %d saved, %d recorded in Redis", len(printed), last-first+1, recorded)
	rem := parseRemedy(t, r.stderr)
	checkNoLineLost(t, lines, rem.follow(t, t.TempDir(), lines, r.stdout, "dedup", "--redis", redisURL(s), "--name", "paused"), rem)
}

// TestRedisSleepLosesNoLine: with go-redis's default options, Redis sleeps
// 6 s (DEBUG SLEEP), from 1 s before the lines arrive, and dedup prints
// all 5,000 of them (a reported run printed 3,616 and exited 0). A long
// check (CUCKOO_LONG=1): it takes 7 s.
func TestRedisSleepLosesNoLine(t *testing.T) {
	t.Parallel()
	testlong.Skip(t)
	s := redistest.NewServer(t, redistest.Config{Debug: true})
	e := newEnv(t)
	url := "redis://" + s.Addr
	// A fixed seed and 32-bit fingerprints: with a random seed, one of the
	// 5,000 new lines is a false positive in about 0.3 % of runs (16-bit
	// fingerprints at this load), which would read as a lost line.
	e.run("", "dedup", "--redis", url, "--name", "lost", "--capacity", "1M", "--seed", "7", "--fingerprint-bits", "32").want(t, 0, "dedup")
	r := startFed(t, e.dir, "dedup", "--redis", url, "--name", "lost")
	slept := make(chan error, 1)
	go func() {
		time.Sleep(time.Second)
		slept <- s.Sleep(6 * time.Second)
	}()
	time.Sleep(2 * time.Second)
	lines := seqLines(1, 5000)
	r.feed(t, lines)
	res := r.wait()
	if err := <-slept; err != nil {
		t.Fatal(err)
	}
	res.want(t, 0, "dedup")
	if res.stdout != strings.Join(lines, "\n")+"\n" {
		printed := map[string]bool{}
		for _, l := range strings.Split(res.stdout, "\n") {
			printed[l] = true
		}
		var missing []string
		for _, l := range lines {
			if !printed[l] {
				missing = append(missing, l)
			}
		}
		t.Fatalf("%d lines printed, want seq 1 5000; missing %v; stderr:\n%s", strings.Count(res.stdout, "\n"), missing, res.stderr)
	}
}
