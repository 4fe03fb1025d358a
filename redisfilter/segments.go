package redisfilter

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// segments is what a cuckoo filter and a window kept in Redis share: a
// handle on the segments of one named filter (a table string and a hash
// each, in one hash slot), its metadata, and how calls reach the segments:
// the Functions library, the request ids and retry rule of writes
// (retry.go), Durable's WAIT. [Filter] and [Window] embed it.
type segments struct {
	rdb      redis.UniversalClient
	name     string
	prefix   string // the kind's key prefix (keys.go)
	m        meta
	g        geometry
	tables   []string // segment s's table key
	counters []string // segment s's hash key
	records  []string // the prefix of segment s's record keys (see recordKey)
	retry    retryPolicy
	ids      *idSource // shared by a handle and its Durable twin

	// Durable: replicas to wait for after each write, and how long.
	wait        int
	waitTimeout time.Duration

	// pauseHook, set by tests only, is called as each of sendDurable's
	// pauses before it sends a redirected command again begins, with its
	// length, and returns the length to wait instead.
	pauseHook func(time.Duration) time.Duration
}

func newSegments(rdb redis.UniversalClient, prefix, name string, m meta, retry retryPolicy) segments {
	h := segments{rdb: rdb, name: name, prefix: prefix, m: m, g: newGeometry(&m), retry: retry, ids: newIDSource()}
	for s := range m.segments {
		h.tables = append(h.tables, segmentKey(prefix, "t", name, s, m.segments))
		h.counters = append(h.counters, segmentKey(prefix, "c", name, s, m.segments))
		h.records = append(h.records, recordPrefix(prefix, name, s, m.segments))
	}
	return h
}

// keys returns the Redis keys of the filter: its metadata, then each
// segment's table and hash.
func (h *segments) keys() []string {
	k := []string{metaKey(h.prefix, h.name)}
	for s := range h.tables {
		k = append(k, h.tables[s], h.counters[s])
	}
	return k
}

// fcall returns an FCALL of fn on segment s's two keys with args (after the
// keys), routed by its first key.
func (h *segments) fcall(ctx context.Context, fn string, s int, args []any) *redis.Cmd {
	a := make([]any, 0, 5+len(args))
	a = append(a, "fcall", fn, 2, h.tables[s], h.counters[s])
	a = append(a, args...)
	cmd := redis.NewCmd(ctx, a...)
	cmd.SetFirstKeyPos(3)
	return cmd
}

// writeCmd returns a call of write function fn on segment s with a new
// request id: its keys are the segment's two and the call's record, its
// arguments the table's (header), the retry window, then args.
func (h *segments) writeCmd(ctx context.Context, fn string, s int, args []any) *redis.Cmd {
	return h.writeCmdAfter(ctx, fn, s, h.recordKey(s), "", args)
}

// writeCmdAfter returns a call of write function fn on segment s whose
// record is record, as writeCmd does, that runs only after the call whose
// record is prev (of segment s; none if prev is ""): until that call
// has run, Redis refuses it (CKFORDER) and it changes nothing.
func (h *segments) writeCmdAfter(ctx context.Context, fn string, s int, record, prev string, args []any) *redis.Cmd {
	a := make([]any, 0, 13+len(args))
	if prev == "" {
		a = append(a, "fcall", fn, 3, h.tables[s], h.counters[s], record)
	} else {
		a = append(a, "fcall", fn, 4, h.tables[s], h.counters[s], record, prev)
	}
	a = append(a, h.m.id, h.g.b, h.g.slotBits, h.g.perSegment, h.m.kicks, h.retry.window.Milliseconds())
	a = append(a, args...)
	cmd := redis.NewCmd(ctx, a...)
	cmd.SetFirstKeyPos(3)
	return cmd
}

// recordKey returns the key of a new write call's remembered reply in
// segment s: the segment's record prefix, a new request id and the name.
func (h *segments) recordKey(s int) string {
	return h.records[s] + h.ids.next() + ":" + h.name
}

// header returns the arguments every table function takes first: the
// instance id, the bucket size, the slot width, the segment's buckets and
// max kicks.
func (h *segments) header(extra int) []any {
	a := make([]any, 0, 5+extra)
	return append(a, h.m.id, h.g.b, h.g.slotBits, h.g.perSegment, h.m.kicks)
}

// sender returns run bound to ctx, for settle.
func (h *segments) sender(ctx context.Context) func([]redis.Cmder) error {
	return func(cmds []redis.Cmder) error { return h.run(ctx, cmds) }
}

// run sends cmds in one pipeline (one per node of a cluster), loading
// the functions and resending the commands a node refused for want of
// them. It returns the first transport error; errors replied by Redis are
// left in their commands.
func (h *segments) run(ctx context.Context, cmds []redis.Cmder) error {
	for attempt := 0; ; attempt++ {
		if err := h.send(ctx, cmds); err != nil {
			return err
		}
		var missing []redis.Cmder
		for _, c := range cmds {
			if err := c.Err(); err != nil && strings.Contains(err.Error(), "Function not found") {
				missing = append(missing, c)
			}
		}
		if len(missing) == 0 || attempt == 1 {
			return nil
		}
		// A node the library never reached: a master added to the
		// cluster, or a server restarted without its data.
		if err := ensureFunctions(ctx, h.rdb); err != nil {
			return err
		}
		for _, c := range missing {
			c.SetErr(nil)
		}
		cmds = missing
	}
}

// send sends cmds in one pipeline. With Durable, writes go to the
// segments' masters with a WAIT after them (see durable.go).
func (h *segments) send(ctx context.Context, cmds []redis.Cmder) error {
	if h.wait > 0 && isWrite(cmds) {
		return h.sendDurable(ctx, cmds)
	}
	return pipeline(ctx, h.rdb, cmds)
}

// segmentBatch is the most segments one pipeline of eachSegment addresses.
const segmentBatch = 1024

// eachSegment sends one command per segment, made by mk, in pipelines of
// segmentBatch, and gives each reply to check.
func (h *segments) eachSegment(ctx context.Context, mk func(s int) redis.Cmder, check func(s int, c redis.Cmder) error) error {
	for lo := 0; lo < h.m.segments; lo += segmentBatch {
		hi := min(lo+segmentBatch, h.m.segments)
		cmds := make([]redis.Cmder, 0, hi-lo)
		for s := lo; s < hi; s++ {
			cmds = append(cmds, mk(s))
		}
		if err := h.run(ctx, cmds); err != nil {
			return err
		}
		for s := lo; s < hi; s++ {
			if err := check(s, cmds[s-lo]); err != nil {
				return replyErr(err)
			}
		}
	}
	return nil
}

// drop deletes the filter: its metadata first (so New and Open no longer
// find it), then its segments.
func (h *segments) drop(ctx context.Context) error {
	if err := h.rdb.Del(ctx, metaKey(h.prefix, h.name)).Err(); err != nil {
		return err
	}
	return h.eachSegment(ctx, func(s int) redis.Cmder {
		return redis.NewIntCmd(ctx, "del", h.tables[s], h.counters[s])
	}, func(s int, c redis.Cmder) error { return c.Err() })
}

// group locates keys and returns their places and their indexes ordered
// by segment, keys of a segment in input order.
func (h *segments) group(keys [][]byte) ([]located, []int32) {
	loc := make([]located, len(keys))
	for i, k := range keys {
		l := &loc[i]
		l.segment, l.i1, l.i2, l.fp, l.h = h.g.locateHash(k)
	}
	return loc, orderBySegment(loc, h.m.segments)
}
