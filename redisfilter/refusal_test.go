package redisfilter_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// A refusal is a reply of Redis saying that it did not run a command:
// out of memory, busy with a script, loading. It speaks for the copy it
// answers only. These tests check what a write reports when a refusal
// answers a copy sent after an earlier copy went unanswered and ran.

// wireTap counts the copies of writes (FCALL, BITFIELD) a client puts on
// the wire, whoever sends them: this package or go-redis's own retries.
type wireTap struct{ copies atomic.Int64 }

func (w *wireTap) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return tappedConn{c, w}, nil
}

type tappedConn struct {
	net.Conn
	tap *wireTap
}

var writeMarkers = [][]byte{[]byte("$5\r\nfcall\r\n"), []byte("$8\r\nbitfield\r\n")}

func (c tappedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	for _, m := range writeMarkers {
		c.tap.copies.Add(int64(bytes.Count(b[:n], m)))
	}
	return n, err
}

// isWriteCmd reports whether c is a write of the filters.
func isWriteCmd(c redis.Cmder) bool { return c.Name() == "fcall" || c.Name() == "bitfield" }

// writeHook is a hook on the sends of writes that go-redis is asked to
// make: it counts them and their commands, and runs before (if set)
// before each, with its number (from 1).
type writeHook struct {
	sends, cmds atomic.Int64
	firstCmds   atomic.Int64 // the commands of the first send
	before      func(nth int64)
}

func (h *writeHook) send(cmds []redis.Cmder) {
	n := int64(0)
	for _, c := range cmds {
		if isWriteCmd(c) {
			n++
		}
	}
	if n == 0 {
		return
	}
	nth := h.sends.Add(1)
	if nth == 1 {
		h.firstCmds.Store(n)
	}
	if h.before != nil {
		h.before(nth)
	}
	h.cmds.Add(n)
}

func (h *writeHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *writeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.send([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}
func (h *writeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.send(cmds)
		return next(ctx, cmds)
	}
}

// executed returns how many times s ran command cmd (lower case), from
// INFO commandstats.
func executed(t *testing.T, s *redistest.Server, cmd string) int64 {
	t.Helper()
	stats, err := s.Do("INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(stats, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "cmdstat_"+cmd+":calls="); ok {
			n, err := strconv.ParseInt(rest[:strings.IndexByte(rest+",", ',')], 10, 64)
			if err != nil {
				t.Fatalf("INFO commandstats: %q", l)
			}
			return n
		}
	}
	return 0
}

// waitExecuted waits until s has run cmd at least n times.
func waitExecuted(t *testing.T, s *redistest.Server, cmd string, n int64) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); executed(t, s, cmd) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s ran %d times after a minute, waiting for %d", cmd, executed(t, s, cmd), n)
		}
	}
}

// queueCommand sends a command to addr on a connection of its own,
// closed at the end of the test, and returns without waiting for the
// reply.
func queueCommand(t *testing.T, addr string, args ...string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var req bytes.Buffer
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
}

