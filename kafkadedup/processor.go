package kafkadedup

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dedupkit/cuckoo"
)

// Processor reads input topics with a consumer group and writes to an
// output topic every record whose dedup key was not seen within the window
// before it in its partition, exactly once (see the package
// documentation). Make one with New and call Run once; Stats may be called
// from any goroutine meanwhile.
type Processor struct {
	group string
	from  []string
	to    string
	cfg   config
	txnID string

	// Set by Run before the loop starts.
	adminClient     *kgo.Client
	admin           *kadm.Client
	sess            *kgo.GroupTransactSession
	statePartitions int32
	chunkPayload    int
	stateMaxMessage int            // the state topic's max.message.bytes; 0: unknown
	inputCounts     map[string]int // partitions of each input topic, at the start
	keyPlacement    kgo.TopicPartitioner

	// parts is the state of each partition whose records the loop has
	// judged since it was assigned; only the loop touches it.
	parts map[topicPartition]*partition

	// assignment is what the group gave and took away; the callbacks
	// that keep it run on the client's goroutines.
	assignment struct {
		sync.Mutex
		owned   map[topicPartition]struct{} // the partitions owned now
		revoked []topicPartition            // taken away since the loop last looked
	}

	// batch is the records being judged together; only the loop touches
	// it.
	batch batch

	// misplacedNoted holds the partitions whose first misplaced record
	// (see Stats.Misplaced) has been noted; only the loop touches it.
	misplacedNoted map[topicPartition]bool

	// produceErr is the first error of a record produced in the open
	// transaction; promise, the callback of every produced record, sets
	// it.
	produceErr atomic.Pointer[error]
	promise    func(*kgo.Record, error)

	mu    sync.Mutex // guards stats
	stats Stats

	started atomic.Bool
}

type topicPartition struct {
	topic string
	part  int32
}

func (tp topicPartition) String() string { return fmt.Sprintf("%s/%d", tp.topic, tp.part) }

// Stats are a Processor's counts since Run started, over committed
// transactions only: the records of an aborted transaction are judged
// again, and counted once.
type Stats struct {
	In         uint64 // records judged (control records are not counted)
	Kept       uint64 // records written to the output (Unreadable ones included)
	Dropped    uint64 // records dropped as seen within the window: In = Kept + Dropped
	Unreadable uint64 // records written unjudged (WithPassUnreadable)
	// Misplaced counts records judged by their record key that are not in
	// the partition Kafka's default partitioner gives that key: their
	// duplicates may be in other partitions, where the rule does not look.
	// The first of each partition is named in a note (WithLogf), once a
	// run.
	Misplaced uint64

	Transactions  uint64        // committed
	Aborted       uint64        // aborted, by a rebalance or a failure
	Restores      uint64        // partitions whose state was restored
	Replayed      uint64        // input records replayed by restores
	RestoreTime   time.Duration // spent restoring: reading snapshots and replaying
	ReplayTime    time.Duration // of which replaying
	Snapshots     uint64        // snapshots committed
	SnapshotBytes uint64        // their bytes

	Partitions  int    // input partitions whose state is held now
	Keys        uint64 // keys in their filters
	FilterBytes uint64 // the filters' memory
	// Lag is the records behind the last stable offsets, over the
	// partitions held, as of the last committed transaction; 0 until a
	// fetch has told them.
	Lag                int64
	ExpectedFalseDrops float64 // expected number of kept-worthy records dropped by a false positive
}

