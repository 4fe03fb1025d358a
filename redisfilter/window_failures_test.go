package redisfilter_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// windowStallOps are the write streams TestWindowStall runs.
var windowStallOps = []string{"AddUnique", "AddUniqueBatch", "TouchBatch"}

// TestWindowStall streams writes of new, distinct keys into windows
// while the server sleeps (DEBUG SLEEP) longer than the client's read
// timeout, as TestStall does for the cuckoo filter: a write whose reply
// timed out is sent again while its first copy waits in the server. Every
// reported result is then checked against the window: a key with a nil
// error was added by its own call (AddUnique's added is true, Touch's
// seen false: a "seen" or "not added" would be the answer to the call's
// own first copy) and is in the window; a key with ErrUnconfirmed may or
// may not be; one with ErrNotSent is not. The window is an hour long, so
// no key expires during the test.
func TestWindowStall(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	// The quick run keeps a stall the retries outlast and one they give
	// up on; a stall of many read timeouts that the retries outlast (the
	// longest case, 15 s on a busy machine) runs in the quick run through
	// the same driver for the cuckoo filter (TestStall), here in the long
	// run.
	cases := []stall{
		{sleep: 170 * time.Millisecond, readTimeout: 100 * time.Millisecond},
		{sleep: 1200 * time.Millisecond, readTimeout: 100 * time.Millisecond, horizon: 300 * time.Millisecond},
	}
	if testlong.Enabled() {
		cases = append(cases, stall{sleep: 1200 * time.Millisecond, readTimeout: 100 * time.Millisecond},
			stall{sleep: 5 * time.Second}, stall{sleep: 8 * time.Second, horizon: 2 * time.Second})
	}
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			runWindowStall(t, c)
		})
	}
}

// windowStream is one stream of TestWindowStall.
type windowStream struct {
	op      string
	w       *redisfilter.Window // on the client with the stall's read timeout
	probe   *redisfilter.Window // on a client with generous timeouts
	mu      sync.Mutex
	results map[string]outcome // added: AddUnique's added, or Touch's !seen
	sent    atomic.Int64
}

func runWindowStall(t *testing.T, c stall) {
	runStallOf(t, c, func(ctx context.Context, slow, rdb redis.UniversalClient, handle []redisfilter.Option) []stallStream {
		// 28-bit fingerprints and a fixed seed: no key of the test is a
		// false positive of another (a key reported seen was added by its
		// own call).
		opts := []redisfilter.Option{redisfilter.WithFingerprintBits(28), redisfilter.WithSeed(0x57a11), redisfilter.WithSegments(4)}
		var streams []stallStream
		for _, op := range windowStallOps {
			probe, err := redisfilter.NewWindow(ctx, slow, "stall-"+op, 1<<20, time.Hour, opts...)
			if err != nil {
				t.Fatal(err)
			}
			var w *redisfilter.Window
			for w == nil {
				if w, err = redisfilter.OpenWindow(ctx, rdb, probe.Name(), handle...); err != nil && ctx.Err() != nil {
					t.Fatal(err)
				}
			}
			streams = append(streams, &windowStream{op: op, w: w, probe: probe, results: map[string]outcome{}})
		}
		return streams
	})
}

func (st *windowStream) written() int64 { return st.sent.Load() }

func (st *windowStream) check(t *testing.T, ctx context.Context) {
	checkWindowOutcomes(t, ctx, st.probe, st.op, st.results)
}

func (st *windowStream) write(ctx context.Context, prefix string, n int) {
	defer st.sent.Add(1)
	if st.op == "AddUnique" {
		k := key(prefix, 0)
		added, err := st.w.AddUnique(ctx, k)
		st.record(k, added, err)
		return
	}
	in := keys(prefix, n)
	out, errs := make([]bool, len(in)), make([]error, len(in))
	if st.op == "TouchBatch" {
		st.w.TouchBatch(ctx, in, out, errs)
		for i := range out {
			out[i] = !out[i]
		}
	} else {
		st.w.AddUniqueBatch(ctx, in, out, errs)
	}
	for i, k := range in {
		st.record(k, out[i], errs[i])
	}
}

func (st *windowStream) record(k []byte, added bool, err error) {
	st.mu.Lock()
	st.results[string(k)] = outcome{added, err}
	st.mu.Unlock()
}

// checkWindowOutcomes checks what the writes of new, distinct keys
// reported against the window (through a client of generous timeouts).
func checkWindowOutcomes(t *testing.T, ctx context.Context, w *redisfilter.Window, op string, results map[string]outcome) {
	t.Helper()
	in := make([][]byte, 0, len(results))
	for k := range results {
		in = append(in, []byte(k))
	}
	found, errs := make([]bool, len(in)), make([]error, len(in))
	if err := w.ContainsBatchChecked(ctx, in, found, errs); err != nil {
		t.Fatal(err)
	}
	var c tally
	for i, k := range in {
		o := results[string(k)]
		n := uint64(0)
		if found[i] {
			n = 1
		}
		if o.err == nil && !o.added {
			c.wrong++
			c.note("%s reported in the window with a nil error (found now: %v)", k, found[i])
			continue
		}
		c.check(string(k), n, o.err)
	}
	c.report(t, op, len(results))
}

