package guard

import (
	"fmt"
	"time"
)

// Option configures a Guard (see [New]). An option given a bad value
// makes New return an error wrapping [ErrInvalidParameter].
type Option func(*config) error

type config struct {
	failClosed  bool
	grace       time.Duration
	readTimeout time.Duration
	workers     int
}

// DefaultGrace is the grace period of [WithGrace] when none is given.
const DefaultGrace = 10 * time.Second

// DefaultReadTimeout is the read timeout of [WithReadTimeout] when none is
// given.
const DefaultReadTimeout = time.Second

// defaultWorkers is the default of WithRebuildConcurrency.
const defaultWorkers = 32

// WithFailClosed makes Get return the set's error, wrapped, when the
// filter cannot answer (Redis down, say), instead of asking load: the
// database is spared at the cost of failed lookups. The default is to
// fail open: such a lookup goes to load, and Stats counts it in
// FailedOpen.
func WithFailClosed() Option {
	return func(c *config) error { c.failClosed = true; return nil }
}

// WithReadTimeout bounds how long a lookup waits for its set's answer
// (default [DefaultReadTimeout]): a Get whose Shared set has not answered
// within d (Redis down, stalled or paused; a lookup without a reply is
// sent again until then) fails over as the failure policy says: load, or
// an error under [WithFailClosed]. A lookup changes nothing, so nothing
// is lost by giving up on it; writes keep their own retries (see
// [redisfilter.WithRetryHorizon]). GetMany allows d per 8,192 keys.
//
// The set's lookup gets a context with that deadline. A Shared set stops
// waiting at it even when its go-redis client does not honour context
// deadlines, by waiting for the reply in another goroutine, which costs
// a goroutine and a hand-off per lookup (docs/guard.md measures it); a
// client made with ContextTimeoutEnabled honours them and spares that.
// The read timeout does not apply to Local sets, which never wait. It
// must be positive.
func WithReadTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithReadTimeout(%v): it needs a positive duration", ErrInvalidParameter, d)
		}
		c.readTimeout = d
		return nil
	}
}

// WithGrace sets the grace period of a Shared set's Rebuild (default
// [DefaultGrace]). Rebuild waits this long after announcing the fresh
// generation before it scans, so that every write that began before the
// announcement has committed and the scan sees it; and it keeps the old
// generation up to date this long after the swap before it drops it, so
// that a process that has not yet seen the swap still reads a right
// filter. Every process refreshes its view of the set at least 8 times
// per grace period (one GET).
//
// Choose it longer than any write through the guard takes, from the call
// of Insert to the return of its write: a longer write is added to the
// fresh generation after it commits (Stats.LateAdds counts them), which
// leaves a moment in which another process may not find its row. The
// rebuilding process's grace period is recorded in Redis and governs
// every process from then on; before the first Rebuild of a set, give
// every process the same value. It must be positive; it does not matter
// for Local sets.
func WithGrace(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithGrace(%v): it needs a positive duration", ErrInvalidParameter, d)
		}
		c.grace = d
		return nil
	}
}

// WithRebuildConcurrency sets how many keys a Rebuild adds to a fresh
// Shared set at once (default 32): each add is a round trip to Redis, so
// the scan's speed is about n round trips at a time. Local sets are
// filled by the scanning goroutine alone. It must be positive.
func WithRebuildConcurrency(n int) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("%w: WithRebuildConcurrency(%d): it needs a positive count", ErrInvalidParameter, n)
		}
		c.workers = n
		return nil
	}
}
