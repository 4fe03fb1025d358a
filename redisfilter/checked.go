package redisfilter

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Checked lookups. A lookup reads a segment's table with BITFIELD_RO, which
// reads a missing key as zeros: a filter whose keys are gone (dropped, or
// lost by Redis: FLUSHALL, a restart without persistence, a failover to a
// replica that never had them, an eviction) reports every key absent.
// A checked lookup also reads, in the same pipeline and after the table,
// the segment's instance id and the table's length. Both are in the
// table's hash slot, so they go to the same node in the same round trip;
// read after the table, they prove that the table read was this
// filter's: the segment's keys are created together with a fresh random
// id and never come back once gone.

// segmentChecks is the number of commands appendSegmentCheck adds.
const segmentChecks = 2

// appendSegmentCheck appends to cmds the commands that check segment s: HGET
// of its id and STRLEN of its table. They must follow the segment's reads
// in the pipeline.
func (h *segments) appendSegmentCheck(ctx context.Context, cmds []redis.Cmder, s int) []redis.Cmder {
	id := redis.NewStringCmd(ctx, "hget", h.counters[s], "id")
	id.SetFirstKeyPos(1)
	n := redis.NewIntCmd(ctx, "strlen", h.tables[s])
	n.SetFirstKeyPos(1)
	return append(cmds, id, n)
}

// segmentCheck returns nil if the replies of segment s's check commands (and
// their errors, from settle) say the segment is this filter's, an error
// wrapping ErrNotFound if it is gone, or the error that kept a reply
// from coming.
func (h *segments) segmentCheck(s int, cmds []redis.Cmder, errs []error) error {
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
		return fmt.Errorf("%w: segment %d of %q is gone (its hash %q has no id)", ErrNotFound, s, h.name, h.counters[s])
	case id != h.m.id:
		return fmt.Errorf("%w: segment %d of %q belongs to another filter of that name (id %q, this one's %q)", ErrNotFound, s, h.name, id, h.m.id)
	case n == 0:
		return fmt.Errorf("%w: the table of segment %d of %q is gone (key %q)", ErrNotFound, s, h.name, h.tables[s])
	case uint64(n) != h.g.strLen:
		return fmt.Errorf("%w: the table of segment %d of %q holds %d bytes, want %d", ErrCorrupt, s, h.name, n, h.g.strLen)
	}
	return nil
}

// ContainsChecked is [Filter.Contains] that tells a filter that is gone
// from one that lacks the key: it also reads, in the same round trip,
// the instance id of the key's segment and the length of its table, and
// returns an error wrapping [ErrNotFound] when the segment is gone or
// belongs to another filter of the name (dropped and created again), and
// one wrapping [ErrCorrupt] when its table has the wrong length, where
// Contains would report the key absent. A filter's keys go when it is
// dropped, and when Redis loses data: FLUSHALL or FLUSHDB, a restart
// without persistence, a failover to a replica that had not received
// them, an eviction under a policy other than noeviction, a DEL by hand.
// Its cost over Contains: an HGET and a STRLEN in the pipeline, sent to
// the same node.
func (f *Filter) ContainsChecked(ctx context.Context, key []byte) (bool, error) {
	return f.lookupOne(ctx, f, key, true)
}

// ContainsBatchChecked is [Filter.ContainsBatch] with the check of
// [Filter.ContainsChecked]: the keys of a segment that is gone get
// found[i] = false and an error wrapping [ErrNotFound] (or [ErrCorrupt])
// in errs[i], and the call returns the first error. The check costs an
// HGET and a STRLEN per segment and round of up to 8,192 keys.
func (f *Filter) ContainsBatchChecked(ctx context.Context, keys [][]byte, found []bool, errs []error) error {
	return f.lookupBatch(ctx, f, keys, found, errs, true)
}
