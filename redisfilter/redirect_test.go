package redisfilter_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// TestIsClusterRedirect gives one node of a real cluster to a plain
// client: the filters whose keys another node serves fail with a reply
// IsClusterRedirect recognises, and the others work.
func TestIsClusterRedirect(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	c := sharedCluster(t)
	rdb := clientOf(t, c.Server(c.Addrs()[0]))
	ctx := context.Background()
	var moved, worked int
	for i := range 12 {
		name := fmt.Sprintf("%s-%d", uniqueName(t), i)
		_, err := redisfilter.New(ctx, rdb, name, 1000)
		switch {
		case err == nil:
			worked++
		case redisfilter.IsClusterRedirect(err):
			moved++
		default:
			t.Fatalf("New %s on one node of a cluster: %v, not a redirection", name, err)
		}
	}
	// Each name's keys are on the node asked with probability 1/3: none
	// of 12 redirected has probability (1/3)^12, about 2e-6.
	if moved == 0 {
		t.Fatalf("no name was redirected (%d worked)", worked)
	}
	single := singleClient(t)
	_, err := redisfilter.Open(ctx, single, uniqueName(t))
	if !errors.Is(err, redisfilter.ErrNotFound) || redisfilter.IsClusterRedirect(err) {
		t.Fatalf("Open of a missing filter: %v", err)
	}
	if redisfilter.IsClusterRedirect(nil) || redisfilter.IsClusterRedirect(errors.New("MOVED 1 a:1")) {
		t.Fatal("IsClusterRedirect takes an error that is not a Redis reply for one")
	}
}

// segmentMove migrates the slot of a filter's first segment from its
// master (src) to another master (dst) of a test's own cluster by hand,
// as redis-cli --cluster reshard does.
type segmentMove struct {
	t            *testing.T
	c            *redistest.Cluster
	slot         int
	src, dst     *redistest.Server
	srcID, dstID string
	srcClient    *redis.Client
}

// newSegmentMove prepares the move of f's first segment's slot to the
// master at dst, or to any other if dst is "". The metadata key must be in another slot, or the source would still hold
// a key of the slot and refuse to give it away (SETSLOT NODE): a fixed
// name, checked here, keeps it there.
func newSegmentMove(t *testing.T, c *redistest.Cluster, f *redisfilter.Filter, dst string) *segmentMove {
	t.Helper()
	keysOf := f.Keys() // meta, then table and hash of each segment
	slotText, err := c.Servers[0].Do("CLUSTER", "KEYSLOT", keysOf[1])
	if err != nil {
		t.Fatal(err)
	}
	if metaSlot, err := c.Servers[0].Do("CLUSTER", "KEYSLOT", keysOf[0]); err != nil || metaSlot == slotText {
		t.Fatalf("the metadata key %s is in slot %s (%v), the moved segment's %s: choose another name", keysOf[0], metaSlot, err, slotText)
	}
	m := &segmentMove{t: t, c: c}
	fmt.Sscan(slotText, &m.slot)
	if m.src, err = c.MasterOf(m.slot); err != nil {
		t.Fatal(err)
	}
	nodes, err := c.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		switch {
		case n.Addr == m.src.Addr:
			m.srcID = n.ID
		case n.Master && m.dst == nil && (dst == "" || n.Addr == dst):
			m.dst, m.dstID = c.Server(n.Addr), n.ID
		}
	}
	if m.dst == nil {
		t.Fatalf("no master %q to move slot %d to", dst, m.slot)
	}
	m.srcClient = clientOf(t, m.src)
	return m
}

// start marks the slot importing on the target and migrating on the
// source.
func (m *segmentMove) start() {
	m.t.Helper()
	for _, step := range []struct {
		s          *redistest.Server
		state, per string
	}{{m.dst, "IMPORTING", m.srcID}, {m.src, "MIGRATING", m.dstID}} {
		if _, err := step.s.Do("CLUSTER", "SETSLOT", fmt.Sprint(m.slot), step.state, step.per); err != nil {
			m.t.Fatalf("%s: SETSLOT %s: %v", step.s.Addr, step.state, err)
		}
	}
}

