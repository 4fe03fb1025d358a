package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
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

// redisProxy forwards the connections made to its loopback address to a
// Redis server, and lets a test act at a precise point of a client's
// traffic: before it forwards a chunk the client sent, it calls before,
// which may block (to stall or refuse the server first) and returns
// commands to send after the chunk on the same connection (so that Redis
// runs them right after it), and whether to drop the server's replies on
// that connection from then on (as a network that loses them would).
type redisProxy struct {
	addr   string
	ln     net.Listener
	target string
	before func(chunk []byte) (inject []byte, mute bool)

	mu    sync.Mutex // serializes before
	wg    sync.WaitGroup
	conns sync.Map // net.Conn → struct{}, to close at the end
}

// newRedisProxy starts a proxy to target, stopped at the end of the test.
func newRedisProxy(t *testing.T, target string, before func(chunk []byte) (inject []byte, mute bool)) *redisProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &redisProxy{addr: ln.Addr().String(), ln: ln, target: target, before: before}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.conns.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true })
		p.wg.Wait()
	})
	return p
}

func (p *redisProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.conns.Store(client, struct{}{})
		p.conns.Store(server, struct{}{})
		var muted sync.Mutex
		mute := false
		p.wg.Add(2)
		go func() { // client → server
			defer p.wg.Done()
			defer server.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := client.Read(buf)
				if n > 0 {
					p.mu.Lock()
					inject, m := p.before(buf[:n])
					p.mu.Unlock()
					if m {
						muted.Lock()
						mute = true
						muted.Unlock()
					}
					if _, err := server.Write(append(buf[:n:n], inject...)); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
		go func() { // server → client
			defer p.wg.Done()
			defer client.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := server.Read(buf)
				muted.Lock()
				drop := mute
				muted.Unlock()
				if n > 0 && !drop {
					if _, err := client.Write(buf[:n]); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// respCommand is a command in RESP, as a client sends it.
func respCommand(args ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.Bytes()
}

// isWriteChunk reports whether a chunk a client sent carries a write of a
// cuckoo filter or a window filter in Redis.
func isWriteChunk(chunk []byte) bool {
	return bytes.Contains(chunk, []byte("ckf2_add")) || bytes.Contains(chunk, []byte("ckf2_wadd"))
}

// atWrite returns a proxy's before that calls act before it forwards
// the nth chunk carrying a write, and forwards every chunk as it is.
func atWrite(nth int, act func()) func(chunk []byte) ([]byte, bool) {
	writes := 0
	return func(chunk []byte) ([]byte, bool) {
		if isWriteChunk(chunk) {
			if writes++; writes == nth {
				act()
			}
		}
		return nil, false
	}
}

// waitRefusing waits until s refuses a write with an error that starts
// with prefix (BUSY, LOADING).
func waitRefusing(s *redistest.Server, prefix string) {
	for {
		if _, err := s.Do("SET", "probe", "x"); err != nil && strings.HasPrefix(err.Error(), prefix) {
			return
		}
	}
}

// runDedupIn runs the command in dir with TMPDIR set to dir (where dedup
// saves the lines it names).
func runDedupIn(t *testing.T, dir string, stdin []byte, args ...string) result {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	cmd.Stdin = bytes.NewReader(stdin)
	return runCmd(t, cmd)
}

// remedy is what a failed dedup --redis run's message says to do: print
// the lines of some files after the output, run dedup again on the lines
// of others, then on the input from a line on.
type remedy struct {
	print, again []string // files
	from         int      // the first line not sent; 0: none
}

var (
	savedFile = regexp.MustCompile(`(?:it is|they are) in (\S+cuckoo-dedup-(unconfirmed|not-recorded)-\d+\.txt)`)
	notSentAt = regexp.MustCompile(`no line from line (\d+) on \(counted over all inputs\) was sent`)
)

// parseRemedy reads the files and the line a failed run's message names,
// and checks that its remedy says what to do with each.
func parseRemedy(t *testing.T, msg string) remedy {
	t.Helper()
	var r remedy
	rem := msg
	for _, m := range savedFile.FindAllStringSubmatch(msg, -1) {
		if m[2] == "unconfirmed" {
			r.print = append(r.print, m[1])
			if !strings.Contains(rem, "print the lines in "+m[1]+" after the output") && !strings.Contains(rem, "print the line in "+m[1]+" after the output") {
				t.Fatalf("the remedy does not say to print %s: %s", m[1], msg)
			}
		} else {
			r.again = append(r.again, m[1])
			if !strings.Contains(rem, "run dedup again on the lines in "+m[1]) {
				t.Fatalf("the remedy does not say to dedup %s again: %s", m[1], msg)
			}
		}
	}
	if m := notSentAt.FindStringSubmatch(msg); m != nil {
		r.from, _ = strconv.Atoi(m[1])
		if !strings.Contains(rem, "the lines from line "+m[1]+" on") {
			t.Fatalf("the remedy does not say to dedup the lines from line %s on: %s", m[1], msg)
		}
	}
	return r
}

// follow follows remedy r of a run of dedupArgs on lines that printed
// out: it returns the output then complete.
func (r remedy) follow(t *testing.T, dir string, lines []string, out string, dedupArgs ...string) string {
	t.Helper()
	for _, f := range r.print {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out += string(data)
	}
	for _, f := range r.again {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		res := runDedupIn(t, dir, data, dedupArgs...)
		res.want(t, 0, "dedup")
		out += res.stdout
	}
	if r.from != 0 {
		res := runDedupIn(t, dir, []byte(strings.Join(lines[r.from-1:], "\n")+"\n"), dedupArgs...)
		res.want(t, 0, "dedup")
		out += res.stdout
	}
	return out
}

// checkNoLineLost compares the output of a run of dedup on lines, with
// its remedy followed, against the exact model (awk '!seen[$0]++'): the
// same lines, each once, but that a line the remedy printed from an
// unconfirmed file may appear twice.
func checkNoLineLost(t *testing.T, lines []string, out string, r remedy) {
	t.Helper()
	mayRepeat := map[string]bool{}
	for _, f := range r.print {
		data, _ := os.ReadFile(f)
		for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			mayRepeat[l] = true
		}
	}
	got := map[string]int{}
	if out != "" {
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			got[l]++
		}
	}
	want := firstOccurrences(lines)
	var missing, extra []string
	for _, l := range want {
		switch n := got[l]; {
		case n == 0:
			missing = append(missing, l)
		case n > 2 || n == 2 && !mayRepeat[l]:
			extra = append(extra, l)
		}
		delete(got, l)
	}
	for l := range got {
		extra = append(extra, l)
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("with the remedy followed, %d distinct lines of %d are missing (%q) and %d printed wrongly (%q)",
			len(missing), len(want), missing[:min(5, len(missing))], len(extra), extra[:min(5, len(extra))])
	}
}

// TestDedupRedisLostReplyThenOOM is the report's case through the CLI:
// dedup --redis with a 1 s read timeout sends 100 new lines while Redis
// sleeps 3 s (DEBUG SLEEP), and right after them, on the same connection,
// CONFIG SET maxmemory 1: when Redis wakes it records the lines and then
// refuses the copies dedup sends again (OOM). dedup must exit 3 with the
// 100 lines in its unconfirmed file, so that printing them after the
// output loses none. Before, it exited 3 with no file and no line named,
// and every later run treated the 100 lines as seen. The same holds with
// --window (an hour: no key expires meanwhile): a window filter's writes
// follow the same rule.
func TestDedupRedisLostReplyThenOOM(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	for _, mode := range redisSeenModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			lostReplyThenOOM(t, mode.flags)
		})
	}
}