// warmPool makes rdb hold n connections, ready (HELLO done) and idle: a
// paused server answers no HELLO, and a write sent to it must go out.
func warmPool(t *testing.T, ctx context.Context, rdb *redis.Client, n int) {
	t.Helper()
	var held []*redis.Conn
	for range n {
		c := rdb.Conn()
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	for _, c := range held {
		c.Close()
	}
	if idle := rdb.PoolStats().IdleConns; idle < uint32(n) {
		t.Fatalf("%d idle connections, want %d", idle, n)
	}
}

// keyResult is what a write reported for one key: the answer (added,
// deleted) and the error.
type keyResult struct {
	answer bool
	err    error
}

// writeOp is one of the writes of the filters, run on keys: of a cuckoo
// filter or a Bloom filter (run), or of a window (wrun).
type writeOp struct {
	name    string
	bloom   bool
	deletes bool // the keys are added before, once
	batch   bool
	run     func(ctx context.Context, f *redisfilter.Filter, b *redisfilter.Bloom, keys [][]byte) []keyResult
	wrun    func(ctx context.Context, w *redisfilter.Window, keys [][]byte) []keyResult
}

// batchResults turns a batch's slices into results.
func batchResults(answers []bool, errs []error) []keyResult {
	r := make([]keyResult, len(errs))
	for i := range r {
		r[i] = keyResult{answers[i], errs[i]}
	}
	return r
}

var writeOps = []writeOp{
	{name: "AddUnique", run: func(ctx context.Context, f *redisfilter.Filter, _ *redisfilter.Bloom, k [][]byte) []keyResult {
		added, err := f.AddUnique(ctx, k[0])
		return []keyResult{{added, err}}
	}},
	{name: "Add", run: func(ctx context.Context, f *redisfilter.Filter, _ *redisfilter.Bloom, k [][]byte) []keyResult {
		err := f.Add(ctx, k[0])
		return []keyResult{{err == nil, err}}
	}},
	{name: "Delete", deletes: true, run: func(ctx context.Context, f *redisfilter.Filter, _ *redisfilter.Bloom, k [][]byte) []keyResult {
		deleted, err := f.Delete(ctx, k[0])
		return []keyResult{{deleted, err}}
	}},
	{name: "AddUniqueBatch", batch: true, run: func(ctx context.Context, f *redisfilter.Filter, _ *redisfilter.Bloom, k [][]byte) []keyResult {
		added, errs := make([]bool, len(k)), make([]error, len(k))
		f.AddUniqueBatch(ctx, k, added, errs)
		return batchResults(added, errs)
	}},
	{name: "AddBatch", batch: true, run: func(ctx context.Context, f *redisfilter.Filter, _ *redisfilter.Bloom, k [][]byte) []keyResult {
		errs := make([]error, len(k))
		f.AddBatch(ctx, k, errs)
		added := make([]bool, len(k))
		for i := range added {
			added[i] = errs[i] == nil
		}
		return batchResults(added, errs)
	}},
	{name: "DeleteBatch", deletes: true, batch: true, run: func(ctx context.Context, f *redisfilter.Filter, _ *redisfilter.Bloom, k [][]byte) []keyResult {
		deleted, errs := make([]bool, len(k)), make([]error, len(k))
		f.DeleteBatch(ctx, k, deleted, errs)
		return batchResults(deleted, errs)
	}},
	{name: "Bloom.Add", bloom: true, run: func(ctx context.Context, _ *redisfilter.Filter, b *redisfilter.Bloom, k [][]byte) []keyResult {
		err := b.Add(ctx, k[0])
		return []keyResult{{err == nil, err}}
	}},
	{name: "Bloom.AddBatch", bloom: true, batch: true, run: func(ctx context.Context, _ *redisfilter.Filter, b *redisfilter.Bloom, k [][]byte) []keyResult {
		errs := make([]error, len(k))
		b.AddBatch(ctx, k, errs)
		added := make([]bool, len(k))
		for i := range added {
			added[i] = errs[i] == nil
		}
		return batchResults(added, errs)
	}},
	{name: "Window.AddUnique", wrun: func(ctx context.Context, w *redisfilter.Window, k [][]byte) []keyResult {
		added, err := w.AddUnique(ctx, k[0])
		return []keyResult{{added, err}}
	}},
	{name: "Window.TouchBatch", batch: true, wrun: func(ctx context.Context, w *redisfilter.Window, k [][]byte) []keyResult {
		seen, errs := make([]bool, len(k)), make([]error, len(k))
		w.TouchBatch(ctx, k, seen, errs)
		for i := range seen {
			seen[i] = !seen[i] && errs[i] == nil
		}
		return batchResults(seen, errs)
	}},
	{name: "Window.DeleteBatch", deletes: true, batch: true, wrun: func(ctx context.Context, w *redisfilter.Window, k [][]byte) []keyResult {
		deleted, errs := make([]bool, len(k)), make([]error, len(k))
		w.DeleteBatch(ctx, k, deleted, errs)
		return batchResults(deleted, errs)
	}},
}

// refusal is a way to make Redis refuse every write: once start returns,
// it refuses; after end, it runs writes again.
type refusal struct {
	name       string
	directives []string
	horizon    time.Duration // the handle's WithRetryHorizon
	start, end func(t *testing.T, s *redistest.Server)
}

var refusals = []refusal{
	{
		name:    "OOM",
		horizon: 5 * time.Second,
		start: func(t *testing.T, s *redistest.Server) {
			if _, err := s.Do("CONFIG", "SET", "maxmemory", "1"); err != nil {
				t.Fatal(err)
			}
		},
		end: func(t *testing.T, s *redistest.Server) {
			if _, err := s.Do("CONFIG", "SET", "maxmemory", "0"); err != nil {
				t.Fatal(err)
			}
		},
	},
	{
		// A script that runs until it is killed: Redis answers BUSY to
		// every write until the write gives up.
		name:       "BUSY",
		directives: []string{"busy-reply-threshold 20"},
		horizon:    time.Second,
		start: func(t *testing.T, s *redistest.Server) {
			queueCommand(t, s.Addr, "EVAL", busyScript, "0", "60000")
			for {
				if _, err := s.Do("SET", "probe", "x"); err != nil && strings.HasPrefix(err.Error(), "BUSY") {
					return
				}
			}
		},
		end: func(t *testing.T, s *redistest.Server) {
			// Killed once Redis says no script runs.
			for {
				if _, err := s.Do("SCRIPT", "KILL"); err != nil && strings.HasPrefix(err.Error(), "NOTBUSY") {
					return
				}
			}
		},
	},
}

// busyOps are the writes run through a BUSY refusal in the quick run (a
// busy script keeps a core busy; the rule is the same for every write).
var busyOps = map[string]bool{"AddUnique": true, "DeleteBatch": true, "Bloom.AddBatch": true, "Window.TouchBatch": true}

// refusalCase is one write through one refusal.
type refusalCase struct {
	op       writeOp
	refusal  refusal
	lostCopy bool // the first copy runs, unanswered, before the refusal
}

// refusalCases returns the cases of the refusals and writes, lostCopy as
// given.
func refusalCases(lostCopy bool) []refusalCase {
	var cases []refusalCase
	for _, r := range refusals {
		for _, op := range writeOps {
			if r.name == "BUSY" && !busyOps[op.name] && !testlong.Enabled() {
				continue
			}
			cases = append(cases, refusalCase{op: op, refusal: r, lostCopy: lostCopy})
		}
	}
	return cases
}

// runRefusal runs c on a server of its own and checks every key's result
// against the filter: with a lost copy, every key's error wraps
// ErrUnconfirmed and the first copy's change is there; without, every
// key's error is the refusal (or ErrNotSent) and nothing changed. Either
// way, every copy on the wire is one this package sent: go-redis sent
// none again by itself.
func runRefusal(t *testing.T, c refusalCase) {
	ctx := ctxOf(t)
	s := redistest.NewServer(t, redistest.Config{Directives: c.refusal.directives})
	slow := clientOf(t, s)
	// A copy must reach the paused server whole, within the client's
	// write timeout (the read timeout, 100 ms): a Bloom filter's add
	// sets each of its key's k bits with 4 arguments.
	n := 1
	switch {
	case c.op.batch && c.op.bloom:
		n = 20
	case c.op.batch:
		n = 100
	}
	in := keys("k", n)
	name := "refusal"
	opts := []redisfilter.Option{redisfilter.WithSeed(0x4ef5), redisfilter.WithSegments(2)}
	var check *redisfilter.Filter
	var checkBloom *redisfilter.Bloom
	var checkWindow *redisfilter.Window
	var err error
	cmd := "fcall"
	switch {
	case c.op.bloom:
		cmd = "bitfield"
		checkBloom, err = redisfilter.NewBloom(ctx, slow, name, 1000, append(opts, redisfilter.WithFalsePositiveRate(0.01))...)
	case c.op.wrun != nil:
		// 28-bit fingerprints: no two of the keys collide; an hour: no
		// key expires during the test.
		checkWindow, err = redisfilter.NewWindow(ctx, slow, name, 1000, time.Hour, append(opts, redisfilter.WithFingerprintBits(28))...)
		if err == nil && c.op.deletes {
			err = checkWindow.AddBatch(ctx, in, make([]error, len(in)))
		}
	default:
		// 32-bit fingerprints: no two of the keys collide, so a key's
		// count is its own.
		check, err = redisfilter.New(ctx, slow, name, 1000, append(opts, redisfilter.WithFingerprintBits(32))...)
		if err == nil && c.op.deletes {
			addAll(t, ctx, check, in)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	var tap wireTap
	var hook writeHook
	// go-redis's retries as by default; with a lost copy, a short read
	// timeout (that copy's reply does not come), else a long one (no
	// reply is late, however busy the machine).
	timeout := redistest.ClientTimeout
	if c.lostCopy {
		timeout = 100 * time.Millisecond
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, ReadTimeout: timeout, Dialer: tap.dial})
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(&hook)
	horizon := redisfilter.WithRetryHorizon(c.refusal.horizon)
	var f *redisfilter.Filter
	var b *redisfilter.Bloom
	var w *redisfilter.Window
	for f == nil && b == nil && w == nil {
		// The short read timeout may fail an open on a busy machine.
		switch {
		case c.op.bloom:
			b, err = redisfilter.OpenBloom(ctx, rdb, name, horizon)
		case c.op.wrun != nil:
			w, err = redisfilter.OpenWindow(ctx, rdb, name, horizon)
		default:
			f, err = redisfilter.Open(ctx, rdb, name, horizon)
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
	}

	if c.lostCopy {
		// The first copy goes to a paused server, and times out. Before
		// the second goes out, the server resumes and runs the first,
		// and is made to refuse.
		warmPool(t, ctx, rdb, 2)
		ran := executed(t, s, cmd)
		if err := s.Pause(); err != nil {
			t.Fatal(err)
		}
		hook.before = func(nth int64) {
			if nth != 2 {
				return
			}
			if err := s.Resume(); err != nil {
				t.Fatal(err)
			}
			waitExecuted(t, s, cmd, ran+hook.firstCmds.Load())
			c.refusal.start(t, s)
		}
	} else {
		c.refusal.start(t, s)
	}
	var got []keyResult
	if c.op.wrun != nil {
		got = c.op.wrun(ctx, w, in)
	} else {
		got = c.op.run(ctx, f, b, in)
	}
	if c.lostCopy && hook.sends.Load() < 2 {
		s.Resume()
		t.Fatalf("the write returned after one send: %v", got[0].err)
	}
	c.refusal.end(t, s)

	present := make([]bool, n)
	switch {
	case c.op.bloom:
		if err := checkBloom.ContainsBatch(ctx, in, present, make([]error, n)); err != nil {
			t.Fatal(err)
		}
	case c.op.wrun != nil:
		if err := checkWindow.ContainsBatch(ctx, in, present, make([]error, n)); err != nil {
			t.Fatal(err)
		}
	default:
		for i, k := range in {
			count, err := check.Count(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if count > 1 {
				t.Fatalf("%s counts %d", k, count)
			}
			present[i] = count == 1
		}
	}
	for i, r := range got {
		applied := present[i] != c.op.deletes
		switch {
		case c.lostCopy && !errors.Is(r.err, redisfilter.ErrUnconfirmed):
			t.Fatalf("%s: %v (answer %v); want an error wrapping ErrUnconfirmed", in[i], r.err, r.answer)
		case c.lostCopy && c.refusal.name == "OOM" && !strings.Contains(r.err.Error(), "OOM"):
			// The last copy was refused; a BUSY server may also leave
			// it unanswered past the short read timeout.
			t.Fatalf("%s: %v; want it to name the refusal, OOM", in[i], r.err)
		case c.lostCopy && !applied:
			t.Fatalf("%s: the first copy's change is missing (present: %v)", in[i], present[i])
		case !c.lostCopy && (r.err == nil || errors.Is(r.err, redisfilter.ErrUnconfirmed)):
			t.Fatalf("%s: %v (answer %v); want the refusal, %s", in[i], r.err, r.answer, c.refusal.name)
		case !c.lostCopy && !errors.Is(r.err, redisfilter.ErrNotSent) && !strings.HasPrefix(r.err.Error(), c.refusal.name):
			t.Fatalf("%s: %v; want the refusal, %s", in[i], r.err, c.refusal.name)
		case !c.lostCopy && applied:
			t.Fatalf("%s: refused (%v), and changed", in[i], r.err)
		}
	}
	// Fewer when a send found no connection ready (a new one's HELLO
	// timed out); more would be copies go-redis sent on its own.
	if copies, sent := tap.copies.Load(), hook.cmds.Load(); copies > sent {
		t.Fatalf("%d copies of writes on the wire, %d sent by the filter", copies, sent)
	}
	t.Logf("%s: %d sends; %v", c.op.name, hook.sends.Load(), got[0].err)
}

// TestRefusalAfterLostCopyIsUnconfirmed sends every write of the filters
// (a cuckoo filter's, a Bloom filter's, a window's) to a paused server
// (SIGSTOP), where its first copy waits and times out;
// the server then resumes and runs that copy, and is made to refuse
// (CONFIG SET maxmemory 1; a script running past the retry horizon, which
// Redis answers BUSY) before the write sends a copy again. Every key's
// error must wrap ErrUnconfirmed (and, out of memory, name the refusal),
// and the first copy's change must be there. Before, the refusal was
// reported as if no copy had run ("OOM": not applied) while the key was
// in the filter, and a Delete so misreported invited a second delete.
func TestRefusalAfterLostCopyIsUnconfirmed(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	for _, c := range refusalCases(true) {
		t.Run(c.refusal.name+"/"+c.op.name, func(t *testing.T) {
			t.Parallel()
			runRefusal(t, c)
		})
	}
}

// TestRefusalIsNotApplied runs every write of the filters against a
// server that refuses from the start (out of memory; busy with a script
// past the retry horizon): every key's error is the refusal (or, for a
// batch's keys after a call refused until the horizon, ErrNotSent), not
// ErrUnconfirmed, and nothing changed.
func TestRefusalIsNotApplied(t *testing.T) {
	t.Parallel()
	for _, c := range refusalCases(false) {
		t.Run(c.refusal.name+"/"+c.op.name, func(t *testing.T) {
			t.Parallel()
			runRefusal(t, c)
		})
	}
}

// TestReportedStallThenOOM is the report's case, through DEBUG SLEEP and
// go-redis's default options but a 1 s read timeout: Redis sleeps 3 s
// with AddUnique's first copy waiting, and once it has woken and run it,
// CONFIG SET maxmemory 1 makes it refuse AddUnique's next copy. AddUnique
// reported added = false with the OOM error while the key was in the
// filter (and a second AddUnique said false); now its error wraps
// ErrUnconfirmed, and the key is there. A Delete through the same stall
// says the same, and the key is gone. A long check (CUCKOO_LONG=1): 8 s.
func TestReportedStallThenOOM(t *testing.T) {
	t.Parallel()
	testlong.Skip(t)
	ctx := ctxOf(t)
	s := redistest.NewServer(t, redistest.Config{Debug: true})
	slow := clientOf(t, s)
	check, err := redisfilter.New(ctx, slow, "report", 1000, redisfilter.WithFingerprintBits(32))
	if err != nil {
		t.Fatal(err)
	}
	var tap wireTap
	var hook writeHook
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, ReadTimeout: time.Second, Dialer: tap.dial})
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(&hook)
	f, err := redisfilter.Open(ctx, rdb, "report")
	if err != nil {
		t.Fatal(err)
	}
	probe := redis.NewClient(&redis.Options{Addr: s.Addr, ReadTimeout: 50 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { probe.Close() })
	key := []byte("https://example.com/")
	for i, op := range []string{"AddUnique", "Delete"} {
		warmPool(t, ctx, rdb, 2)
		ran := executed(t, s, "fcall")
		slept := make(chan error, 1)
		go func() { slept <- s.Sleep(3 * time.Second) }()
		// Asleep once a PING goes unanswered.
		for probe.Ping(ctx).Err() == nil {
		}
		first := hook.sends.Load() + 1
		hook.before = func(nth int64) {
			if nth != first+1 {
				return
			}
			if err := <-slept; err != nil {
				t.Fatal(err)
			}
			waitExecuted(t, s, "fcall", ran+1)
			if _, err := s.Do("CONFIG", "SET", "maxmemory", "1"); err != nil {
				t.Fatal(err)
			}
		}
		var answer bool
		var opErr error
		if op == "AddUnique" {
			answer, opErr = f.AddUnique(ctx, key)
		} else {
			answer, opErr = f.Delete(ctx, key)
		}
		if _, err := s.Do("CONFIG", "SET", "maxmemory", "0"); err != nil {
			t.Fatal(err)
		}
		n, err := check.Count(ctx, key)
		t.Logf("%s: %v, %v; the key counts %d", op, answer, opErr, n)
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(opErr, redisfilter.ErrUnconfirmed) || !strings.Contains(opErr.Error(), "OOM") {
			t.Fatalf("%s = %v, %v; want an error wrapping ErrUnconfirmed and the OOM reply", op, answer, opErr)
		}
		if want := uint64(1 - i); n != want {
			t.Fatalf("after %s, the key counts %d, want %d (the first copy ran)", op, n, want)
		}
	}
	if copies, sent := tap.copies.Load(), hook.cmds.Load(); copies > sent {
		t.Fatalf("%d copies of writes on the wire, %d sent by the filter", copies, sent)
	}
}

// TestWriteOnDoneContextIsNotSent checks the writes whose context is done
// before they are sent: every key's error wraps ErrNotSent, and nothing
// changed.
func TestWriteOnDoneContextIsNotSent(t *testing.T) {
	t.Parallel()
	rdb := singleClient(t)
	ctx := ctxOf(t)
	name := uniqueName(t)
	f, err := redisfilter.New(ctx, rdb, name, 1000)
	if err != nil {
		t.Fatal(err)
	}
	b, err := redisfilter.NewBloom(ctx, rdb, name, 1000)
	if err != nil {
		t.Fatal(err)
	}
	w, err := redisfilter.NewWindow(ctx, rdb, name+":window", 1000, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	in := keys("done", 3)
	for _, op := range writeOps {
		k := in[:1]
		if op.batch {
			k = in
		}
		var results []keyResult
		if op.wrun != nil {
			results = op.wrun(done, w, k)
		} else {
			results = op.run(done, f, b, k)
		}
		for i, r := range results {
			if !errors.Is(r.err, redisfilter.ErrNotSent) || r.answer {
				t.Fatalf("%s on a done context: key %d: %v, %v", op.name, i, r.answer, r.err)
			}
		}
	}
	if n, err := f.Len(ctx); err != nil || n != 0 {
		t.Fatalf("Len = %d, %v", n, err)
	}
	if n, err := w.Len(ctx); err != nil || n != 0 {
		t.Fatalf("window Len = %d, %v", n, err)
	}
}
