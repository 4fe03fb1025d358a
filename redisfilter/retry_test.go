package redisfilter_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// A stall is a server that stops answering for a while (DEBUG SLEEP: as a
// fork, a slow script or a paused machine would) and then runs everything
// that arrived meanwhile, the copies a client's retries sent included.
type stall struct {
	sleep       time.Duration // how long the server sleeps
	readTimeout time.Duration // the client's; 0: go-redis's default (3 s)
	horizon     time.Duration // WithRetryHorizon; 0: the default (30 s)
}

func (c stall) String() string {
	s := fmt.Sprintf("sleep=%v/readTimeout=%v", c.sleep, c.readTimeout)
	if c.horizon != 0 {
		s += fmt.Sprintf("/horizon=%v", c.horizon)
	}
	return s
}

// stallOps are the write streams TestStall runs through a stall.
var stallOps = []string{"AddUnique", "AddUniqueBatch", "AddBatch"}

// TestStall streams writes of new, distinct keys into a filter while the
// server sleeps (DEBUG SLEEP) longer than the client's read timeout, so
// that a write whose reply timed out is sent again while its first copy
// waits in the server (by this package; by go-redis too, before writes
// went out through settle alone), and then checks every reported result
// against the filter: a key reported
// added (or, for AddBatch, with a nil error) is there exactly once; a key
// reported present with a nil error would be a wrong answer, since every
// key is new; a key with an error has ErrUnconfirmed (and is there at
// most once) or ErrNotSent (and is not there). Within the retry horizon
// every write rides through the stall with no error; past it the writes
// in flight fail with ErrUnconfirmed.
//
// The quick versions sleep 0.17 s and 1.2 s against a 100 ms read
// timeout; the long ones (CUCKOO_LONG=1) sleep 5 s and 8 s against
// go-redis's default options, as the report that found the double runs
// did. Before request ids, the 0.17 s, 5 s and 8 s stalls found wrong
// results in each stream (2 to 2,000 keys: added twice, or reported
// present when new).
func TestStall(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	cases := []stall{
		// Within the first resend (after a backoff of 20 ms): the
		// resent copy runs after the first.
		{sleep: 170 * time.Millisecond, readTimeout: 100 * time.Millisecond},
		// Past several resends: the first copy runs after some of them
		// timed out, and a later one is answered.
		{sleep: 1200 * time.Millisecond, readTimeout: 100 * time.Millisecond},
		// Past the retry horizon: the writes in flight are unconfirmed.
		{sleep: 1200 * time.Millisecond, readTimeout: 100 * time.Millisecond, horizon: 300 * time.Millisecond},
	}
	if testlong.Enabled() {
		cases = append(cases, stall{sleep: 5 * time.Second}, stall{sleep: 8 * time.Second},
			stall{sleep: 8 * time.Second, horizon: 2 * time.Second})
	}
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			runStall(t, c)
		})
	}
}

// outcome is what a write reported for one key.
type outcome struct {
	added bool
	err   error
}

// stream is one stream of writes of TestStall: op's, into a filter of
// its own.
type stream struct {
	op      string
	f       *redisfilter.Filter // on the client with the stall's read timeout
	probe   *redisfilter.Filter // on a client with generous timeouts
	mu      sync.Mutex
	results map[string]outcome
	sent    atomic.Int64 // writes returned
}

// runStall runs a stream of each of stallOps, each by 4 goroutines,
// through one stall of one server.
func runStall(t *testing.T, c stall) {
	runStallOf(t, c, func(ctx context.Context, slow, rdb redis.UniversalClient, handle []redisfilter.Option) []stallStream {
		// 32-bit fingerprints and a fixed seed: no two of the keys
		// collide (checked by the counts below, which would find a pair),
		// so a key reported present was added by its own call.
		opts := []redisfilter.Option{redisfilter.WithFingerprintBits(32), redisfilter.WithSeed(0x57a11), redisfilter.WithSegments(4)}
		var streams []stallStream
		for _, op := range stallOps {
			check, err := redisfilter.New(ctx, slow, "stall-"+op, 1<<20, opts...)
			if err != nil {
				t.Fatal(err)
			}
			f := openRetrying(t, ctx, rdb, check.Name(), handle...)
			streams = append(streams, &stream{op: op, f: f, probe: check, results: map[string]outcome{}})
		}
		return streams
	})
}

