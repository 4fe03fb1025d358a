package guard

import (
	"sync/atomic"
	"unsafe"
)

// Stats are a guard's counters since New. With operations running, a
// Stats is a moment's figures, each counter read at a slightly different
// moment.
type Stats struct {
	// Lookups counts keys looked up: each Get, each key of GetMany.
	Lookups uint64
	// Blocked counts lookups the filter answered alone: ErrNotFound
	// without a call of load. Each is a database query saved.
	Blocked uint64
	// Loads counts calls of load. Concurrent lookups of one key share a
	// call, so Loads can be less than the lookups that passed the filter.
	Loads uint64
	// Joined counts lookups answered by a call of load that another
	// lookup of the same key had started.
	Joined uint64
	// Missing counts lookups the filter let through whose load found no
	// row: the filter's false positives, and keys whose row was removed
	// while their fingerprint stayed (a Remove's write that failed after
	// committing, a removal during a Rebuild, a row deleted behind the
	// guard's back).
	Missing uint64
	// LoadErrors counts calls of load that failed other than with
	// ErrNotFound.
	LoadErrors uint64
	// Errors counts operations of the set that failed: lookups, adds and
	// deletes (Redis unreachable, a full filter).
	Errors uint64
	// FailedOpen counts lookups sent to load because the filter could
	// not answer (the default policy; see [WithFailClosed]).
	FailedOpen uint64
	// FailedClosed counts lookups that returned the set's error because
	// the filter could not answer, under [WithFailClosed].
	FailedClosed uint64
	// Lost counts lookups (a GetMany once, as in Errors), Inserts and
	// Removes that found the Shared set's data gone from Redis (see
	// [ErrLost]): the lookups failed over (and count in Errors and
	// FailedOpen or FailedClosed too); the writes skipped what was gone.
	// Any rise says the set needs a Rebuild.
	Lost uint64
	// Unguarded counts lookups made while the guard had no set (New with
	// a nil set, before the first Rebuild): each went to load.
	Unguarded uint64
	// LateAdds counts Inserts into a Shared set whose write outlasted the
	// grace period, so that they added their key to a generation
	// announced meanwhile after the write (see [WithGrace]).
	LateAdds uint64
	// Rebuilds counts Rebuilds that swapped their fresh set in.
	Rebuilds uint64
}

// FalsePositiveRate returns the measured rate at which the filter lets
// lookups of absent keys through to the database: Missing / (Blocked +
// Missing), or 0 before any such lookup. It tracks the filter's
// false-positive rate, plus the keys that keep a fingerprint after their
// row is gone; a rate well above the filter's target says it is time to
// Rebuild (see the package documentation).
func (s Stats) FalsePositiveRate() float64 {
	if s.Blocked+s.Missing == 0 {
		return 0
	}
	return float64(s.Missing) / float64(s.Blocked+s.Missing)
}

// The counters, as indexes into a stripe.
const (
	cBlocked = iota
	cPassed  // lookups that went on to the load stage
	cLoads
	cJoined
	cMissing
	cLoadErrors
	cErrors
	cFailedOpen
	cFailedClosed
	cLost
	cUnguarded
	cLateAdds
	cRebuilds
	numCounters
)

// stripes is the number of copies of the counters: goroutines add to
// copies picked by where their stacks lie, so that goroutines on
// different cores rarely write the same cache line.
const stripes = 16

// stripe is one copy of the counters, a cache line or two of its own.
type stripe struct {
	c [numCounters]atomic.Uint64
	_ [128 - numCounters*8%128]byte
}

// counters is a guard's Stats, striped.
type counters struct {
	s [stripes]stripe
}

func (c *counters) add(i int) {
	// The address of a local variable says which goroutine's stack this
	// is: a stripe per goroutine (more or less), for the price of a shift,
	// where a random number costs more than the filter lookup it counts.
	var here byte
	p := uintptr(unsafe.Pointer(&here))
	c.s[(p>>11^p>>15)%stripes].c[i].Add(1)
}

func (c *counters) sum(i int) uint64 {
	var n uint64
	for k := range c.s {
		n += c.s[k].c[i].Load()
	}
	return n
}

func (c *counters) stats() Stats {
	s := Stats{
		Blocked:      c.sum(cBlocked),
		Loads:        c.sum(cLoads),
		Joined:       c.sum(cJoined),
		Missing:      c.sum(cMissing),
		LoadErrors:   c.sum(cLoadErrors),
		Errors:       c.sum(cErrors),
		FailedOpen:   c.sum(cFailedOpen),
		FailedClosed: c.sum(cFailedClosed),
		Lost:         c.sum(cLost),
		Unguarded:    c.sum(cUnguarded),
		LateAdds:     c.sum(cLateAdds),
		Rebuilds:     c.sum(cRebuilds),
	}
	// A lookup is blocked, fails closed, or passes on to load; counting
	// the three keeps the blocked path to one increment.
	s.Lookups = s.Blocked + s.FailedClosed + c.sum(cPassed)
	return s
}
