package kafkadedup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// restore makes the state of tp whose first record to judge is at offset
// first (the consumer's position, at or after the committed offset): the
// snapshot the committed offset's pointer names (or an empty filter),
// updated by a replay of the input from the pointer's base to first,
// which writes nothing.
func (p *Processor) restore(ctx context.Context, tp topicPartition, first int64) error {
	start := time.Now()
	o, err := p.committedOffset(ctx, tp)
	if err != nil {
		return err
	}
	st := &partition{topic: tp.topic, part: tp.part, lastSnapshot: time.Now(), lso: -1}
	var ptr pointer
	var ours bool
	committed := int64(-1)
	if o.At >= 0 {
		committed = o.At
		if ptr, ours, err = parsePointer(o.Metadata); err != nil {
			return fmt.Errorf("%s: %w", tp, err)
		}
	}
	if committed < 0 {
		// No committed offset: a partition this group never judged, or
		// one whose offsets are gone (expired after the group stayed
		// empty for offsets.retention.minutes, or deleted). Only the
		// second leaves a snapshot in the state topic; starting afresh
		// there would judge and write again every record still in the
		// input.
		found, err := p.snapshotWithoutOffset(ctx, tp)
		if err != nil {
			return fmt.Errorf("%s: looking for a snapshot of it in %s: %w", tp, p.cfg.stateTopic, err)
		}
		if found {
			return fmt.Errorf("%w: %s: the group has no committed offset of it, but %s holds a snapshot of it (the group's offsets expired, after offsets.retention.minutes without a member, or were deleted): starting afresh would write again every record still in the input; set the group's offset of the partition to where it should go on (kafka-consumer-groups --reset-offsets), and run again: it starts there with an empty filter", ErrState, tp, p.cfg.stateTopic)
		}
	}
	if committed >= 0 && first < committed {
		// The client's idea of the committed offsets is older than the
		// group's: a transaction it took for aborted had committed (an
		// EndTxn answered with an error after the broker applied it), or
		// the offsets moved under it. The records from first to committed
		// were judged and written by a committed transaction; judging them
		// again would write them twice. A run started afterwards reads the
		// group's offsets.
		return fmt.Errorf("%w: %s: the consumer's position %d is behind the group's committed offset %d (a transaction this client took for aborted had committed, or the offsets moved under it): the records between were written by a committed transaction and are not judged again; run again to go on from the committed offset", ErrState, tp, first, committed)
	}
	if committed >= 0 && first > committed {
		// The consumer's position is past the committed offset: the
		// records between were not judged in a committed transaction, and
		// the replay below judges them without writing them.
		p.cfg.logf("%s: the group's position %d is past its committed offset %d: the records between are replayed, not judged", tp, first, committed)
	}
	switch {
	case !ours:
		if committed > 0 {
			p.cfg.logf("%s: the committed offset %d carries no state of this package: the partition starts with an empty filter at offset %d", tp, committed, first)
		}
		ptr = pointer{base: first}
	case ptr.base > first:
		p.cfg.logf("%s: the state covers the input up to offset %d, past the group's position %d (its offsets were reset): the partition starts with an empty filter at offset %d", tp, ptr.base, first, first)
		ptr = pointer{base: first}
	}
	if ptr.chunks > 0 {
		st.seen, err = p.readSnapshot(ctx, tp, ptr)
		if err != nil {
			return fmt.Errorf("%s: reading its snapshot at %s/%d offset %d: %w", tp, p.cfg.stateTopic, ptr.statePartition, ptr.offset, err)
		}
	} else if st.seen, err = newSeen(&p.cfg); err != nil {
		return err
	}
	st.ptr, st.next = ptr, ptr.base
	replayStart := time.Now()
	replayed, err := p.replay(ctx, st, first)
	if err != nil {
		return fmt.Errorf("%s: replaying offsets %d to %d: %w", tp, ptr.base, first, err)
	}
	p.parts[tp] = st
	b, k, _ := st.seen.size()
	end := time.Now()
	p.mu.Lock()
	p.stats.Restores++
	p.stats.Replayed += replayed
	p.stats.RestoreTime += end.Sub(start)
	p.stats.ReplayTime += end.Sub(replayStart)
	p.stats.Partitions++ // until the next commit counts them again
	p.stats.FilterBytes += b
	p.stats.Keys += k
	p.mu.Unlock()
	return nil
}

