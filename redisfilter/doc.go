// Package redisfilter keeps the module's cuckoo, window and Bloom filters in stock
// Redis (7.0 or later) or Valkey, standalone or Redis Cluster, with no
// module: one filter shared by any number of processes on any number of
// hosts, larger than one machine's memory if need be, and spread over a
// cluster's masters. It is driven through go-redis's UniversalClient, so
// one code path serves a single server, Sentinel and Cluster.
//
// # When to use it
//
// Use the in-process filters of package cuckoo when one process owns the
// filter: they answer in nanoseconds. Use this package when many processes
// (a crawler fleet, dedup workers on several machines) must see one set,
// or when the filter should outlive them with Redis's persistence and
// replication: an operation here costs a network round trip, and batches
// ([Filter.ContainsBatch], [Filter.AddBatch]) amortize it over thousands
// of keys. docs/redis.md compares it with 'cuckoo serve'.
//
// # How a filter is stored
//
// A cuckoo filter of S segments ([WithSegments]) is exactly the table of
// a library [cuckoo.Filter] built with [cuckoo.WithSegments](S): segment s
// is one Redis string (its segment key) holding segment s's buckets (the
// file format's bytes, docs/format.md), beside a small hash with the segment's item count and its
// duplicate counters. A key's two buckets always lie in one segment, chosen
// by its hash. The client hashes keys (the library's seeded XXH3, the seed
// kept in the filter's metadata key) and sends Redis only bucket indexes
// and fingerprints:
//
//   - inserts and deletes run as Redis Functions (a Lua library, ckf2,
//     loaded with FUNCTION LOAD on first use), so each is atomic on its
//     segment: the function searches for room and moves fingerprints, and an
//     insert that finds none changes nothing;
//   - lookups run no script: one BITFIELD_RO reads both buckets, and the
//     client compares the fingerprints.
//
// Segment keys carry hash tags chosen so that the segments sit at equal
// distances around the 16,384 slots of Redis Cluster: a cluster whose
// masters hold equal slot ranges holds equal shares of the segments.
// Cluster does placement, failover and resharding; this package only
// picks the segment. [Push] and [Filter.Snapshot] move a filter between a
// file (or a library filter) and Redis without changing a bit.
//
// # Window filters
//
// [NewWindow] keeps the library's [cuckoo.Window] in Redis: a filter that
// forgets keys older than its window ("seen by anyone in the fleet in the
// last 24 hours?"), with deletes and nothing running in the background.
// Its segments hold the library's stamped slots, its Lua functions write
// them as the library does step by step (a test holds them to it, byte for
// byte), and its time is Redis's: each write reads the server's clock
// inside its function, each lookup reads it after the key's buckets, so
// clients whose clocks differ agree. Writes run once under retries as
// the cuckoo filter's do. [PushWindow] and [Window.Snapshot] move a
// one-segment window to and from a window file, bit for bit.
//
// # Choosing parameters
//
// The parameters are the library's ([cuckoo.New]): capacity, the
// false-positive rate (or the fingerprint width) and the bucket size, and
// New sizes the table as the library does, so a filter of capacity n
// holds n keys and its measured false-positive rate is the library's
// (tests check both), and MEMORY USAGE over its keys is within 10 % of
// the library filter's size (tested from 10^5 keys on). At 0.1 % a key
// costs 14 to 16 bits in Redis (13-bit fingerprints at 95 % load, plus
// the segments' overhead and the allocator's rounding), against some 65
// bytes per 16-byte member of a Redis set.
//
// The segment count ([WithSegments]) trades spread against overhead: the
// default gives filters of up to 65,536 keys one segment and larger ones
// at least 16 (enough for the masters of a cluster to share them) of at
// most 2^20 keys each, and picks the count whose strings fill the
// allocator's size classes best. Give more segments to spread a filter
// over more than about 8 masters: each master should hold a few.
//
// # Retries: writes run once
//
// A client that gets no reply cannot tell whether the server ran the
// command, and a copy sent again runs too when a stalled server wakes.
// So each write call carries a request id, and its segment remembers the
// reply of the call's first run for the retry window W
// ([WithRetryWindow], default 60 s): a copy returns that reply and
// changes nothing. A call whose outcome is unknown (a timeout, a lost
// connection, a server loading, busy or failing over) is sent again with
// the same id until the retry horizon H ([WithRetryHorizon], default
// 30 s, at most W/2), and a reply is believed only within 0.9·W of the
// first send, while the record of the first run must still be there.
// This package sends every copy of a write itself (go-redis sends none
// again on its own), so it knows whether one may have run. So a stall,
// restart or failover shorter than H only delays a write, and:
//
//   - a nil error comes with the true answer: AddUnique's added = false
//     means the key (or one of the same fingerprint) was there before
//     the call, never that the call's own first copy added it;
//   - an error wrapping [ErrUnconfirmed] means a copy of the write
//     reached Redis and no reply that can be believed came within H: it
//     may have been applied, once. That holds whatever a later copy was
//     told: a refusal (OOM, BUSY, LOADING) of a later copy speaks for
//     that copy only, and the error wraps it;
//   - an error wrapping [ErrNotSent] means no copy reached Redis: a
//     batch's key after the batch stopped (after a call it could not
//     confirm, or when the context ended), or a write whose context ended
//     first or that could not connect within H;
//   - any other error ([ErrFull], [ErrNotFound], an error Redis replied
//     to every copy it was sent) means the write was not applied;
//   - a batch gives every key its own result, and a key it could not
//     read has found = false and an error: never a false or a nil error
//     for a key not answered.
//
// A record costs about 150 bytes in Redis for the window: per key, 150
// for single-key writes and about 5 for batches, which send 32 keys per
// call. A copy that waits in a stalled server longer than W runs again
// (for Add, a second copy; for Delete, one fewer; for AddUnique,
// nothing). docs/redis.md has the argument, the figures and the tests.
//
// # Consistency
//
// Each operation on a segment is atomic and the segment's operations are
// serialized by Redis; operations on different segments are independent.
// AddUnique is an atomic test-and-insert, so of several clients adding the
// same key at once exactly one sees added = true. A write acknowledged by
// the master is as durable as Redis makes it: with appendonly yes and
// appendfsync always it survives a restart of the server; [Filter.Durable]
// waits for replicas (WAIT) so that it survives a failover. Len and
// Snapshot read the segments one after another: with writers running, they
// see each segment at a slightly different moment.
//
// # Concurrency
//
// A [Filter], [Window] or [Bloom] is a handle: safe for concurrent use by
// any number of goroutines, and any number of handles in any number of
// processes may work on one filter at once.
package redisfilter