// TestWindowKillMidBatch kills a server with appendonly yes and
// appendfsync always (SIGKILL) while a TouchBatch of new keys runs, and
// restarts it, as TestKillMidBatch does for the cuckoo filter: every key
// with a nil error is in the window and was reported new, every other key
// has ErrUnconfirmed (in the window or not) or ErrNotSent (not in it).
// Restarted within the retry horizon, the batch goes on and every key is
// added; restarted after the batch gave up, the keys of the round in
// flight are unconfirmed and the rest not sent.
func TestWindowKillMidBatch(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	type killCase struct {
		keys    int
		restart time.Duration // after the kill; 0: once the batch has returned
		horizon time.Duration
	}
	cases := []killCase{
		{keys: 20000, restart: 500 * time.Millisecond},
		{keys: 20000, horizon: 300 * time.Millisecond},
	}
	if testlong.Enabled() {
		cases = append(cases, killCase{keys: 200000, restart: 3 * time.Second}, killCase{keys: 200000, horizon: time.Second})
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("keys=%d/restart=%v/horizon=%v", c.keys, c.restart, c.horizon), func(t *testing.T) {
			t.Parallel()
			ctx := ctxOf(t)
			s := redistest.NewServer(t, redistest.Config{AOF: true})
			rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
			t.Cleanup(func() { rdb.Close() })
			opts := []redisfilter.Option{redisfilter.WithFingerprintBits(28), redisfilter.WithSeed(0xdead), redisfilter.WithSegments(8)}
			if c.horizon != 0 {
				opts = append(opts, redisfilter.WithRetryHorizon(c.horizon))
			}
			w, err := redisfilter.NewWindow(ctx, rdb, "kill", uint64(c.keys)*2, time.Hour, opts...)
			if err != nil {
				t.Fatal(err)
			}
			var (
				killed, restarted, returned = make(chan struct{}), make(chan struct{}), make(chan struct{})
				once                        sync.Once
			)
			rdb.AddHook(pipelineHook{func(cmds []redis.Cmder) {
				if cmds[0].Name() != "fcall" {
					return
				}
				once.Do(func() {
					go func() {
						defer close(restarted)
						time.Sleep(5 * time.Millisecond)
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
			}})
			in := keys("kill", c.keys)
			seen, errs := make([]bool, len(in)), make([]error, len(in))
			start := time.Now()
			err = w.TouchBatch(ctx, in, seen, errs)
			t.Logf("TouchBatch returned after %v: %v", time.Since(start).Round(time.Millisecond), err)
			close(returned)
			<-restarted
			select {
			case <-killed:
			default:
				t.Fatal("the batch ended before the server was killed")
			}
			check, err2 := redisfilter.OpenWindow(ctx, clientOf(t, s), "kill")
			if err2 != nil {
				t.Fatal(err2)
			}
			results := map[string]outcome{}
			var unconfirmed, notSent int
			for i, k := range in {
				results[string(k)] = outcome{!seen[i], errs[i]}
				switch {
				case errors.Is(errs[i], redisfilter.ErrUnconfirmed):
					unconfirmed++
				case errors.Is(errs[i], redisfilter.ErrNotSent):
					notSent++
				}
			}
			checkWindowOutcomes(t, ctx, check, "TouchBatch", results)
			switch {
			case c.restart != 0 && err != nil:
				t.Errorf("the server was back within the horizon, and TouchBatch returned %v", err)
			case c.restart == 0 && (err == nil || unconfirmed+notSent == 0):
				// Which keys are unconfirmed and which not sent depends on
				// when the kill lands (a busy machine may send nothing
				// before it); every key's outcome is checked above.
				t.Errorf("the server was down until the batch gave up, and TouchBatch returned %v with %d keys unconfirmed, %d not sent", err, unconfirmed, notSent)
			}
		})
	}
}

// TestWindowServerClockDecides: the window's time is the server's, never
// the client's. The server's clock runs 37 minutes ahead of the client's
// (its library's clock reads TIME plus the skew: how a server with a
// skewed clock answers), and a window of 2.8 s still finds keys for the
// window and forgets them past window + granularity of elapsed time, as
// it would with the clocks in step: a client that judged ages by its own
// clock would find every key 37 minutes old, or young for 37 minutes.
// Then the server's clock steps as a failover to a replica with another
// clock would step it: 10 s back, and keys added before are held (kept
// longer, never shorter) until the clock catches up; 10 s ahead, and keys
// added up to 10 s before are forgotten at once.
func TestWindowServerClockDecides(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	skipWithoutRedis(t)
	ctx := ctxOf(t)
	srv := redistest.NewServer(t, redistest.Config{})
	rdb := clientOf(t, srv)
	if err := redisfilter.LoadSkewedClockLibrary(ctx, rdb, 37*time.Minute); err != nil {
		t.Fatal(err)
	}
	const window = 2800 * time.Millisecond
	w, err := redisfilter.NewWindow(ctx, rdb, "skewed", 10_000, window, redisfilter.WithSegments(2))
	if err != nil {
		t.Fatal(err)
	}
	in := keys("skew", 1000)
	count := func() int {
		found, errs := make([]bool, len(in)), make([]error, len(in))
		if err := w.ContainsBatch(ctx, in, found, errs); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range found {
			if f {
				n++
			}
		}
		return n
	}
	bound := fpBoundOf(len(in), 2*0.002)
	sent := time.Now()
	if err := w.AddBatch(ctx, in, make([]error, len(in))); err != nil {
		t.Fatal(err)
	}
	returned := time.Now()
	for {
		asked := time.Now()
		n := count()
		switch {
		case time.Since(sent) <= window && n != len(in):
			t.Fatalf("%d of %d keys found %v after they were sent", n, len(in), time.Since(sent))
		case asked.Sub(returned) > window+w.Granularity() && n > bound:
			t.Fatalf("%d of %d keys found %v after they were added", n, len(in), asked.Sub(returned))
		}
		if asked.Sub(returned) > window+w.Granularity() {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The clock steps back 10 s: keys added now are held until it has
	// caught up with the time the window reached, 10 s and more later.
	if err := w.AddBatch(ctx, in, make([]error, len(in))); err != nil {
		t.Fatal(err)
	}
	if err := redisfilter.LoadSkewedClockLibrary(ctx, rdb, 37*time.Minute-10*time.Second); err != nil {
		t.Fatal(err)
	}
	stepped := time.Now()
	for time.Since(stepped) < window+w.Granularity()+time.Second {
		if n := count(); n != len(in) {
			t.Fatalf("after the clock stepped back 10 s: %d of %d keys found %v later", n, len(in), time.Since(stepped))
		}
		time.Sleep(200 * time.Millisecond)
	}
	// And 20 s ahead (10 s past where it was): keys added now are
	// forgotten at once.
	if err := w.AddBatch(ctx, in, make([]error, len(in))); err != nil {
		t.Fatal(err)
	}
	if err := redisfilter.LoadSkewedClockLibrary(ctx, rdb, 37*time.Minute+10*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := count(); n > bound {
		t.Fatalf("after the clock stepped 20 s ahead: %d of %d keys found", n, len(in))
	}
}

// TestWindowReplicates: the window functions read the server's clock
// (TIME) and write, which Redis 7 allows because it replicates a
// function's effects (its writes), not the call: a replica receives the
// writes and never reads a clock of its own. Writes through Durable(1)
// (WAIT) reach the replica, whose copy of every segment (table, epoch,
// sweep, counts) is then the master's, byte for byte, and a handle
// reading from the replica answers as the master does.
func TestWindowReplicates(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	ctx := ctxOf(t)
	master := redistest.NewServer(t, redistest.Config{Directives: []string{"repl-diskless-sync-delay 0"}})
	replica := redistest.NewServer(t, redistest.Config{Directives: []string{"replicaof 127.0.0.1 " + strconv.Itoa(master.Port)}})
	for deadline := time.Now().Add(time.Minute); ; {
		if link, _ := replica.Info("master_link_status"); link == "up" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the replica did not sync")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// 28-bit fingerprints and a fixed seed: no two of the keys share a
	// slot, so deleting one never takes another.
	w, err := redisfilter.NewWindow(ctx, clientOf(t, master), "replicated", 20000, time.Hour,
		redisfilter.WithSegments(3), redisfilter.WithFingerprintBits(28), redisfilter.WithSeed(0x5e9))
	if err != nil {
		t.Fatal(err)
	}
	d := w.Durable(1, 10*time.Second)
	in := keys("r", 10000)
	errs := make([]error, len(in))
	if err := d.AddBatch(ctx, in, errs); err != nil {
		t.Fatal(err)
	}
	deleted := make([]bool, 1000)
	if err := d.DeleteBatch(ctx, in[:1000], deleted, errs[:1000]); err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if err != nil || i < len(deleted) && !deleted[i] {
			t.Fatalf("%s: %v (deleted: %v)", in[i], err, i < len(deleted) && deleted[i])
		}
	}
	onReplica, err := redisfilter.OpenWindow(ctx, clientOf(t, replica), "replicated")
	if err != nil {
		t.Fatal(err)
	}
	for s := range w.Segments() {
		a, err := redisfilter.WindowSegmentState(ctx, w, s)
		if err != nil {
			t.Fatal(err)
		}
		b, err := redisfilter.WindowSegmentState(ctx, onReplica, s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Table, b.Table) || a.Epoch != b.Epoch || a.Cursor != b.Cursor || a.Counts != b.Counts || a.End != b.End {
			t.Fatalf("segment %d: the replica's copy differs from the master's", s)
		}
	}
	found := make([]bool, len(in))
	if err := onReplica.ContainsBatch(ctx, in, found, errs); err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if found[i] != (i >= 1000) || errs[i] != nil {
			t.Fatalf("%s on the replica: %v, %v", in[i], found[i], errs[i])
		}
	}
}