// snapshotWithoutOffset reports whether the state topic holds a snapshot
// of tp made by this group: the first chunk of one, not deleted since, in
// the state partition of tp. It reads that partition from its start to
// its last stable offset.
func (p *Processor) snapshotWithoutOffset(ctx context.Context, tp topicPartition) (bool, error) {
	part := p.statePartition(tp)
	cl, err := p.readerClient(p.cfg.stateTopic, part, 0)
	if err != nil {
		return false, err
	}
	defer cl.Close()
	// The reader's client asks, as readSnapshot's does: the admin
	// client's metadata may predate a state topic created moments ago.
	var start, end int64
	if err := p.askAgain(ctx, "listing the state topic's offsets", nil, func(ctx context.Context) error {
		p.testHookListing("the state topic's offsets")
		adm := kadm.NewClient(cl)
		starts, err := adm.ListStartOffsets(ctx, p.cfg.stateTopic)
		if err != nil {
			return err
		}
		ends, err := adm.ListCommittedOffsets(ctx, p.cfg.stateTopic)
		if err != nil {
			return err
		}
		s, sok := starts.Lookup(p.cfg.stateTopic, part)
		e, eok := ends.Lookup(p.cfg.stateTopic, part)
		if !sok || !eok || errors.Is(s.Err, kerr.UnknownTopicOrPartition) || errors.Is(e.Err, kerr.UnknownTopicOrPartition) {
			start, end = 0, 0 // no such partition: no snapshot in it
			return nil
		}
		start, end = s.Offset, e.Offset
		return errors.Join(s.Err, e.Err)
	}); err != nil {
		return false, err
	}
	if start >= end {
		return false, nil
	}
	want := chunkKey(p.group, tp.topic, tp.part, 0)
	live := false
	for next := start; next < end; {
		recs, err := p.poll(ctx, cl, fmt.Sprintf("%s/%d from offset %d", p.cfg.stateTopic, part, next))
		if err != nil {
			return false, err
		}
		for _, r := range recs {
			if r.Offset >= end {
				break
			}
			next = r.Offset + 1
			if !r.Attrs.IsControl() && bytes.Equal(r.Key, want) {
				live = r.Value != nil
			}
		}
		if len(recs) > 0 && recs[len(recs)-1].Offset >= end-1 {
			break
		}
	}
	return live, nil
}

// committedOffset returns the group's committed offset of tp (At < 0:
// none) and its metadata, asking again while a transaction holds the
// offset: one still open (another member's, whose partitions moved here,
// or this client's own whose EndTxn it gave up on) or just ended (its
// markers not written yet) makes the broker answer UNSTABLE_OFFSET_COMMIT
// until it is done, and the offset before it is not the state to restore.
func (p *Processor) committedOffset(ctx context.Context, tp topicPartition) (kadm.OffsetResponse, error) {
	var o kadm.OffsetResponse
	unstable := func(err error) bool { return errors.Is(err, kerr.UnstableOffsetCommit) }
	err := p.askAgain(ctx, fmt.Sprintf("fetching the committed offset of %s", tp), unstable, func(ctx context.Context) error {
		offsets, err := p.fetchCommitted(ctx, map[string][]int32{tp.topic: {tp.part}})
		if err != nil {
			return err
		}
		var ok bool
		if o, ok = offsets.Lookup(tp.topic, tp.part); !ok {
			return fmt.Errorf("no answer for %s", tp)
		}
		return o.Err
	})
	return o, err
}

