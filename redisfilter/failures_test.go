package redisfilter_test

import (
	"context"
	"errors"
	"fmt"
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

// TestRestartWithAOF kills a server with appendonly yes and appendfsync
// always in the middle of its life (SIGKILL, as a crash) and restarts it:
// every acknowledged key, duplicate count and the item count are back,
// and so are the functions.
func TestRestartWithAOF(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	ctx := ctxOf(t)
	s := redistest.NewServer(t, redistest.Config{AOF: true})
	rdb := clientOf(t, s)
	name := uniqueName(t)
	f, err := redisfilter.New(ctx, rdb, name, 50000, redisfilter.WithFalsePositiveRate(0.001), redisfilter.WithSegments(4), redisfilter.WithSeed(0x5eed))
	if err != nil {
		t.Fatal(err)
	}
	in := keys("aof", 30000)
	errs := make([]error, len(in))
	if err := f.AddBatch(ctx, in, errs); err != nil {
		t.Fatal(err)
	}
	for range 7 {
		if err := f.Add(ctx, []byte("dup")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	// The library came back from the AOF: FCALL works before any New or
	// Open could load it again.
	if _, err := rdb.FCall(ctx, "ckf2_add", []string{"{x}t", "{x}c", "{x}r"}, "no such id").Result(); err == nil || !strings.Contains(err.Error(), "CKFGONE") {
		t.Fatalf("FCALL after restart: %v, want the function's own error", err)
	}
	g, err := redisfilter.Open(ctx, rdb, name)
	if err != nil {
		t.Fatal(err)
	}
	found := make([]bool, len(in))
	if err := g.ContainsBatch(ctx, in, found, make([]error, len(found))); err != nil {
		t.Fatal(err)
	}
	for i, ok := range found {
		if !ok {
			t.Fatalf("%s lost in the restart", in[i])
		}
	}
	if n, _ := g.Count(ctx, []byte("dup")); n != 7 {
		t.Fatalf("dup counts %d after the restart, want 7", n)
	}
	if n, _ := g.Len(ctx); n != 30007 {
		t.Fatalf("Len = %d after the restart, want 30007", n)
	}
}

// durableWriters are the writers of TestFailover and TestReplicaLoss:
// through a Durable filter, one adds keys one at a time with AddUnique, the
// other in batches of 100 with AddUniqueBatch, every key new, and each
// key's outcome is kept to be checked against the filter afterwards.
type durableWriters struct {
	mu      sync.Mutex
	results map[string]error // nil: added and acknowledged
	acked   atomic.Int64
	refused atomic.Int64
	stop    atomic.Bool
	wg      sync.WaitGroup
}

func startDurableWriters(ctx context.Context, d *redisfilter.Filter) *durableWriters {
	w := &durableWriters{results: map[string]error{}}
	w.wg.Add(2)
	go func() {
		defer w.wg.Done()
		for i := 0; !w.stop.Load(); i++ {
			k := key("one-", i)
			added, err := d.AddUnique(ctx, k)
			if errors.Is(err, redisfilter.ErrNotReplicated) {
				w.note(k, added, nil, err)
				continue
			}
			w.note(k, added, err, nil)
		}
	}()
	go func() {
		defer w.wg.Done()
		for n := 0; !w.stop.Load(); n++ {
			in := keys(fmt.Sprintf("batch%d-", n), 100)
			added := make([]bool, len(in))
			errs := make([]error, len(in))
			var short error
			if err := d.AddUniqueBatch(ctx, in, added, errs); errors.Is(err, redisfilter.ErrNotReplicated) {
				short = err
			}
			for i, k := range in {
				w.note(k, added[i], errs[i], short)
			}
		}
	}()
	return w
}

// note records key k's outcome; short is the batch's ErrNotReplicated:
// its keys were added on the master only.
func (w *durableWriters) note(k []byte, added bool, err, short error) {
	switch {
	case err == nil && !added:
		err = errors.New("reported present, and every key is new")
	case err == nil && short != nil:
		err = short
	}
	w.mu.Lock()
	w.results[string(k)] = err
	w.mu.Unlock()
	if err == nil {
		w.acked.Add(1)
	} else {
		w.refused.Add(1)
	}
}

// waitFor waits until done reports true, or fails the test after a
// generous limit: it is there to fail with a message, instead of the whole
// run's timeout, if the writers stop making progress.
func (w *durableWriters) waitFor(t *testing.T, what string, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !done(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			w.halt()
			t.Fatalf("not %s after 2 minutes: %d writes acknowledged, %d not", what, w.acked.Load(), w.refused.Load())
		}
	}
}

// waitAcked waits for n acknowledged keys.
func (w *durableWriters) waitAcked(t *testing.T, n int64) {
	t.Helper()
	w.waitFor(t, fmt.Sprintf("%d keys acknowledged", n), func() bool { return w.acked.Load() >= n })
}

func (w *durableWriters) halt() {
	w.stop.Store(true)
	w.wg.Wait()
}

// check stops the writers and checks every key's outcome against the
// filter f (opened on a client of its own): a key reported added with a
// nil error (WAIT acknowledged it) is there once; none is reported
// present; a key whose write was unconfirmed or not replicated is there
// at most once (the replica may not have received it), one not sent is
// not there. It returns how many keys had each outcome.
func (w *durableWriters) check(t *testing.T, ctx context.Context, f *redisfilter.Filter) map[string]int {
	t.Helper()
	w.halt()
	t.Logf("%d keys acknowledged, %d not (or not replicated)", w.acked.Load(), w.refused.Load())
	snap, err := f.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wrong []string
	kinds := map[string]int{}
	for k, err := range w.results {
		n := snap.Count([]byte(k))
		switch {
		case err == nil:
			kinds["acknowledged"]++
		case errors.Is(err, redisfilter.ErrUnconfirmed):
			kinds["unconfirmed"]++
		case errors.Is(err, redisfilter.ErrNotReplicated):
			kinds["not replicated"]++
		case errors.Is(err, redisfilter.ErrNotSent):
			kinds["not sent"]++
		default:
			kinds[err.Error()]++
		}
		bad := n > 1 || // added twice
			(err == nil && n == 0) || // acknowledged, and lost
			(errors.Is(err, redisfilter.ErrNotSent) && n != 0) ||
			(err != nil && !errors.Is(err, redisfilter.ErrUnconfirmed) && !errors.Is(err, redisfilter.ErrNotReplicated) && !errors.Is(err, redisfilter.ErrNotSent))
		if bad && len(wrong) < 5 {
			wrong = append(wrong, fmt.Sprintf("%s: count %d, error %v", k, n, err))
		}
	}
	t.Logf("outcomes: %v", kinds)
	if len(wrong) > 0 {
		t.Fatalf("wrong results, for example %q", wrong)
	}
	return kinds
}

// TestFailover runs the durableWriters with Durable(1) against a cluster
// of 3 masters with a replica each, kills the master of slot 0 (a third
// of the segments) in the middle, and restarts it once its replica has
// taken over; then it checks every result (durableWriters.check). A long
// check (CUCKOO_LONG=1): six servers and a failover take 15 s.
// TestReplicaLoss is its quick version.
func TestFailover(t *testing.T) {
	testlong.Skip(t)
	if testing.Short() {
		t.Skip("a 6-node cluster in -short mode")
	}
	t.Parallel()
	ctx := ctxOf(t)
	c := redistest.NewCluster(t, 3, 1, redistest.Config{NodeTimeout: time.Second})
	rdb := clusterClientOf(t, c)
	f, err := redisfilter.New(ctx, rdb, uniqueName(t), 100000, redisfilter.WithFingerprintBits(32), redisfilter.WithSegments(6),
		redisfilter.WithSeed(0xfa11))
	if err != nil {
		t.Fatal(err)
	}
	w := startDurableWriters(ctx, f.Durable(1, time.Second))
	w.waitAcked(t, 500)
	victim, err := c.MasterOf(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killing master %s after %d acknowledged keys", victim.Addr, w.acked.Load())
	victim.Kill()
	before := w.acked.Load()
	// Wait for the replica to take over slot 0, and the survivors to
	// report the cluster healthy again.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if m, err := c.MasterOf(0); err == nil && m != nil && m != victim {
			t.Logf("%s took over after %d more keys", m.Addr, w.acked.Load()-before)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no replica took over within 30 s")
		}
	}
	if err := c.WaitHealthy(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := victim.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	w.waitAcked(t, before+500)
	g, err := redisfilter.Open(ctx, clusterClientOf(t, c), f.Name())
	if err != nil {
		t.Fatal(err)
	}
	w.check(t, ctx, g)
}

// TestReplicaLoss is TestFailover's quick version, on one master and its
// replica: the durableWriters run with Durable(1), the replica is killed
// (the writes are then applied on the master only, and say so with
// ErrNotReplicated) and restarted (it syncs again, and the writes are
// acknowledged again); every result is checked (durableWriters.check).
func TestReplicaLoss(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	ctx := ctxOf(t)
	master := redistest.NewServer(t, redistest.Config{Directives: []string{"repl-diskless-sync-delay 0"}})
	replica := redistest.NewServer(t, redistest.Config{Directives: []string{"replicaof 127.0.0.1 " + strconv.Itoa(master.Port)}})
	synced := func() bool {
		link, _ := replica.Info("master_link_status")
		return link == "up"
	}
	rdb := clientOf(t, master)
	f, err := redisfilter.New(ctx, rdb, uniqueName(t), 100000, redisfilter.WithFingerprintBits(32), redisfilter.WithSegments(4),
		redisfilter.WithSeed(0x5ca1e))
	if err != nil {
		t.Fatal(err)
	}
	w := startDurableWriters(ctx, f.Durable(1, 200*time.Millisecond))
	w.waitFor(t, "the replica in sync", synced)
	w.waitAcked(t, 300)
	replica.Kill()
	t.Logf("replica killed after %d acknowledged keys", w.acked.Load())
	refused := w.refused.Load()
	w.waitFor(t, "a write refused", func() bool { return w.refused.Load() > refused })
	if err := replica.Restart(); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "the replica in sync again", synced)
	w.waitAcked(t, w.acked.Load()+300)
	if kinds := w.check(t, ctx, f); kinds["not replicated"] == 0 {
		t.Fatal("no write said it was not replicated while the replica was down")
	}
}

// TestNoFunctions runs against a server whose FUNCTION and FCALL commands
// are renamed away, which answers them as Redis 6 does ("unknown
// command"): New fails with ErrUnsupported naming the version needed (and
// what the server is: here one that says it is a Redis 7 but does not
// offer Functions), while Bloom filters, which need no functions, work.
func TestNoFunctions(t *testing.T) {
	t.Parallel()
	ctx := ctxOf(t)
	s := redistest.NewServer(t, redistest.Config{Directives: []string{
		`rename-command FUNCTION ""`, `rename-command FCALL ""`, `rename-command FCALL_RO ""`,
	}})
	rdb := clientOf(t, s)
	_, err := redisfilter.New(ctx, rdb, uniqueName(t), 1000)
	if !errors.Is(err, redisfilter.ErrUnsupported) || !strings.Contains(err.Error(), "Redis 7.0 or later") {
		t.Fatalf("New without functions: %v", err)
	}
	t.Log(err)
	b, err := redisfilter.NewBloom(ctx, rdb, uniqueName(t), 1000, redisfilter.WithFalsePositiveRate(0.01))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Add(ctx, []byte("k")); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Contains(ctx, []byte("k")); err != nil || !ok {
		t.Fatal(ok, err)
	}
}

// redirects counts the MOVED and ASK replies the nodes of a cluster
// client receive (go-redis follows them; this hook sees each attempt).
type redirects struct{ moved, ask atomic.Int64 }

func (r *redirects) hook(c *redis.Client) {
	c.AddHook(redirectHook{r})
}

type redirectHook struct{ r *redirects }

func (h redirectHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h redirectHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.note(cmd.Err())
		return err
	}
}
func (h redirectHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			h.note(c.Err())
		}
		return err
	}
}