// stallStream is a stream of writes of new, distinct keys that runStallOf
// drives through a stall, and checks afterwards.
type stallStream interface {
	// write writes new keys named after prefix: one, or a batch of n.
	write(ctx context.Context, prefix string, n int)
	// written is the number of writes returned.
	written() int64
	// check checks every result reported against the filter.
	check(t *testing.T, ctx context.Context)
}

// runStallOf runs the streams open makes (given a client with the
// stall's read timeout, its twin with generous ones, and the handles'
// options), each by 4 goroutines, through one stall of one server.
func runStallOf(t *testing.T, c stall, open func(ctx context.Context, slow, rdb redis.UniversalClient, handle []redisfilter.Option) []stallStream) {
	ctx := ctxOf(t)
	s := redistest.NewServer(t, redistest.Config{Debug: true})
	opt := &redis.Options{Addr: s.Addr}
	if c.readTimeout != 0 {
		opt.ReadTimeout = c.readTimeout
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	// The filters are made and checked through a twin of the client with
	// generous timeouts, so that a busy machine does not fail the test's
	// own setup.
	slow := rdb.WithTimeout(redistest.ClientTimeout)
	var handle []redisfilter.Option
	if c.horizon != 0 {
		handle = append(handle, redisfilter.WithRetryHorizon(c.horizon))
	}
	const (
		writers = 4
		batch   = 200
	)
	var (
		stop atomic.Bool
		wg   sync.WaitGroup
	)
	streams := open(ctx, slow, rdb, handle)
	for _, st := range streams {
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; !stop.Load(); n++ {
					st.write(ctx, fmt.Sprintf("w%d-%d-", w, n), batch)
				}
			}()
		}
	}
	// Sleep once the writers are under way, and stop them when the
	// server has answered each stream's writers again a few times.
	progress := func() []int64 {
		var p []int64
		for _, st := range streams {
			p = append(p, st.written())
		}
		return p
	}
	waitFor := func(want []int64) {
		for i, st := range streams {
			for st.written() < want[i]+2*writers {
				time.Sleep(time.Millisecond)
			}
		}
	}
	waitFor(make([]int64, len(streams)))
	if err := s.Sleep(c.sleep); err != nil {
		t.Error(err)
	}
	waitFor(progress())
	stop.Store(true)
	wg.Wait()
	for _, st := range streams {
		st.check(t, ctx)
	}
}