// migrate moves every key of the slot the source holds to the target, as
// redis-cli does.
func (m *segmentMove) migrate(ctx context.Context) error {
	keys, err := m.srcClient.ClusterGetKeysInSlot(ctx, m.slot, 100000).Result()
	if err != nil || len(keys) == 0 {
		return err
	}
	args := []any{"migrate", "127.0.0.1", m.dst.Port, "", 0, 5000, "keys"}
	for _, k := range keys {
		args = append(args, k)
	}
	return m.srcClient.Do(ctx, args...).Err()
}

// finish migrates the keys left on the source, then gives the slot to
// the target on every master. It reports by its error, so that it may
// run in a goroutine of its own.
func (m *segmentMove) finish(ctx context.Context) error {
	err := m.migrate(ctx)
	nodes, nerr := m.c.Nodes()
	err = cmp.Or(err, nerr)
	for _, n := range nodes {
		if err == nil && n.Master {
			_, err = m.c.Server(n.Addr).Do("CLUSTER", "SETSLOT", fmt.Sprint(m.slot), "NODE", m.dstID)
		}
	}
	return err
}

// askedHook signals asked when a node refuses with TRYAGAIN a function
// call sent to it after ASKING: the call followed an ASK reply to a node
// that does not hold all its keys.
type askedHook struct{ asked chan<- struct{} }

func (h askedHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h askedHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h askedHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for i := 1; i < len(cmds); i++ {
			if cmds[i-1].Name() == "asking" && cmds[i].Name() == "fcall" && redis.IsTryAgainError(cmds[i].Err()) {
				select {
				case h.asked <- struct{}{}:
				default:
				}
			}
		}
		return err
	}
}