func (h redirectHook) note(err error) {
	if err == nil {
		return
	}
	if _, ok := redis.IsMovedError(err); ok {
		h.r.moved.Add(1)
	}
	if _, ok := redis.IsAskError(err); ok {
		h.r.ask.Add(1)
	}
}

// TestResharding moves the slot of one segment from its master to another
// by hand, as redis-cli --cluster reshard does (every key of the slot:
// the segment's two and the records of recent writes), with operations in
// between: while the segment's keys sit on the new master but the slot is
// still the old one's, the old master answers reads with ASK, and writes
// (which name a new record key, which neither node holds) with TRYAGAIN
// until the slot has moved: they wait and go on. Once the slot is
// reassigned, the old master answers MOVED. go-redis follows both; every
// key stays found and new keys go in.
func TestResharding(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	if testing.Short() {
		t.Skip("a cluster of its own in -short mode")
	}
	ctx := ctxOf(t)
	c := redistest.NewCluster(t, 3, 0, redistest.Config{})
	red := &redirects{}
	// newClient returns a client of the cluster whose nodes count the
	// redirects they meet.
	newClient := func() *redis.ClusterClient {
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Protocol: 2, DialTimeout: redistest.ClientTimeout,
			ReadTimeout: redistest.ClientTimeout, WriteTimeout: redistest.ClientTimeout})
		rdb.OnNewNode(red.hook)
		t.Cleanup(func() { rdb.Close() })
		return rdb
	}
	rdb := newClient()
	// A fixed name (the cluster is the test's own): the metadata key must
	// not share the moved segment's slot, or the source would still hold a
	// key of the slot and refuse to give it away (SETSLOT NODE), which a
	// random name does in one run of 16,384. newSegmentMove checks it.
	f, err := redisfilter.New(ctx, rdb, "resharding", 30000, redisfilter.WithSegments(3))
	if err != nil {
		t.Fatal(err)
	}
	var in [][]byte
	addMore := func(prefix string) {
		t.Helper()
		more := keys(prefix, 3000)
		addAll(t, ctx, f, more)
		in = append(in, more...)
		for _, k := range more[:50] {
			if err := f.Add(ctx, k); err != nil {
				t.Fatal(err)
			}
			if ok, err := f.Delete(ctx, k); err != nil || !ok {
				t.Fatal(ok, err)
			}
			if n, err := f.Count(ctx, k); err != nil || n < 1 {
				t.Fatal(n, err)
			}
		}
	}
	checkAll := func(stage string) {
		t.Helper()
		found := make([]bool, len(in))
		if err := f.ContainsBatch(ctx, in, found, make([]error, len(found))); err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		for i, ok := range found {
			if !ok {
				t.Fatalf("%s: %s lost", stage, in[i])
			}
		}
		for _, k := range in[:100] {
			if ok, err := f.Contains(ctx, k); err != nil || !ok {
				t.Fatalf("%s: Contains(%s) = %v, %v", stage, k, ok, err)
			}
		}
	}
	addMore("before")
	m := newSegmentMove(t, c, f, "")
	m.start()
	if err := m.migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if slotKeys, _ := m.srcClient.ClusterCountKeysInSlot(ctx, m.slot).Result(); slotKeys != 0 {
		t.Fatalf("%d keys of slot %d left on the source", slotKeys, m.slot)
	}
	checkAll("keys migrated, slot migrating")
	// A second client whose map of the slots is loaded now, before the slot
	// moves, and not used again until after: its first lookup then goes to
	// the source by its map and must follow the MOVED reply. (The first
	// client's map may be reloaded at any moment after an ASK, so whether
	// it meets a MOVED is chance.)
	staleFilter, err := redisfilter.Open(ctx, newClient(), "resharding")
	if err != nil {
		t.Fatal(err)
	}
	// Writes to the segment wait (TRYAGAIN) until the slot has moved:
	// finish the move while they wait.
	moved := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		moved <- m.finish(ctx) // with the keys a write made meanwhile, if any
	}()
	addMore("asking")
	if err := <-moved; err != nil {
		t.Fatal(err)
	}
	movedBefore := red.moved.Load()
	found := make([]bool, len(in))
	if err := staleFilter.ContainsBatch(ctx, in, found, make([]error, len(in))); err != nil {
		t.Fatalf("slot moved, a client with the old map: %v", err)
	}
	for i, ok := range found {
		if !ok {
			t.Fatalf("slot moved, a client with the old map: %s lost", in[i])
		}
	}
	if red.moved.Load() == movedBefore {
		t.Fatal("slot moved: a client with the old map of the slots met no MOVED reply")
	}
	checkAll("slot moved")
	addMore("moved")
	checkAll("after")
	t.Logf("redirects followed: %d ASK, %d MOVED", red.ask.Load(), red.moved.Load())
	if red.ask.Load() == 0 || red.moved.Load() == 0 {
		t.Fatalf("the test saw %d ASK and %d MOVED replies; it must see both", red.ask.Load(), red.moved.Load())
	}
}