// openRetrying opens a filter through a client whose short read timeout
// a busy machine may exceed: it tries again until it succeeds.
func openRetrying(t *testing.T, ctx context.Context, rdb redis.UniversalClient, name string, opts ...redisfilter.Option) *redisfilter.Filter {
	t.Helper()
	for {
		f, err := redisfilter.Open(ctx, rdb, name, opts...)
		if err == nil {
			return f
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
	}
}

func (st *stream) written() int64 { return st.sent.Load() }

func (st *stream) check(t *testing.T, ctx context.Context) {
	checkOutcomes(t, ctx, st.probe, st.op, st.results)
}

// write writes new keys named after prefix: one, or a batch of n.
func (st *stream) write(ctx context.Context, prefix string, n int) {
	defer st.sent.Add(1)
	if st.op == "AddUnique" {
		k := key(prefix, 0)
		added, err := st.f.AddUnique(ctx, k)
		st.record(k, added, err)
		return
	}
	in := keys(prefix, n)
	added := make([]bool, len(in))
	errs := make([]error, len(in))
	if st.op == "AddBatch" {
		st.f.AddBatch(ctx, in, errs)
		for i := range added {
			added[i] = errs[i] == nil
		}
	} else {
		st.f.AddUniqueBatch(ctx, in, added, errs)
	}
	for i, k := range in {
		st.record(k, added[i], errs[i])
	}
}

func (st *stream) record(k []byte, added bool, err error) {
	st.mu.Lock()
	st.results[string(k)] = outcome{added, err}
	st.mu.Unlock()
}

// checkOutcomes checks what the writes of new, distinct keys reported
// against the filter's counts.
func checkOutcomes(t *testing.T, ctx context.Context, f *redisfilter.Filter, op string, results map[string]outcome) {
	t.Helper()
	// The library twin of the filter counts as the filter does.
	snap, err := f.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var c tally
	var total uint64
	for k, o := range results {
		n := snap.Count([]byte(k))
		total += n
		if op != "AddBatch" && o.err == nil && !o.added {
			c.wrong++
			c.note("%s reported present with a nil error, count %d", k, n)
			continue
		}
		c.check(k, n, o.err)
	}
	if l, err := f.Len(ctx); err != nil || l != total {
		t.Errorf("Len = %d, %v; the keys' counts sum to %d", l, err, total)
	}
	c.report(t, op, len(results))
}

// tally counts the outcomes of writes of distinct keys, checked against
// the filter's count of each.
type tally struct {
	ok, unconfirmed, unconfirmedIn, notSent, refused, wrong int
	examples                                                []string
}

func (c *tally) note(format string, args ...any) {
	if len(c.examples) < 5 {
		c.examples = append(c.examples, fmt.Sprintf(format, args...))
	}
}

// check tallies a key that the filter counts n times and whose write
// returned err.
func (c *tally) check(k string, n uint64, err error) {
	switch {
	case n > 1:
		c.wrong++
		c.note("%s counts %d (err %v)", k, n, err)
	case err == nil && n == 0:
		c.wrong++
		c.note("%s has a nil error and is absent", k)
	case err == nil:
		c.ok++
	case errors.Is(err, redisfilter.ErrUnconfirmed):
		c.unconfirmed++
		c.unconfirmedIn += int(n)
	case errors.Is(err, redisfilter.ErrNotSent) && n == 0:
		c.notSent++
	case errors.As(err, new(redis.Error)) && n == 0:
		c.refused++ // Redis replied that it did not run it
	default:
		c.wrong++
		c.note("%s counts %d with error %v", k, n, err)
	}
}

func (c *tally) report(t *testing.T, what string, keys int) {
	t.Helper()
	t.Logf("%s: %d keys: %d added, %d unconfirmed (%d of them in the filter), %d not sent, %d refused, %d wrong", what, keys, c.ok, c.unconfirmed, c.unconfirmedIn, c.notSent, c.refused, c.wrong)
	if c.wrong > 0 {
		t.Errorf("%s: %d wrong results, for example %q", what, c.wrong, c.examples)
	}
}

// TestKillMidBatch kills a server with appendonly yes and appendfsync
// always (SIGKILL, as a crash) while an AddBatch runs, and restarts it:
// every key whose error is nil is in the filter once, and every other key
// has ErrUnconfirmed (and is there at most once) or ErrNotSent (and is
// not there). Restarted while the batch waits (within the retry
// horizon), the batch goes on and every key is added; restarted only
// after the batch gave up, the keys of the round in flight are
// unconfirmed and the rest not sent. The quick versions add 20,000 keys
// and kill the server as the batch's first pipeline goes out; the long
// ones (CUCKOO_LONG=1) add 200,000 and kill it 300 ms after that (counted
// from the first pipeline, not from the call: on a loaded machine the
// batch may take longer than that to send anything). Before the
// batches marked the keys they did not send, the keys of the rounds after
// the kill had nil errors and were absent (in the versions that restart
// the server after the batch returned: 15,904 of 20,000; 195,904 of
// 200,000).
func TestKillMidBatch(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	type killCase struct {
		keys    int
		at      time.Duration // after the first pipeline of the batch goes out; 0: as it does
		restart time.Duration // after the kill; 0: once the batch has returned
		horizon time.Duration // WithRetryHorizon; 0: the default (30 s)
	}
	cases := []killCase{
		{keys: 20000, restart: 500 * time.Millisecond},
		{keys: 20000, horizon: 300 * time.Millisecond},
	}
	if testlong.Enabled() {
		cases = append(cases,
			killCase{keys: 200000, at: 300 * time.Millisecond, restart: 3 * time.Second},
			killCase{keys: 200000, at: 300 * time.Millisecond, horizon: time.Second})
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("keys=%d/at=%v/restart=%v/horizon=%v", c.keys, c.at, c.restart, c.horizon), func(t *testing.T) {
			t.Parallel()
			ctx := ctxOf(t)
			s := redistest.NewServer(t, redistest.Config{AOF: true})
			rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
			t.Cleanup(func() { rdb.Close() })
			opts := []redisfilter.Option{redisfilter.WithFingerprintBits(32), redisfilter.WithSeed(0xdead), redisfilter.WithSegments(8)}
			if c.horizon != 0 {
				opts = append(opts, redisfilter.WithRetryHorizon(c.horizon))
			}
			f, err := redisfilter.New(ctx, rdb, "kill", uint64(c.keys)*2, opts...)
			if err != nil {
				t.Fatal(err)
			}
			var (
				killed    = make(chan struct{})
				restarted = make(chan struct{})
				returned  = make(chan struct{})
				once      sync.Once
			)
			kill := func(delay time.Duration) {
				once.Do(func() {
					go func() {
						defer close(restarted)
						time.Sleep(delay)
						if err := s.Kill(); err != nil {
							t.Error(err)
						}
						close(killed)
						if c.restart == 0 {
							<-returned
						} else {
							time.Sleep(c.restart)
						}
						if err := s.Restart(); err != nil {
							t.Error(err)
						}
					}()
				})
			}
			rdb.AddHook(pipelineHook{func(cmds []redis.Cmder) {
				if cmds[0].Name() == "fcall" {
					kill(max(c.at, 5*time.Millisecond))
				}
			}})
			in := keys("kill", c.keys)
			errs := make([]error, len(in))
			start := time.Now()
			err = f.AddBatch(ctx, in, errs)
			t.Logf("AddBatch returned after %v: %v", time.Since(start).Round(time.Millisecond), err)
			close(returned)
			kill(0)
			<-restarted
			tally := checkBatchOutcomes(t, ctx, f, in, errs)
			select {
			case <-killed:
			default:
				t.Fatal("the batch ended before the server was killed")
			}
			switch {
			case c.restart != 0 && err != nil:
				t.Errorf("the server was back within the horizon, and AddBatch returned %v", err)
			case c.restart == 0 && (tally.unconfirmed == 0 || tally.notSent == 0 || !errors.Is(err, redisfilter.ErrUnconfirmed)):
				t.Errorf("the server was down until the batch gave up, and AddBatch returned %v with %d keys unconfirmed, %d not sent", err, tally.unconfirmed, tally.notSent)
			}
		})
	}
}

