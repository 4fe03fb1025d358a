package redisfilter

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Checked lookups. A lookup reads a shard's table with BITFIELD_RO, which
// reads a missing key as zeros: a filter whose keys are gone (dropped, or
// lost by Redis: FLUSHALL, a restart without persistence, a failover to a
// replica that never had them, an eviction) reports every key absent.
// A checked lookup also reads, in the same pipeline and after the table,
// the shard's instance id and the table's length. Both are in the
// table's hash slot, so they go to the same node in the same round trip;
// read after the table, they prove that the table read was this
// filter's: the shard's keys are created together with a fresh random
// id and never come back once gone.

// shardChecks is the number of commands appendShardCheck adds.
const shardChecks = 2

// appendShardCheck appends to cmds the commands that check shard s: HGET
// of its id and STRLEN of its table. They must follow the shard's reads
// in the pipeline.
func (f *Filter) appendShardCheck(ctx context.Context, cmds []redis.Cmder, s int) []redis.Cmder {
	id := redis.NewStringCmd(ctx, "hget", f.counters[s], "id")
	id.SetFirstKeyPos(1)
	n := redis.NewIntCmd(ctx, "strlen", f.tables[s])
	n.SetFirstKeyPos(1)
	return append(cmds, id, n)
}

// shardCheck returns nil if the replies of shard s's check commands (and
// their errors, from settle) say the shard is this filter's, an error
// wrapping ErrNotFound if it is gone, or the error that kept a reply
// from coming.
func (f *Filter) shardCheck(s int, cmds []redis.Cmder, errs []error) error {
	idErr, nErr := errs[0], errs[1]
	if idErr != nil && !errors.Is(idErr, redis.Nil) {
		return idErr
	}
	if nErr != nil {
		return nErr
	}
	id := cmds[0].(*redis.StringCmd).Val()
	n := cmds[1].(*redis.IntCmd).Val()
	switch {
	case idErr != nil:
		return fmt.Errorf("%w: shard %d of %q is gone (its hash %q has no id)", ErrNotFound, s, f.name, f.counters[s])
	case id != f.m.id:
		return fmt.Errorf("%w: shard %d of %q belongs to another filter of that name (id %q, this one's %q)", ErrNotFound, s, f.name, id, f.m.id)
	case n == 0:
		return fmt.Errorf("%w: the table of shard %d of %q is gone (key %q)", ErrNotFound, s, f.name, f.tables[s])
	case uint64(n) != f.g.shardBytes:
		return fmt.Errorf("%w: the table of shard %d of %q holds %d bytes, want %d", ErrCorrupt, s, f.name, n, f.g.shardBytes)
	}
	return nil
}

// ContainsChecked is [Filter.Contains] that tells a filter that is gone
// from one that lacks the key: it also reads, in the same round trip,
// the instance id of the key's shard and the length of its table, and
// returns an error wrapping [ErrNotFound] when the shard is gone or
// belongs to another filter of the name (dropped and created again), and
// one wrapping [ErrCorrupt] when its table has the wrong length, where
// Contains would report the key absent. A filter's keys go when it is
// dropped, and when Redis loses data: FLUSHALL or FLUSHDB, a restart
// without persistence, a failover to a replica that had not received
// them, an eviction under a policy other than noeviction, a DEL by hand.
// Its cost over Contains: an HGET and a STRLEN in the pipeline, sent to
// the same node.
func (f *Filter) ContainsChecked(ctx context.Context, key []byte) (bool, error) {
	return f.contains(ctx, key, true)
}

// ContainsBatchChecked is [Filter.ContainsBatch] with the check of
// [Filter.ContainsChecked]: the keys of a shard that is gone get
// found[i] = false and an error wrapping [ErrNotFound] (or [ErrCorrupt])
// in errs[i], and the call returns the first error. The check costs an
// HGET and a STRLEN per shard and round of up to 8,192 keys.
func (f *Filter) ContainsBatchChecked(ctx context.Context, keys [][]byte, found []bool, errs []error) error {
	return f.containsBatch(ctx, keys, found, errs, true)
}
