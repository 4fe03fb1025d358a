package guard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/option"
)

// Loader reads one row; it returns an error wrapping [ErrNotFound] when
// the row does not exist. It is called only for keys the filter may hold.
type Loader[V any] func(ctx context.Context, key []byte) (V, error)

// Guard is a filter in front of a database: Get answers "not found" for
// an absent key without asking the database (but at the filter's
// false-positive rate), and Insert, Remove and Rebuild keep the filter
// right while rows come and go. The package documentation states what it
// guarantees and why.
//
// A Guard is safe for concurrent use by any number of goroutines. Its
// zero value is not usable: make one with [New].
type Guard[V any] struct {
	// view is what lookups read: the current set, and the fresh one while
	// a Rebuild fills it. It changes under mu.
	view    atomic.Pointer[view]
	load    Loader[V]
	flights flights[V]
	count   counters
	cfg     config

	// mu serializes changes of view and the writers' registration on it,
	// and guards busy and drain.
	mu sync.Mutex
	// busy holds the views that writes in progress took.
	busy map[*view]struct{}
	// drain, when not nil, is a Rebuild waiting for the writes of some
	// views to finish.
	drain *drain
	// rebuildMu lets one Rebuild run at a time.
	rebuildMu sync.Mutex
}

// view is one state of a guard's sets. Its sets never change; a Rebuild
// publishes a new view.
type view struct {
	cur    Filter             // nil: no set yet; every lookup goes to load
	local  *cuckoo.Concurrent // cur's filter when cur is Local: Get calls it directly
	shared *sharedSet         // cur when it is a Shared set
	next   Filter             // the fresh set a Rebuild fills, or nil
	run    *rebuildRun        // that Rebuild

	// writers counts the Inserts and Removes that took this view and have
	// not finished (under Guard.mu).
	writers int
}

// drain is a wait for the writes in progress on some views to finish.
type drain struct {
	pending map[*view]struct{}
	done    chan struct{}
}

// rebuildRun is one Rebuild. Under Guard.mu: err is why a write
// abandoned it; swapped, that its fresh set became the current one.
type rebuildRun struct {
	err     error
	swapped bool
}

func newView(cur Filter) *view {
	v := &view{cur: cur}
	switch s := cur.(type) {
	case *localSet:
		v.local = s.f
	case *sharedSet:
		v.shared = s
	}
	return v
}

// New returns a guard that consults set before it calls load. set must
// already hold the key of every row (fill it with [Fill] before any
// writes, or let a Rebuild fill it); or it may be nil: then every lookup
// goes to load until the first Rebuild installs a set, which is how a
// service that is running already starts guarding its table.
//
// A nil load, or an option given a bad value, makes New return an error
// wrapping [ErrInvalidParameter] (and no guard).
func New[V any](set Filter, load Loader[V], opts ...Option) (*Guard[V], error) {
	if load == nil {
		return nil, fmt.Errorf("%w: New needs a Loader", ErrInvalidParameter)
	}
	g := &Guard[V]{load: load, cfg: config{grace: DefaultGrace, readTimeout: DefaultReadTimeout, workers: defaultWorkers}}
	if err := option.Apply(&g.cfg, opts); err != nil {
		return nil, err
	}
	if s, ok := set.(*sharedSet); ok {
		s.useGrace(g.cfg.grace)
	}
	g.view.Store(newView(set))
	return g, nil
}

// Get returns the row of key. When the filter says the key is absent, it
// returns [ErrNotFound] at once, without calling load; otherwise it
// returns what load returns. Concurrent Gets of one key share one call of
// load (see the package documentation for which answers they share).
//
// When the filter cannot answer (a Shared set whose Redis is down, or has
// not answered within the read timeout of [WithReadTimeout], or lost the
// set's data: see [ErrLost]), Get calls load (fail open) or, under
// [WithFailClosed], returns an error wrapping the set's. A Get of an
// absent key through a Local set costs a filter lookup and a counter
// increment, and allocates nothing.
func (g *Guard[V]) Get(ctx context.Context, key []byte) (V, error) {
	v := g.view.Load()
	if f := v.local; f != nil {
		if !f.Contains(key) {
			g.count.add(cBlocked)
			var zero V
			return zero, ErrNotFound
		}
	} else if v.cur != nil {
		ok, err := g.contains(ctx, v.cur, key)
		switch {
		case err != nil:
			if err = g.setFailed(err); err != nil {
				var zero V
				return zero, err
			}
		case !ok:
			g.count.add(cBlocked)
			var zero V
			return zero, ErrNotFound
		}
	} else {
		g.count.add(cUnguarded)
	}
	return g.loadShared(ctx, key)
}