// redisSeenModes are the seen-sets of dedup --redis: a cuckoo filter, and
// a window filter (of an hour, in which no key of a test expires).
var redisSeenModes = []struct {
	name  string
	flags []string
}{{"filter", nil}, {"window", []string{"--window", "1h"}}}

func lostReplyThenOOM(t *testing.T, mode []string) {
	s := redistest.NewServer(t, redistest.Config{Debug: true})
	e := newEnv(t)
	url := redisURL(s)
	bits := "32"
	if len(mode) > 0 {
		bits = "28"
	}
	e.run("", append([]string{"dedup", "--redis", url, "--name", "seen", "--capacity", "1M", "--fingerprint-bits", bits}, mode...)...).want(t, 0, "dedup")
	probe := redis.NewClient(&redis.Options{Addr: s.Addr, ReadTimeout: 50 * time.Millisecond, MaxRetries: -1})
	defer probe.Close()
	slept := make(chan error, 1)
	first := true
	p := newRedisProxy(t, s.Addr, func(chunk []byte) ([]byte, bool) {
		if !isWriteChunk(chunk) || !first {
			return nil, false
		}
		first = false
		go func() { slept <- s.Sleep(3 * time.Second) }()
		for probe.Ping(context.Background()).Err() == nil {
			// Asleep once a PING goes unanswered.
		}
		return respCommand("CONFIG", "SET", "maxmemory", "1"), true
	})
	lines := seqLines(1, 100)
	args := append([]string{"dedup", "--redis", "redis://" + p.addr + "?read_timeout=1s", "--name", "seen"}, mode...)
	r := runDedupIn(t, e.dir, []byte(strings.Join(lines, "\n")+"\n"), args...)
	if err := <-slept; err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do("CONFIG", "SET", "maxmemory", "0"); err != nil {
		t.Fatal(err)
	}
	t.Log(r.stderr)
	r.want(t, 3, "dedup")
	if r.stdout != "" {
		t.Fatalf("printed %q, Redis confirmed no line", r.stdout)
	}
	if !strings.Contains(r.stderr, "lines 1-100 (100 lines) were sent and not printed, and may or may not be recorded in Redis as seen") || !strings.Contains(r.stderr, "OOM") {
		t.Fatalf("the message does not name the 100 lines as unconfirmed, and the refusal: %s", r.stderr)
	}
	rem := parseRemedy(t, r.stderr)
	if len(rem.print) != 1 || len(rem.again) != 0 || rem.from != 0 {
		t.Fatalf("remedy %+v, want one file to print", rem)
	}
	checkNoLineLost(t, lines, rem.follow(t, e.dir, lines, r.stdout, append([]string{"dedup", "--redis", url, "--name", "seen"}, mode...)...), rem)
	// Redis recorded them: a later run prints none of them.
	if again := runDedupIn(t, e.dir, []byte(strings.Join(lines, "\n")+"\n"), append([]string{"dedup", "--redis", url, "--name", "seen"}, mode...)...); again.code != 0 || again.stdout != "" {
		t.Fatalf("a later run: status %d, printed %d lines", again.code, strings.Count(again.stdout, "\n"))
	}
}

