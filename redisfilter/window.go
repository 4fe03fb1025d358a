package redisfilter

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/hash"
	"github.com/redis/go-redis/v9"
)

// Window is a window filter kept in Redis: the library's [cuckoo.Window]
// (a cuckoo filter that forgets keys older than its window, docs/window.md)
// on stock Redis or Redis Cluster, shared by any number of processes on any
// number of hosts: "did anyone in the fleet see this id in the last 24
// hours?". Its segments hold the library's stamped slots (a fingerprint and
// the 4-bit stamp of its epoch), and the Lua functions that write them
// follow the library's Window step by step, so a segment holds the bytes of
// the library's table given the same keys at the same times.
//
// # Time
//
// Time is Redis's, never the clients': a write reads the server's clock
// (TIME) inside its function, and a lookup reads it after the key's
// buckets, so clients whose clocks are minutes apart agree. Epochs are
// those of the library: g = ⌈window/14⌉ long, counted from the Unix
// epoch; a key added at time t is found until at least t + window and
// never after t + window + [Window.Granularity] (15g − window, about
// window/14: lookups read the exact time). Each segment keeps the epoch of
// its latest write, and its time never runs backwards: a server whose
// clock steps back holds the segment at its time until the clock catches
// up, which keeps keys longer, never shorter. A segment's keys age by the
// clock of the master that holds it: after a failover, by the replica's.
// A replica whose clock runs d behind the old master's holds the segment's
// time until it catches up (keys kept up to d longer); one whose clock
// runs d ahead ages them at once by d, so keys added less than d before
// the failover may be forgotten up to d early. Keep the servers' clocks
// in step (NTP), as Redis's own key expiry needs too. The *At writes
// ([Window.TouchBatchAt], [Window.AddUniqueBatchAt]) bring their own
// times instead: the events', for a stream deduplicated in event time.
// Their time never runs backwards either, across segments: the handle
// judges each key at the latest time it knows (see TouchBatchAt), as the
// library's Window judges each key at the latest time its clock has
// shown, so a stream written through one handle is judged key for key as
// a [cuckoo.Window] judges it.
//
// Expired slots are free for inserts; each write empties the expired
// slots of the next few buckets and the first write of an epoch finishes
// the pass (the library's sweep), so nothing runs in the background, and
// the memory is fixed when the window is made. A segment that has not been
// written for more than 15 epochs is cleared by its next write; lookups
// never write, and read such a segment as empty.
//
// # Retries and errors
//
// Writes run once however often they are sent, and their errors mean
// what a [Filter]'s do ([ErrUnconfirmed], [ErrNotSent], [ErrFull], any
// other error: not applied); a batch gives every key its own result.
//
// A Window is safe for concurrent use by multiple goroutines, and any
// number of handles in any number of processes may use one window.
type Window struct {
	segments
	gran int64 // the epoch length g in ns: ⌈window/14⌉
	// the latest time of the keys the *At writes sent (shared by a
	// handle and its Durable twin)
	latest *eventClock
	// the arguments every write takes after the table's: g's halves
	gh, gl int64
	// the BITFIELD_RO field that reads a segment's epoch
	epochField []any
}

const (
	// windowPrefix starts the keys of a window (keys.go).
	windowPrefix = "ckw:"
	// trailerBytes is the length of the trailer after a window segment's
	// table: the epoch of the segment's latest write (cuckoo.lua).
	trailerBytes = 8
	// MinWindow is the shortest window [NewWindow] takes: its epochs'
	// numbers stay within what the Lua functions compute exactly, and its
	// epochs span many ticks of Redis's microsecond clock.
	MinWindow = time.Millisecond
	// DefaultWindowFingerprintBits is the fingerprint width of a window
	// made without WithFingerprintBits or WithFalsePositiveRate: the
	// library's (cuckoo.DefaultWindowFingerprintBits), 16-bit slots with the
	// stamp, about 0.19 % false positives.
	DefaultWindowFingerprintBits = cuckoo.DefaultWindowFingerprintBits
)

// The write functions' codes (cuckoo.lua).
const (
	codeFull  = 0
	codeAdded = 1
	codeSeen  = 2
)

// The window functions of the library.
const (
	fnWAdd    = libraryName + "_wadd"
	fnWDel    = libraryName + "_wdel"
	fnWNow    = libraryName + "_wnow"
	fnWCount  = libraryName + "_wcount"
	fnWCreate = libraryName + "_wcreate"
	fnWSet    = libraryName + "_wset"
)

