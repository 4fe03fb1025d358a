package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/dedupkit/cuckoo"
	"github.com/redis/go-redis/v9"
)

// Filter is a cuckoo filter kept in Redis: a handle on the segments and
// metadata of one named filter, holding no keys itself. Every operation is
// one round trip (a batch: one per node, pipelined); an insert or delete
// runs as a Redis Function on its segment, atomically, so any number of
// Filters in any number of processes may use one filter at once.
//
// Writes run once however often they are sent: each call carries a
// request id and its segment remembers the reply of the call's first run
// for the retry window, so a copy sent again (whose first copy's reply
// timed out while it waited in a stalled server) answers what the first
// did and changes nothing. A write whose outcome is unknown (no reply: a
// timeout, a lost connection, a server loading or failing over) is sent
// again until the retry horizon. So a nil error always comes with the
// true answer, and an error says what is known: [ErrUnconfirmed] (a copy
// reached Redis and got no reply that can be believed: it may have been
// applied, whatever a later copy was told), [ErrNotSent] (no copy
// reached Redis), or any other error, such as a refusal Redis replied to
// every copy (the write was not applied). See [WithRetryWindow] and
// [WithRetryHorizon] for the limits.
//
// A Filter is safe for concurrent use by multiple goroutines.
type Filter struct{ segments }

// New returns the cuckoo filter called name in rdb, creating it empty if
// it does not exist, sized like the library's [cuckoo.New](capacity,
// opts...) with the same [WithSegments]: it holds capacity distinct
// keys. If a filter of that name exists with the same parameters (the
// seed compared only when [WithSeed] is given, the segment count only
// when [WithSegments] is), New opens it; with other parameters it returns
// an error wrapping [ErrMismatch] that lists them, changing nothing.
//
// New takes the options of the library filter ([WithFalsePositiveRate],
// [WithFingerprintBits], [WithBucketSize], [WithMaxKicks], [WithSeed])
// and [WithSegments], and the handle's [WithRetryWindow] and
// [WithRetryHorizon].
//
// New loads the package's Redis Functions library (ckf2) into every
// master that lacks it (or holds an older revision of it). It needs Redis 7.0 or later (or Valkey 7.2 or
// later); an older server gets an error wrapping [ErrUnsupported] that
// names the version needed. Its cost: a few round trips, plus one
// function call per segment when it creates the filter.
func New(ctx context.Context, rdb redis.UniversalClient, name string, capacity uint64, opts ...Option) (*Filter, error) {
	c, p, retry, err := plan(capacity, opts)
	if err != nil {
		return nil, err
	}
	kicks := c.kicks
	if kicks == 0 {
		kicks = cuckoo.DefaultMaxKicks
	}
	want := meta{
		kind: "cuckoo", b: p.BucketSize, f: p.FingerprintBits, buckets: p.NumBuckets, segments: p.Segments,
		seed: c.seed, kicks: kicks, capacity: capacity, id: newID(), state: stateCreating,
	}
	if err := ensureFunctions(ctx, rdb); err != nil {
		return nil, err
	}
	key := metaKey(cuckooPrefix, name)
	old, err := claimMeta(ctx, rdb, key, want.encode())
	if err != nil {
		return nil, err
	}
	m := want
	if old != "" {
		if m, err = parseMeta(old, "cuckoo"); err != nil {
			return nil, err
		}
		if d := m.diff(&want, c.seedSet, c.segments != 0); d != "" {
			return nil, fmt.Errorf("%w: filter %q has %s", ErrMismatch, name, d)
		}
	}
	return open(ctx, rdb, name, m, retry)
}

// NewPlan returns the table [New] would make for capacity keys with
// opts (its segments, bucket size, fingerprint width, buckets and
// expected false-positive rate), or the error New would return for those
// parameters (wrapping [ErrInvalidParameter]), without a server: to
// check parameters before connecting, or to size a filter.
func NewPlan(capacity uint64, opts ...Option) (cuckoo.Plan, error) {
	_, p, _, err := plan(capacity, opts)
	return p, err
}