// fetchCommitted fetches the group's committed offsets of the partitions
// named (At < 0: none), each with its own error; the error returned is
// the request's or the group's. The request names every partition, and
// requires stable offsets: a broker answers a fetch of all the group's
// offsets (kadm's FetchOffsets) with the partitions that have a committed
// offset, so a partition whose first commit a transaction still holds
// would show as having none rather than as UNSTABLE_OFFSET_COMMIT, and a
// restore would begin again from the start of what that transaction
// wrote.
func (p *Processor) fetchCommitted(ctx context.Context, parts map[string][]int32) (kadm.OffsetResponses, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.RequireStable = true
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = p.group
	for topic, ps := range parts {
		t := kmsg.NewOffsetFetchRequestGroupTopic()
		t.Topic, t.Partitions = topic, ps
		g.Topics = append(g.Topics, t)
	}
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(ctx, p.adminClient)
	if err != nil {
		return nil, err
	}
	if len(resp.Groups) != 1 {
		return nil, fmt.Errorf("the broker answered for %d groups, not 1", len(resp.Groups))
	}
	rg := resp.Groups[0]
	got := make(kadm.OffsetResponses)
	if err := kerr.ErrorForCode(rg.ErrorCode); errors.Is(err, kerr.GroupIDNotFound) {
		// A group that never committed (some brokers forget an empty
		// one): no offsets.
		for topic, ps := range parts {
			for _, part := range ps {
				got.Add(kadm.OffsetResponse{Offset: kadm.Offset{Topic: topic, Partition: part, At: -1, LeaderEpoch: -1}})
			}
		}
		return got, nil
	} else if err != nil {
		return nil, err
	}
	for _, t := range rg.Topics {
		for _, rp := range t.Partitions {
			o := kadm.OffsetResponse{Offset: kadm.Offset{Topic: t.Topic, Partition: rp.Partition, At: rp.Offset, LeaderEpoch: rp.LeaderEpoch}, Err: kerr.ErrorForCode(rp.ErrorCode)}
			if rp.Metadata != nil {
				o.Metadata = *rp.Metadata
			}
			got.Add(o)
		}
	}
	return got, nil
}

// askAgain calls ask until it returns nil, within the timeout, asking
// again after an error of a broker that is away for a moment (restarting,
// a coordinator or leader moving: brokerAway) or one that again accepts;
// any other error is returned at once. The pauses between grow from
// 10 ms to half a second.
func (p *Processor) askAgain(ctx context.Context, what string, again func(error) bool, ask func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, p.cfg.timeout)
	defer cancel()
	for pause := 10 * time.Millisecond; ; pause = min(2*pause, 500*time.Millisecond) {
		err := ask(cctx)
		switch {
		case err == nil:
			return nil
		case cctx.Err() == nil && (brokerAway(err) || again != nil && again(err)):
		default:
			return p.clusterErr(what, err)
		}
		if p.cfg.testHookAskAgain != nil {
			p.cfg.testHookAskAgain(what, err)
		}
		select {
		case <-cctx.Done():
			return p.clusterErr(fmt.Sprintf("%s (%v)", what, err), cctx.Err())
		case <-time.After(pause):
		}
	}
}

// brokerAway reports whether err is one of a broker that went away or is
// not back yet: the connection closed, refused or reset, or an error
// Kafka calls retriable.
func brokerAway(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || kerr.IsRetriable(err)
}

// testHookListing runs the test hook, if any, before a restore lists
// offsets.
func (p *Processor) testHookListing(what string) {
	if p.cfg.testHookListing != nil {
		p.cfg.testHookListing(what)
	}
}

