// Package guard puts a filter in front of a database, so that lookups of
// keys that do not exist are answered without asking it, and keeps the
// filter right while rows are inserted and deleted.
//
// A cache does not stop a flood of lookups for keys that do not exist
// ("cache penetration": an id a client made up, a scan for deleted
// records): there is nothing to cache, so every one reaches the database.
// A guard answers such a lookup from a cuckoo filter of the table's keys,
// in nanoseconds (a [Local] set in the process) or one round trip (a
// [Shared] set in Redis, one for a fleet of processes), and calls the
// loader only for keys the filter may hold: the rows, and absent keys at
// the filter's false-positive rate. For a table whose rows expire (rate
// limits, idempotency keys, tombstones), a [SharedWindow] set is a window
// filter in Redis that forgets keys by itself: its one difference is that
// a key is forgotten a window after its last Insert.
//
//	g, err := guard.New(guard.Local(filter), loadUser) // filter holds every user id
//	u, err := g.Get(ctx, id)                      // guard.ErrNotFound, often without a query
//	err = g.Insert(ctx, id, func(ctx context.Context) error { return insertUser(ctx, u) })
//	err = g.Remove(ctx, id, func(ctx context.Context) error { return deleteUser(ctx, id) })
//	err = g.Rebuild(ctx, guard.Local(bigger), scanUserIDs) // swap in a fresh filter, no window
//
// The hard part is not the lookup but keeping the filter right: a filter
// that lacks the key of a row that exists turns a lookup into a wrong
// "not found". The classic failures are a row inserted between a filter's
// build and its swap, a filter updated after the database (a lookup in
// between misses the row), and a delete applied to the filter before the
// database (or twice). The guard orders every step so that none can
// happen, and a cuckoo filter, unlike a Bloom filter, can delete, so
// removed rows stop costing loads.
//
// # Guarantees
//
//  1. Never "not found" for a row that exists: a row whose Insert write
//     committed, and whose Remove write did not, is always found by Get,
//     during concurrent Inserts, Removes, lookups and Rebuilds, in one
//     process and across processes sharing a Shared set. The order of
//     operations makes it hold: Insert adds the key to the filter before
//     its write runs, Remove deletes it from the filter only after its
//     write committed, and only once; a write that fails leaves at most an
//     extra fingerprint, which costs a load, never a wrong answer.
//     docs/guard.md gives the argument.
//  2. The database is spared: lookups of absent keys call load at the
//     filter's false-positive rate. Stats counts them (Blocked, Missing)
//     and [Stats.FalsePositiveRate] gives the measured rate.
//  3. Rebuild without a window: [Guard.Rebuild] fills a fresh set from a
//     scan of the database while writes go on (every Insert and Remove
//     during it reaches both sets), then swaps it in atomically. For a
//     Shared set the swap is seen by every process using the set: its
//     name in Redis points to the current generation and is swapped
//     atomically, and the old generation is dropped after a grace period.
//     Rebuilding is also how a filter that has filled up, or whose rate
//     drifted, is renewed (see below).
//  4. Concurrent loads of one key share one call of load. A lookup takes a
//     row from any load already running; it takes "not found" only from a
//     load that began after it arrived, so a row committed just before a
//     lookup began is never hidden by an older answer.
//  5. Failure policy: when the filter cannot answer (Redis down, or not
//     answering within the read timeout, 1 s by default: see
//     [WithReadTimeout]), Get goes to load by default (fail open, counted
//     in Stats.FailedOpen), or returns the set's error under
//     [WithFailClosed]. Insert and Remove return the filter's error and
//     never leave the filter missing a committed row: if the filter add
//     fails, the write is not run; if the filter delete fails after the
//     write, the filter keeps the key and the error wraps [ErrStale].
//  6. Lost data is not read as empty: when Redis loses a Shared set's
//     data (a FLUSHALL, a restart without persistence, a failover to an
//     empty replica, an eviction), every lookup that would read it fails
//     over as in 5, with an error wrapping [ErrLost] (Stats.Lost), until
//     a Rebuild recovers the set.
//
// # What the writes must do
//
// The guard does not see the database; it relies on three things the
// caller's code does. Insert's and Remove's write must return only once
// the change has committed (or failed). Remove's write must return an
// error when it deleted nothing (deleting a fingerprint that no row
// added could delete another key's). And the table must change only
// through the guard, or through writes that follow the same order (add
// before the insert commits, delete after the delete commits); a change
// behind the guard's back is caught up by the next Rebuild.
//
// # Choosing the set and its size
//
// A [Local] set is a [cuckoo.Concurrent] filter in the process: a lookup
// costs tens of nanoseconds and allocates nothing, each process keeps its
// own, and each process must see every write (one process owns the table,
// or each rebuilds often). A [Shared] set is a redisfilter filter that a
// fleet shares: every process sees every write at once, for one round
// trip per lookup ([Guard.GetMany] takes thousands of keys per round
// trip). Size the filter for the rows the table will hold before the next
// Rebuild, at the rate of absent lookups the database can take: a
// [cuckoo.Concurrent] of a million keys takes 11 bits a key at 1 % (1.4
// MB in all, by its SizeInBytes), 14 at 0.1 % and 18.5 at 0.01 %; each
// tenfold cut of the rate costs about 3.5 bits a key. A filter made with
// [cuckoo.WithGrowth] never fills up.
//
// # When to rebuild
//
// Rebuild into a bigger set when the filter nears its capacity (Local:
// [cuckoo.Concurrent.LoadFactor] above about 0.9; Shared: Len near
// Capacity): a full fixed-size filter fails Inserts. Rebuild when
// [Stats.FalsePositiveRate] drifts well above the filter's rate: deletes
// do not degrade a cuckoo filter, but extra fingerprints pile up — one per
// Insert whose write failed or whose row existed already, and per Remove
// that ran during a Rebuild or could not reach the filter — and each
// keeps its key costing a load. A nightly Rebuild from a scan bounds both.
//
// # Concurrency and processes
//
// A Guard is safe for use by any number of goroutines. Processes that
// share a Shared set each hold their own Guard over it; they agree
// through Redis alone. A Shared set's Rebuild waits a grace period
// ([WithGrace], default 10 s) twice: after it announces the fresh
// generation, so that writes that began before it have committed when
// the scan starts, and after the swap, so that processes still reading
// the old generation find it up to date. Writes that take longer than the
// grace period are caught up after they commit (Stats.LateAdds), with a
// moment in which another process may miss their row: choose the grace
// period longer than any write.
package guard