// New returns a Processor that reads the topics from in the consumer group
// group and writes the records it keeps to the topic to. It checks the
// options only; Run reaches the cluster.
func New(group string, from []string, to string, opts ...Option) (*Processor, error) {
	switch {
	case group == "":
		return nil, fmt.Errorf("%w: no consumer group", ErrInvalidParameter)
	case len(from) == 0:
		return nil, fmt.Errorf("%w: no input topic", ErrInvalidParameter)
	case to == "":
		return nil, fmt.Errorf("%w: no output topic", ErrInvalidParameter)
	case slices.Contains(from, to):
		return nil, fmt.Errorf("%w: the output topic %s is an input too: the processor would read what it writes", ErrInvalidParameter, to)
	}
	c := config{
		fpr:              DefaultFalsePositiveRate,
		snapshotEvery:    DefaultSnapshotEvery,
		snapshotInterval: DefaultSnapshotInterval,
		fetchBytes:       DefaultFetchBytes,
		timeout:          DefaultTimeout,
		stateTopic:       group + "-cuckoo-state",
		logf:             func(string, ...any) {},
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	if c.window > 0 && c.capacity == 0 {
		c.capacity = DefaultWindowCapacity
	}
	if c.window > 0 {
		c.epoch = (int64(c.window) + cuckoo.WindowEpochs - 1) / cuckoo.WindowEpochs
	}
	if c.stateTopic == to || slices.Contains(from, c.stateTopic) {
		return nil, fmt.Errorf("%w: the state topic %s is an input or the output", ErrInvalidParameter, c.stateTopic)
	}
	if c.logf == nil {
		c.logf = func(string, ...any) {}
	}
	// A filter of these parameters must be possible.
	if _, err := newSeen(&c); err != nil {
		return nil, err
	}
	txnID := "cuckoo-kafkadedup-" + group + "-"
	if c.instance != "" {
		txnID += c.instance
	} else {
		var b [8]byte
		rand.Read(b[:])
		txnID += hex.EncodeToString(b[:])
	}
	p := &Processor{group: group, from: slices.Clone(from), to: to, cfg: c, txnID: txnID,
		parts: map[topicPartition]*partition{}, misplacedNoted: map[topicPartition]bool{}}
	p.assignment.owned = map[topicPartition]struct{}{}
	p.promise = func(_ *kgo.Record, err error) {
		if err != nil {
			p.produceErr.CompareAndSwap(nil, &err)
		}
	}
	return p, nil
}

// Stats returns the Processor's counts so far.
func (p *Processor) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Run processes records until ctx is done, with no transaction open then
// (one in progress is finished first), and returns nil; with
// WithExitWhenIdle it also returns nil once caught up and idle. It
// returns an error, having aborted the open transaction, when the cluster
// cannot be reached or refuses (a missing topic, a denied group), when a
// record is unreadable, when a filter is full, and when the Processor is
// fenced. Run may be called once.
func (p *Processor) Run(ctx context.Context) error {
	if !p.started.CompareAndSwap(false, true) {
		return errors.New("kafkadedup: Run called twice")
	}
	adminClient, err := kgo.NewClient(p.cfg.client...)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidParameter, err)
	}
	defer adminClient.Close()
	p.adminClient, p.admin = adminClient, kadm.NewClient(adminClient)
	if err := p.checkTopics(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before the first transaction
		}
		return err
	}
	p.sess, err = kgo.NewGroupTransactSession(p.sessionOpts()...)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidParameter, err)
	}
	defer p.sess.Close()
	p.setChunkPayload()
	return p.loop(ctx)
}