// readerClient returns a client that reads one partition from offset at,
// committed records only.
func (p *Processor) readerClient(topic string, part int32, at int64) (*kgo.Client, error) {
	opts := append(append([]kgo.Opt{}, p.cfg.client...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {part: kgo.NewOffset().At(at)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(p.cfg.fetchBytes),
		kgo.FetchMaxPartitionBytes(p.cfg.fetchBytes),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidParameter, err)
	}
	return cl, nil
}

// poll returns the next records of a reader, within the timeout.
func (p *Processor) poll(ctx context.Context, cl *kgo.Client, what string) ([]*kgo.Record, error) {
	pctx, cancel := context.WithTimeout(ctx, p.cfg.timeout)
	defer cancel()
	fs := cl.PollFetches(pctx)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, fe := range fs.Errors() {
		if errors.Is(fe.Err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w: no record of %s within %v", ErrState, what, p.cfg.timeout)
		}
		return nil, fe.Err
	}
	return fs.Records(), nil
}

// replay judges st's input records from st.next up to until, writing
// nothing, and returns how many it judged. Unreadable records are
// skipped: the live run stopped at them, or let them through unjudged.
func (p *Processor) replay(ctx context.Context, st *partition, until int64) (uint64, error) {
	if st.next >= until {
		return 0, nil
	}
	var start kadm.ListedOffset
	var listed bool
	if err := p.askAgain(ctx, "listing the start offsets", nil, func(ctx context.Context) error {
		p.testHookListing("the start offsets")
		starts, err := p.admin.ListStartOffsets(ctx, st.topic)
		if err != nil {
			return err
		}
		if start, listed = starts.Lookup(st.topic, st.part); listed {
			return start.Err
		}
		return nil // unknown: the replay reads from st.next, and finds out
	}); err != nil {
		return 0, err
	}
	if listed && start.Offset > st.next {
		p.cfg.logf("%s: the records from offset %d to %d are gone (retention or deletion) before they could be replayed: duplicates of their keys may be let through", topicPartition{st.topic, st.part}, st.next, start.Offset)
	}
	cl, err := p.readerClient(st.topic, st.part, st.next)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var replayed uint64
	b := &p.batch
	b.reset()
	for st.next < until {
		recs, err := p.poll(ctx, cl, fmt.Sprintf("%s/%d from offset %d", st.topic, st.part, st.next))
		if err != nil {
			return replayed, err
		}
		for _, r := range recs {
			if r.Offset >= until {
				break
			}
			if r.Attrs.IsControl() {
				b.next = r.Offset + 1
				continue
			}
			if err := p.add(ctx, st, r, nil); err != nil {
				return replayed, err
			}
			replayed++
		}
		if err := p.flush(ctx, st, nil); err != nil {
			return replayed, err
		}
		if len(recs) > 0 && recs[len(recs)-1].Offset >= until-1 {
			break
		}
	}
	st.next = until
	return replayed, nil
}

// readSnapshot reads the filter of the snapshot ptr names.
func (p *Processor) readSnapshot(ctx context.Context, tp topicPartition, ptr pointer) (*seen, error) {
	cl, err := p.readerClient(p.cfg.stateTopic, ptr.statePartition, ptr.offset)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	// A state partition that ends before the snapshot's chunks (the topic
	// deleted and made again, truncated) is an error at once, not a wait.
	// The reader's client asks: the admin client's metadata, cached, may
	// be older than a state topic created moments ago.
	var end kadm.ListedOffset
	var found bool
	if err := p.askAgain(ctx, "listing the state topic's end offsets", nil, func(ctx context.Context) error {
		p.testHookListing("the state topic's end offsets")
		ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, p.cfg.stateTopic)
		if err != nil {
			return err
		}
		end, found = ends.Lookup(p.cfg.stateTopic, ptr.statePartition)
		if !found || errors.Is(end.Err, kerr.UnknownTopicOrPartition) {
			return nil // no such partition: an error of the state, below
		}
		return end.Err
	}); err != nil {
		return nil, err
	}
	switch {
	case !found || errors.Is(end.Err, kerr.UnknownTopicOrPartition):
		return nil, fmt.Errorf("%w: the state topic has no partition %d", ErrState, ptr.statePartition)
	case end.Offset < ptr.offset+int64(ptr.chunks):
		return nil, fmt.Errorf("%w: the state topic's partition ends before the snapshot's %d chunks", ErrState, ptr.chunks)
	}
	r := &chunkReader{p: p, ctx: ctx, cl: cl, tp: tp, ptr: ptr}
	s, err := readSeen(&p.cfg, r)
	switch {
	case err != nil && r.err != nil:
		return nil, r.err
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrState, err)
	case r.read != ptr.size || r.index != ptr.chunks || len(r.chunk) != 0:
		return nil, fmt.Errorf("%w: the snapshot holds %d bytes in %d chunks, not the %d in %d its pointer says", ErrState, r.read, r.index, ptr.size, ptr.chunks)
	}
	return s, nil
}

// chunkReader reads the payloads of a snapshot's chunks in order, from the
// records of its state partition: the chunks are written one after another,
// possibly among the chunks of other partitions' snapshots, which it
// skips.
type chunkReader struct {
	p     *Processor
	ctx   context.Context
	cl    *kgo.Client
	tp    topicPartition
	ptr   pointer
	recs  []*kgo.Record
	chunk []byte // the unread rest of the current chunk
	index int32  // chunks read
	read  int64  // bytes read
	err   error  // why the last chunk could not be read
}

func (r *chunkReader) Read(b []byte) (int, error) {
	for len(r.chunk) == 0 {
		if r.index == r.ptr.chunks {
			return 0, io.EOF
		}
		if r.err = r.next(); r.err != nil {
			return 0, r.err
		}
	}
	n := copy(b, r.chunk)
	r.chunk = r.chunk[n:]
	r.read += int64(n)
	return n, nil
}