// pipelineHook calls sent as each pipeline goes out.
type pipelineHook struct{ sent func([]redis.Cmder) }

func (h pipelineHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h pipelineHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h pipelineHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.sent(cmds)
		return next(ctx, cmds)
	}
}

// checkBatchOutcomes checks an AddBatch of distinct keys against the
// filter.
func checkBatchOutcomes(t *testing.T, ctx context.Context, f *redisfilter.Filter, in [][]byte, errs []error) tally {
	t.Helper()
	snap, err := f.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var c tally
	for i, k := range in {
		c.check(string(k), snap.Count(k), errs[i])
	}
	c.report(t, "AddBatch", len(in))
	return c
}

// busyScript runs for ARGV[1] milliseconds, as a slow script on the
// same server would; other clients get BUSY meanwhile.
const busyScript = `local t0 = redis.call('TIME')
while true do
	local t = redis.call('TIME')
	if (t[1] - t0[1]) * 1000000 + t[2] - t0[2] > ARGV[1] * 1000 then
		return 1
	end
end`

// TestBusyScript adds keys while a slow script runs on the server, which
// then answers every other command BUSY: a command refused so has not
// run, so within the retry horizon the writes wait and go on, and past
// it they fail with that refusal (not ErrUnconfirmed) and are not
// applied.
func TestBusyScript(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	for _, c := range []struct {
		horizon time.Duration
		script  time.Duration
	}{{0, 700 * time.Millisecond}, {200 * time.Millisecond, time.Minute}} {
		t.Run(fmt.Sprintf("horizon=%v", c.horizon), func(t *testing.T) {
			t.Parallel()
			ctx := ctxOf(t)
			s := redistest.NewServer(t, redistest.Config{Directives: []string{"busy-reply-threshold 20"}})
			rdb := clientOf(t, s)
			opts := []redisfilter.Option{redisfilter.WithFingerprintBits(32), redisfilter.WithSeed(0xb05)}
			if c.horizon != 0 {
				opts = append(opts, redisfilter.WithRetryHorizon(c.horizon))
			}
			f, err := redisfilter.New(ctx, rdb, "busy", 10000, opts...)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := s.Do("EVAL", busyScript, "0", strconv.Itoa(int(c.script.Milliseconds())))
				done <- err
			}()
			for {
				if _, err := s.Do("PING"); err != nil && strings.HasPrefix(err.Error(), "BUSY") {
					break
				}
			}
			in := keys("busy", 100)
			errs := make([]error, len(in))
			added, addErr := f.AddUnique(ctx, []byte("one"))
			batchErr := f.AddBatch(ctx, in, errs)
			if c.horizon != 0 {
				// Past the horizon the script must outlast both calls,
				// however slow the machine: it runs until killed here.
				for {
					if _, err := s.Do("SCRIPT", "KILL"); err != nil && strings.HasPrefix(err.Error(), "NOTBUSY") {
						break
					}
				}
				<-done
			} else if err := <-done; err != nil {
				t.Fatal(err)
			}
			n, err := f.Count(ctx, []byte("one"))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("AddUnique: %v, %v; AddBatch: %v", added, addErr, batchErr)
			if c.horizon == 0 {
				if addErr != nil || !added || n != 1 || batchErr != nil {
					t.Fatalf("within the horizon: AddUnique = %v, %v (count %d), AddBatch: %v", added, addErr, n, batchErr)
				}
				return
			}
			if addErr == nil || errors.Is(addErr, redisfilter.ErrUnconfirmed) || !strings.HasPrefix(addErr.Error(), "BUSY") || n != 0 {
				t.Fatalf("past the horizon: AddUnique = %v, %v (count %d); want the BUSY refusal, and the key absent", added, addErr, n)
			}
			snap, err := f.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var c tally
			for i, k := range in {
				if errs[i] != nil && !errors.Is(errs[i], redisfilter.ErrNotSent) && !strings.HasPrefix(errs[i].Error(), "BUSY") {
					t.Fatalf("%s: %v, want the BUSY refusal or ErrNotSent", k, errs[i])
				}
				c.check(string(k), snap.Count(k), errs[i])
			}
			c.report(t, "AddBatch", len(in))
			if c.refused == 0 {
				t.Fatal("no key of the batch was refused")
			}
		})
	}
}

