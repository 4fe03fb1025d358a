package guard

import (
	"context"
	"fmt"
	"sync"
)

// Scan yields the key of every row of the table (see [Guard.Rebuild]).
type Scan = func(ctx context.Context, yield func(key []byte) error) error

// Rebuild fills fresh from a scan of the database while writes go on,
// then makes it the guard's set in one atomic step: lookups never see a
// half-filled set, and no committed row is ever missing from the set they
// see. fresh must be empty, and of the kind of the current set: a Shared
// set's Rebuild takes a fresh Shared set (a new generation: a filter of
// another name on the same Redis) and swaps it in for every process that
// uses the set; any other takes any other set, swapped in for this guard.
// A [SharedWindow] set is not rebuilt, nor rebuilt into: its keys expire.
//
// scan must call yield with the key of every row that exists from the
// start of the scan to its end (one SELECT does: it reads one snapshot;
// so does a walk by key ranges in several transactions) and return
// yield's error if it gets one. yield copies what it keeps of key, so
// scan may reuse its buffer. A key yielded twice costs a second copy
// (harmless).
//
// How it stays right: first every Insert and Remove also reaches fresh
// (Inserts add to both sets, before their write as always; Removes delete
// from the current set only, since fresh may lack the key). Rebuild then
// waits until the writes that began before this are done, so their rows
// are committed and the scan sees them, then scans, then swaps. For a
// Shared set the waits are the grace period ([WithGrace]): Rebuild takes
// at least twice that, and drops the old generation at the end. If ctx
// ends during that last wait, Rebuild returns nil (the swap is done) and
// a later Rebuild drops the old generation.
//
// When to rebuild: when the filter nears its capacity (Local:
// LoadFactor above about 0.9; Shared: Len near Capacity), into a bigger
// set; and when Stats.FalsePositiveRate drifts well above the filter's
// rate, as extra fingerprints pile up (failed writes, Inserts of rows
// that exist, Removes during a Rebuild) — deletes themselves do not
// degrade a cuckoo filter. Rebuilds of one guard run one at a time.
//
// On an error nothing changes for lookups: the current set stays. The
// error wraps scan's or the fresh set's, or [ErrAbandoned] when a write
// could not add its key to fresh.
func (g *Guard[V]) Rebuild(ctx context.Context, fresh Filter, scan Scan) error {
	if fresh == nil {
		return fmt.Errorf("%w: Rebuild of a nil set", ErrInvalidParameter)
	}
	g.rebuildMu.Lock()
	defer g.rebuildMu.Unlock()
	cur := g.view.Load()
	freshShared, _ := fresh.(*sharedSet)
	_, curWindow := cur.cur.(*windowSet)
	_, freshWindow := fresh.(*windowSet)
	switch {
	case curWindow || freshWindow:
		return fmt.Errorf("%w: a SharedWindow set is not rebuilt (its keys expire by themselves)", ErrInvalidParameter)
	case cur.shared != nil && freshShared == nil:
		return fmt.Errorf("%w: a Shared set is rebuilt into a fresh Shared set", ErrInvalidParameter)
	case cur.shared != nil:
		if err := g.rebuildShared(ctx, cur.shared, freshShared, scan); err != nil {
			return err
		}
	case freshShared != nil:
		return fmt.Errorf("%w: only a guard of a Shared set is rebuilt into a Shared set (open it with OpenShared)", ErrInvalidParameter)
	default:
		if err := g.rebuildLocal(ctx, fresh, scan); err != nil {
			return err
		}
	}
	g.count.add(cRebuilds)
	return nil
}

// rebuildLocal is Rebuild of a set this guard alone uses.
func (g *Guard[V]) rebuildLocal(ctx context.Context, fresh Filter, scan Scan) (err error) {
	run := &rebuildRun{}
	g.mu.Lock()
	nv := newView(g.view.Load().cur)
	nv.next, nv.run = fresh, run
	g.view.Store(nv)
	drained := g.drainedLocked()
	g.mu.Unlock()
	defer func() {
		if err != nil {
			g.abandon(run, err)
		}
	}()

	// Writes that took a view without fresh in it (this Rebuild's
	// predecessor, or an older one) may be about to commit rows fresh
	// lacks: the scan must start after they finish.
	select {
	case <-drained:
	case <-ctx.Done():
		g.stopDrain()
		return fmt.Errorf("guard: rebuild: %w", ctx.Err())
	}
	if _, err := fill(ctx, addTo(fresh), 1, scan); err != nil {
		return fmt.Errorf("guard: rebuild: %w", err)
	}

	g.mu.Lock()
	defer g.mu.Unlock()
	if v := g.view.Load(); v.run != run {
		return fmt.Errorf("%w: %w", ErrAbandoned, run.err)
	}
	run.swapped = true
	g.view.Store(newView(fresh))
	return nil
}

// addTo returns the add of set, for fill.
func addTo(set Filter) func(ctx context.Context, key []byte) error {
	if l, ok := set.(*localSet); ok {
		return func(_ context.Context, key []byte) error { return l.f.Add(key) }
	}
	return set.Add
}

// Fill adds the key of every row that scan yields to set, and returns the
// number of keys it added. Use it to fill a set before guards use it (the
// first generation of a Shared set, before the fleet starts, say); while
// writes run, use [Guard.Rebuild], which keeps them in step. scan is as
// Rebuild's. Fill stops at the first error, of scan or of the set; a
// Shared set is filled with 32 adds at a time.
func Fill(ctx context.Context, set Filter, scan Scan) (int64, error) {
	if s, ok := set.(*sharedSet); ok {
		return fill(ctx, s.Add, defaultWorkers, scan)
	}
	return fill(ctx, addTo(set), 1, scan)
}

// fill calls add for every key scan yields, from workers goroutines when
// workers > 1 (copying each key), and returns the keys added.
func fill(ctx context.Context, add func(context.Context, []byte) error, workers int, scan Scan) (int64, error) {
	var n int64
	if workers <= 1 {
		err := scan(ctx, func(key []byte) error {
			if err := add(ctx, key); err != nil {
				return err
			}
			n++
			return nil
		})
		return n, err
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	keys := make(chan []byte, 4*workers)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var added int64
			for k := range keys {
				if ctx.Err() != nil {
					continue
				}
				if err := add(ctx, k); err != nil {
					cancel(err)
					continue
				}
				added++
			}
			mu.Lock()
			n += added
			mu.Unlock()
		}()
	}
	err := scan(ctx, func(key []byte) error {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		select {
		case keys <- append([]byte(nil), key...):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	close(keys)
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil && err == nil {
		err = cause
	}
	return n, err
}
