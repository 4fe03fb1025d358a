package kafkadedup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/kafkatest"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
)

// quickOpts are the options every in-process test gives: the broker,
// the client's settings of quick rebalances (testClientOpts), a fixed seed
// (so that filterKept predicts the filters exactly), a short idle exit.
func quickOpts(t testing.TB, addr string) []Option {
	start := time.Now()
	return []Option{WithClient(append(testClientOpts(), kgo.SeedBrokers(addr))...), WithSeed(7),
		WithExitWhenIdle(300 * time.Millisecond),
		WithLogf(func(format string, args ...any) {
			t.Logf("%v: "+format, append([]any{time.Since(start).Round(time.Millisecond)}, args...)...)
		})}
}

// testClientOpts are the client settings of every processor of the
// tests. They make a rebalance quick: a member learns of one at its next
// heartbeat (franz-go's default interval is 3 s), and gives its partitions
// up once its fetch in flight has returned, which a broker holds up to the
// fetch's wait when there is nothing to read. And a transaction may last
// as long as a test waits: on a machine busy with race-detector builds, a
// transaction with a few snapshot chunks was fenced (INVALID_PRODUCER_EPOCH),
// by all signs at the default timeout (20 s). (The tests that kill
// processors set a short one of their own.)
func testClientOpts() []kgo.Opt {
	return []kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond), kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.TransactionTimeout(kafkatest.Wait)}
}

func TestWindowDedupMatchesTheModel(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Start(t)
	kafkatest.CreateTopic(t, addr, "in", 3)
	kafkatest.CreateTopic(t, addr, "out", 3)
	rng := testseed.Rand(t)
	recs := genInput(rng, 3000, 3, 400, time.Minute)
	produceInput(t, addr, "in", recs)
	p, err := New("g", []string{"in"}, "out", append(quickOpts(t, addr), WithWindow(2*time.Hour), WithCapacity(2000))...)
	if err != nil {
		t.Fatal(err)
	}
	st := runUntilIdle(t, p)
	checkOutput(t, &p.cfg, recs, kafkatest.ReadCommitted(t, addr, "out"))
	if st.In != uint64(len(recs)) || st.Kept+st.Dropped != st.In {
		t.Fatalf("stats %+v for %d records", st, len(recs))
	}
}

// setup starts a broker with the topics in and out of parts partitions,
// and writes recs to in.
func setup(t *testing.T, parts int32, recs []inRec) string {
	_, addr := setupCluster(t, parts, recs)
	return addr
}

// setupCluster is setup, returning the broker too, for the tests that
// control its answers.
func setupCluster(t *testing.T, parts int32, recs []inRec) (*kfake.Cluster, string) {
	c := kafkatest.StartCluster(t)
	addr := c.ListenAddrs()[0]
	kafkatest.CreateTopic(t, addr, "in", parts)
	kafkatest.CreateTopic(t, addr, "out", parts)
	produceInput(t, addr, "in", recs)
	return c, addr
}