// TestDedupRedisBusyPastWait runs dedup --redis --redis-wait 500ms on
// Go's source lines (repeats included) while, from its second write on,
// Redis runs a script past the wait and answers BUSY: dedup exits 3
// having printed the new lines Redis recorded before, and names every
// line Redis refused (in its not-recorded file) and the first line not
// sent. Once the script is killed, following its message (dedup the
// file, then the input from that line on) prints every distinct line of
// the input exactly once, as awk '!seen[$0]++' does. Before, the refused
// lines were named nowhere, and following the message lost them (4,095
// of 4,096 in the report's run).
func TestDedupRedisBusyPastWait(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	s := redistest.NewServer(t, redistest.Config{Directives: []string{"busy-reply-threshold 20"}})
	e := newEnv(t)
	url := redisURL(s)
	// 32-bit fingerprints and a fixed seed: none of the distinct lines
	// is a false positive of another (checked by the comparison).
	e.run("", "dedup", "--redis", url, "--name", "seen", "--capacity", "1M", "--fingerprint-bits", "32", "--seed", "0xb05e").want(t, 0, "dedup")
	p := newRedisProxy(t, s.Addr, atWrite(2, func() {
		c, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Error(err)
			return
		}
		t.Cleanup(func() { c.Close() })
		c.Write(respCommand("EVAL", busyLoop, "0"))
		waitRefusing(s, "BUSY")
	}))
	lines := goSourceLines(t, 12000)
	proxied := generousURL(p.addr)
	r := runDedupIn(t, e.dir, []byte(strings.Join(lines, "\n")+"\n"), "dedup", "--redis", proxied, "--name", "seen", "--redis-wait", "500ms")
	for {
		if _, err := s.Do("SCRIPT", "KILL"); err != nil && strings.HasPrefix(err.Error(), "NOTBUSY") {
			break
		}
	}
	t.Log(r.stderr)
	r.want(t, 3, "dedup")
	if !strings.Contains(r.stderr, "not recorded in Redis, nor printed: Redis at "+proxied+": BUSY") {
		t.Fatalf("the message does not name the lines Redis refused: %s", r.stderr)
	}
	rem := parseRemedy(t, r.stderr)
	if len(rem.again) != 1 || rem.from == 0 {
		t.Fatalf("remedy %+v, want a file to dedup again and a line to go on from", rem)
	}
	checkNoLineLost(t, lines, rem.follow(t, e.dir, lines, r.stdout, "dedup", "--redis", url, "--name", "seen"), rem)
}