// TestDurableWritesDuringSlotMigration writes through Durable(1) to a
// segment whose slot is moved by hand, as redis-cli --cluster reshard
// moves it. Durable sends through each master's own client (the WAIT
// must follow the writes on their connection), so go-redis's
// ClusterClient follows no redirect for it: the package does.
//
//   - The slot migrating, its keys still on the source, which answers a
//     write TRYAGAIN (it holds the segment, not the new call's record):
//     a write whose context ends while it pauses before sending again
//     returns the context's error, unapplied and not unconfirmed, after
//     that one pause.
//   - The keys moved, the slot still migrating: the source answers ASK.
//     A call sent again whose first copy ran before the move (its
//     record moved with the segment) gets its first reply from the
//     target, after ASKING, at once. New writes (AddUnique, and
//     AddUniqueBatch, whose second call names the first's record) are
//     taken to the target, which refuses them (TRYAGAIN: not every key is
//     there, the new call's record being nowhere) until the slot has
//     moved: then they go in, and are found.
//   - The slot moved again, to a master just added, which go-redis's map
//     does not list: a call sent again is answered there as above.
func TestDurableWritesDuringSlotMigration(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	ctx := ctxOf(t)
	c := redistest.NewCluster(t, 3, 1, redistest.Config{})
	asked := make(chan struct{}, 1)
	rdb := clusterClientOf(t, c)
	rdb.OnNewNode(func(n *redis.Client) { n.AddHook(askedHook{asked}) })
	f, err := redisfilter.New(ctx, rdb, "migrating", 1000, redisfilter.WithSegments(1))
	if err != nil {
		t.Fatal(err)
	}
	d := f.Durable(1, 10*time.Second)
	replayed := redisfilter.NewAddCall(ctx, d, []byte("replayed"), true)
	if code, err := replayed.Send(ctx); code != 1 || err != nil {
		t.Fatalf("before the move: code %d, %v", code, err)
	}
	m := newSegmentMove(t, c, f, "")
	m.start()

	// The keys on the source: TRYAGAIN, and a context that ends in the
	// pause after it.
	pausing, cancel := context.WithCancel(ctx)
	defer cancel()
	p := f.Durable(1, 10*time.Second)
	var pauses int
	redisfilter.SetRedirectPause(p, func(time.Duration) time.Duration {
		pauses++
		cancel()
		return time.Hour // a pause that did not watch the context would hang the test
	})
	cancelled := []byte("cancelled")
	added, err := p.AddUnique(pausing, cancelled)
	if !errors.Is(err, context.Canceled) || errors.Is(err, redisfilter.ErrUnconfirmed) || errors.Is(err, redisfilter.ErrNotSent) || added {
		t.Fatalf("a write whose context ended in a redirect's pause: added %v, %v; want the context's error", added, err)
	}
	if !strings.Contains(err.Error(), "TRYAGAIN") || pauses != 1 {
		t.Fatalf("%d pauses, %v: want one, after TRYAGAIN", pauses, err)
	}
	if n, err := f.Count(ctx, cancelled); n != 0 || err != nil {
		t.Fatalf("a write refused until its context ended was applied: count %d, %v", n, err)
	}

	// The keys on the target, the slot migrating: ASK.
	if err := m.migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if code, err := replayed.Send(ctx); code != 1 || err != nil {
		t.Fatalf("a call sent again, its record moved: code %d, %v; want its first reply (1: added)", code, err)
	}
	single, batch := []byte("new"), keys("batch", 40)
	type result struct {
		added bool
		errs  []error
	}
	results := make(chan result, 2)
	go func() {
		added, err := d.AddUnique(ctx, single)
		results <- result{added, []error{err}}
	}()
	go func() {
		added, errs := make([]bool, len(batch)), make([]error, len(batch))
		err := d.AddUniqueBatch(ctx, batch, added, errs)
		all := !slices.Contains(added, false)
		results <- result{all, append(errs, err)}
	}()
	select {
	case <-asked:
	case r := <-results:
		t.Fatalf("a write returned before the target was asked: %v %v", r.added, r.errs)
	}
	if err := m.finish(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r := <-results; !r.added || errors.Join(r.errs...) != nil {
			t.Fatalf("a write during the move: added %v, %v", r.added, errors.Join(r.errs...))
		}
	}
	for _, k := range append(batch, single, []byte("replayed")) {
		if n, err := f.Count(ctx, k); n != 1 || err != nil {
			t.Fatalf("%s after the move: count %d, %v", k, n, err)
		}
	}

	// A move to a master added to the cluster (redis-cli --cluster
	// add-node, which copies the functions), which serves no slot yet, so
	// that go-redis's map of the slots does not list it. It has no
	// replica: its WAIT falls short, and says whose it was.
	added2, err := redistest.Start(redistest.Config{Dir: t.TempDir(), Cluster: true})
	if err != nil {
		t.Fatal(err)
	}
	c.Servers = append(c.Servers, added2) // stopped with the cluster
	_, cli, _ := redistest.Binaries()
	if out, err := exec.CommandContext(ctx, cli, "--cluster", "add-node", added2.Addr, m.dst.Addr).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster add-node: %v\n%s", err, out)
	}
	if err := c.WaitHealthy(time.Minute); err != nil {
		t.Fatal(err)
	}
	q := f.Durable(1, 100*time.Millisecond)
	replayed = redisfilter.NewAddCall(ctx, q, []byte("replayed again"), true)
	if code, err := replayed.Send(ctx); code != 1 || err != nil {
		t.Fatalf("before the second move: code %d, %v", code, err)
	}
	m = newSegmentMove(t, c, f, added2.Addr)
	m.start()
	if err := m.migrate(ctx); err != nil {
		t.Fatal(err)
	}
	code, err := replayed.Send(ctx)
	if code != 1 || !errors.Is(err, redisfilter.ErrNotReplicated) || !strings.Contains(err.Error(), added2.Addr) {
		t.Fatalf("a call sent again, its record moved to a new master: code %d, %v; want its first reply (1: added), and %s's WAIT short", code, err, added2.Addr)
	}
	if err := m.finish(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := f.Count(ctx, []byte("replayed again")); n != 1 || err != nil {
		t.Fatalf("after the second move: count %d, %v", n, err)
	}
}