// NewWindow returns the window filter called name in rdb, creating it if
// it does not exist: it holds perWindow distinct keys added within any one
// window, sized as the library's [cuckoo.NewWindow](perWindow, window,
// opts...) (see its documentation for bursts), split into segments (one
// Redis string each, spread over a cluster's masters). If a window of that
// name exists with the same parameters (the seed compared only when
// [WithSeed] is given, the segment count only when [WithSegments] is),
// NewWindow opens it; with other parameters it returns an error wrapping
// [ErrMismatch], changing nothing.
//
// It takes [WithFalsePositiveRate] or [WithFingerprintBits] (up to
// [cuckoo.MaxWindowFingerprintBits]; without either, 12-bit fingerprints,
// about 0.19 %), [WithBucketSize] (2, 4 or 8), [WithMaxKicks], [WithSeed],
// [WithSegments], and the handle's [WithRetryWindow] and
// [WithRetryHorizon]. window must be between [MinWindow] and
// [cuckoo.MaxWindow]. The default segment count gives a window of up to
// 32,768 keys one segment, and a larger one a segment per 32,768 keys or
// a few more (the count whose strings best fill the allocator's size
// classes): the write that starts an epoch may pass over its segment's
// table, in Lua, during which the segment's server does nothing else,
// and a segment of that size keeps the pass short (docs/redis.md).
//
// Like [New], it loads the package's Functions library where it is
// missing, and needs Redis 7.0 or later (or Valkey 7.2 or later).
func NewWindow(ctx context.Context, rdb redis.UniversalClient, name string, perWindow uint64, window time.Duration, opts ...Option) (*Window, error) {
	c, p, retry, err := planWindow(perWindow, window, opts)
	if err != nil {
		return nil, err
	}
	kicks := c.kicks
	if kicks == 0 {
		kicks = cuckoo.DefaultMaxKicks
	}
	want := meta{
		kind: "window", b: p.BucketSize, f: p.FingerprintBits, buckets: p.NumBuckets, segments: p.Segments,
		seed: c.seed, kicks: kicks, capacity: perWindow, window: int64(window), id: newID(), state: stateCreating,
	}
	if err := ensureFunctions(ctx, rdb); err != nil {
		return nil, err
	}
	key := metaKey(windowPrefix, name)
	old, err := claimMeta(ctx, rdb, key, want.encode())
	if err != nil {
		return nil, err
	}
	m := want
	if old != "" {
		if m, err = parseMeta(old, "window"); err != nil {
			return nil, err
		}
		if d := m.diff(&want, c.seedSet, c.segments != 0); d != "" {
			return nil, fmt.Errorf("%w: window %q has %s", ErrMismatch, name, d)
		}
	}
	return openWindow(ctx, rdb, name, m, retry)
}

// NewWindowPlan returns the table [NewWindow] would make for perWindow
// keys a window with opts (its segments, bucket size, fingerprint width,
// buckets, and the expected false-positive rate of a steady stream of
// perWindow keys a window), or the error NewWindow would return for
// those parameters, without a server.
func NewWindowPlan(perWindow uint64, window time.Duration, opts ...Option) (cuckoo.Plan, error) {
	_, p, _, err := planWindow(perWindow, window, opts)
	return p, err
}

// maxWindowKeysPerSegment is the most keys a window's default segment
// holds (see NewWindow): a segment's epoch pass costs its server a walk
// over its table in Lua.
const maxWindowKeysPerSegment = 1 << 15

// planWindow resolves NewWindow's options and plans its table.
func planWindow(perWindow uint64, window time.Duration, opts []Option) (config, cuckoo.Plan, retryPolicy, error) {
	c, err := resolve(opts)
	if err != nil {
		return c, cuckoo.Plan{}, retryPolicy{}, err
	}
	retry, err := c.resolveRetry()
	if err != nil {
		return c, cuckoo.Plan{}, retry, err
	}
	if window < MinWindow || window > cuckoo.MaxWindow {
		return c, cuckoo.Plan{}, retry, fmt.Errorf("%w: window %v outside [%v, %v]", ErrInvalidParameter, window, MinWindow, cuckoo.MaxWindow)
	}
	segments := c.segments
	if segments == 0 {
		least := (perWindow + maxWindowKeysPerSegment - 1) / maxWindowKeysPerSegment
		var perr error
		segments = fitSegments(min(least, cuckoo.MaxSegments), func(s uint64) (uint64, bool) {
			p, err := cuckoo.NewWindowPlan(perWindow, c.cuckooOptions(int(s))...)
			if err != nil {
				perr = err
				return 0, false
			}
			return windowStringBytes(&p), true
		})
		if segments == 0 {
			return c, cuckoo.Plan{}, retry, fmt.Errorf("%w: %w", ErrInvalidParameter, perr)
		}
	}
	p, err := cuckoo.NewWindowPlan(perWindow, c.cuckooOptions(segments)...)
	if err != nil {
		return c, p, retry, fmt.Errorf("%w: %w", ErrInvalidParameter, err)
	}
	if sb := windowStringBytes(&p); sb > maxSegmentBytes {
		return c, p, retry, fmt.Errorf("%w: segments of %d bytes, above Redis's 512 MiB strings: give WithSegments %d or more", ErrInvalidParameter, sb, (sb*uint64(p.Segments)+maxSegmentBytes-1)/maxSegmentBytes)
	}
	return c, p, retry, nil
}