// next finds the next chunk of the snapshot.
func (r *chunkReader) next() error {
	want := chunkKey(r.p.group, r.tp.topic, r.tp.part, r.index)
	for {
		for len(r.recs) > 0 {
			rec := r.recs[0]
			r.recs = r.recs[1:]
			if rec.Attrs.IsControl() || !bytes.Equal(rec.Key, want) {
				continue
			}
			h, payload, err := parseChunk(rec.Value)
			if err != nil {
				return err
			}
			if h.id != r.ptr.id {
				if r.index == 0 && rec.Offset == r.ptr.offset {
					return fmt.Errorf("%w: the record at the snapshot's offset belongs to another snapshot", ErrState)
				}
				continue
			}
			if h.index != r.index || h.chunks != r.ptr.chunks || h.base != r.ptr.base {
				return fmt.Errorf("%w: chunk %d of the snapshot says it is chunk %d of %d from offset %d", ErrState, r.index, h.index, h.chunks, h.base)
			}
			r.chunk = payload
			r.index++
			return nil
		}
		recs, err := r.p.poll(r.ctx, r.cl, fmt.Sprintf("the snapshot's chunk %d", r.index))
		if err != nil {
			return err
		}
		r.recs = recs
	}
}

// snapshot writes st's filter to the state topic, in the open
// transaction, and points st's state at it: the filter's encoding cut into
// chunks, each sent as it is full (one chunk's memory at a time), and a
// tombstone for each chunk of the previous snapshot past the new one's
// last, so that compaction removes them.
func (p *Processor) snapshot(ctx context.Context, st *partition, n *txnCounts) error {
	tp := topicPartition{st.topic, st.part}
	size := st.seen.encodedSize()
	chunks := (size + int64(p.chunkPayload) - 1) / int64(p.chunkPayload)
	if chunks > 1<<31-1 {
		return fmt.Errorf("kafkadedup: %s: a snapshot of %d bytes needs more than 2^31 chunks", tp, size)
	}
	w := &chunkWriter{p: p, ctx: ctx, tp: tp, part: p.statePartition(tp),
		header: chunkHeader{id: randomID(), base: st.next, chunks: int32(chunks)}}
	if _, err := st.seen.writeTo(w); err != nil {
		return fmt.Errorf("kafkadedup: %s: writing a snapshot: %w", tp, err)
	}
	if err := w.flush(); err != nil {
		return fmt.Errorf("kafkadedup: %s: writing a snapshot: %w", tp, err)
	}
	for i := int32(chunks); i < st.ptr.chunks; i++ {
		tomb := &kgo.Record{Topic: p.cfg.stateTopic, Partition: st.ptr.statePartition, Key: chunkKey(p.group, tp.topic, tp.part, i)}
		p.sess.Produce(ctx, tomb, p.promise)
	}
	st.ptr = pointer{base: st.next, statePartition: w.part, offset: w.first, chunks: int32(chunks), size: size, id: w.header.id}
	st.sinceSnapshot = 0
	st.lastSnapshot = time.Now()
	n.snapshots++
	n.snapshotBytes += uint64(size)
	return nil
}

// chunkWriter cuts a filter's encoding into chunk records and sends each
// to the state partition when it is full, waiting for it to be written
// (so that its buffer can be reused and the offset of the first is known).
type chunkWriter struct {
	p      *Processor
	ctx    context.Context
	tp     topicPartition
	part   int32
	header chunkHeader
	buf    []byte
	first  int64 // the offset of chunk 0
}

func (w *chunkWriter) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		if w.buf == nil {
			w.buf = make([]byte, 0, chunkHeaderSize+w.p.chunkPayload)
		}
		if len(w.buf) == 0 {
			w.buf = w.header.append(w.buf)
		}
		n := copy(w.buf[len(w.buf):cap(w.buf)], b)
		w.buf = w.buf[:len(w.buf)+n]
		b = b[n:]
		written += n
		if len(w.buf) == cap(w.buf) {
			if err := w.flush(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// flush sends the chunk in the buffer, if any.
func (w *chunkWriter) flush() error {
	if len(w.buf) <= chunkHeaderSize {
		return nil
	}
	rec := &kgo.Record{Topic: w.p.cfg.stateTopic, Partition: w.part,
		Key: chunkKey(w.p.group, w.tp.topic, w.tp.part, w.header.index), Value: w.buf}
	ctx, cancel := context.WithTimeout(w.ctx, w.p.cfg.timeout)
	defer cancel()
	if err := w.p.sess.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return err
	}
	if w.header.index == 0 {
		w.first = rec.Offset
	}
	w.header.index++
	w.buf = w.buf[:0]
	return nil
}
