package guard

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dedupkit/cuckoo/redisfilter"
)

// manyLoads is the most loads one GetMany runs at once.
const manyLoads = 8

// keysPerReadTimeout is the keys of a GetMany that one read timeout
// covers: a round of a Shared set's batch lookup.
const keysPerReadTimeout = 8192

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
	case v.cur != nil:
		timeout := g.cfg.readTimeout * time.Duration(max(1, (len(keys)+keysPerReadTimeout-1)/keysPerReadTimeout))
		rctx, cancel := context.WithTimeout(ctx, timeout)
		if v.shared != nil {
			setErr = v.shared.containsBatch(rctx, keys, found)
		} else {
			for i, k := range keys {
				if found[i], setErr = v.cur.Contains(rctx, k); setErr != nil {
					break
				}
			}
		}
		cancel()
		setErr = timedOut(ctx, rctx, timeout, setErr)
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
		g.countSetError(setErr)
		for i := range keys {
			if err := g.failOver(setErr); err != nil {
				vals[i], errs[i] = zero, err
				found[i] = false
			} else {
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
// checks of Contains. A key the filter did not answer fails the whole
// batch, so that the failure policy decides for every key.
func (s *sharedSet) containsBatch(ctx context.Context, keys [][]byte, found []bool) error {
	if s.waitsPast(ctx) {
		// The lookup may go on after this returns: it gets keys of its
		// own, and its own answers, copied back if it finishes in time.
		keys = cloneKeys(keys)
		out := found
		found = make([]bool, len(keys))
		_, err := lookUp(ctx, s, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, s.lookUpBatch(ctx, keys, found)
		})
		if err == nil {
			copy(out, found)
		}
		return err
	}
	return s.lookUpBatch(ctx, keys, found)
}

func (s *sharedSet) lookUpBatch(ctx context.Context, keys [][]byte, found []bool) error {
	errs := make([]error, len(keys))
	return s.lookUpCurrent(ctx, func(ctx context.Context, cur *redisfilter.Filter) (no bool, err error) {
		if err := cur.ContainsBatchChecked(ctx, keys, found, errs); err != nil {
			return false, err // a key it could not read
		}
		return slices.Contains(found, false), nil
	})
}

// cloneKeys returns a copy of keys in one buffer.
func cloneKeys(keys [][]byte) [][]byte {
	n := 0
	for _, k := range keys {
		n += len(k)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(keys))
	for i, k := range keys {
		buf = append(buf, k...)
		out[i] = buf[len(buf)-len(k) : len(buf) : len(buf)]
	}
	return out
}