// plan resolves New's options and plans its table.
func plan(capacity uint64, opts []Option) (config, cuckoo.Plan, retryPolicy, error) {
	c, err := resolve(opts)
	if err != nil {
		return c, cuckoo.Plan{}, retryPolicy{}, err
	}
	retry, err := c.resolveRetry()
	if err != nil {
		return c, cuckoo.Plan{}, retry, err
	}
	p, err := c.cuckooPlan(capacity)
	if err != nil {
		return c, p, retry, err
	}
	if sb := planSegmentBytes(&p, p.FingerprintBits); sb > maxSegmentBytes {
		return c, p, retry, fmt.Errorf("%w: segments of %d bytes, above Redis's 512 MiB strings: give WithSegments %d or more", ErrInvalidParameter, sb, (sb*uint64(p.Segments)+maxSegmentBytes-1)/maxSegmentBytes)
	}
	return c, p, retry, nil
}

// Open returns the existing cuckoo filter called name, or an error
// wrapping [ErrNotFound]. Like New, it loads the Functions library where
// it is missing. It takes the handle's options only: [WithRetryWindow]
// and [WithRetryHorizon].
func Open(ctx context.Context, rdb redis.UniversalClient, name string, opts ...Option) (*Filter, error) {
	retry, err := handleOptions(opts)
	if err != nil {
		return nil, err
	}
	m, err := readMeta(ctx, rdb, cuckooPrefix, "cuckoo", name)
	if err != nil {
		return nil, err
	}
	if err := ensureFunctions(ctx, rdb); err != nil {
		return nil, err
	}
	return open(ctx, rdb, name, m, retry)
}

// handleOptions resolves the options of Open and OpenBloom, which take
// only the handle's.
func handleOptions(opts []Option) (retryPolicy, error) {
	c, err := resolve(opts)
	if err != nil {
		return retryPolicy{}, err
	}
	if c.filterOpt || c.cuckooOK {
		return retryPolicy{}, fmt.Errorf("%w: opening a filter takes only WithRetryWindow and WithRetryHorizon (the filter keeps its own parameters)", ErrInvalidParameter)
	}
	return c.resolveRetry()
}

