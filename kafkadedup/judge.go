package kafkadedup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The records of a partition are judged in batches: a filter's batch call
// hashes and locates a group of keys and fetches their buckets from memory
// together, where a call per record waits for each bucket in turn. A batch
// call judges its keys in order, each seeing the keys before it, as calls
// one key at a time do; what it cannot do is move the time between keys
// (a Window's batch call reads its clock once). So the records of a batch
// share one epoch of the window (a cuckoo.Window's unit of time, window/14,
// counted from the Unix epoch), taking each record's time as the latest
// the partition has shown, since time never goes back within a partition.
// That is enough: a Window's write at time t moves the Window to t's epoch
// if it is later than its own and then depends on that epoch alone, so
// writes at any times of one epoch leave the Window as writes at its
// latest time do. The first record of a batch is the one whose time
// reached the batch's epoch (or the partition's first), and every later
// one is in that epoch: calls one at a time move the Window to the epoch
// at the first and never again, as the batch call does at its start.

// maxBatch is the most records judged together.
const maxBatch = 1024

// batch is records of one partition waiting to be judged together, in
// offset order. Only the loop touches it.
type batch struct {
	recs     []*kgo.Record // the records, control records left out
	unjudged []bool        // per record: written (replaying: passed) without a judgement
	keys     [][]byte      // the keys of the records to judge, in order
	arena    []byte        // the keys' copies, when a KeyFunc gives them
	ends     []int         // the end of each copied key in arena
	verdicts []bool        // per key: kept
	keep     []bool        // per record: written to the output

	// With a window: the latest time of the batch's records, its epoch,
	// and whether that epoch is unknown (no other record may join).
	time    time.Time
	epoch   int64
	unknown bool

	next int64 // the offset after the last record added, control records included
}

// reset empties the batch for the next partition.
func (b *batch) reset() {
	clear(b.recs) // let the records go
	clear(b.keys)
	b.recs, b.unjudged, b.keys, b.arena, b.ends = b.recs[:0], b.unjudged[:0], b.keys[:0], b.arena[:0], b.ends[:0]
	b.next = 0
}

// epochOf returns the epoch of time t for a window whose epochs last gran
// ns, as a cuckoo.Window counts them (⌊t/gran⌋, t in Unix ns), and whether
// it is known here: a Window holds times past ±2^62 ns (about the years
// 1824 and 2116) at those limits, and the times of more than 2^32 s from
// the Unix epoch are left to it, one record a batch.
func epochOf(t time.Time, gran int64) (epoch int64, known bool) {
	if s := t.Unix(); s <= -1<<32 || s >= 1<<32 {
		return 0, false
	}
	ns := t.UnixNano()
	epoch = ns / gran
	if ns%gran != 0 && ns < 0 {
		epoch--
	}
	return epoch, true
}

// judgeAll judges a partition's records of the transaction, writing those
// it keeps and snapshotting the filter whenever it has judged
// snapshotEvery records since the last snapshot.
func (p *Processor) judgeAll(ctx context.Context, st *partition, recs []*kgo.Record, n *txnCounts) error {
	b := &p.batch
	b.reset()
	for _, r := range recs {
		if r.Attrs.IsControl() {
			b.next = r.Offset + 1
			continue
		}
		if st.sinceSnapshot+int64(len(b.recs)) >= p.cfg.snapshotEvery {
			if err := p.flush(ctx, st, n); err != nil {
				return err
			}
			if err := p.snapshot(ctx, st, n); err != nil {
				return err
			}
		}
		if err := p.add(ctx, st, r, n); err != nil {
			return err
		}
	}
	return p.flush(ctx, st, n)
}

// add puts record r of st in the batch, judging the batch first if r
// cannot join it (another epoch) and after if it is full. n counts the
// open transaction's records; nil when replaying, which skips unreadable
// records as the live run did (it stopped at them, or wrote them
// unjudged).
func (p *Processor) add(ctx context.Context, st *partition, r *kgo.Record, n *txnCounts) error {
	b := &p.batch
	key, t, err := p.read(st, r, n)
	unjudged := false
	switch {
	case errors.Is(err, ErrUnreadable) && (n == nil || p.cfg.passUnreadable):
		unjudged = true
	case err != nil:
		return fmt.Errorf("%s offset %d: %w", topicPartition{st.topic, st.part}, r.Offset, err)
	case p.cfg.window > 0:
		// Time never goes back within a partition.
		if t.Before(st.latest) {
			t = st.latest
		}
		st.latest = t
		epoch, known := epochOf(t, p.cfg.epoch)
		if len(b.keys) > 0 && (!known || b.unknown || epoch != b.epoch) {
			if err := p.flush(ctx, st, n); err != nil {
				return err
			}
		}
		b.time, b.epoch, b.unknown = t, epoch, !known
	}
	b.recs = append(b.recs, r)
	b.unjudged = append(b.unjudged, unjudged)
	if !unjudged {
		if p.cfg.key != nil {
			// A KeyFunc's key lasts until its next call.
			b.arena = append(b.arena, key...)
			b.ends = append(b.ends, len(b.arena))
			key = nil
		}
		b.keys = append(b.keys, key)
	}
	b.next = r.Offset + 1
	if len(b.recs) == maxBatch {
		return p.flush(ctx, st, n)
	}
	return nil
}