// windowStringBytes returns the length of each segment's string in a
// window of plan p: its table, of slots of a fingerprint and a stamp, then
// the trailer.
func windowStringBytes(p *cuckoo.Plan) uint64 {
	return planSegmentBytes(p, p.FingerprintBits+cuckoo.WindowStampBits) + trailerBytes
}

// OpenWindow returns the existing window filter called name, or an error
// wrapping [ErrNotFound]. Like NewWindow, it loads the Functions library
// where it is missing. It takes the handle's options only:
// [WithRetryWindow] and [WithRetryHorizon].
func OpenWindow(ctx context.Context, rdb redis.UniversalClient, name string, opts ...Option) (*Window, error) {
	retry, err := handleOptions(opts)
	if err != nil {
		return nil, err
	}
	m, err := readMeta(ctx, rdb, windowPrefix, "window", name)
	if err != nil {
		return nil, err
	}
	if err := ensureFunctions(ctx, rdb); err != nil {
		return nil, err
	}
	return openWindow(ctx, rdb, name, m, retry)
}

// openWindow returns the Window of metadata m, finishing its creation if
// NewWindow was interrupted (or is still at it) before it was ready.
func openWindow(ctx context.Context, rdb redis.UniversalClient, name string, m meta, retry retryPolicy) (*Window, error) {
	if m.state == statePushing {
		return nil, fmt.Errorf("%w: %q (if no push is running, push it again with replace)", ErrBusy, name)
	}
	w := newWindow(rdb, name, m, retry)
	if m.state == stateCreating {
		trailer := w.trailer(restartEpoch(w.gran))
		err := w.eachSegment(ctx, func(s int) redis.Cmder {
			return w.fcall(ctx, fnWCreate, s, []any{w.m.id, trailer, w.g.segmentBytes})
		}, func(s int, c redis.Cmder) error { return c.Err() })
		if err != nil {
			return nil, err
		}
		w.m.state = stateReady
		if err := rdb.SetArgs(ctx, metaKey(windowPrefix, name), w.m.encode(), redis.SetArgs{Mode: "XX"}).Err(); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func newWindow(rdb redis.UniversalClient, name string, m meta, retry retryPolicy) *Window {
	w := &Window{segments: newSegments(rdb, windowPrefix, name, m, retry), gran: epochLength(m.window), latest: new(eventClock)}
	w.gh, w.gl = w.gran>>32, w.gran&math.MaxUint32
	w.epochField = []any{"GET", "i64", int64(8 * w.g.segmentBytes)}
	return w
}

// epochLength is the length of a window's epochs: ⌈window/14⌉ ns, the
// library's rule (docs/window.md).
func epochLength(window int64) int64 {
	return (window + cuckoo.WindowEpochs - 1) / cuckoo.WindowEpochs
}

// windowLimitNanos bounds the times a Window handles, ±2^62 ns of the
// Unix epoch, as the library's does (docs/format.md).
const windowLimitNanos = 1 << 62

// restartEpoch is the epoch of a window that has never been written (the
// library's NewWindow and Reset): the earliest there is, so that the first
// write sets the time.
func restartEpoch(gran int64) int64 { return floorDiv(-windowLimitNanos, gran) }

// floorDiv is ⌊a/b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// trailer returns the bytes of a segment's trailer holding epoch e.
func (w *Window) trailer(e int64) string {
	var b [trailerBytes]byte
	binary.BigEndian.PutUint64(b[:], uint64(e))
	return string(b[:])
}

// Name returns the window's name.
func (w *Window) Name() string { return w.name }

// Client returns the Redis client the window was opened with.
func (w *Window) Client() redis.UniversalClient { return w.rdb }

// Capacity returns the distinct keys a window holds, as NewWindow was
// given.
func (w *Window) Capacity() uint64 { return w.m.capacity }

// Window returns the window's length.
func (w *Window) Window() time.Duration { return time.Duration(w.m.window) }

// Granularity returns how much longer than the window a key may be found:
// a key added at time t is found until at least t + Window() and never
// after t + Window() + Granularity(), by the clock of its segment's server.
func (w *Window) Granularity() time.Duration {
	return time.Duration((cuckoo.WindowEpochs+1)*w.gran - w.m.window)
}

// Segments returns the number of segments (Redis strings) the table is
// split into.
func (w *Window) Segments() int { return w.m.segments }

// BucketSize returns the slots per bucket.
func (w *Window) BucketSize() int { return w.m.b }

// FingerprintBits returns the fingerprint width (a slot holds
// [cuckoo.WindowStampBits] more).
func (w *Window) FingerprintBits() int { return w.m.f }

// NumBuckets returns the buckets of the whole table (all segments).
func (w *Window) NumBuckets() uint64 { return w.m.buckets }

// MaxKicks returns the most entries one insert may displace.
func (w *Window) MaxKicks() int { return w.m.kicks }

// Seed returns the hash seed.
func (w *Window) Seed() uint64 { return w.m.seed }

// Keys returns the Redis keys of the window: its metadata, then each
// segment's table and hash (for ACL rules, monitoring or MIGRATE). Not
// listed: the keys that remember writes' replies for the retry window,
// named ckw:{TAG}:r:ID:NAME in the slot of their segment.
func (w *Window) Keys() []string { return w.keys() }

// MemoryUsage returns what Redis reports (MEMORY USAGE) for the window's
// keys together: its segments and its metadata.
func (w *Window) MemoryUsage(ctx context.Context) (uint64, error) {
	return memoryUsage(ctx, w.rdb, w.Keys())
}

// Durable returns a Window on the same window whose writes return only
// after replicas replicas of each segment's master acknowledged them, as
// [Filter.Durable] does.
func (w *Window) Durable(replicas int, timeout time.Duration) *Window {
	d := *w
	d.wait, d.waitTimeout = max(replicas, 0), timeout
	return &d
}

// Drop deletes the window: its metadata first (so NewWindow and
// OpenWindow no longer find it), then its segments. Windows opened before
// fail their writes with [ErrNotFound] and report every key absent.
func (w *Window) Drop(ctx context.Context) error { return w.drop(ctx) }

// Add adds key, or refreshes its age if it is in the window already: it is
// then found for at least the window from now. A key takes one slot
// however often it is added. It returns [ErrFull] when no room can be made
// in its segment (more keys in the window than it was made for, or,
// rarely, fewer, as for the module's cuckoo.Window; the segment's keys are
// kept), or another error as [Filter.Add] does. One
// function call on the key's segment, run once however often it is sent.
func (w *Window) Add(ctx context.Context, key []byte) error {
	_, err := w.putOne(ctx, key, false)
	return err
}

// Touch is [Window.Add] that also reports whether key was in the window
// (or a false positive said so): "drop this event if its id was seen in
// the last 24 hours", where every sighting counts. seen is the answer of
// the call's first run, however often it was sent.
func (w *Window) Touch(ctx context.Context, key []byte) (seen bool, err error) {
	code, err := w.putOne(ctx, key, false)
	return code == codeSeen, err
}

// AddUnique adds key unless it is in the window, and says whether it did;
// a key in the window keeps its age ("alert once per host per hour"). The
// test and the insert are one atomic step on the key's segment, so of
// several clients adding one key at once exactly one gets true. Errors as
// [Filter.AddUnique]'s.
func (w *Window) AddUnique(ctx context.Context, key []byte) (added bool, err error) {
	code, err := w.putOne(ctx, key, true)
	return code == codeAdded, err
}

// putOne writes key at the server's time, unique or not, and returns the
// function's code; ErrFull when it is codeFull.
func (w *Window) putOne(ctx context.Context, key []byte, unique bool) (int64, error) {
	var l located
	l.segment, l.i1, l.i2, l.fp, l.h = w.g.locateHash(key)
	args := []any{w.gh, w.gl, boolArg(unique), 0}
	code, err := w.callOne(ctx, fnWAdd, l.segment, w.putArgs(args, &l))
	if err != nil && !errors.Is(err, ErrNotReplicated) {
		return 0, err
	}
	if code == codeFull {
		return 0, ErrFull
	}
	return code, err
}

// putArgs appends a key's arguments of the add function: its first
// bucket, its fingerprint and the state its random walk starts from (the
// library's table.NewKickRand of the key's hash, in 32-bit halves).
func (w *Window) putArgs(args []any, l *located) []any {
	seed := hash.Mix64(l.h) | 1
	return append(args, l.i1, l.fp, seed>>32, seed&math.MaxUint32)
}

// Delete removes key from the window and reports whether it was there. A
// key shares its slot with the keys of the same buckets and fingerprint
// (the false positives), so deleting a key never added may remove another
// one. One function call on the key's segment, run once however often it
// is sent; errors as [Filter.Delete]'s.
func (w *Window) Delete(ctx context.Context, key []byte) (bool, error) {
	s, i1, _, fp := w.g.locateKey(key)
	code, err := w.callOne(ctx, fnWDel, s, []any{w.gh, w.gl, i1, fp})
	return code == 1, err
}

// Contains reports whether key was added within the window: true for a
// key added (or refreshed) at most the window ago, false for one last
// added more than window + [Window.Granularity] ago but with the
// false-positive probability, by the clock of its segment's server. It
// reads the key's buckets and the segment's epoch with one BITFIELD_RO,
// then the server's time with a read-only function call, in one round
// trip; a replica may serve it when the client reads from replicas. A
// dropped window, or one Redis lost, reports every key absent: use
// [Window.ContainsChecked] where that must be told from absence.
func (w *Window) Contains(ctx context.Context, key []byte) (bool, error) {
	return w.lookupOne(ctx, w, key, false)
}

// ContainsChecked is [Window.Contains] that tells a window that is gone
// from one that lacks the key, as [Filter.ContainsChecked] does, at no
// extra cost (the time's call reads the segment's id and length too).
func (w *Window) ContainsChecked(ctx context.Context, key []byte) (bool, error) {
	return w.lookupOne(ctx, w, key, true)
}

// ContainsBatch sets found[i] to Contains(keys[i]) and errs[i] to nil for
// every key it read, as [Filter.ContainsBatch] does: grouped by segment,
// one BITFIELD_RO per 128 keys of a segment (each reading the segment's
// epoch with the buckets) and one read of the server's time per segment
// and round. found and errs must be at least as long as keys.
func (w *Window) ContainsBatch(ctx context.Context, keys [][]byte, found []bool, errs []error) error {
	return w.lookupBatch(ctx, w, keys, found, errs, false)
}

// ContainsBatchChecked is [Window.ContainsBatch] with the check of
// [Window.ContainsChecked].
func (w *Window) ContainsBatchChecked(ctx context.Context, keys [][]byte, found []bool, errs []error) error {
	return w.lookupBatch(ctx, w, keys, found, errs, true)
}

// AddBatch adds every key, as Add does, and sets errs[i] to key i's
// result, as [Filter.AddBatch] does. Each call of the function (up to 32
// keys of a segment) reads the server's clock once: its keys are added at
// one instant.
func (w *Window) AddBatch(ctx context.Context, keys [][]byte, errs []error) error {
	return w.putBatch(ctx, keys, nil, false, nil, nil, errs)
}

// TouchBatch is Touch for every key: seen[i] reports whether keys[i] was
// in the window (an earlier key of the batch equal to it counts), errs[i]
// its error as for AddBatch. seen and errs must be at least as long as
// keys.
func (w *Window) TouchBatch(ctx context.Context, keys [][]byte, seen []bool, errs []error) error {
	if err := checkBatch(len(keys), len(seen)); err != nil {
		return err
	}
	return w.putBatch(ctx, keys, nil, false, seen, nil, errs)
}

// AddUniqueBatch is AddUnique for every key: added[i] reports whether
// keys[i] was added (false with a nil error only for a key in the window
// before it, an earlier key of the batch included), errs[i] its error as
// for AddBatch. added and errs must be at least as long as keys.
func (w *Window) AddUniqueBatch(ctx context.Context, keys [][]byte, added []bool, errs []error) error {
	if err := checkBatch(len(keys), len(added)); err != nil {
		return err
	}
	return w.putBatch(ctx, keys, nil, true, nil, added, errs)
}

// TouchBatchAt is TouchBatch with each key at its own time, times[i],
// instead of the server's: the time of the events being deduplicated, so
// that "seen within the window" means within the window of event time,
// as the library's Window does with a clock of event times.
//
// Time never runs backwards: key i is judged at the latest of its own
// time, the times of the keys before it in this batch and in the
// handle's earlier *At batches (its Durable twins' included), and the
// newest epoch any of the window's segments held when the handle's first
// *At write read them (one BITFIELD_RO a segment, pipelined, once a
// handle). A late key, one whose time is before that, is judged at the
// time the stream has reached, as by the library's Window, whichever
// segment it falls in. Keys that other handles write meanwhile move this
// one's time only through their segments: a key is judged at least at
// the latest time its own segment has seen, but may be judged before a
// newer time another handle gave other segments since this one read
// them. Times before 1970 count as 1970. Use a window with these writes,
// or with the server's clock, not both.
//
// If the first *At write of a handle cannot read the segments' epochs,
// every key's error wraps [ErrNotSent] and the cause, and the next *At
// write reads them again. times must be at least as long as keys.
func (w *Window) TouchBatchAt(ctx context.Context, keys [][]byte, times []time.Time, seen []bool, errs []error) error {
	if err := checkBatch(len(keys), len(seen), len(times)); err != nil {
		return err
	}
	return w.putBatch(ctx, keys, times, false, seen, nil, errs)
}

// AddUniqueBatchAt is AddUniqueBatch with each key at its own time, as
// TouchBatchAt.
func (w *Window) AddUniqueBatchAt(ctx context.Context, keys [][]byte, times []time.Time, added []bool, errs []error) error {
	if err := checkBatch(len(keys), len(added), len(times)); err != nil {
		return err
	}
	return w.putBatch(ctx, keys, times, true, nil, added, errs)
}

// putBatch writes keys (at times, or at the server's time when times is
// nil), unique or not, and fills in seen (codeSeen) or added (codeAdded)
// when not nil, and errs.
func (w *Window) putBatch(ctx context.Context, keys [][]byte, times []time.Time, unique bool, seen, added []bool, errs []error) error {
	if err := checkBatch(len(keys), len(errs)); err != nil {
		return err
	}
	out := seen
	if unique {
		out = added
	}
	timed := 0
	var at []int64
	if times != nil {
		timed = 1
		var err error
		if at, err = w.eventTimes(ctx, times[:len(keys)]); err != nil {
			for i := range keys {
				if out != nil {
					out[i] = false
				}
				errs[i] = err
			}
			return err
		}
	}
	head := []any{w.gh, w.gl, boolArg(unique), timed}
	keyArgs := func(args []any, l *located, i int) []any {
		args = w.putArgs(args, l)
		if at != nil {
			args = append(args, at[i]>>32, at[i]&math.MaxUint32)
		}
		return args
	}
	err := w.writeBatch(ctx, fnWAdd, head, keyArgs, keys, out, errs, func(code int64) (bool, error) {
		switch code {
		case codeFull:
			return false, ErrFull
		case codeSeen:
			return !unique, nil
		}
		return unique, nil
	})
	// The handle's time becomes that of the last key sent (at only grows).
	for i := len(at) - 1; i >= 0; i-- {
		if !errors.Is(errs[i], ErrNotSent) {
			w.latest.raise(at[i])
			break
		}
	}
	return err
}

// eventTimes returns the times, in Unix ns, the keys of an *At write are
// judged at: key i's is the latest of its own time, those of the keys
// before it, and the handle's (eventClock), as the library's Window with
// a clock of event times judges each key at the latest time its clock
// has shown. Each segment keeps its own time, and one that has not yet
// seen the newest time would otherwise judge a late key at an older one.
func (w *Window) eventTimes(ctx context.Context, times []time.Time) ([]int64, error) {
	latest, err := w.latest.now(ctx, w)
	if err != nil {
		return nil, err
	}
	at := make([]int64, len(times))
	for i, t := range times {
		latest = max(latest, eventNanos(t))
		at[i] = latest
	}
	return at, nil
}

// eventClock is a Window handle's time for the *At writes, in Unix ns
// (0: none yet): the latest time of the keys it sent, and at least the
// start of the newest epoch of the window's segments when its first *At
// write read them. It only moves forward.
type eventClock struct {
	mu   sync.Mutex  // held while the segments' epochs are read
	read atomic.Bool // they were
	ns   atomic.Int64
}

// now returns the clock's time, reading the segments' epochs first if no
// write of the handle has: the newest is the latest time any writer gave
// the window (its time never runs backwards, whichever client wrote).
// One BITFIELD_RO a segment, pipelined, once a handle; an error means
// nothing was sent, and the next write reads them again.
func (c *eventClock) now(ctx context.Context, w *Window) (int64, error) {
	if !c.read.Load() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.read.Load() {
			newest := int64(math.MinInt64)
			err := w.eachSegment(ctx, func(s int) redis.Cmder {
				cmd := redis.NewIntSliceCmd(ctx, append([]any{"bitfield_ro", w.tables[s]}, w.epochField...)...)
				cmd.SetFirstKeyPos(1)
				return cmd
			}, func(s int, cmd redis.Cmder) error {
				v, err := cmd.(*redis.IntSliceCmd).Result()
				if err == nil && len(v) != 1 {
					err = fmt.Errorf("%w: the epoch of segment %d of %q read as %v", ErrCorrupt, s, w.name, v)
				}
				if err == nil {
					newest = max(newest, v[0])
				}
				return err
			})
			if err != nil {
				return 0, fmt.Errorf("%w: reading the epochs of the segments of %q: %w", ErrNotSent, w.name, err)
			}
			// A segment never written holds the earliest epoch there is
			// (restartEpoch), a missing one 0: neither is a time to keep.
			if newest > 0 && newest <= (windowLimitNanos-1)/w.gran {
				c.raise(newest * w.gran)
			}
			c.read.Store(true)
		}
	}
	return c.ns.Load(), nil
}

// raise moves the clock's time on to ns if that is later.
func (c *eventClock) raise(ns int64) {
	for {
		old := c.ns.Load()
		if ns <= old || c.ns.CompareAndSwap(old, ns) {
			return
		}
	}
}

// eventNanos returns an event's time in Unix ns, within [0, 2^62).
func eventNanos(t time.Time) int64 {
	switch s := t.Unix(); {
	case s < 0:
		return 0
	case s >= windowLimitNanos/int64(time.Second):
		return windowLimitNanos - 1
	}
	return t.UnixNano()
}

// DeleteBatch deletes every key, as Delete does, and sets deleted[i] to
// whether key i was in the window, errs[i] to its error as for AddBatch
// (never ErrFull). deleted and errs must be at least as long as keys.
func (w *Window) DeleteBatch(ctx context.Context, keys [][]byte, deleted []bool, errs []error) error {
	if err := checkBatch(len(keys), len(deleted), len(errs)); err != nil {
		return err
	}
	return w.writeBatch(ctx, fnWDel, []any{w.gh, w.gl}, cuckooKeyArgs, keys, deleted, errs, func(code int64) (bool, error) { return code == 1, nil })
}

// Len returns the entries in the window now: the distinct keys added
// within it, less those that share a slot with another (false positives),
// plus those added up to a granularity before it, as the library's
// [cuckoo.Window.Len]. Each segment keeps the count of its slots of each
// stamp, exactly, so Len reads 16 counters and the epoch and time of each
// segment at once (one read-only function call per segment, pipelined):
// with concurrent writers, the sum of counts taken at slightly different
// moments.
func (w *Window) Len(ctx context.Context) (uint64, error) {
	var total uint64
	err := w.eachSegment(ctx, func(s int) redis.Cmder {
		cmd := redis.NewIntSliceCmd(ctx, "fcall_ro", fnWCount, 2, w.tables[s], w.counters[s], w.m.id, w.g.segmentBytes)
		cmd.SetFirstKeyPos(3)
		return cmd
	}, func(s int, c redis.Cmder) error {
		v, err := c.(*redis.IntSliceCmd).Result()
		if err != nil {
			return err
		}
		if len(v) != 3+16 {
			return fmt.Errorf("%w: %s replied %v", ErrCorrupt, fnWCount, v)
		}
		lag, ok := w.lag(v[0]*1e9+v[1], v[2])
		if !ok {
			return nil
		}
		ref := uint64(v[2])
		for st, n := range v[3:] {
			if (ref-uint64(st))&15+lag <= cuckoo.WindowEpochs {
				total += uint64(n)
			}
		}
		return nil
	})
	return total, err
}

// lag returns how many epochs the time ns is past a segment's epoch e (0
// when it is not past it: the segment's time never runs backwards), and
// false when it is so far past that nothing is live.
func (w *Window) lag(ns, e int64) (uint64, bool) {
	now := floorDiv(ns, w.gran)
	switch {
	case now <= e:
		return 0, true
	case e < now-cuckoo.WindowEpochs:
		return 0, false
	}
	return uint64(now - e), true
}

// WindowInfo describes a window filter: its parameters and its entries
// now.
type WindowInfo struct {
	Name            string
	Capacity        uint64        // keys a window, as NewWindow was given
	Window          time.Duration // the window's length
	Granularity     time.Duration // how much longer a key may be found
	Segments        int
	BucketSize      int
	FingerprintBits int
	NumBuckets      uint64
	MaxKicks        int
	Seed            uint64
	SizeInBytes     uint64 // the segments' tables together
	Len             uint64 // the entries in the window now (Window.Len)
}

// Info returns the window's parameters and its entries now (one Len).
func (w *Window) Info(ctx context.Context) (WindowInfo, error) {
	n, err := w.Len(ctx)
	if err != nil {
		return WindowInfo{}, err
	}
	return WindowInfo{
		Name: w.name, Capacity: w.m.capacity, Window: w.Window(), Granularity: w.Granularity(),
		Segments: w.m.segments, BucketSize: w.m.b, FingerprintBits: w.m.f, NumBuckets: w.m.buckets,
		MaxKicks: w.m.kicks, Seed: w.m.seed, SizeInBytes: w.g.segmentBytes * uint64(w.m.segments), Len: n,
	}, nil
}

// A window's lookups read each segment's epoch with the buckets, in every
// BITFIELD_RO (the head), and the server's time after the segment's reads
// (the tail: ckf2_wnow, which returns the segment's id and length too, for
// a checked lookup). Read after the buckets, the time is never earlier
// than the moment they were read: a lookup judges the entries it read at
// a time within its round trip, as the library's reader does.

func (w *Window) head() []any { return w.epochField }

func (w *Window) tail(ctx context.Context, cmds []redis.Cmder, s int, _ bool) []redis.Cmder {
	cmd := redis.NewSliceCmd(ctx, "fcall_ro", fnWNow, 2, w.tables[s], w.counters[s])
	cmd.SetFirstKeyPos(3)
	return append(cmds, cmd)
}

func (w *Window) tailLen(bool) int { return 1 }

func (w *Window) state(s int, cmds []redis.Cmder, errs []error, check bool) (int64, error) {
	if errs[0] != nil {
		return 0, errs[0]
	}
	v := cmds[0].(*redis.SliceCmd).Val()
	if len(v) != 4 {
		return 0, fmt.Errorf("%w: %s replied %v", ErrCorrupt, fnWNow, v)
	}
	sec, ok1 := v[0].(int64)
	ns, ok2 := v[1].(int64)
	id, ok3 := v[2].(string)
	n, ok4 := v[3].(int64)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return 0, fmt.Errorf("%w: %s replied %v", ErrCorrupt, fnWNow, v)
	}
	if check {
		switch {
		case id == "":
			return 0, fmt.Errorf("%w: segment %d of %q is gone (its hash %q has no id)", ErrNotFound, s, w.name, w.counters[s])
		case id != w.m.id:
			return 0, fmt.Errorf("%w: segment %d of %q belongs to another window of that name (id %q, this one's %q)", ErrNotFound, s, w.name, id, w.m.id)
		case n == 0:
			return 0, fmt.Errorf("%w: the table of segment %d of %q is gone (key %q)", ErrNotFound, s, w.name, w.tables[s])
		case uint64(n) != w.g.strLen:
			return 0, fmt.Errorf("%w: the table of segment %d of %q holds %d bytes, want %d", ErrCorrupt, s, w.name, n, w.g.strLen)
		}
	}
	return sec*1e9 + ns, nil
}

func (w *Window) match(l *located, bb1 []byte, sh1 uint, bb2 []byte, sh2 uint, head []int64, ns int64) bool {
	e := head[0]
	lag, ok := w.lag(ns, e)
	if !ok {
		return false
	}
	return w.liveIn(bb1, sh1, l.fp, uint64(e), lag) || w.liveIn(bb2, sh2, l.fp, uint64(e), lag)
}

// liveIn reports whether a bucket holds fingerprint fp in a slot whose age
// under epoch e, plus lag, is at most WindowEpochs: a live entry.
func (w *Window) liveIn(bb []byte, shift uint, fp, e, lag uint64) bool {
	for j := range w.g.b {
		v := w.g.slot(bb, shift, j)
		if v != 0 && v>>cuckoo.WindowStampBits == fp && (e-v)&(1<<cuckoo.WindowStampBits-1)+lag <= cuckoo.WindowEpochs {
			return true
		}
	}
	return false
}