// open returns the Filter of metadata m, finishing its creation if New
// was interrupted (or is still at it) before it was ready.
func open(ctx context.Context, rdb redis.UniversalClient, name string, m meta, retry retryPolicy) (*Filter, error) {
	switch m.state {
	case statePushing:
		return nil, fmt.Errorf("%w: %q (if no push is running, push it again with replace)", ErrBusy, name)
	}
	f := newFilter(rdb, name, m, retry)
	if m.state == stateCreating {
		if err := f.create(ctx); err != nil {
			return nil, err
		}
		f.m.state = stateReady
		if err := rdb.SetArgs(ctx, metaKey(cuckooPrefix, name), f.m.encode(), redis.SetArgs{Mode: "XX"}).Err(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func newFilter(rdb redis.UniversalClient, name string, m meta, retry retryPolicy) *Filter {
	return &Filter{newSegments(rdb, cuckooPrefix, name, m, retry)}
}

// create makes every segment that is not yet a segment of this filter an
// empty one.
func (f *Filter) create(ctx context.Context) error {
	return f.eachSegment(ctx, func(s int) redis.Cmder {
		return f.fcall(ctx, fnCreate, s, []any{f.m.id, f.g.segmentBytes})
	}, func(s int, c redis.Cmder) error { return c.Err() })
}

// Name returns the filter's name.
func (f *Filter) Name() string { return f.name }

// Client returns the Redis client the filter was opened with, for code
// that keeps its own keys beside the filter's (package guard keeps the
// pointer to a filter's current generation).
func (f *Filter) Client() redis.UniversalClient { return f.rdb }

// Capacity returns the number of distinct keys the filter was sized for.
func (f *Filter) Capacity() uint64 { return f.m.capacity }

// Segments returns the number of segments (Redis strings) the table is
// split into.
func (f *Filter) Segments() int { return f.m.segments }

// BucketSize returns the slots per bucket.
func (f *Filter) BucketSize() int { return f.m.b }

// FingerprintBits returns the fingerprint width.
func (f *Filter) FingerprintBits() int { return f.m.f }

// NumBuckets returns the buckets of the whole table (all segments).
func (f *Filter) NumBuckets() uint64 { return f.m.buckets }

// MaxKicks returns the most fingerprints one insert may displace.
func (f *Filter) MaxKicks() int { return f.m.kicks }

// Seed returns the hash seed.
func (f *Filter) Seed() uint64 { return f.m.seed }

// Keys returns the Redis keys of the filter: its metadata, then each
// segment's table and hash (for ACL rules, monitoring or MIGRATE). Not
// listed: the keys that remember writes' replies for the retry window,
// named ckf:{TAG}:r:ID:NAME in the slot of their segment (so the pattern
// ckf:*:NAME matches every key of the filter but its metadata).
func (f *Filter) Keys() []string { return f.keys() }

// SizeInBytes returns the bytes of the segments' tables together: the
// library filter's table, without its duplicate counters.
func (f *Filter) SizeInBytes() uint64 { return f.g.segmentBytes * uint64(f.m.segments) }

// Add inserts one copy of key, as the library's [cuckoo.Filter.Add]: a
// multiset insert, copies beyond the second of a fingerprint in its bucket
// pair counted in the segment's hash, so a key added n times counts n and
// takes two slots. It returns [ErrFull] when its segment has no room (the
// segment is then exactly as it was), an error wrapping [ErrUnconfirmed]
// when a copy of the call may have run and no reply to believe came
// within the retry horizon, or another error when it was not applied (see
// [Filter]). One function call on the key's segment, run once however
// often it is sent.
func (f *Filter) Add(ctx context.Context, key []byte) error {
	r, err := f.addOne(ctx, key, false)
	if err != nil && !errors.Is(err, ErrNotReplicated) {
		return err
	}
	if r == 0 {
		return ErrFull
	}
	return err
}

// AddUnique adds key unless the filter reports it already, and says
// whether it did; the test and the insert are one atomic step on the
// key's segment, so of several clients adding one key at once exactly one
// gets true. A false positive makes it skip a key never added. added is
// false with a nil error only when the filter held key (or a key of the
// same fingerprint) before this call: the answer of the call's first
// run, however often it was sent; an error wrapping [ErrUnconfirmed]
// means the key may or may not have been added by this call, and any
// other error that it was not (see [Filter]).
func (f *Filter) AddUnique(ctx context.Context, key []byte) (added bool, err error) {
	r, err := f.addOne(ctx, key, true)
	if err != nil && !errors.Is(err, ErrNotReplicated) {
		return false, err
	}
	if r == 0 {
		return false, ErrFull
	}
	return r == 1, err
}

func (f *Filter) addOne(ctx context.Context, key []byte, unique bool) (int64, error) {
	s, i1, _, fp := f.g.locateKey(key)
	return f.callOne(ctx, fnAdd, s, []any{boolArg(unique), i1, fp})
}

// callOne calls write function fn of segment s for one key, with args
// after the table's, until it settles, and returns its code.
func (h *segments) callOne(ctx context.Context, fn string, s int, args []any) (int64, error) {
	cmd := h.writeCmd(ctx, fn, s, args)
	errs, _, short := h.retry.settle(ctx, []redis.Cmder{cmd}, rememberedWrites, h.sender(ctx))
	if errs[0] != nil {
		return 0, replyErr(errs[0])
	}
	codes, err := cmd.Int64Slice()
	if err == nil && len(codes) != 1 {
		err = fmt.Errorf("%w: %s replied %v", ErrCorrupt, fn, codes)
	}
	if err != nil {
		return 0, replyErr(err)
	}
	return codes[0], short
}

func boolArg(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Contains reports whether key may be in the filter: always true for a
// key added and not deleted, true with the filter's false-positive rate
// for any other. It reads the key's two buckets with one BITFIELD_RO (no
// script), so it may be served by a replica when the client reads from
// replicas, sent again until the retry horizon if no reply comes. A
// dropped filter, or one Redis lost, reports every key absent: use
// [Filter.ContainsChecked] where that must be told from absence.
func (f *Filter) Contains(ctx context.Context, key []byte) (bool, error) {
	return f.lookupOne(ctx, f, key, false)
}

// Delete removes one copy of key and reports whether there was one, as
// [cuckoo.Filter.Delete]: counted copies first, then a slot. Delete only
// keys you added: deleting a key never added removes the fingerprint of
// another key that shares it (with the false-positive probability), which
// then reads as absent. One function call on the key's segment, run once
// however often it is sent; an error wrapping [ErrUnconfirmed] means the
// copy may or may not have been removed (so deleting again may remove a
// second copy: [Filter.Count] tells), and any other error that it was
// not.
func (f *Filter) Delete(ctx context.Context, key []byte) (bool, error) {
	s, i1, _, fp := f.g.locateKey(key)
	code, err := f.callOne(ctx, fnDel, s, []any{i1, fp})
	return code == 1, err
}

// Count returns how many copies of key's fingerprint its two buckets and
// its duplicate counter hold: the times key was added and not deleted,
// plus copies of colliding keys (so never less than the true count). One
// read-only function call, atomic on the segment.
func (f *Filter) Count(ctx context.Context, key []byte) (uint64, error) {
	s, i1, _, fp := f.g.locateKey(key)
	args := append([]any{"fcall_ro", fnCount, 2, f.tables[s], f.counters[s]}, f.header(2)...)
	cmd := redis.NewCmd(ctx, append(args, i1, fp)...)
	cmd.SetFirstKeyPos(3)
	if err := f.run(ctx, []redis.Cmder{cmd}); err != nil {
		return 0, err
	}
	v, err := cmd.Slice()
	if err != nil {
		return 0, replyErr(err)
	}
	if len(v) != 2 {
		return 0, fmt.Errorf("%w: %s replied %v", ErrCorrupt, fnCount, v)
	}
	slots, ok1 := v[0].(int64)
	extra, err2 := strconv.ParseUint(fmt.Sprint(v[1]), 10, 64)
	if !ok1 || err2 != nil || slots < 0 || slots > 2 {
		return 0, fmt.Errorf("%w: %s replied %v", ErrCorrupt, fnCount, v)
	}
	return uint64(slots) + extra, nil
}

// Len returns the items in the filter, copies included: the sum of the
// segments' counts, each read atomically (so with concurrent writers, a sum
// of counts taken at slightly different moments). One HMGET per segment,
// pipelined.
func (f *Filter) Len(ctx context.Context) (uint64, error) {
	var total uint64
	err := f.eachSegment(ctx, func(s int) redis.Cmder {
		return redis.NewSliceCmd(ctx, "hmget", f.counters[s], "id", "n")
	}, func(s int, c redis.Cmder) error {
		v, err := c.(*redis.SliceCmd).Result()
		if err != nil {
			return err
		}
		if v[0] != f.m.id {
			return fmt.Errorf("%w: segment %d of %q", ErrNotFound, s, f.name)
		}
		n, err := strconv.ParseUint(fmt.Sprint(v[1]), 10, 64)
		if err != nil {
			return fmt.Errorf("%w: segment %d count %v", ErrCorrupt, s, v[1])
		}
		total += n
		return nil
	})
	return total, err
}

// Drop deletes the filter: its metadata first (so New and Open no longer
// find it), then its segments. Filters opened before fail their writes with
// [ErrNotFound] and report every key absent. Do not Drop a filter while
// another client is creating it with New.
func (f *Filter) Drop(ctx context.Context) error { return f.drop(ctx) }