func newProcessor(t testing.TB, addr string, opts ...Option) *Processor {
	t.Helper()
	p, err := New("g", []string{"in"}, "out", append(quickOpts(t, addr), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A Processor stopped while it starts (a SIGTERM as it checks the
// topics) returns nil, as one stopped between transactions does.
func TestRunStoppedWhileStartingReturnsNil(t *testing.T) {
	t.Parallel()
	addr := setup(t, 1, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := newProcessor(t, addr).Run(ctx); err != nil {
		t.Fatalf("Run with its context done = %v, want nil", err)
	}
}

func TestNoWindowDedupsForever(t *testing.T) {
	t.Parallel()
	recs := genInput(testseed.Rand(t), 3000, 2, 800, time.Hour)
	for _, c := range []struct {
		name string
		opts []Option
	}{
		{"filter=growing", nil},
		{"filter=fixed", []Option{WithCapacity(5000)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			addr := setup(t, 2, recs)
			p := newProcessor(t, addr, c.opts...)
			runUntilIdle(t, p)
			checkOutput(t, &p.cfg, recs, kafkatest.ReadCommitted(t, addr, "out"))
		})
	}
}

func TestFullFilterStopsWithErrFull(t *testing.T) {
	t.Parallel()
	recs := genInput(testseed.Rand(t), 3000, 1, 3000, time.Hour)
	addr := setup(t, 1, recs)
	p := newProcessor(t, addr, WithCapacity(200))
	err := p.Run(context.Background())
	if !errors.Is(err, cuckoo.ErrFull) || !strings.Contains(err.Error(), "in/0 offset") {
		t.Fatalf("Run = %v, want an error wrapping cuckoo.ErrFull naming the record", err)
	}
	if out := kafkatest.ReadCommitted(t, addr, "out"); len(out) != 0 {
		t.Fatalf("%d records written by the failed transaction", len(out))
	}
}

// The output records are the input's key, value, headers and timestamp,
// in the partition Kafka's default partitioner gives their key (murmur2),
// whatever the input's partition.
func TestOutputRecordsAreTheInputsAsRead(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Start(t)
	kafkatest.CreateTopic(t, addr, "in", 3)
	kafkatest.CreateTopic(t, addr, "out", 5)
	cl := kafkatest.Client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	var in []*kgo.Record
	for i := range 60 {
		in = append(in, &kgo.Record{Topic: "in", Partition: int32(i % 3), Key: []byte(fmt.Sprintf("k%d", i)),
			Value: []byte(fmt.Sprintf("v%d", i)), Timestamp: ts.Add(time.Duration(i) * time.Second),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte{byte(i)}}, {Key: "empty"}}})
	}
	kafkatest.Produce(t, cl, in...)
	runUntilIdle(t, newProcessor(t, addr))
	out := kafkatest.ReadCommitted(t, addr, "out")
	if len(out) != len(in) {
		t.Fatalf("%d records out, want %d", len(out), len(in))
	}
	place := kgo.StickyKeyPartitioner(nil).ForTopic("out")
	byKey := map[string]*kgo.Record{}
	for _, r := range in {
		byKey[string(r.Key)] = r
	}
	for _, r := range out {
		w := byKey[string(r.Key)]
		switch {
		case w == nil || !bytes.Equal(r.Value, w.Value) || !r.Timestamp.Equal(w.Timestamp) || !reflect.DeepEqual(r.Headers, w.Headers):
			t.Fatalf("out: %q %q %v %v; in: %+v", r.Key, r.Value, r.Timestamp, r.Headers, w)
		case int(r.Partition) != place.Partition(r, 5):
			t.Fatalf("%q in partition %d, Kafka's default partitioner gives %d", r.Key, r.Partition, place.Partition(r, 5))
		}
	}
}

// Records not where Kafka's default partitioner puts their key are all
// counted in Stats.Misplaced, and noted once for each partition, however
// many transactions they span.
func TestMisplacedRecordsAreNotedOncePerPartition(t *testing.T) {
	t.Parallel()
	recs := genInput(testseed.Rand(t), 2000, 2, 400, time.Minute)
	addr := setup(t, 2, recs)
	var mu sync.Mutex
	notes := map[string]int{}
	noter := WithLogf(func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		if part, _, ok := strings.Cut(line, " offset "); ok && strings.Contains(line, "default partitioner") {
			mu.Lock()
			notes[part]++
			mu.Unlock()
		}
	})
	p := newProcessor(t, addr, WithFetchBytes(1<<10), noter) // several transactions
	st := runUntilIdle(t, p)
	place := kgo.StickyKeyPartitioner(nil).ForTopic("in")
	var misplaced uint64
	for _, r := range recs {
		if place.Partition(&kgo.Record{Key: []byte(r.key)}, 2) != int(r.part) {
			misplaced++
		}
	}
	if st.Misplaced != misplaced || misplaced == 0 {
		t.Errorf("Stats.Misplaced = %d, want %d", st.Misplaced, misplaced)
	}
	if st.Transactions < 3 {
		t.Errorf("%d transactions: the test wants several", st.Transactions)
	}
	if want := map[string]int{"in/0": 1, "in/1": 1}; !reflect.DeepEqual(notes, want) {
		t.Errorf("notes by partition %v, want %v", notes, want)
	}
}

func TestKeyAndTimeForms(t *testing.T) {
	t.Parallel()
	// The same events as CSV ("r7,user-3,2026-03-01T00:49:00Z": the
	// record's id, the key, the time) in one topic, as JSON in another
	// ({"r": "r7", "u": {"id": "user-3"}, "at": <Unix ms>}).
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	rng := testseed.Rand(t)
	var recs []inRec
	var values []string
	for i := range 600 {
		id := fmt.Sprintf("user-%d", rng.IntN(150))
		ts := base.Add(time.Duration(i) * 7 * time.Minute)
		recs = append(recs, inRec{key: id, ts: ts, id: fmt.Sprintf("r%d", i)})
		values = append(values, fmt.Sprintf(`r%d,%s,%s`, i, id, ts.Format(time.RFC3339)),
			fmt.Sprintf(`{"r": "r%d", "u": {"id": "%s"}, "at": %d}`, i, id, ts.UnixMilli()))
	}
	addr := kafkatest.Start(t)
	kafkatest.CreateTopic(t, addr, "csv", 1)
	kafkatest.CreateTopic(t, addr, "json", 1)
	cl := kafkatest.Client(t, addr)
	var in []*kgo.Record
	for i, v := range values {
		// No record key, and a Kafka timestamp that is not the event's.
		in = append(in, &kgo.Record{Topic: []string{"csv", "json"}[i%2], Value: []byte(v), Timestamp: base})
	}
	kafkatest.Produce(t, cl, in...)
	fieldKey, err := KeyFields("2", ",", false)
	if err != nil {
		t.Fatal(err)
	}
	fieldTime, err := TimeFields("3", ",", false, "")
	if err != nil {
		t.Fatal(err)
	}
	jsonKey, err := KeyJSON(".u.id")
	if err != nil {
		t.Fatal(err)
	}
	jsonTime, err := TimeJSON("$.at", "unix-ms")
	if err != nil {
		t.Fatal(err)
	}
	funcKey := func(r *kgo.Record) ([]byte, error) { // the key, by hand
		return bytes.Split(r.Value, []byte(","))[1], nil
	}
	for i, c := range []struct {
		in    string
		forms []Option
	}{
		{"csv", []Option{WithKey(fieldKey), WithTime(fieldTime)}},
		{"json", []Option{WithKey(jsonKey), WithTime(jsonTime)}},
		{"csv", []Option{WithKey(funcKey), WithTime(fieldTime)}},
	} {
		t.Run(fmt.Sprintf("forms=%d", i), func(t *testing.T) {
			out := "out" + fmt.Sprint(i)
			kafkatest.CreateTopic(t, addr, out, 1)
			p, err := New(fmt.Sprint("g", i), []string{c.in}, out, append(quickOpts(t, addr), append(c.forms, WithWindow(3*time.Hour), WithCapacity(1000))...)...)
			if err != nil {
				t.Fatal(err)
			}
			runUntilIdle(t, p)
			var ids []string
			for _, r := range kafkatest.ReadCommitted(t, addr, out) {
				id, _, _ := strings.Cut(strings.TrimPrefix(string(r.Value), `{"r": "`), ",")
				ids = append(ids, strings.TrimSuffix(id, `"`))
			}
			checkIDs(t, &p.cfg, recs, ids)
		})
	}
}

// background is a Processor running in a goroutine of the test.
type background struct {
	t      testing.TB
	cancel context.CancelFunc
	done   chan struct{}
	err    error // Run's, once done is closed
}

// runInBackground runs p until the test ends, stop is called, or Run
// returns.
func runInBackground(t testing.TB, p *Processor) *background {
	ctx, cancel := context.WithCancel(context.Background())
	bg := &background{t: t, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(bg.done)
		bg.err = p.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-bg.done
	})
	return bg
}

// waitFor polls cond until it is true, as kafkatest.Eventually does, and
// fails the test at once with Run's error if Run returns first.
func (bg *background) waitFor(what string, cond func() bool) {
	bg.t.Helper()
	deadline := time.Now().Add(kafkatest.Wait)
	for !cond() {
		select {
		case <-bg.done:
			if cond() {
				return
			}
			bg.t.Fatalf("Run returned (%v) before %s", bg.err, what)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			bg.t.Fatalf("still waiting after %v for %s", kafkatest.Wait, what)
		}
	}
}

// stop ends Run's context and returns Run's error.
func (bg *background) stop() error {
	bg.cancel()
	select {
	case <-bg.done:
		return bg.err
	case <-time.After(kafkatest.Wait):
		bg.t.Fatalf("Run did not return within %v of its context's end", kafkatest.Wait)
		return nil
	}
}

// A Processor stopped and started again restores each partition from its
// snapshot and replays no more than the snapshot interval of records.
func TestRestartReplaysAtMostTheSnapshotInterval(t *testing.T) {
	t.Parallel()
	const every = 100
	recs := genInput(testseed.Rand(t), 2000, 2, 500, time.Minute)
	addr := setup(t, 2, recs[:1234])
	opts := []Option{WithWindow(time.Hour), WithCapacity(1000), WithSnapshotEvery(every, time.Hour)}
	first := newProcessor(t, addr, opts...)
	st := runUntilIdle(t, first)
	if st.Snapshots < 1234/every-2 {
		t.Fatalf("%d snapshots for 1234 records, one every %d", st.Snapshots, every)
	}
	produceInput(t, addr, "in", recs[1234:])
	second := newProcessor(t, addr, opts...)
	st = runUntilIdle(t, second)
	if st.Restores != 2 || st.Replayed > 2*every {
		t.Fatalf("restarted: %d restores replayed %d records, want 2 and at most %d", st.Restores, st.Replayed, 2*every)
	}
	checkOutput(t, &second.cfg, recs, kafkatest.ReadCommitted(t, addr, "out"))
}

// A restore that finds the committed offsets held by a transaction
// (UNSTABLE_OFFSET_COMMIT: another member's still open, or one just
// ended) asks again until they are stable, and restores the snapshot they
// name: it neither stops Run nor starts from an empty filter.
func TestRestoreWaitsOutUnstableOffsets(t *testing.T) {
	t.Parallel()
	const every = 100
	recs := genInput(testseed.Rand(t), 1500, 2, 400, time.Minute)
	c, addr := setupCluster(t, 2, recs[:1000])
	opts := []Option{WithWindow(time.Hour), WithCapacity(1000), WithSnapshotEvery(every, time.Hour)}
	runUntilIdle(t, newProcessor(t, addr, opts...))
	produceInput(t, addr, "in", recs[1000:])
	// The next offset fetches of the admin client (no member ID,
	// requiring stable offsets: the restores') are answered as if a
	// transaction held every offset of in.
	var unstable atomic.Int32
	c.ControlKey(int16(kmsg.OffsetFetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		r := req.(*kmsg.OffsetFetchRequest)
		admin := len(r.Groups) == 1 && r.Groups[0].MemberID == nil
		if !r.RequireStable || !admin || unstable.Add(1) > 6 {
			return nil, nil, false
		}
		c.KeepControl()
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		topic := func() kmsg.OffsetFetchResponseGroupTopic {
			t := kmsg.NewOffsetFetchResponseGroupTopic()
			t.Topic = "in"
			for part := range int32(2) {
				p := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				p.Partition, p.Offset, p.LeaderEpoch, p.ErrorCode = part, -1, -1, kerr.UnstableOffsetCommit.Code
				t.Partitions = append(t.Partitions, p)
			}
			return t
		}
		for _, rg := range r.Groups {
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = rg.Group
			t := topic()
			for _, rt := range rg.Topics { // in, the only topic asked for
				t.TopicID = rt.TopicID // from v10 on, topics are named by ID
			}
			g.Topics = append(g.Topics, t)
			resp.Groups = append(resp.Groups, g)
		}
		if len(r.Groups) == 0 { // before v8: one group
			t := topic()
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	second := newProcessor(t, addr, opts...)
	st := runUntilIdle(t, second)
	if n := unstable.Load(); n <= 6 {
		t.Fatalf("%d offset fetches of the admin client requiring stable offsets, want more than the 6 answered unstable", n)
	}
	if st.Restores != 2 || st.Replayed > 2*every {
		t.Fatalf("%d restores replayed %d records, want 2 from their snapshots (at most %d)", st.Restores, st.Replayed, 2*every)
	}
	checkOutput(t, &second.cfg, recs, kafkatest.ReadCommitted(t, addr, "out"))
}

// Snapshots larger than the state topic's largest message are cut into
// chunks under it; they are read back whole, after compaction too (the
// tombstones of a shorter snapshot's unused chunks included).
func TestSnapshotChunksFitTheStateTopic(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	c := kafkatest.StartCluster(t)
	addr := c.ListenAddrs()[0]
	// Compact applies retention too: the records' times are months old.
	kafkatest.CreateTopic(t, addr, "in", 1, "retention.ms", "-1")
	kafkatest.CreateTopic(t, addr, "out", 1, "retention.ms", "-1")
	kafkatest.CreateTopic(t, addr, "state", 1, "cleanup.policy", "compact", "max.message.bytes", "8192", "retention.ms", "-1")
	recs := genInput(testseed.Rand(t), 6000, 1, 4000, time.Minute)
	opts := []Option{WithWindow(time.Hour), WithCapacity(20000), WithSnapshotEvery(1000, time.Hour), WithStateTopic("state")}
	for i, part := range [][]inRec{recs[:2500], recs[2500:4000], recs[4000:]} {
		produceInput(t, addr, "in", part)
		p := newProcessor(t, addr, opts...)
		st := runUntilIdle(t, p)
		if i > 0 && st.Restores != 1 {
			t.Fatalf("run %d: %d restores", i, st.Restores)
		}
		for _, r := range kafkatest.ReadCommitted(t, addr, "state") {
			if len(r.Value) > 8192-100 {
				t.Fatalf("a chunk of %d bytes in a topic of 8,192-byte messages", len(r.Value))
			}
		}
		c.Compact()
		if i == 2 {
			checkOutput(t, &p.cfg, recs, kafkatest.ReadCommitted(t, addr, "out"))
		}
	}
}

// A transaction whose offsets' commit the broker refuses is aborted: the
// partitions go back to their committed state and the records are judged
// again, once.
func TestAbortedTransactionIsJudgedAgain(t *testing.T) {
	t.Parallel()
	recs := genInput(testseed.Rand(t), 2000, 2, 500, time.Minute)
	c, addr := setupCluster(t, 2, recs[:1000])
	p := newProcessor(t, addr, WithWindow(time.Hour), WithCapacity(1000), WithSnapshotEvery(300, time.Hour), WithExitWhenIdle(time.Hour))
	bg := runInBackground(t, p)
	bg.waitFor("the first records committed", func() bool { return p.Stats().In == 1000 })
	// Refuse the next commit of offsets: the session aborts.
	c.ControlKey(int16(kmsg.TxnOffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		r := req.(*kmsg.TxnOffsetCommitRequest)
		resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, rt := range r.Topics {
			t := kmsg.NewTxnOffsetCommitResponseTopic()
			t.Topic, t.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				p := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				p.Partition, p.ErrorCode = rp.Partition, kerr.IllegalGeneration.Code
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil, true
	})
	produceInput(t, addr, "in", recs[1000:])
	// At least: a record judged twice (in committed transactions) would
	// show in the output's check, not in a wait that never ends.
	bg.waitFor("all records committed", func() bool { return p.Stats().In >= 2000 })
	if err := bg.stop(); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.In != 2000 || st.Aborted == 0 || st.Restores < 4 {
		t.Fatalf("%d records judged, %d aborted transactions and %d restores, want 2000 and at least 1 and 4", st.In, st.Aborted, st.Restores)
	}
	checkOutput(t, &p.cfg, recs, kafkatest.ReadCommitted(t, addr, "out"))
}

// The output of one Processor, written in transactions (commit markers
// among its records), is the input of another, which still catches up
// and exits when idle: its committed offsets pass the markers.
func TestTransactionalInputIsCaughtUp(t *testing.T) {
	t.Parallel()
	recs := genInput(testseed.Rand(t), 1500, 2, 400, time.Minute)
	addr := setup(t, 2, recs)
	kafkatest.CreateTopic(t, addr, "out2", 2)
	// Without a window: the first output has each key once, and the
	// second keeps it all.
	runUntilIdle(t, newProcessor(t, addr))
	p, err := New("g2", []string{"out"}, "out2", quickOpts(t, addr)...)
	if err != nil {
		t.Fatal(err)
	}
	runUntilIdle(t, p)
	first, second := kafkatest.ReadCommitted(t, addr, "out"), kafkatest.ReadCommitted(t, addr, "out2")
	if len(second) != len(first) {
		t.Fatalf("deduplicated again: %d records, from %d", len(second), len(first))
	}
}

func TestUnreadableRecords(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Start(t)
	kafkatest.CreateTopic(t, addr, "in", 1)
	kafkatest.CreateTopic(t, addr, "out", 1)
	cl := kafkatest.Client(t, addr)
	kafkatest.Produce(t, cl, &kgo.Record{Topic: "in", Key: []byte("a"), Value: []byte("1")},
		&kgo.Record{Topic: "in", Value: []byte("no key")},
		&kgo.Record{Topic: "in", Key: []byte("a"), Value: []byte("2")})
	err := newProcessor(t, addr).Run(context.Background())
	if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), "in/0 offset 1: ") {
		t.Fatalf("Run = %v, want ErrUnreadable naming in/0 offset 1", err)
	}
	if out := kafkatest.ReadCommitted(t, addr, "out"); len(out) != 0 {
		t.Fatalf("%d records written by the failed transaction", len(out))
	}
	p := newProcessor(t, addr, WithPassUnreadable())
	if st := runUntilIdle(t, p); st.Unreadable != 1 || st.Kept != 2 || st.Dropped != 1 {
		t.Fatalf("stats %+v: want 1 unreadable passed, 2 written, 1 dropped", st)
	}
	var got []string
	for _, r := range kafkatest.ReadCommitted(t, addr, "out") {
		got = append(got, string(r.Value))
	}
	if strings.Join(got, " ") != "1 no key" {
		t.Fatalf("output %q", got)
	}
}

// Errors of the cluster come at once, with what to do, never as a wait.
func TestClusterErrors(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Start(t)
	kafkatest.CreateTopic(t, addr, "in", 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, c := range []struct {
		name     string
		addr     string
		from, to string
		want     error
	}{
		{"missing=output", addr, "in", "nowhere", ErrNoTopic},
		{"missing=input", addr, "nothing", "in", ErrNoTopic},
		{"broker=closed", closed, "in", "out", ErrUnreachable},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := New("g", []string{c.from}, c.to, WithClient(kgo.SeedBrokers(c.addr)), WithTimeout(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Run(context.Background()); !errors.Is(err, c.want) {
				t.Fatalf("Run = %v, want %v", err, c.want)
			}
		})
	}
}

// A user the cluster does not let into the group gets the group's
// authorization error from Run.
func TestUnauthorizedGroup(t *testing.T) {
	t.Parallel()
	lit := kmsg.ACLResourcePatternTypeLiteral
	allow := func(res kmsg.ACLResourceType, name string, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: res, Name: name, Pattern: lit, Operation: op, Allow: true}
	}
	addr := kafkatest.Start(t, kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("PLAIN", "admin", "admin"),
		kfake.User("PLAIN", "app", "secret",
			allow(kmsg.ACLResourceTypeTopic, "*", kmsg.ACLOperationAll),
			allow(kmsg.ACLResourceTypeTransactionalId, "*", kmsg.ACLOperationAll),
			allow(kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLOperationAll),
			allow(kmsg.ACLResourceTypeGroup, "allowed", kmsg.ACLOperationAll)))
	admin := []kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "admin", Pass: "admin"}.AsMechanism())}
	adm := kadm.NewClient(kafkatest.Client(t, addr, admin[1:]...))
	for _, topic := range []string{"in", "out"} {
		if _, err := adm.CreateTopic(context.Background(), 1, -1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	kafkatest.Produce(t, kafkatest.Client(t, addr, admin[1:]...), &kgo.Record{Topic: "in", Key: []byte("k"), Value: []byte("v")})
	app := kgo.SASL(plain.Auth{User: "app", Pass: "secret"}.AsMechanism())
	p, err := New("denied", []string{"in"}, "out", WithClient(kgo.SeedBrokers(addr), app), WithStateTopic("state"), WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Wait)
	defer cancel()
	if err := p.Run(ctx); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("Run = %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
	p, err = New("allowed", []string{"in"}, "out", WithClient(kgo.SeedBrokers(addr), app), WithStateTopic("state"), WithExitWhenIdle(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if st := runUntilIdle(t, p); st.Kept != 1 {
		t.Fatalf("the allowed group kept %d records, want 1", st.Kept)
	}
}

// A snapshot the committed offsets point at that is gone (its topic
// deleted and made again) stops Run with ErrState rather than starting
// the partition over without saying so.
func TestMissingSnapshotIsErrState(t *testing.T) {
	t.Parallel()
	recs, addr, opts := judgedWithSnapshots(t)
	adm := kadm.NewClient(kafkatest.Client(t, addr))
	if _, err := adm.DeleteTopics(context.Background(), "state"); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, "the state topic deleted", func() bool {
		_, err := adm.CreateTopic(context.Background(), 1, -1, map[string]*string{"cleanup.policy": ptr("compact")}, "state")
		return err == nil
	})
	produceInput(t, addr, "in", recs[400:])
	err := newProcessor(t, addr, opts...).Run(context.Background())
	if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "in/0: reading its snapshot") {
		t.Fatalf("Run = %v, want ErrState naming the partition", err)
	}
}

// A partition whose committed offset is gone (expired after the group
// stayed empty for offsets.retention.minutes, or deleted) while the
// state topic keeps its snapshot stops Run with ErrState rather than
// judging and writing again, with an empty filter, every record still in
// the input; a group that never committed starts afresh even beside
// another group's snapshots in the same state topic; and the remedy the
// error gives (the group's offset set where it should go on) starts the
// partition there.
func TestSnapshotWithoutCommittedOffsetIsErrState(t *testing.T) {
	t.Parallel()
	recs, addr, opts := judgedWithSnapshots(t)
	ctx := context.Background()
	adm := kadm.NewClient(kafkatest.Client(t, addr))
	if _, err := adm.DeleteOffsets(ctx, "g", kadm.TopicsSet{"in": {0: {}}}); err != nil {
		t.Fatal(err)
	}
	produceInput(t, addr, "in", recs[400:])
	err := newProcessor(t, addr, opts...).Run(ctx)
	if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "in/0: the group has no committed offset of it, but state holds a snapshot of it") {
		t.Fatalf("Run = %v, want ErrState naming the partition and the state topic", err)
	}
	if out := kafkatest.ReadCommitted(t, addr, "out"); len(out) > len(recs[:400]) {
		t.Fatalf("%d output records for the 400 input records judged before the offsets were deleted", len(out))
	}

	// Another group, with the same state topic, has no snapshot there.
	other, err := New("h", []string{"in"}, "out2", append(append(quickOpts(t, addr), opts...), WithExitWhenIdle(300*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	kafkatest.CreateTopic(t, addr, "out2", 1)
	if st := runUntilIdle(t, other); st.In != uint64(len(recs)) {
		t.Fatalf("the other group judged %d records, want all %d", st.In, len(recs))
	}

	// The remedy: the group's offset set where it should go on.
	var at kadm.Offsets
	at.AddOffset("in", 0, 400, -1)
	if _, err := adm.CommitOffsets(ctx, "g", at); err != nil {
		t.Fatal(err)
	}
	if st := runUntilIdle(t, newProcessor(t, addr, opts...)); st.In != uint64(len(recs)-400) {
		t.Fatalf("after the offsets were set at 400, %d records judged, want %d", st.In, len(recs)-400)
	}
}

// judgedWithSnapshots starts a broker whose group g has judged the first
// 400 of 600 records of in (returned), with snapshots in the topic state
// (the options of its processors).
func judgedWithSnapshots(t *testing.T) (recs []inRec, addr string, opts []Option) {
	recs = genInput(testseed.Rand(t), 600, 1, 300, time.Minute)
	addr = setup(t, 1, recs[:400])
	opts = []Option{WithWindow(time.Hour), WithCapacity(1000), WithSnapshotEvery(100, time.Hour), WithStateTopic("state")}
	runUntilIdle(t, newProcessor(t, addr, opts...))
	return recs, addr, opts
}

func ptr(s string) *string { return &s }

func TestNewRefusesBadParameters(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		opts []Option
	}{
		{"window=0", []Option{WithWindow(0)}},
		{"capacity=0", []Option{WithCapacity(0)}},
		{"fpr=0", []Option{WithFalsePositiveRate(0)}},
		{"fpr=1", []Option{WithFalsePositiveRate(1)}},
		{"key=nil", []Option{WithKey(nil)}},
		{"time=nil", []Option{WithTime(nil)}},
		{"state=empty", []Option{WithStateTopic("")}},
		{"state=output", []Option{WithStateTopic("out")}},
		{"instance=empty", []Option{WithInstanceID("")}},
		{"snapshot=0", []Option{WithSnapshotEvery(0, time.Minute)}},
		{"snapshot=0s", []Option{WithSnapshotEvery(10, 0)}},
		{"idle=0", []Option{WithExitWhenIdle(0)}},
		{"timeout=0", []Option{WithTimeout(0)}},
		{"fetch=1023", []Option{WithFetchBytes(1023)}},
		{"fetch=64MiB+1", []Option{WithFetchBytes(64<<20 + 1)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := New("g", []string{"in"}, "out", c.opts...); !errors.Is(err, ErrInvalidParameter) {
				t.Fatalf("New = %v, want ErrInvalidParameter", err)
			}
		})
	}
	for _, bounds := range []int{1 << 10, 64 << 20} {
		if _, err := New("g", []string{"in"}, "out", WithFetchBytes(bounds)); err != nil {
			t.Fatalf("WithFetchBytes(%d): %v", bounds, err)
		}
	}
}

// The fetch bytes are shared evenly among the partitions a member owns,
// at least 64 KiB each: a member that owns half the partitions asks
// twice as much of each as one that owns them all.
func TestFetchBytesAreSharedAmongOwnedPartitions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		fetch   int32
		owned   int
		want    int32
		because string
	}{
		{1 << 20, 4, 256 << 10, "an even share"},
		{1 << 20, 0, 1 << 20, "nothing owned yet: all of it"},
		{1 << 20, 64, 64 << 10, "the floor"},
		{32 << 10, 4, 32 << 10, "never more than the fetch bytes"},
		{64 << 20, 1<<31 - 1, 64 << 10, "any number of partitions"},
	} {
		if got := partitionFetchBytes(c.fetch, c.owned); got != c.want {
			t.Errorf("partitionFetchBytes(%d, %d) = %d, want %d (%s)", c.fetch, c.owned, got, c.want, c.because)
		}
	}
	recs := genInput(testseed.Rand(t), 4000, 4, 1000, time.Minute)
	addr := setup(t, 4, recs[:1000])
	const fetch = 512 << 10
	share := func(p *Processor) int32 { return p.sess.Client().OptValue(kgo.FetchMaxPartitionBytes).(int32) }
	opts := []Option{WithFetchBytes(fetch), WithExitWhenIdle(time.Hour)}
	a, b := newProcessor(t, addr, opts...), newProcessor(t, addr, opts...)
	bgA := runInBackground(t, a)
	bgA.waitFor("a's first records", func() bool { return a.Stats().In > 0 })
	bgB := runInBackground(t, b) // the group gives b half the partitions
	// Before the records come: a, owning all, would judge them all.
	bgB.waitFor("b's partitions", func() bool { return b.owns() > 0 })
	produceInput(t, addr, "in", recs[1000:3000])
	bgB.waitFor("b's first records", func() bool { return b.Stats().In > 0 })
	if err := bgB.stop(); err != nil { // a takes them all back
		t.Fatal(err)
	}
	produceInput(t, addr, "in", recs[3000:])
	bgA.waitFor("every record", func() bool { return a.Stats().In+b.Stats().In >= uint64(len(recs)) })
	if err := bgA.stop(); err != nil {
		t.Fatal(err)
	}
	if got := share(b); got != fetch/2 {
		t.Errorf("b, owning 2 of 4 partitions, asked %d bytes of each, want %d", got, fetch/2)
	}
	if got := share(a); got != fetch/4 {
		t.Errorf("a, owning all 4 partitions, asked %d bytes of each, want %d", got, fetch/4)
	}
	if got := a.sess.Client().OptValue(kgo.FetchMaxBytes).(int32); got != fetch {
		t.Errorf("a asked %d bytes a fetch, want %d", got, fetch)
	}
	checkOutput(t, &a.cfg, recs, kafkatest.ReadCommitted(t, addr, "out"))
}

// owns returns the number of partitions the group gives p now.
func (p *Processor) owns() int {
	p.assignment.Lock()
	defer p.assignment.Unlock()
	return len(p.assignment.owned)
}

// A consumer whose position is behind the group's committed offset (its
// client's idea of the committed offsets is older than the group's: a
// transaction the client took for aborted, after an EndTxn whose answer
// was an error, had committed) would judge and write again the records
// from its position to the committed offset, which a committed
// transaction wrote already. The Processor stops with an error instead,
// and a run started afterwards goes on from the group's offsets: the
// output holds each record once. The test gives the consumer's client
// an older offset than the group's when it joins.
func TestConsumerBehindTheCommittedOffsetStops(t *testing.T) {
	t.Parallel()
	recs := genInput(testseed.Rand(t), 400, 1, 400, time.Minute)
	c, addr := setupCluster(t, 1, recs[:300])
	runUntilIdle(t, newProcessor(t, addr))
	produceInput(t, addr, "in", recs[300:])

	// The first offsets fetch is the joining consumer's: answer it with
	// offset 100 where the group has 300.
	c.ControlKey(int16(kmsg.OffsetFetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		r := req.(*kmsg.OffsetFetchRequest)
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		for _, rg := range r.Groups {
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = rg.Group
			for _, rt := range rg.Topics {
				t := kmsg.NewOffsetFetchResponseGroupTopic()
				t.Topic, t.TopicID = rt.Topic, rt.TopicID
				for _, part := range rt.Partitions {
					p := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					p.Partition, p.Offset, p.LeaderEpoch = part, 100, -1
					t.Partitions = append(t.Partitions, p)
				}
				g.Topics = append(g.Topics, t)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil, true
	})
	p := newProcessor(t, addr)
	if err := p.Run(context.Background()); !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "in/0") {
		t.Errorf("Run = %v, want ErrState naming in/0, whose position is behind the group's committed offset", err)
	}
	runUntilIdle(t, newProcessor(t, addr))
	checkOutput(t, &p.cfg, recs, kafkatest.ReadCommitted(t, addr, "out"))
}

// A transaction whose end the client gave up waiting for (its context
// ran out) may have committed all the same: the broker got the EndTxn and
// applied it after. The client then goes back to the offsets it last saw
// committed, behind the group's; the records between were written in a
// committed transaction and must not be judged, and written, again. The
// Processor stops with ErrState then (a run started afterwards reads the
// group's offsets), and the output holds each record once.
func TestEndTheClientGaveUpOnWritesEachRecordOnce(t *testing.T) {
	testlong.SkipQuickRun(t) // waits out a transaction's end: the timeout, 1 s
	t.Parallel()
	recs := genInput(testseed.Rand(t), 400, 1, 400, time.Minute)
	c, addr := setupCluster(t, 1, recs)

	// Hold the first commit's EndTxn until the Processor has given up on
	// it, then let the broker apply it.
	gaveUp := make(chan struct{})
	var gaveUpOnce, heldOnce sync.Once
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		held := false
		heldOnce.Do(func() { held = req.(*kmsg.EndTxnRequest).Commit })
		if held {
			c.SleepControl(func() { <-gaveUp })
		}
		c.DropControl()
		return nil, nil, false
	})
	logf := func(format string, args ...any) {
		t.Logf(format, args...)
		if strings.Contains(fmt.Sprintf(format, args...), errEndFailed.Error()) {
			gaveUpOnce.Do(func() { close(gaveUp) })
		}
	}
	p := newProcessor(t, addr, WithTimeout(time.Second), WithLogf(logf))
	err := p.Run(context.Background())
	gaveUpOnce.Do(func() { close(gaveUp) }) // wakes the EndTxn if Run stopped first
	// Whether the broker applied the held commit before the Processor's
	// abort fenced it depends on the order the two reach it: either way
	// no record is written twice.
	if err != nil && !errors.Is(err, ErrState) {
		t.Fatalf("Run: %v; want nil (the commit was fenced) or ErrState (it was applied)", err)
	}
	t.Logf("Run: %v", err)
	runUntilIdle(t, newProcessor(t, addr))
	checkOutput(t, &p.cfg, recs, kafkatest.ReadCommitted(t, addr, "out"))
}

// A transaction whose EndTxn goes unanswered (the client gives up at the
// timeout; the broker never got it) is aborted, and its records judged
// again, once: franz-go keeps such a transaction open until it is ended
// with an abort, and the Processor must do so before it begins the next,
// rather than stop at "already in a transaction".
func TestUnansweredEndIsAbortedAndJudgedAgain(t *testing.T) {
	testlong.SkipQuickRun(t) // waits out a transaction's end: the timeout, 1 s
	t.Parallel()
	recs := genInput(testseed.Rand(t), 400, 1, 400, time.Minute)
	c, addr := setupCluster(t, 1, recs)

	// The first commit's EndTxn is held until the Processor has given up
	// on it, then dropped with its connection, unapplied.
	gaveUp := make(chan struct{})
	var gaveUpOnce, heldOnce sync.Once
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		held := false
		heldOnce.Do(func() { held = req.(*kmsg.EndTxnRequest).Commit })
		if !held {
			c.DropControl()
			return nil, nil, false
		}
		c.SleepControl(func() { <-gaveUp })
		return nil, errors.New("dropped"), true
	})
	logf := func(format string, args ...any) {
		t.Logf(format, args...)
		if strings.Contains(fmt.Sprintf(format, args...), errEndFailed.Error()) {
			gaveUpOnce.Do(func() { close(gaveUp) })
		}
	}
	p := newProcessor(t, addr, WithTimeout(time.Second), WithLogf(logf))
	err := p.Run(context.Background())
	gaveUpOnce.Do(func() { close(gaveUp) }) // wakes the EndTxn if Run stopped first
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st := p.Stats(); st.In != uint64(len(recs)) || st.Aborted != 1 {
		t.Fatalf("%d records judged in committed transactions, %d aborted; want %d and 1", st.In, st.Aborted, len(recs))
	}
	checkOutput(t, &p.cfg, recs, kafkatest.ReadCommitted(t, addr, "out"))
}