// sessionOpts are the options of the group transact session: the user's
// between defaults they may override and what exactly-once needs.
func (p *Processor) sessionOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.TransactionTimeout(DefaultTransactionTimeout),
		kgo.SessionTimeout(DefaultSessionTimeout),
		kgo.FetchMaxWait(DefaultFetchMaxWait),
	}
	opts = append(opts, p.cfg.client...)
	// Until the group says which partitions are this member's, each
	// partition's share of the fetch bytes is as if it owned them all.
	inputs := 0
	for _, n := range p.inputCounts {
		inputs += n
	}
	opts = append(opts,
		kgo.ConsumerGroup(p.group),
		kgo.ConsumeTopics(p.from...),
		kgo.TransactionalID(p.txnID),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.KeepControlRecords(),
		kgo.FetchMaxBytes(p.cfg.fetchBytes),
		kgo.FetchMaxPartitionBytes(partitionFetchBytes(p.cfg.fetchBytes, inputs)),
		kgo.RecordPartitioner(routePartitioner{state: p.cfg.stateTopic, def: kgo.UniformBytesPartitioner(64<<10, true, true, nil)}),
		kgo.OnPartitionsAssigned(p.onAssigned),
		kgo.OnPartitionsRevoked(p.onRevoked),
		kgo.OnPartitionsLost(p.onRevoked),
	)
	if p.cfg.instance != "" {
		opts = append(opts, kgo.InstanceID(p.cfg.instance))
	}
	return opts
}

// routePartitioner places the snapshot chunks in the state partition the
// Processor chose, and every other record as Kafka's default partitioner
// does: by the murmur2 hash of its key (a record without a key goes to a
// partition chosen for batching).
type routePartitioner struct {
	state string
	def   kgo.Partitioner
}

func (r routePartitioner) ForTopic(t string) kgo.TopicPartitioner {
	if t == r.state {
		return kgo.ManualPartitioner().ForTopic(t)
	}
	return r.def.ForTopic(t)
}

// partitionFetchBytes is one partition's share of the fetch bytes when
// the Processor owns owned partitions: the shares of all the partitions,
// whichever brokers lead them, add up to the fetch bytes, unless the
// floor of a share (minPartitionFetchBytes) is above an even split.
func partitionFetchBytes(fetch int32, owned int) int32 {
	share := fetch / int32(min(max(owned, 1), 1<<20))
	return min(fetch, max(share, minPartitionFetchBytes))
}

// onAssigned is the callback of assigned partitions.
func (p *Processor) onAssigned(_ context.Context, cl *kgo.Client, assigned map[string][]int32) {
	p.reassigned(cl, assigned, true)
}

// onRevoked is the callback of revoked and lost partitions.
func (p *Processor) onRevoked(_ context.Context, cl *kgo.Client, revoked map[string][]int32) {
	p.reassigned(cl, revoked, false)
}

// reassigned notes the partitions the group gave (gained) or took away:
// the loop drops the state of those taken away before it judges another
// record, and each partition owned has a share of the fetch bytes that
// follows their number.
func (p *Processor) reassigned(cl *kgo.Client, changed map[string][]int32, gained bool) {
	a := &p.assignment
	a.Lock()
	defer a.Unlock()
	for t, ps := range changed {
		for _, part := range ps {
			tp := topicPartition{t, part}
			if gained {
				a.owned[tp] = struct{}{}
				continue
			}
			a.revoked = append(a.revoked, tp)
			delete(a.owned, tp)
		}
	}
	if len(a.owned) > 0 {
		cl.UpdateFetchMaxBytes(p.cfg.fetchBytes, partitionFetchBytes(p.cfg.fetchBytes, len(a.owned)))
	}
}

// dropRevoked forgets the state of the partitions revoked since the last
// call: if one comes back, another member may have moved it on.
func (p *Processor) dropRevoked() {
	p.assignment.Lock()
	revoked := p.assignment.revoked
	p.assignment.revoked = nil
	p.assignment.Unlock()
	for _, tp := range revoked {
		delete(p.parts, tp)
	}
}

