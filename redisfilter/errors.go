package redisfilter

import "errors"

var (
	// ErrFull is returned by Add (and reported per key by AddBatch) when no
	// room can be made for a key in its segment; the segment is then exactly as
	// it was.
	ErrFull = errors.New("redisfilter: filter is full")
	// ErrNotFound is returned by Open (and OpenWindow) when no filter of
	// that name exists,
	// and by the operations of a Filter whose filter was dropped (or
	// dropped and created again, or lost by Redis) since it was opened:
	// its writes, Len, and the checked lookups (ContainsChecked); Contains
	// reads such a filter as empty.
	ErrNotFound = errors.New("redisfilter: no such filter")
	// ErrMismatch is returned by New (and NewWindow, NewBloom) when a
	// filter of that name exists with other parameters; nothing is
	// changed.
	ErrMismatch = errors.New("redisfilter: a filter of that name exists with other parameters")
	// ErrExists is returned by Push (and PushWindow) when a filter of that
	// name exists and replacing it was not asked for; nothing is changed.
	ErrExists = errors.New("redisfilter: a filter of that name exists")
	// ErrBusy is returned by New and Open (NewWindow and OpenWindow) while
	// a filter of that name is being pushed (or a push of it was
	// interrupted: push it again, with replace set).
	ErrBusy = errors.New("redisfilter: the filter is being pushed")
	// ErrUnsupported is returned when the server lacks what a filter needs
	// (Redis Functions, from Redis 7.0), a filter file has a shape the
	// Redis filters do not take (semi-sorted buckets, a growing table, a
	// window shorter than MinWindow), or a window of several segments is
	// to be snapshot (the library's Window has one table).
	ErrUnsupported = errors.New("redisfilter: not supported")
	// ErrNotReplicated is returned by the writes of a [Filter.Durable]
	// filter when fewer replicas than asked acknowledged a write within the
	// timeout. The write was applied on the master: it is there unless the
	// master fails before its replicas receive it.
	ErrNotReplicated = errors.New("redisfilter: write not acknowledged by enough replicas")
	// ErrUnconfirmed is wrapped by the error of a write (and of each key
	// of a batch) whose outcome is unknown: a copy of it reached Redis and
	// got no reply that can be believed (a timeout, a lost connection, a
	// reply too late: the server stalled, restarted or failed over, or
	// the network failed), and no later copy got one either, within the
	// retry horizon ([WithRetryHorizon]) or before the context ended. A
	// later copy that Redis refused (out of memory, busy, loading) does
	// not settle it: the refusal speaks for that copy only, and the
	// error wraps it. The write may have been applied, or may be applied
	// yet by a copy waiting in a stalled server; it is applied at most
	// once if that copy runs within the retry window ([WithRetryWindow])
	// of the first. Nothing else about the filter is uncertain. The error
	// also wraps the last cause (a timeout, a closed connection, a
	// refusal, the context's error).
	ErrUnconfirmed = errors.New("redisfilter: write not confirmed (it may or may not have been applied)")
	// ErrNotSent is wrapped by the error of a write that never reached
	// Redis, so nothing was done: each key of a batch after the batch
	// stopped (after a call it could not confirm, or when the context
	// ended), and a write whose context ended before it was sent or no
	// send of which could connect within the retry horizon.
	ErrNotSent = errors.New("redisfilter: not sent (nothing was done)")
	// ErrCorrupt is returned when a filter's keys in Redis do not hold what
	// this package wrote (metadata it cannot parse, a segment of the wrong
	// size or with counters that break the filter's invariants).
	ErrCorrupt = errors.New("redisfilter: filter data in Redis is damaged")
	// ErrInvalidParameter is wrapped by the errors of New and NewBloom for
	// out-of-range parameters, and of the batch calls for slices of the
	// wrong length.
	ErrInvalidParameter = errors.New("redisfilter: invalid parameter")
)