// A restore waits for the transaction that holds the group's first commit
// of a partition (its EndTxn sent, not yet applied) and takes the offset
// it commits: a broker answers a fetch of all the group's offsets with
// only the partitions already committed, so that partition would show as
// never committed, and the Processor would judge and write again the
// records the transaction is committing (after an EndTxn this client gave
// up on, the records it wrote itself).
func TestRestoreWaitsForTheTransactionHoldingAFirstCommit(t *testing.T) {
	t.Parallel()
	recs := genInput(testseed.Rand(t), 50, 1, 50, time.Minute)
	c, addr := setupCluster(t, 1, recs)
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Wait)
	defer cancel()

	// Another client of the group reads the input and commits its
	// offsets in a transaction whose EndTxn the broker holds.
	reached, release := make(chan struct{}), make(chan struct{})
	var released sync.Once
	defer released.Do(func() { close(release) })
	c.ControlKey(int16(kmsg.EndTxn), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.DropControl()
		close(reached)
		c.SleepControl(func() { <-release })
		return nil, nil, false
	})
	sess, err := kgo.NewGroupTransactSession(append(testClientOpts(), kgo.SeedBrokers(addr),
		kgo.ConsumerGroup("g"), kgo.ConsumeTopics("in"), kgo.TransactionalID("another"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets())...)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for read := 0; read < len(recs); {
		fs := sess.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		read += fs.NumRecords()
	}
	if err := sess.Begin(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() {
		_, err := sess.End(ctx, kgo.TryCommit)
		ended <- err
	}()
	select {
	case <-reached:
	case err := <-ended:
		t.Fatalf("the transaction ended (%v) before its EndTxn reached the broker", err)
	}

	// The restore is asked while the EndTxn is held; the broker lets it
	// go once the restore has been told the offset is unstable.
	p := newProcessorWithAdmin(t, addr)
	p.cfg.testHookAskAgain = func(_ string, err error) {
		if errors.Is(err, kerr.UnstableOffsetCommit) {
			released.Do(func() { close(release) })
		}
	}
	o, err := p.committedOffset(ctx, topicPartition{"in", 0})
	released.Do(func() { close(release) })
	if err != nil {
		t.Fatal(err)
	}
	if err := <-ended; err != nil {
		t.Fatalf("the other client's transaction: %v", err)
	}
	if o.At != int64(len(recs)) {
		t.Fatalf("the restore found the committed offset %d, want %d (the one the held transaction committed)", o.At, len(recs))
	}
}

// A group no member has joined or committed for has no committed offsets,
// whether or not the broker knows its name.
func TestCommittedOffsetOfAnUnknownGroupIsNone(t *testing.T) {
	t.Parallel()
	addr := setup(t, 1, nil)
	p := newProcessorWithAdmin(t, addr)
	o, err := p.committedOffset(context.Background(), topicPartition{"in", 0})
	if err != nil || o.At >= 0 {
		t.Fatalf("committedOffset = %d, %v; want none (At < 0) and no error", o.At, err)
	}
}

// newProcessorWithAdmin returns a Processor whose admin client is set, as
// Run sets it, for the tests of its requests outside Run.
func newProcessorWithAdmin(t *testing.T, addr string) *Processor {
	p := newProcessor(t, addr)
	admin, err := kgo.NewClient(p.cfg.client...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	p.adminClient, p.admin = admin, kadm.NewClient(admin)
	return p
}