// loop polls and runs one transaction per poll until ctx is done.
func (p *Processor) loop(ctx context.Context) error {
	failures := 0
	for {
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if p.cfg.idle > 0 {
			pollCtx, cancel = context.WithTimeout(ctx, p.cfg.idle)
		}
		fetches := p.sess.PollFetches(pollCtx)
		idle := pollCtx.Err() != nil
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		p.dropRevoked()
		if err := p.fetchErr(fetches); err != nil {
			return err
		}
		if fetches.NumRecords() == 0 {
			if idle {
				done, err := p.caughtUp(ctx)
				if err != nil || done {
					return err
				}
			}
			continue
		}
		err := p.transact(ctx, fetches)
		switch {
		case err == nil:
			failures = 0
		case ctx.Err() != nil && errors.Is(err, ctx.Err()):
			return nil // stopped while restoring, before the transaction began
		case errors.Is(err, errEndFailed) && failures < maxEndFailures:
			// The transaction is aborted: begin again from the committed
			// offsets, with the state restored.
			failures++
			p.cfg.logf("%v; its records are aborted, and the partitions it read will be restored", err)
		default:
			return err
		}
	}
}

// maxEndFailures is how many transactions in a row may fail to end before
// Run gives up.
const maxEndFailures = 3

// errEndFailed is wrapped by the error of a transaction that could not
// end (committed or aborted).
var errEndFailed = errors.New("a transaction did not end")

// fetchErr returns the first error of a poll that stops the Processor: a
// denied group or topic, a recreated topic, another member with the same
// instance ID. The errors of a member that lost its place in the group
// (kicked out after a pause, a coordinator that moved), which the client
// recovers from by joining again, are notes.
func (p *Processor) fetchErr(fetches kgo.Fetches) error {
	for _, fe := range fetches.Errors() {
		var session *kgo.ErrGroupSession
		switch {
		case errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, kgo.ErrClientClosed):
		case errors.As(fe.Err, &session) && !fatalGroupErr(session.Err):
			p.cfg.logf("consumer group %s: %v; joining again", p.group, session.Err)
		case fe.Topic == "":
			return fmt.Errorf("kafkadedup: consumer group %s: %w", p.group, fe.Err)
		default:
			return fmt.Errorf("kafkadedup: reading %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
		}
	}
	return nil
}

// fatalGroupErr reports whether an error of the group's membership is one
// that joining again does not cure.
func fatalGroupErr(err error) bool {
	for _, fatal := range []error{
		kerr.GroupAuthorizationFailed, kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed,
		kerr.TransactionalIDAuthorizationFailed, kerr.SaslAuthenticationFailed,
		kerr.FencedInstanceID, kerr.InvalidGroupID, kerr.GroupMaxSizeReached,
		kerr.InconsistentGroupProtocol, kerr.UnsupportedVersion, kerr.InvalidSessionTimeout,
	} {
		if errors.Is(err, fatal) {
			return true
		}
	}
	return false
}

// txnCounts are the counts of the open transaction, added to the Stats
// when it commits.
type txnCounts struct {
	in, kept, dropped, unreadable, misplaced uint64
	snapshots, snapshotBytes                 uint64
	falseDrops                               float64
}

