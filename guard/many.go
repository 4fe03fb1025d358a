package guard

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// manyLoads is the most loads one GetMany runs at once.
const manyLoads = 8

// GetMany looks up many keys at once: vals[i] and errs[i] are what
// Get(ctx, keys[i]) would return. The filter answers for all the keys in
// one batch (a Local set: the batch lookup of [cuckoo.Concurrent], which
// overlaps the keys' cache misses; a Shared set: one pipelined round trip
// per node for up to thousands of keys), then the keys it lets through
// are loaded, up to 8 at a time, each shared with concurrent lookups as
// in Get. vals and errs must be as long as keys; GetMany returns an error
// wrapping [ErrInvalidParameter] if they are not, and nil otherwise (the
// keys' errors are in errs).
func (g *Guard[V]) GetMany(ctx context.Context, keys [][]byte, vals []V, errs []error) error {
	if len(vals) != len(keys) || len(errs) != len(keys) {
		return fmt.Errorf("%w: GetMany of %d keys with %d values and %d errors", ErrInvalidParameter, len(keys), len(vals), len(errs))
	}
	clear(vals)
	clear(errs)
	found := make([]bool, len(keys))
	v := g.view.Load()
	var setErr error
	switch {
	case v.local != nil:
		v.local.ContainsBatch(keys, found)
	case v.shared != nil:
		setErr = v.shared.containsBatch(ctx, keys, found)
	case v.cur != nil:
		for i, k := range keys {
			if found[i], setErr = v.cur.Contains(ctx, k); setErr != nil {
				break
			}
		}
	}
	var zero V
	switch {
	case v.cur == nil:
		for range keys {
			g.count.add(cUnguarded)
		}
		for i := range found {
			found[i] = true
		}
	case setErr != nil:
		g.count.add(cErrors)
		for i := range keys {
			if g.cfg.failClosed {
				g.count.add(cFailedClosed)
				vals[i], errs[i] = zero, fmt.Errorf("guard: the filter cannot answer: %w", setErr)
				found[i] = false
			} else {
				g.count.add(cFailedOpen)
				found[i] = true
			}
		}
	}

	sem := make(chan struct{}, manyLoads)
	var wg sync.WaitGroup
	for i, k := range keys {
		if !found[i] {
			if errs[i] == nil {
				g.count.add(cBlocked)
				vals[i], errs[i] = zero, ErrNotFound
			}
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			vals[i], errs[i] = g.loadShared(ctx, k)
		}()
	}
	wg.Wait()
	return nil
}

// containsBatch is the batch lookup of the current generation, with the
// staleness rule of Contains. A key the filter did not answer fails the
// whole batch, so that the failure policy decides for every key.
func (s *sharedSet) containsBatch(ctx context.Context, keys [][]byte, found []bool) error {
	errs := make([]error, len(keys))
	st, err := s.state(ctx)
	for range 3 {
		if err != nil {
			return err
		}
		if err := st.cur.ContainsBatch(ctx, keys, found, errs); err != nil {
			return err
		}
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		if time.Since(st.sent) < st.grace {
			return nil
		}
		st, err = s.stateSince(ctx, time.Now())
	}
	return errTooSlow
}
