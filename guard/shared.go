package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// A Shared set is a name that points to its current generation: a
// redisfilter filter. The pointer is one Redis string, the set's name
// with the prefix below, holding a pointer (JSON). Before the first
// Rebuild there is no pointer and the current generation is the filter
// named like the set. Frozen: the key and its fields are how every
// process finds the current generation.
const pointerPrefix = "ckg:"

func pointerKey(name string) string { return pointerPrefix + name }

// pointer is the value of a set's pointer key.
type pointer struct {
	Format int    `json:"format"` // 1
	Change uint64 `json:"change"` // counts the changes, so every change changes the value
	// Cur is the generation lookups read.
	Cur string `json:"cur"`
	// Next is the generation a Rebuild is filling: writes add to it too.
	Next string `json:"next,omitempty"`
	// Retired are former generations kept up to date for the grace period
	// after their swap, for the processes that have not seen it yet.
	Retired []retired `json:"retired,omitempty"`
	// GraceMS is the grace period, in milliseconds, of the last Rebuild.
	GraceMS int64 `json:"grace_ms"`
}

type retired struct {
	Name string `json:"name"`
	At   int64  `json:"at_ms"` // wall clock (Unix ms) of the swap that retired it
}

const pointerFormat = 1

// has reports whether name is one of p's generations.
func (p *pointer) has(name string) bool {
	if name == p.Cur || name == p.Next {
		return true
	}
	for _, r := range p.Retired {
		if r.Name == name {
			return true
		}
	}
	return false
}

// sharedSet is a Filter made by Shared or OpenShared.
type sharedSet struct {
	name  string
	rdb   redis.UniversalClient // nil: usable only as a Rebuild's fresh generation
	first *redisfilter.Filter   // the filter Shared was given; nil from OpenShared
	// honoursDeadlines: rdb stops waiting for a reply at its context's
	// deadline (see lookUp).
	honoursDeadlines bool
	// defaultGrace is the grace period, in nanoseconds, before the set has
	// a pointer: the largest of its guards' (WithGrace).
	defaultGrace atomic.Int64
	st           atomic.Pointer[sharedState]
	refreshMu    sync.Mutex // one read of the pointer at a time
}

// sharedState is a set's generations as read from Redis at one moment.
type sharedState struct {
	raw     string                // the pointer's value; "" when the set has none
	p       pointer               // parsed, or made up from the set's name when raw is ""
	cur     *redisfilter.Filter   // nil when it is gone
	next    *redisfilter.Filter   // nil when no Rebuild runs
	retired []*redisfilter.Filter // those still in Redis
	sent    time.Time             // when the read of the pointer was sent
	grace   time.Duration
	// lost, when not nil, wraps ErrLost and says why lookups cannot use
	// this view: the current generation is gone, or the pointer is (then
	// pointerGone is set, and p and the generations are those of the last
	// pointer read, which writes keep adding to).
	lost        error
	pointerGone bool
}

// Shared returns the set called f.Name() for a fleet of processes: every
// guard in every process that uses a set of that name sees one filter in
// Redis, and a Rebuild by any of them swaps in a new generation for all
// (see [Guard.Rebuild]). f is the set's first generation: before any
// Rebuild, the set is f; after one, the set's name in Redis points to the
// current generation and f may be gone, so processes started later open
// the set with [OpenShared].
//
// A Shared set is also what a Rebuild takes as its fresh generation:
// Shared of a new, empty filter of another name.
//
// Each operation costs the filter's round trip (a lookup: one
// BITFIELD_RO, with an HGET and a STRLEN in the same pipeline that prove
// the generation is there, as [redisfilter.Filter.ContainsChecked] does;
// a write: one function call per generation it reaches), plus one GET of
// the set's pointer per process every grace period / 8. The set reads the
// pointer through f's Redis client ([redisfilter.Filter.Client]).
//
// If Redis loses the set's data (its pointer, or its current
// generation's keys), lookups fail with an error wrapping [ErrLost]
// rather than read an empty filter, until a Rebuild recovers the set.
func Shared(f *redisfilter.Filter) Filter {
	if f == nil {
		panic("guard: Shared of a nil filter")
	}
	return newSharedSet(f.Name(), f.Client(), f)
}

