package guard

import "time"

// Option configures a Guard (see [New]).
type Option func(*config)

type config struct {
	failClosed bool
	grace      time.Duration
	workers    int
}

// DefaultGrace is the grace period of [WithGrace] when none is given.
const DefaultGrace = 10 * time.Second

// defaultWorkers is the default of WithRebuildConcurrency.
const defaultWorkers = 32

// WithFailClosed makes Get return the set's error, wrapped, when the
// filter cannot answer (Redis down, say), instead of asking load: the
// database is spared at the cost of failed lookups. The default is to
// fail open: such a lookup goes to load, and Stats counts it in
// FailedOpen.
func WithFailClosed() Option { return func(c *config) { c.failClosed = true } }

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
	if d <= 0 {
		panic("guard: WithGrace needs a positive duration")
	}
	return func(c *config) { c.grace = d }
}

// WithRebuildConcurrency sets how many keys a Rebuild adds to a fresh
// Shared set at once (default 32): each add is a round trip to Redis, so
// the scan's speed is about n round trips at a time. Local sets are
// filled by the scanning goroutine alone. It must be positive.
func WithRebuildConcurrency(n int) Option {
	if n <= 0 {
		panic("guard: WithRebuildConcurrency needs a positive count")
	}
	return func(c *config) { c.workers = n }
}