// TestBatchesMarkEveryKey runs every batch of both filters against a
// server paused (SIGSTOP) for the whole batch, with a short retry
// horizon: no key is answered, so every key must have an error (the
// keys of the rounds in flight a timeout, the others ErrNotSent), and
// no lookup may report a key absent without one. After the server
// resumes, the keys DeleteBatch did not send are still there.
func TestBatchesMarkEveryKey(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	ctx := ctxOf(t)
	s := redistest.NewServer(t, redistest.Config{})
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, ReadTimeout: 50 * time.Millisecond, MaxRetries: 1})
	t.Cleanup(func() { rdb.Close() })
	slow := rdb.WithTimeout(redistest.ClientTimeout)
	const n = 25000 // more rounds of every batch than are sent at once
	in := keys("mark", n)
	check, err := redisfilter.New(ctx, slow, "mark", 2*n, redisfilter.WithFingerprintBits(32), redisfilter.WithSeed(0x3a4c))
	if err != nil {
		t.Fatal(err)
	}
	addAll(t, ctx, check, in)
	horizon := redisfilter.WithRetryHorizon(100 * time.Millisecond)
	f := openRetrying(t, ctx, rdb, "mark", horizon)
	if _, err := redisfilter.NewBloom(ctx, slow, "mark", 2*n, redisfilter.WithFalsePositiveRate(0.01)); err != nil {
		t.Fatal(err)
	}
	var b *redisfilter.Bloom
	for b == nil {
		b, _ = redisfilter.OpenBloom(ctx, rdb, "mark", horizon)
	}

	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	found := make([]bool, n)
	deleted := make([]bool, n)
	errs := make([]error, n)
	everyKey := func(what string, err error, results []bool) {
		t.Helper()
		var sent, notSent int
		for i := range errs {
			switch {
			case errs[i] == nil:
				t.Fatalf("%s: key %d has a nil error, and the server was paused", what, i)
			case results != nil && results[i]:
				t.Fatalf("%s: key %d has a result (%v) and an error", what, i, errs[i])
			case errors.Is(errs[i], redisfilter.ErrNotSent):
				notSent++
			default:
				sent++
			}
		}
		t.Logf("%s: %v; %d keys sent and unanswered, %d not sent", what, err, sent, notSent)
		if err == nil || notSent == 0 {
			t.Fatalf("%s returned %v with %d keys not sent", what, err, notSent)
		}
		clear(errs)
	}
	everyKey("ContainsBatch", f.ContainsBatch(ctx, in, found, errs), found)
	everyKey("DeleteBatch", f.DeleteBatch(ctx, in, deleted, errs), deleted)
	notSent := slices.Clone(errs)
	everyKey("Bloom.AddBatch", b.AddBatch(ctx, in, errs), nil)
	everyKey("Bloom.ContainsBatch", b.ContainsBatch(ctx, in, found, errs), found)
	if err := f.DeleteBatch(ctx, in, deleted, notSent); err == nil {
		t.Fatal("DeleteBatch succeeded against a paused server")
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	snap, err := check.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range in {
		if errors.Is(notSent[i], redisfilter.ErrNotSent) && snap.Count(k) != 1 {
			t.Fatalf("%s was not sent to DeleteBatch, and counts %d", k, snap.Count(k))
		}
	}
}
