package guard

import "errors"

var (
	// ErrNotFound is returned by Get when the row does not exist: at once,
	// without a call of load, when the filter says the key is absent, or
	// as load returned it (an error wrapping ErrNotFound). A Loader reports
	// a missing row with an error wrapping it, and so does a Remove's
	// write that deleted nothing.
	ErrNotFound = errors.New("guard: not found")

	// ErrStale is wrapped by the error of an Insert or Remove whose write
	// succeeded but whose filter update did not: the row is written, and
	// the filter keeps a fingerprint it should have dropped (Remove: a
	// load for each later lookup of the key, until a Rebuild) or a newer
	// generation of a Shared set may lack the key (an Insert whose write
	// outlasted the grace period; see [WithGrace]). The error also wraps
	// the set's error. Do not run the write again.
	ErrStale = errors.New("guard: the row is written but the filter could not be updated")

	// ErrAbandoned is wrapped by the error of a Rebuild that another party
	// stopped: a write could not add its key to the fresh set (the fresh
	// set would have lacked it, so it is never swapped in), or, for a
	// Shared set, another process started a Rebuild of the same set. The
	// current set stays in place, right.
	ErrAbandoned = errors.New("guard: rebuild abandoned")

	// ErrLost is wrapped by the error of a lookup of a Shared set whose
	// data Redis lost: the set's pointer is gone after this process had
	// read it, or the keys of its current generation are gone (a
	// FLUSHALL, a restart without persistence, a failover to a replica
	// that lacked them, an eviction, a DEL). A lost generation cannot say
	// that a key is absent, so such a lookup fails over as the failure
	// policy says (Get calls load, or under [WithFailClosed] returns this
	// error), and Stats.Lost counts it. Inserts and Removes go on, adding
	// to and deleting from what is left. A Rebuild recovers the set: its
	// fresh generation becomes current.
	ErrLost = errors.New("guard: the Shared set's data is gone from Redis")

	// ErrInvalidParameter is wrapped by the errors of calls given
	// arguments they cannot use: a nil fresh set, a fresh set of another
	// kind than the current one, a generation name already in use, slices
	// of the wrong length.
	ErrInvalidParameter = errors.New("guard: invalid parameter")
)