// contains asks set whether it may hold key, giving it the read timeout.
func (g *Guard[V]) contains(ctx context.Context, set Filter, key []byte) (bool, error) {
	rctx, cancel := context.WithTimeout(ctx, g.cfg.readTimeout)
	ok, err := set.Contains(rctx, key)
	cancel()
	return ok, timedOut(ctx, rctx, g.cfg.readTimeout, err)
}

// timedOut says so in err when the lookup context rctx, derived from ctx
// with the given read timeout, ran out.
func timedOut(ctx, rctx context.Context, timeout time.Duration, err error) error {
	if err != nil && ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("guard: no answer within the read timeout (%v): %w", timeout, err)
	}
	return err
}

// setFailed counts a lookup that the set could not answer, and returns
// the error Get returns for it (see failOver).
func (g *Guard[V]) setFailed(err error) error {
	g.countSetError(err)
	return g.failOver(err)
}

// countSetError counts a failed operation of the set.
func (g *Guard[V]) countSetError(err error) {
	g.count.add(cErrors)
	if errors.Is(err, ErrLost) {
		g.count.add(cLost)
	}
}

// failOver applies the failure policy to a key the set could not answer:
// it returns nil to fail open (go on to load), or err, wrapped, under
// WithFailClosed.
func (g *Guard[V]) failOver(err error) error {
	if g.cfg.failClosed {
		g.count.add(cFailedClosed)
		return fmt.Errorf("guard: the filter cannot answer: %w", err)
	}
	g.count.add(cFailedOpen)
	return nil
}

// loadShared calls load for a key the filter let through, or shares a
// call already running.
func (g *Guard[V]) loadShared(ctx context.Context, key []byte) (V, error) {
	g.count.add(cPassed)
	val, err, joined := g.flights.do(ctx, key, g.countedLoad)
	if joined {
		g.count.add(cJoined)
	}
	if errors.Is(err, ErrNotFound) {
		g.count.add(cMissing)
	}
	return val, err
}

func (g *Guard[V]) countedLoad(ctx context.Context, key []byte) (V, error) {
	g.count.add(cLoads)
	val, err := g.load(ctx, key)
	if err != nil && !errors.Is(err, ErrNotFound) {
		g.count.add(cLoadErrors)
	}
	return val, err
}

// Insert adds key to the filter, then runs write, which must create the
// row of key in the database and return when it has committed (or
// failed). The order is what keeps lookups right: the filter holds the
// key before the row can be seen. If the filter add fails, write is not
// run and Insert returns the set's error, wrapped. Otherwise it returns
// write's error as is. A write that fails leaves the key's fingerprint in
// the filter: a load for each later lookup of the key, never a wrong
// answer (a failed write may have committed, so the fingerprint cannot be
// taken back).
//
// While a Rebuild runs, the key also goes to the fresh set. Inserting a
// key whose row exists adds another copy of its fingerprint (the filter
// is a multiset): harmless, but each extra copy outlives the row by one
// Remove, and costs a load per lookup of the key until a Rebuild.
//
// A Shared set whose data Redis lost (see [ErrLost]) is no reason to
// refuse the write: no lookup reads what is gone, so Insert adds the key
// to what is left (a Rebuild's fresh generation, say), runs write, and
// counts the loss in Stats.Lost.
func (g *Guard[V]) Insert(ctx context.Context, key []byte, write func(context.Context) error) error {
	v := g.acquire()
	defer g.release(v)
	var used *sharedState
	switch {
	case v.shared != nil:
		st, lost, err := v.shared.add(ctx, key)
		if err != nil {
			g.count.add(cErrors)
			return fmt.Errorf("guard: insert: the filter add failed, the write was not run: %w", err)
		}
		if lost {
			g.count.add(cLost)
		}
		used = st
	case v.cur != nil:
		if err := v.cur.Add(ctx, key); err != nil {
			g.count.add(cErrors)
			return fmt.Errorf("guard: insert: the filter add failed, the write was not run: %w", err)
		}
	}
	if v.next != nil {
		if err := v.next.Add(ctx, key); err != nil {
			// The fresh set would lack the key: stop the Rebuild rather
			// than the write, unless it has swapped the set in already.
			g.count.add(cErrors)
			if !g.abandon(v.run, err) {
				return fmt.Errorf("guard: insert: the filter add failed, the write was not run: %w", err)
			}
		}
	}
	err := write(ctx)
	g.flights.forget(key)
	if err != nil {
		return err
	}
	if used != nil {
		late, err := v.shared.settle(ctx, key, used)
		if late {
			g.count.add(cLateAdds)
		}
		if err != nil {
			g.count.add(cErrors)
			return fmt.Errorf("%w: %w", ErrStale, err)
		}
	}
	return nil
}