// busyLoop is a script that runs until SCRIPT KILL.
const busyLoop = `while true do redis.call('TIME') end`

// TestDedupRedisParameterMistakes checks that a parameter mistake is a
// usage error (status 2) naming the flag with --redis as without it, and
// whether the server is up or not: it is found before Redis is asked.
// Before, dedup --redis --capacity 10 --fpr 1e-9 exited 3 saying to check
// --redis and that the server is up.
func TestDedupRedisParameterMistakes(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t, redistest.Config{})
	e := newEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--capacity", "10", "--fpr", "1e-9"}, "bad --fpr 1e-9: below"},
		{[]string{"--capacity", "0"}, "--capacity 0: a filter must hold at least one key"},
		{[]string{"--capacity", "10", "--fpr", "0.01", "--fingerprint-bits", "8"}, "--fpr and --fingerprint-bits both set the fingerprint"},
		{[]string{"--capacity", "10", "--fingerprint-bits", "40"}, `--fingerprint-bits value "40": want 4 to 32 bits`},
		{[]string{"--capacity", "100000000000000", "--bucket-size", "1"}, "capacity 100000000000000: 1-slot buckets"},
	} {
		plain := e.run("1\n", append([]string{"dedup"}, c.args...)...)
		plain.want(t, 2, "dedup")
		for _, server := range []string{redisURL(s), "127.0.0.1:1"} {
			r := e.run("1\n", append([]string{"dedup", "--redis", server, "--name", "x"}, c.args...)...)
			r.want(t, 2, "dedup")
			if !strings.Contains(r.stderr, c.want) || r.stderr != plain.stderr {
				t.Fatalf("dedup --redis %s %v: %q; without --redis: %q; want both to say %q", server, c.args, r.stderr, plain.stderr, c.want)
			}
		}
	}
}