// transact runs one transaction over the records of one poll: restores
// the partitions it has no state for, judges every record, writes those it
// keeps, snapshots the filters that are due, and commits all of it with
// the offsets.
func (p *Processor) transact(ctx context.Context, fetches kgo.Fetches) error {
	// Begin before the restores: after a transaction whose end went
	// unanswered, beginning the next one first fences this client's
	// transactional ID (franz-go initialises its producer ID again), which
	// aborts the old transaction if the broker still holds it open. Until
	// then that transaction holds the committed offsets of the partitions
	// it read, and a restore would wait for it in vain.
	if err := p.sess.Begin(); err != nil {
		return fmt.Errorf("kafkadedup: beginning a transaction: %w", err)
	}
	var restoreErr error
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		tp := topicPartition{fp.Topic, fp.Partition}
		if restoreErr != nil || len(fp.Records) == 0 || p.parts[tp] != nil {
			return
		}
		restoreErr = p.restore(ctx, tp, fp.Records[0].Offset)
	})
	if restoreErr != nil {
		// Nothing was written in the transaction: ending it sends nothing.
		ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.timeout)
		defer cancel()
		if _, err := p.sess.End(ectx, kgo.TryAbort); err != nil {
			return errors.Join(restoreErr, fmt.Errorf("kafkadedup: ending the transaction: %w", err))
		}
		return restoreErr
	}
	// Inside the transaction, ctx ending does not stop the work: the
	// transaction is finished (each wait bounded by the timeout), then Run
	// returns.
	ctx = context.WithoutCancel(ctx)
	p.produceErr.Store(nil)
	var n txnCounts
	var touched []*partition
	err := func() error {
		var err error
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			if err != nil || len(fp.Records) == 0 {
				return
			}
			st := p.parts[topicPartition{fp.Topic, fp.Partition}]
			touched = append(touched, st)
			if fp.LastStableOffset >= 0 {
				st.lso = fp.LastStableOffset
			}
			err = p.judgeAll(ctx, st, fp.Records, &n)
		})
		if err != nil {
			return err
		}
		now := time.Now()
		for _, st := range touched {
			if st.sinceSnapshot > 0 && now.Sub(st.lastSnapshot) >= p.cfg.snapshotInterval {
				if err := p.snapshot(ctx, st, &n); err != nil {
					return err
				}
			}
		}
		if p.cfg.testHookInTxn != nil {
			p.cfg.testHookInTxn()
		}
		return nil
	}()
	if err == nil {
		fctx, cancel := context.WithTimeout(ctx, p.cfg.timeout)
		if ferr := p.sess.Client().Flush(fctx); ferr != nil {
			err = fmt.Errorf("kafkadedup: writing the transaction's records: %w", ferr)
		} else if perr := p.produceErr.Load(); perr != nil {
			err = fmt.Errorf("kafkadedup: writing a record: %w", *perr)
		}
		cancel()
	}
	// End within the timeout, whatever ctx does: a transaction left open
	// would hold back every read_committed reader of the output until the
	// cluster aborts it.
	ectx, cancel := context.WithTimeout(ctx, p.cfg.timeout)
	defer cancel()
	if err != nil {
		p.parts = map[topicPartition]*partition{}
		if _, aerr := p.sess.End(ectx, kgo.TryAbort); aerr != nil {
			return errors.Join(err, fmt.Errorf("kafkadedup: aborting the transaction: %w", aerr))
		}
		return err
	}
	committed, err := p.sess.End(kgo.PreTxnCommitFnContext(ectx, p.setPointers), kgo.TryCommit)
	if err != nil || !committed {
		// The session is back at the committed offsets: the filters of
		// the partitions are ahead of them. Drop every state; each is
		// restored when its records come again.
		p.parts = map[topicPartition]*partition{}
		p.mu.Lock()
		p.stats.Aborted++
		p.mu.Unlock()
		switch {
		case err == nil:
			p.cfg.logf("a transaction was aborted (the group rebalanced, or its offsets' commit was refused): its %d records will be judged again", n.in)
			return nil
		case errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.TransactionalIDAuthorizationFailed):
			return fmt.Errorf("kafkadedup: fenced: the transaction timed out, or another instance took the transactional ID %s (its records are aborted): %w", p.txnID, err)
		}
		// The end's outcome may be unknown (its EndTxn unanswered within
		// the timeout): franz-go keeps such a transaction open until it
		// is ended with an abort, and refuses to begin another before.
		// The abort fences what the broker still holds of it, at the
		// latest when the next transaction begins (before its restores).
		// An end the broker did apply first shows at the next restore as
		// a committed offset past the consumer's position: ErrState.
		actx, acancel := context.WithTimeout(ctx, p.cfg.timeout)
		defer acancel()
		if _, aerr := p.sess.End(actx, kgo.TryAbort); aerr != nil {
			return fmt.Errorf("kafkadedup: a transaction did not end (%v), nor could it be aborted: %w", err, aerr)
		}
		return fmt.Errorf("kafkadedup: %w: %w", errEndFailed, err)
	}
	p.committed(touched, &n)
	return nil
}