// Remove runs write, which must delete the row of key from the database
// and return when it has committed, then deletes one copy of key from the
// filter: only after the delete committed, and only once, so the filter
// never loses a key whose row is still there. If write fails, the filter
// is not touched and Remove returns write's error as is.
//
// write must return an error (one wrapping [ErrNotFound], say) when there
// was no row to delete: deleting a fingerprint the key never added could
// remove the copy of another key that shares it, which would then read as
// absent.
//
// If the filter delete fails after the write succeeded, Remove returns an
// error wrapping [ErrStale] and the set's error: the row is gone and the
// filter keeps its fingerprint (a load per lookup of the key until a
// Rebuild); do not run the write again. While a Rebuild runs, the key is
// deleted from the current set only: the fresh set may or may not have it
// from the scan, and keeps a copy until the next Rebuild. A Shared set's
// generation that is gone is skipped, as for Insert.
func (g *Guard[V]) Remove(ctx context.Context, key []byte, write func(context.Context) error) error {
	v := g.acquire()
	defer g.release(v)
	// A Shared set's generations are read before the write: the delete
	// goes to those that held the key while the row existed.
	var st *sharedState
	var stErr error
	if v.shared != nil {
		st, stErr = v.shared.state(ctx)
	}
	err := write(ctx)
	g.flights.forget(key)
	if err != nil {
		return err
	}
	switch {
	case stErr != nil:
		err = stErr
	case v.shared != nil:
		var lost bool
		if _, lost, err = v.shared.delete(ctx, key, st); lost {
			g.count.add(cLost)
		}
	case v.cur != nil:
		_, err = v.cur.Delete(ctx, key)
	}
	if err != nil {
		g.count.add(cErrors)
		return fmt.Errorf("%w: %w", ErrStale, err)
	}
	return nil
}

// Stats returns the guard's counters.
func (g *Guard[V]) Stats() Stats { return g.count.stats() }

// acquire registers a write on the current view and returns it.
func (g *Guard[V]) acquire() *view {
	g.mu.Lock()
	v := g.view.Load()
	if v.writers++; v.writers == 1 {
		if g.busy == nil {
			g.busy = make(map[*view]struct{})
		}
		g.busy[v] = struct{}{}
	}
	g.mu.Unlock()
	return v
}

// release ends a write registered on v.
func (g *Guard[V]) release(v *view) {
	g.mu.Lock()
	if v.writers--; v.writers == 0 {
		delete(g.busy, v)
		if d := g.drain; d != nil {
			delete(d.pending, v)
			if len(d.pending) == 0 {
				close(d.done)
				g.drain = nil
			}
		}
	}
	g.mu.Unlock()
}

// drainedLocked returns a channel closed when every write in progress now
// has finished, whatever view it took. g.mu must be held, and only one
// drain may be waited for at a time.
func (g *Guard[V]) drainedLocked() <-chan struct{} {
	d := &drain{pending: make(map[*view]struct{}, len(g.busy)), done: make(chan struct{})}
	for v := range g.busy {
		d.pending[v] = struct{}{}
	}
	if len(d.pending) == 0 {
		close(d.done)
	} else {
		g.drain = d
	}
	return d.done
}

// stopDrain forgets a drain no one waits for any more.
func (g *Guard[V]) stopDrain() {
	g.mu.Lock()
	g.drain = nil
	g.mu.Unlock()
}

// abandon stops the Rebuild run because a write could not add its key to
// the fresh set: the view goes back to the current set alone, and the
// Rebuild returns cause. It reports whether the fresh set will never be
// current: false if the Rebuild swapped it in already.
func (g *Guard[V]) abandon(run *rebuildRun, cause error) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if run.swapped {
		return false
	}
	if v := g.view.Load(); v.run == run {
		run.err = cause
		g.view.Store(newView(v.cur))
	}
	return true
}
