package cuckoo

import (
	"runtime"
	"sync/atomic"
	"time"
	"weak"
)

// The default clock of a Window. Writers need the exact time: a stamp one
// epoch too old would drop a key before its window is over, one epoch too
// young would age the others early. Lookups only need a time that is never
// ahead of the real one and not far behind it: a late time keeps keys a
// little longer, never shorter. So writers read the monotonic clock
// (anchored to the wall clock once an epoch), and lookups read a coarse
// clock: a monotonic time that a goroutine of the Window's own stores every
// tick, an eighth of an epoch. Reading the clock costs a lookup one atomic
// load instead of a clock call (about 20 ns on common hardware, 60 ns on
// some virtual machines).
//
// The goroutine is started by the first lookup that reads the clock, and it
// ends when the Window is unreachable: it holds only a weak pointer to the
// clock it ticks, and a cleanup attached to that clock stops it. Windows
// whose tick would be shorter than minCoarseTick read the exact clock
// everywhere, so that a scheduling delay of the goroutine stays small
// beside its tick.

// minCoarseTick is the shortest tick of a coarse clock: windows shorter
// than 8·14 ticks (5.6 s) read the exact clock on lookups too.
const minCoarseTick = 50 * time.Millisecond

// monoBase is the origin of monoNanos, a second in the past so that its
// readings are never 0 (a coarse clock's "not started").
var monoBase = time.Now().Add(-time.Second)

// monoNanos returns the monotonic clock's time in ns since monoBase.
func monoNanos() int64 { return int64(time.Since(monoBase)) }

// coarseClock is the time lookups read: monoNanos as of the latest tick.
type coarseClock struct {
	ns     atomic.Int64 // 0 until started
	tick   time.Duration
	exited chan struct{} // closed when the ticks end (set by start)
}

// coarseTick returns the tick of a Window's coarse clock for epochs of gran
// ns, or 0 when the Window reads the exact clock on lookups.
func coarseTick(gran int64) time.Duration {
	if t := time.Duration(gran / 8); t >= minCoarseTick {
		return t
	}
	return 0
}

// read returns the time of the latest tick in monoNanos, starting the
// ticks on the first call. Any number of goroutines may call it at once.
func (c *coarseClock) read() int64 {
	if ns := c.ns.Load(); ns != 0 {
		return ns
	}
	return c.start()
}

// start reads the exact time and, in the one goroutine whose reading is
// stored first, starts the ticks.
func (c *coarseClock) start() int64 {
	ns := monoNanos()
	if !c.ns.CompareAndSwap(0, ns) {
		return c.ns.Load()
	}
	stop := make(chan struct{})
	c.exited = make(chan struct{})
	runtime.AddCleanup(c, func(stop chan struct{}) { close(stop) }, stop)
	go tickCoarse(weak.Make(c), c.tick, stop, c.exited)
	return ns
}

// tickCoarse stores the time in the clock every tick until the clock is
// unreachable (stop closed, or the weak pointer cleared), then closes
// exited.
func tickCoarse(p weak.Pointer[coarseClock], tick time.Duration, stop <-chan struct{}, exited chan<- struct{}) {
	defer close(exited)
	tk := time.NewTicker(tick)
	defer tk.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tk.C:
			c := p.Value()
			if c == nil {
				return
			}
			c.ns.Store(monoNanos())
		}
	}
}