func newSharedSet(name string, rdb redis.UniversalClient, first *redisfilter.Filter) *sharedSet {
	return &sharedSet{name: name, rdb: rdb, first: first, honoursDeadlines: honoursDeadlines(rdb)}
}

// honoursDeadlines reports whether rdb stops waiting for a reply at its
// context's deadline: a go-redis client made with ContextTimeoutEnabled
// does; others wait for their own ReadTimeout (3 s by default, retried),
// however soon the deadline.
func honoursDeadlines(rdb redis.UniversalClient) bool {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// OpenShared returns the Shared set called name in rdb: the generation
// its name points to, or, before any Rebuild, the redisfilter filter
// called name. It returns an error wrapping [redisfilter.ErrNotFound]
// when there is neither. A set whose pointer names a generation that is
// gone opens, lost (see [ErrLost]): its lookups fail over until a
// Rebuild. See [Shared].
func OpenShared(ctx context.Context, rdb redis.UniversalClient, name string) (Filter, error) {
	s := newSharedSet(name, rdb, nil)
	st, err := s.stateSince(ctx, time.Now())
	if err != nil {
		return nil, err
	}
	if st.raw == "" && st.cur == nil {
		return nil, fmt.Errorf("guard: no Shared set %q (no pointer %q, no filter of that name): %w", name, pointerKey(name), redisfilter.ErrNotFound)
	}
	return s, nil
}

// useGrace records the grace period of a guard using the set, for as
// long as the set has no pointer.
func (s *sharedSet) useGrace(d time.Duration) {
	for {
		old := s.defaultGrace.Load()
		if int64(d) <= old {
			return
		}
		if s.defaultGrace.CompareAndSwap(old, int64(d)) {
			break
		}
	}
	// A view read before has the old period: read the pointer again. (Not
	// a view whose pointer is gone: it holds the last pointer's period.)
	if st := s.st.Load(); st != nil && st.raw == "" && !st.pointerGone {
		s.st.CompareAndSwap(st, nil)
	}
}

// noPointerGrace is the grace period while the set has no pointer.
func (s *sharedSet) noPointerGrace() time.Duration {
	if d := time.Duration(s.defaultGrace.Load()); d > 0 {
		return d
	}
	return DefaultGrace
}

// state returns the set's generations, read within the last refresh
// interval (an eighth of the grace period).
func (s *sharedSet) state(ctx context.Context) (*sharedState, error) {
	if st := s.st.Load(); st != nil {
		every := st.grace / 8
		if time.Since(st.sent) < every {
			return st, nil
		}
		return s.stateSince(ctx, time.Now().Add(-every/2))
	}
	return s.stateSince(ctx, time.Now())
}

// stateSince returns the set's generations from a read of the pointer
// sent at since or later.
func (s *sharedSet) stateSince(ctx context.Context, since time.Time) (*sharedState, error) {
	if st := s.st.Load(); st != nil && !st.sent.Before(since) {
		return st, nil
	}
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	old := s.st.Load()
	if old != nil && !old.sent.Before(since) {
		return old, nil
	}
	sent := time.Now()
	raw, err := s.rdb.Get(ctx, pointerKey(s.name)).Result()
	if errors.Is(err, redis.Nil) {
		raw, err = "", nil
	}
	if err != nil {
		return nil, fmt.Errorf("guard: reading the pointer of %q: %w", s.name, err)
	}
	var st *sharedState
	switch {
	case raw == "" && old != nil && (old.raw != "" || old.pointerGone):
		// The pointer was there and is gone: Redis lost it (a pointer is
		// never deleted). Keep the last view's generations, for writes
		// and for a Rebuild to announce its fresh one over them.
		c := *old
		st = &c
		st.raw, st.pointerGone = "", true
		st.lost = fmt.Errorf("%w: the pointer of %q (key %q) is gone", ErrLost, s.name, pointerKey(s.name))
	case old != nil && old.raw == raw:
		c := *old
		st = &c
		if raw == "" {
			st.grace = s.noPointerGrace()
		}
	default:
		if st, err = s.resolve(ctx, raw); err != nil {
			return nil, err
		}
	}
	st.sent = sent
	s.st.Store(st)
	return st, nil
}

// resolve opens the generations of the pointer value raw.
func (s *sharedSet) resolve(ctx context.Context, raw string) (*sharedState, error) {
	st := &sharedState{raw: raw, grace: s.noPointerGrace()}
	if raw == "" {
		st.p = pointer{Format: pointerFormat, Cur: s.name, GraceMS: st.grace.Milliseconds()}
	} else {
		if err := json.Unmarshal([]byte(raw), &st.p); err != nil || st.p.Format != pointerFormat || st.p.Cur == "" || st.p.GraceMS <= 0 {
			return nil, fmt.Errorf("guard: the pointer of %q (key %q) holds %q, which this version does not read", s.name, pointerKey(s.name), raw)
		}
		st.grace = time.Duration(st.p.GraceMS) * time.Millisecond
	}
	open := func(name string) (*redisfilter.Filter, error) {
		if s.first != nil && s.first.Name() == name {
			return s.first, nil
		}
		return redisfilter.Open(ctx, s.rdb, name)
	}
	var err error
	if st.cur, err = open(st.p.Cur); errors.Is(err, redisfilter.ErrNotFound) {
		st.cur = nil
		st.lost = fmt.Errorf("%w: the current generation %q of %q: %w", ErrLost, st.p.Cur, s.name, err)
	} else if err != nil {
		return nil, fmt.Errorf("guard: the current generation %q of %q: %w", st.p.Cur, s.name, err)
	}
	if st.p.Next != "" {
		// A fresh generation that is gone was given up: no Rebuild will
		// swap it in.
		if st.next, err = open(st.p.Next); errors.Is(err, redisfilter.ErrNotFound) {
			st.next = nil
		} else if err != nil {
			return nil, fmt.Errorf("guard: the fresh generation %q of %q: %w", st.p.Next, s.name, err)
		}
	}
	for _, r := range st.p.Retired {
		f, err := open(r.Name)
		switch {
		case errors.Is(err, redisfilter.ErrNotFound):
			// Dropped (only after its grace period): no process reads it.
		case err != nil:
			return nil, fmt.Errorf("guard: the retired generation %q of %q: %w", r.Name, s.name, err)
		default:
			st.retired = append(st.retired, f)
		}
	}
	return st, nil
}

// errTooSlow is returned by a lookup whose answer kept coming back later
// than the grace period after the read of the pointer it relied on.
var errTooSlow = errors.New("guard: Redis answers more slowly than the grace period allows")

// Contains reports whether key may be in the set's current generation.
// It returns an error wrapping ErrLost when the generation or the
// set's pointer is gone, and returns by ctx's deadline.
func (s *sharedSet) Contains(ctx context.Context, key []byte) (bool, error) {
	if s.waitsPast(ctx) {
		key = bytes.Clone(key) // read by the lookup after Contains returned, maybe
	}
	return lookUp(ctx, s, func(ctx context.Context) (bool, error) { return s.contains(ctx, key) })
}

func (s *sharedSet) contains(ctx context.Context, key []byte) (bool, error) {
	var ok bool
	err := s.lookUpCurrent(ctx, func(ctx context.Context, cur *redisfilter.Filter) (no bool, err error) {
		ok, err = cur.ContainsChecked(ctx, key)
		return !ok, err
	})
	return ok, err
}

// lookUpCurrent runs read, a lookup of the current generation, with the
// checks that make its "no" right: the view it reads must be usable (not
// lost); a reply with a "no" in it (read returns no) must come within
// the grace period of the view's read of the pointer, else it reads the
// pointer again and asks again; and a generation that is gone is asked
// again from a fresh view, in case the view was stale, before the set
// is declared lost.
func (s *sharedSet) lookUpCurrent(ctx context.Context, read func(ctx context.Context, cur *redisfilter.Filter) (no bool, err error)) error {
	st, err := s.state(ctx)
	for range 3 {
		if err != nil {
			return err
		}
		if st.lost != nil {
			return st.lost
		}
		no, err := read(ctx, st.cur)
		if errors.Is(err, redisfilter.ErrNotFound) {
			fresh, ferr := s.stateSince(ctx, time.Now())
			if ferr == nil && fresh.raw == st.raw && fresh.lost == nil {
				return fmt.Errorf("%w: the current generation %q of %q: %w", ErrLost, st.p.Cur, s.name, err)
			}
			st, err = fresh, ferr
			continue
		}
		if err != nil {
			return err
		}
		// A "no" relies on the generation being live when it was read: it
		// is, if the read was within the grace period of the pointer's.
		if !no || time.Since(st.sent) < st.grace {
			return nil
		}
		st, err = s.stateSince(ctx, time.Now())
	}
	return errTooSlow
}

// waitsPast reports whether a lookup with ctx would wait past ctx's
// deadline, for want of a client that honours it.
func (s *sharedSet) waitsPast(ctx context.Context) bool {
	if s.honoursDeadlines {
		return false
	}
	_, ok := ctx.Deadline()
	return ok
}

// redisName is the set's name, for errors.
func (s *sharedSet) redisName() string { return s.name }

// inRedis is what lookUp needs of a set in Redis: whether a lookup would
// wait past its context's deadline, and the set's name.
type inRedis interface {
	waitsPast(ctx context.Context) bool
	redisName() string
}

// lookUp returns read(ctx), or ctx's error once ctx is done if read has
// not returned by then (when s.waitsPast(ctx): then read runs in a
// goroutine of its own, which ends when the client gives up).
func lookUp[T any](ctx context.Context, s inRedis, read func(context.Context) (T, error)) (T, error) {
	if !s.waitsPast(ctx) {
		return read(ctx)
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := read(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		select {
		case r := <-done:
			return r.v, r.err
		default:
		}
		var zero T
		return zero, fmt.Errorf("guard: no reply from Redis for %q: %w", s.redisName(), context.Cause(ctx))
	}
}

// Add adds key to every generation a write must reach: the current one,
// a fresh one being filled, and those retired within the grace period.
// A generation that is gone is skipped (see add).
func (s *sharedSet) Add(ctx context.Context, key []byte) error {
	_, _, err := s.add(ctx, key)
	return err
}

// Delete deletes key from the current generation and the retired ones,
// and reports whether the current one held it. A generation that is
// gone is skipped.
func (s *sharedSet) Delete(ctx context.Context, key []byte) (bool, error) {
	st, err := s.state(ctx)
	if err != nil {
		return false, err
	}
	found, _, err := s.delete(ctx, key, st)
	return found, err
}

// add is Add; it returns the state whose generations it reached, and
// whether the set was lost (its current generation or its pointer gone).
// The current generation, once gone, is skipped: lookups never read it
// (they check that it is there; see lookUpCurrent), and the Rebuild that
// replaces it scans the rows of the writes that skipped it, as it scans
// those that reached it (it waits the grace period after announcing its
// fresh generation, which writes from then on reach).
func (s *sharedSet) add(ctx context.Context, key []byte) (*sharedState, bool, error) {
	st, err := s.state(ctx)
	if err != nil {
		return nil, false, err
	}
	curGone := st.cur == nil
	if !curGone {
		if err = st.cur.Add(ctx, key); errors.Is(err, redisfilter.ErrNotFound) {
			// The generation is gone: the view may be stale. Read it again.
			if st, err = s.stateSince(ctx, time.Now()); err != nil {
				return nil, false, err
			}
			if curGone = st.cur == nil; !curGone {
				err = st.cur.Add(ctx, key)
			}
		}
		if errors.Is(err, redisfilter.ErrNotFound) {
			curGone, err = true, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
	for _, r := range st.retired {
		if err := r.Add(ctx, key); err != nil && !errors.Is(err, redisfilter.ErrNotFound) {
			return nil, false, err
		}
	}
	if st.next != nil {
		if err := st.next.Add(ctx, key); err != nil && !s.abandonNext(ctx, st.p.Next) {
			return nil, false, err
		}
	}
	return st, curGone || st.lost != nil, nil
}

// settle runs after the write of an Insert that added key to the
// generations of used. A write that finished within the grace period of
// that read committed before any generation announced since was scanned
// (a Rebuild waits that long before scanning), so the scan has its row.
// A longer write may have missed the scan: settle adds key to the
// generations announced since, and reports that it had to.
func (s *sharedSet) settle(ctx context.Context, key []byte, used *sharedState) (late bool, err error) {
	if time.Since(used.sent) < used.grace {
		return false, nil
	}
	st, err := s.stateSince(ctx, time.Now())
	if err != nil {
		return true, err
	}
	had := func(name string) bool { return used.p.has(name) }
	if st.cur != nil && !had(st.p.Cur) {
		if err := st.cur.Add(ctx, key); err != nil && !errors.Is(err, redisfilter.ErrNotFound) {
			return true, err
		}
	}
	for _, r := range st.retired {
		if !had(r.Name()) {
			if err := r.Add(ctx, key); err != nil && !errors.Is(err, redisfilter.ErrNotFound) {
				return true, err
			}
		}
	}
	if st.next != nil && !had(st.p.Next) {
		if err := st.next.Add(ctx, key); err != nil && !s.abandonNext(ctx, st.p.Next) {
			return true, err
		}
	}
	return true, nil
}

// delete deletes key from the generations of st that held every live key
// when st was read: the current one and the retired ones, not a fresh one
// (its scan may have missed the key). A generation that is gone is
// skipped; lost reports that the set was lost (its current generation or
// its pointer gone).
func (s *sharedSet) delete(ctx context.Context, key []byte, st *sharedState) (found, lost bool, err error) {
	lost = st.cur == nil || st.lost != nil
	if st.cur != nil {
		found, err = st.cur.Delete(ctx, key)
		if errors.Is(err, redisfilter.ErrNotFound) {
			lost, err = true, nil
		}
		if err != nil {
			return false, lost, err
		}
	}
	for _, r := range st.retired {
		if _, err := r.Delete(ctx, key); err != nil && !errors.Is(err, redisfilter.ErrNotFound) {
			return found, lost, err
		}
	}
	return found, lost, nil
}

// abandonNext takes the fresh generation next out of the set's pointer,
// because a write could not add its key to it, and reports whether next
// is now no generation of the set (so the write may go on without it):
// false if a Rebuild swapped it in already, or the pointer cannot be
// changed.
func (s *sharedSet) abandonNext(ctx context.Context, next string) bool {
	for range 10 {
		st, err := s.stateSince(ctx, time.Now())
		if err != nil {
			return false
		}
		if st.pointerGone {
			// No Rebuild can swap next in without the pointer (see
			// rebuildShared), and one that writes a new pointer announces
			// a fresh generation of its own.
			return true
		}
		if st.p.Next != next {
			return !st.p.has(next)
		}
		np := st.p
		np.Change++
		np.Next = ""
		ok, err := s.swapPointer(ctx, st.raw, np)
		if err != nil {
			return false
		}
		if ok {
			return true
		}
	}
	return false
}

// casPointer sets the pointer key to ARGV[2] if it holds ARGV[1] ("" for
// no key), and returns 1 if it did.
var casPointer = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v == false then v = '' end
if v ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
`)

// swapPointer sets the set's pointer to p if it still holds old, reports
// whether it did, and reads the set's generations again. A call that
// failed or was retried by the client is checked against the key: it
// reports true if the key holds p.
func (s *sharedSet) swapPointer(ctx context.Context, old string, p pointer) (bool, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return false, err
	}
	key, val := pointerKey(s.name), string(b)
	n, err := casPointer.Run(ctx, s.rdb, []string{key}, old, val).Int()
	if err != nil || n == 0 {
		now, rerr := s.rdb.Get(ctx, key).Result()
		if rerr == nil && now == val {
			n, err = 1, nil
		} else if err == nil && rerr != nil && !errors.Is(rerr, redis.Nil) {
			err = rerr
		}
	}
	if err != nil {
		return false, fmt.Errorf("guard: changing the pointer of %q: %w", s.name, err)
	}
	s.stateSince(ctx, time.Now())
	return n == 1, nil
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// rebuildShared is Rebuild of a Shared set: announce fresh in the set's
// pointer, wait the grace period, scan, swap, wait the grace period, drop
// the old generation.
func (g *Guard[V]) rebuildShared(ctx context.Context, cur, fresh *sharedSet, scan Scan) (err error) {
	if fresh.first == nil {
		return fmt.Errorf("%w: a Rebuild's fresh generation is Shared of a new filter", ErrInvalidParameter)
	}
	name := fresh.first.Name()
	grace := g.cfg.grace

	// Announce: from now on every write reaches fresh too.
	var wait time.Duration
	var garbage []string
	for {
		st, err := cur.stateSince(ctx, time.Now())
		if err != nil {
			return err
		}
		if st.p.has(name) {
			return fmt.Errorf("%w: %q is already a generation of %q", ErrInvalidParameter, name, cur.name)
		}
		// Processes may still use the old grace period for a while: wait
		// the longer of the two.
		wait = max(grace, st.grace)
		np := st.p
		np.Format, np.Change, np.Next, np.GraceMS = pointerFormat, np.Change+1, name, grace.Milliseconds()
		garbage = garbage[:0]
		if st.p.Next != "" {
			// Another Rebuild's, running (it will fail at its swap) or
			// given up by a process that stopped.
			garbage = append(garbage, st.p.Next)
		}
		// Retired generations whose own Rebuild stopped before dropping
		// them, long enough ago (by the wall clock; twice the grace period
		// allows for clock skew).
		np.Retired = slices.DeleteFunc(slices.Clone(st.p.Retired), func(r retired) bool {
			if time.Since(time.UnixMilli(r.At)) > 2*wait {
				garbage = append(garbage, r.Name)
				return true
			}
			return false
		})
		ok, err := cur.swapPointer(ctx, st.raw, np)
		if err != nil {
			return err
		}
		if ok {
			break
		}
	}
	swapped := false
	defer func() {
		if err == nil || swapped {
			return
		}
		// Take fresh out of the pointer, if it is still there, and drop it
		// once no generation of the set has its name (a swap whose reply
		// was lost may have made it current).
		bg := context.WithoutCancel(ctx)
		if !cur.abandonNext(bg, name) {
			return
		}
		if st, err := cur.stateSince(bg, time.Now()); err == nil && !st.p.has(name) {
			fresh.first.Drop(bg)
		}
	}()
	for _, n := range garbage {
		dropGeneration(ctx, cur.rdb, n)
	}

	// Every write that read the pointer before the announcement has
	// finished (see WithGrace): the scan sees its row.
	if err := sleep(ctx, wait); err != nil {
		return fmt.Errorf("guard: rebuild: %w", err)
	}
	if _, err := fill(ctx, fresh.first.Add, g.cfg.workers, scan); err != nil {
		return fmt.Errorf("guard: rebuild: %w", err)
	}

	// Swap, unless a write gave fresh up, another Rebuild replaced it, or
	// Redis lost the pointer: writes that started since know of no fresh
	// generation.
	var old *redisfilter.Filter
	var oldName string
	for {
		st, err := cur.stateSince(ctx, time.Now())
		if err != nil {
			return err
		}
		if st.pointerGone {
			return fmt.Errorf("guard: rebuild: %w", st.lost)
		}
		if st.p.Next != name {
			return fmt.Errorf("%w: a write could not add its key to %q, or another Rebuild of %q replaced it", ErrAbandoned, name, cur.name)
		}
		np := st.p
		np.Change++
		np.Cur, np.Next = name, ""
		np.Retired = append(slices.Clone(st.p.Retired), retired{Name: st.p.Cur, At: time.Now().UnixMilli()})
		ok, err := cur.swapPointer(ctx, st.raw, np)
		if err != nil {
			return err
		}
		if ok {
			old, oldName = st.cur, st.p.Cur
			break
		}
	}
	swapped = true

	// Keep the old generation in step while processes that read the
	// pointer before the swap may still read it, then drop it.
	if sleep(ctx, wait) != nil {
		return nil
	}
	for {
		st, err := cur.stateSince(ctx, time.Now())
		if err != nil || st.pointerGone {
			return nil
		}
		np := st.p
		np.Retired = slices.DeleteFunc(slices.Clone(st.p.Retired), func(r retired) bool { return r.Name == oldName })
		if len(np.Retired) == len(st.p.Retired) {
			break
		}
		np.Change++
		ok, err := cur.swapPointer(ctx, st.raw, np)
		if err != nil {
			return nil
		}
		if ok {
			break
		}
	}
	if old != nil { // nil: it was gone already
		old.Drop(ctx)
	}
	return nil
}

// dropGeneration drops the redisfilter filter called name, if it exists.
// Its keys are garbage: a failure leaves them for the operator.
func dropGeneration(ctx context.Context, rdb redis.UniversalClient, name string) {
	if f, err := redisfilter.Open(ctx, rdb, name); err == nil {
		f.Drop(ctx)
	}
}