// setPointers writes each partition's state pointer into the metadata of
// the offsets the transaction commits.
func (p *Processor) setPointers(req *kmsg.TxnOffsetCommitRequest) error {
	for i := range req.Topics {
		t := &req.Topics[i]
		for j := range t.Partitions {
			pr := &t.Partitions[j]
			if st := p.parts[topicPartition{t.Topic, pr.Partition}]; st != nil {
				meta := st.ptr.String()
				pr.Metadata = &meta
			}
		}
	}
	return nil
}

// committed adds a committed transaction's counts to the Stats.
func (p *Processor) committed(touched []*partition, n *txnCounts) {
	var keys, bytes uint64
	var lag int64
	for _, st := range p.parts {
		b, k, _ := st.seen.size()
		keys, bytes = keys+k, bytes+b
		if st.lso > st.next {
			lag += st.lso - st.next
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := &p.stats
	s.In += n.in
	s.Kept += n.kept
	s.Dropped += n.dropped
	s.Unreadable += n.unreadable
	s.Misplaced += n.misplaced
	s.Snapshots += n.snapshots
	s.SnapshotBytes += n.snapshotBytes
	s.ExpectedFalseDrops += n.falseDrops
	s.Transactions++
	s.Partitions, s.Keys, s.FilterBytes, s.Lag = len(p.parts), keys, bytes, lag
}

// caughtUp reports whether the group's committed offsets of every
// partition of the input topics have reached the partition's last stable
// offset: the work of every member is done, this one's included (a member
// that owns nothing for the moment, in the middle of a rebalance, is not
// done).
func (p *Processor) caughtUp(ctx context.Context) (bool, error) {
	if _, gen := p.sess.Client().GroupMetadata(); gen < 0 {
		return false, nil // not in the group yet
	}
	// Each question is asked again while the broker is away (restarting,
	// a coordinator moving), within the timeout, as a restore's are.
	var ends, starts kadm.ListedOffsets
	var committed kadm.OffsetResponses
	unstable := false
	err := p.askAgain(ctx, "listing the offsets", nil, func(ctx context.Context) error {
		var err error
		if ends, err = p.admin.ListCommittedOffsets(ctx, p.from...); err != nil {
			return fmt.Errorf("the end offsets: %w", err)
		}
		if starts, err = p.admin.ListStartOffsets(ctx, p.from...); err != nil {
			return fmt.Errorf("the start offsets: %w", err)
		}
		parts := map[string][]int32{}
		ends.Each(func(end kadm.ListedOffset) { parts[end.Topic] = append(parts[end.Topic], end.Partition) })
		if committed, err = p.fetchCommitted(ctx, parts); err == nil {
			err = committed.Error()
		}
		if unstable = errors.Is(err, kerr.UnstableOffsetCommit); unstable {
			return nil // a transaction holds them: not caught up yet
		}
		if err != nil {
			return fmt.Errorf("the committed offsets: %w", err)
		}
		return nil
	})
	if err != nil || unstable {
		return false, err
	}
	done := true
	ends.Each(func(end kadm.ListedOffset) {
		if end.Err != nil {
			done = false
			return
		}
		at := int64(-1)
		if c, ok := committed.Lookup(end.Topic, end.Partition); ok && c.Err == nil {
			at = c.At
		}
		if s, ok := starts.Lookup(end.Topic, end.Partition); at < 0 && ok && s.Err == nil {
			at = s.Offset
		}
		if at < end.Offset {
			done = false
		}
	})
	return done, nil
}

// clusterErr wraps an error of a request to the cluster.
func (p *Processor) clusterErr(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("kafkadedup: %s: no answer within %v: %w", what, p.cfg.timeout, err)
	}
	return fmt.Errorf("kafkadedup: %s: %w", what, err)
}

// randomID returns a random snapshot id.
func randomID() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}
