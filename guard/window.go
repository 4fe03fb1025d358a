package guard

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/dedupkit/cuckoo/redisfilter"
)

// SharedWindow returns the set of a window filter in Redis
// ([redisfilter.Window]), shared by a fleet of processes, for a table
// whose rows expire: rate-limit counters, idempotency keys kept for a
// day, sessions, tombstones of recently deleted rows. It holds every key
// inserted within the last window (by the clock of Redis), so a guard on
// it answers "not found" without a query for a key not inserted within
// it.
//
// Its one difference from the other sets: a key is forgotten between one
// window and one window plus a granularity ([redisfilter.Window.Granularity],
// about window/14) after its last Insert, whether its row is still there
// or not. So its rows must expire within the window of their last Insert
// (an Insert of an existing key refreshes it); a row that outlives it is
// answered "not found" by Get. For such a table it is right, and spares
// the guard what a table of expiring rows would need otherwise: a Remove
// for each row that expires, and Rebuilds.
//
// Delete does nothing (reporting false): a window holds a key once,
// sharing its slot with the keys of the same buckets and fingerprint, so
// deleting a key could take a colliding key's entry with it, which would
// then read as absent while its row exists. A row Removed before its time
// keeps its key in the window until it expires: its lookups cost a load
// until then, never a wrong answer. For the same reason the set is not
// rebuilt ([Guard.Rebuild] refuses it): its keys expire by themselves;
// a window that fills up (Insert fails with [redisfilter.ErrFull]) is
// replaced by a larger one under another name, which a new guard uses
// once it has held a window's rows.
//
// Lookups are checked as a [Shared] set's are: a window whose keys Redis
// lost (or that was dropped, or dropped and made again) fails them with
// an error wrapping [ErrLost] instead of answering "not found", and
// Inserts go on without it (no lookup reads what is gone). To recover,
// make a window under another name and move the guards to it once it has
// held a window's rows. Each operation costs one round trip: a lookup
// reads the key's buckets and the server's time, an Insert runs one
// function call.
func SharedWindow(w *redisfilter.Window) Filter {
	if w == nil {
		panic("guard: SharedWindow of a nil window")
	}
	return &windowSet{w: w, honoursDeadlines: honoursDeadlines(w.Client())}
}

type windowSet struct {
	w                *redisfilter.Window
	honoursDeadlines bool
}

func (s *windowSet) waitsPast(ctx context.Context) bool {
	if s.honoursDeadlines {
		return false
	}
	_, ok := ctx.Deadline()
	return ok
}

func (s *windowSet) redisName() string { return s.w.Name() }

// Contains reports whether key was inserted within the window. It returns
// an error wrapping ErrLost when the window's keys are gone, and returns
// by ctx's deadline.
func (s *windowSet) Contains(ctx context.Context, key []byte) (bool, error) {
	if s.waitsPast(ctx) {
		key = bytes.Clone(key) // read by the lookup after Contains returned, maybe
	}
	return lookUp(ctx, s, func(ctx context.Context) (bool, error) {
		ok, err := s.w.ContainsChecked(ctx, key)
		return ok, s.lost(err)
	})
}

func (s *windowSet) containsBatch(ctx context.Context, keys [][]byte, found []bool) error {
	read := func(ctx context.Context, keys [][]byte, found []bool) error {
		return s.lost(s.w.ContainsBatchChecked(ctx, keys, found, make([]error, len(keys))))
	}
	if !s.waitsPast(ctx) {
		return read(ctx, keys, found)
	}
	keys = cloneKeys(keys)
	own := make([]bool, len(keys))
	_, err := lookUp(ctx, s, func(ctx context.Context) (struct{}, error) { return struct{}{}, read(ctx, keys, own) })
	if err == nil {
		copy(found, own)
	}
	return err
}

// lost wraps ErrLost around an error saying the window's keys are gone.
func (s *windowSet) lost(err error) error {
	if errors.Is(err, redisfilter.ErrNotFound) {
		return fmt.Errorf("%w: the window %q: %w", ErrLost, s.w.Name(), err)
	}
	return err
}

// Add adds key to the window, or refreshes its time if it is there; a
// window that is gone is skipped (its lookups fail over).
func (s *windowSet) Add(ctx context.Context, key []byte) error {
	if err := s.w.Add(ctx, key); !errors.Is(err, redisfilter.ErrNotFound) {
		return err
	}
	return nil
}

// Delete does nothing: see SharedWindow.
func (s *windowSet) Delete(context.Context, []byte) (bool, error) { return false, nil }