// flush judges the batch and empties it: st's filter records every key,
// st moves past the batch's records, and, unless n is nil (replaying),
// the records kept are written and counted in n.
func (p *Processor) flush(ctx context.Context, st *partition, n *txnCounts) error {
	b := &p.batch
	defer b.reset()
	if len(b.ends) > 0 {
		start := 0
		for i, end := range b.ends {
			b.keys[i] = b.arena[start:end:end]
			start = end
		}
	}
	b.verdicts = grow(b.verdicts, len(b.keys))
	if len(b.keys) > 0 {
		if judged, err := st.seen.judgeBatch(b.keys, b.time, b.verdicts); err != nil {
			return fmt.Errorf("%s offset %d: the partition's filter: %w", topicPartition{st.topic, st.part}, b.judgedRecord(judged).Offset, err)
		}
	}
	st.next = max(st.next, b.next)
	st.sinceSnapshot += int64(len(b.recs))
	b.keep = grow(b.keep, len(b.recs))
	var kept, judgedKept uint64
	k := 0
	for i := range b.recs {
		keep := true // a record written unjudged
		if !b.unjudged[i] {
			keep = b.verdicts[k]
			k++
			if keep {
				judgedKept++
			}
		}
		if keep {
			kept++
		}
		b.keep[i] = keep
	}
	if p.cfg.testHookJudged != nil {
		p.cfg.testHookJudged(b.recs, b.keep)
	}
	if n == nil {
		return nil
	}
	n.in += uint64(len(b.recs))
	n.kept += kept
	n.dropped += uint64(len(b.recs)) - kept
	n.unreadable += uint64(len(b.recs) - len(b.keys))
	_, _, rate := st.seen.size()
	n.falseDrops += float64(judgedKept) * rate
	// One allocation for the batch's output records.
	out := make([]kgo.Record, kept)
	for i, r := range b.recs {
		if !b.keep[i] {
			continue
		}
		o := &out[0]
		out = out[1:]
		o.Topic, o.Key, o.Value, o.Headers, o.Timestamp = p.to, r.Key, r.Value, r.Headers, r.Timestamp
		p.sess.Produce(ctx, o, p.promise)
	}
	return nil
}

// judgedRecord returns the record of the batch's i-th key.
func (b *batch) judgedRecord(i int) *kgo.Record {
	for j, r := range b.recs {
		if b.unjudged[j] {
			continue
		}
		if i == 0 {
			return r
		}
		i--
	}
	return nil
}

// grow returns s with length n, reusing its memory when it can.
func grow(s []bool, n int) []bool {
	if cap(s) < n {
		return make([]bool, n, max(n, maxBatch))
	}
	return s[:n]
}

// read returns a record's dedup key and, with a window, its time. An
// error wraps ErrUnreadable. n counts a record judged by its record key
// that is not where Kafka's default partitioner puts the key (nil:
// nothing is counted).
func (p *Processor) read(st *partition, r *kgo.Record, n *txnCounts) (key []byte, t time.Time, err error) {
	if p.cfg.key == nil {
		if r.Key == nil {
			return nil, t, fmt.Errorf("%w: the record has no key (dedup by a field of the value instead)", ErrUnreadable)
		}
		key = r.Key
		if n != nil && p.keyPlacement != nil {
			if count := p.inputCounts[st.topic]; count > 0 && p.keyPlacement.Partition(r, count) != int(st.part) {
				n.misplaced++
				if tp := (topicPartition{st.topic, st.part}); !p.misplacedNoted[tp] {
					// Once a partition a run: the count is in the Stats.
					p.misplacedNoted[tp] = true
					p.cfg.logf("%s offset %d: the record is not in the partition Kafka's default partitioner gives its key: its duplicates may be in other partitions, which the rule does not look at (docs/kafka.md, Partitions); the partition's other such records are counted, not named", tp, r.Offset)
				}
			}
		}
	} else if key, err = p.cfg.key(r); err != nil {
		return nil, t, unreadable(err)
	}
	if p.cfg.window > 0 {
		if p.cfg.time == nil {
			t = r.Timestamp
		} else if t, err = p.cfg.time(r); err != nil {
			return nil, t, unreadable(err)
		}
	}
	return key, t, nil
}

// unreadable returns the error of a KeyFunc or TimeFunc as one of an
// unreadable record.
func unreadable(err error) error {
	if errors.Is(err, ErrUnreadable) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnreadable, err)
}