// TestDedupRedisKilledAndLoading kills Redis (SIGKILL; appendonly yes,
// appendfsync always) as dedup --redis sends its second write, and
// restarts it with a data set that takes longer than --redis-wait to
// load: dedup's copies meet a lost connection, then LOADING until it
// gives up, and it exits 3 naming every line it cannot vouch for.
// Following its message loses no line (compared with awk '!seen[$0]++').
// A long check (CUCKOO_LONG=1): the server loads for a few seconds.
func TestDedupRedisKilledAndLoading(t *testing.T) {
	t.Parallel()
	testlong.Skip(t)
	s := redistest.NewServer(t, redistest.Config{AOF: true, Debug: true, Directives: []string{
		"key-load-delay 20", "loading-process-events-interval-bytes 1024"}})
	e := newEnv(t)
	url := redisURL(s)
	e.run("", "dedup", "--redis", url, "--name", "seen", "--capacity", "1M", "--fingerprint-bits", "32", "--seed", "0x10ad").want(t, 0, "dedup")
	// 40,000 keys in the AOF's base, each 20 µs or more to load.
	if _, err := s.Do("DEBUG", "POPULATE", "40000"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do("BGREWRITEAOF"); err != nil {
		t.Fatal(err)
	}
	for {
		busy, _ := s.Info("aof_rewrite_in_progress")
		scheduled, _ := s.Info("aof_rewrite_scheduled")
		if busy == "0" && scheduled == "0" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	restarted := make(chan error, 1)
	p := newRedisProxy(t, s.Addr, atWrite(2, func() {
		if err := s.Kill(); err != nil {
			t.Error(err)
		}
		go func() { restarted <- s.Restart() }()
		waitRefusing(s, "LOADING")
	}))
	lines := goSourceLines(t, 20000)
	proxied := generousURL(p.addr)
	r := runDedupIn(t, e.dir, []byte(strings.Join(lines, "\n")+"\n"), "dedup", "--redis", proxied, "--name", "seen", "--redis-wait", "1s")
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	t.Log(r.stderr)
	r.want(t, 3, "dedup")
	rem := parseRemedy(t, r.stderr)
	if rem.from == 0 {
		t.Fatalf("remedy %+v, want a line to go on from", rem)
	}
	checkNoLineLost(t, lines, rem.follow(t, e.dir, lines, r.stdout, "dedup", "--redis", url, "--name", "seen"), rem)
}

// TestUnsettledFates checks how dedup --redis files a batch's lines by
// the answers for their keys, in input order (Redis runs the writes of
// one key in that order): a key's line goes to the unconfirmed file when
// a write of it may have run and no later answer shows it was new (one
// saying "added" does: the line was printed there), to the not-recorded
// file when no write of it was recorded and no answer settled it, and to
// neither once an answer settled it (its later lines are repeats).
func TestUnsettledFates(t *testing.T) {
	t.Parallel()
	unconfirmed := fmt.Errorf("%w: i/o timeout", redisfilter.ErrUnconfirmed)
	refused := errors.New("BUSY Redis is busy")
	type answer struct {
		key   string
		added bool
		err   error
	}
	for _, c := range []struct {
		name                     string
		answers                  []answer
		unconfirmed, notRecorded []uint64 // line numbers
	}{
		{"unconfirmed twice", []answer{{"k", false, unconfirmed}, {"k", false, unconfirmed}}, []uint64{1}, nil},
		{"added, then unconfirmed", []answer{{"k", true, nil}, {"k", false, unconfirmed}}, nil, nil},
		{"present, then refused", []answer{{"k", false, nil}, {"k", false, refused}}, nil, nil},
		{"unconfirmed, then added", []answer{{"k", false, unconfirmed}, {"k", true, nil}}, nil, nil},
		{"unconfirmed, then present", []answer{{"k", false, unconfirmed}, {"k", false, nil}}, []uint64{1}, nil},
		{"refused, then present", []answer{{"k", false, refused}, {"k", false, nil}}, nil, nil},
		{"refused, then added", []answer{{"k", false, refused}, {"k", true, nil}}, nil, nil},
		{"refused twice", []answer{{"k", false, refused}, {"k", false, refused}}, nil, []uint64{1}},
		{"refused, then unconfirmed", []answer{{"k", false, refused}, {"k", false, unconfirmed}}, []uint64{1}, nil},
		{"not sent", []answer{{"k", false, redisfilter.ErrNotSent}}, nil, []uint64{1}},
		{"keys apart, in input order", []answer{{"a", false, refused}, {"b", false, unconfirmed}, {"c", true, nil}, {"d", false, refused}, {"b", false, nil}},
			[]uint64{2}, []uint64{1, 4}},
	} {
		var u unsettled
		u.track()
		for i, a := range c.answers {
			u.note([]byte(a.key), []byte(a.key+" line"), uint64(i+1), a.added, a.err)
		}
		u.sort()
		if !slices.Equal(u.unconfirmed.nums, c.unconfirmed) || !slices.Equal(u.notRecorded.nums, c.notRecorded) {
			t.Errorf("%s: unconfirmed %v, not recorded %v; want %v and %v", c.name, u.unconfirmed.nums, u.notRecorded.nums, c.unconfirmed, c.notRecorded)
		}
	}
}
