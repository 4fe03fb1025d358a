package redisfilter

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Durable returns a Filter on the same filter whose writes (Add,
// AddUnique, Delete and their batches) return only after replicas
// replicas of each segment's master acknowledged them, with WAIT replicas
// timeout sent after them on the same connection. A write that fewer
// replicas acknowledged within timeout was applied on the master and
// returns an error wrapping [ErrNotReplicated] (a batch returns it after
// filling in every key's result). A write acknowledged this way survives
// the failover of its master to any replica that acknowledged it. A
// write sent again after no reply came (see [Filter]) and answered from
// its first run's remembered reply writes that record again, so the
// WAIT after it covers the first run's changes too.
//
// Each write then costs a round trip to its master plus the replication
// delay; reads are unchanged. replicas ≤ 0 returns f's plain twin.
func (f *Filter) Durable(replicas int, timeout time.Duration) *Filter {
	d := *f
	d.wait, d.waitTimeout = max(replicas, 0), timeout
	return &d
}

// sendDurable sends write commands to the masters of their segments, each
// master's commands in one pipeline on one connection followed by WAIT.
// Commands a master refuses with MOVED or ASK (a slot moved since the
// cluster's map was read) are sent again, after a fresh map, up to 3
// times. It leaves a reply or an error in every command, and returns the
// first error that is not a reply of Redis, or else one wrapping
// ErrNotReplicated when a WAIT fell short or failed.
func (h *segments) sendDurable(ctx context.Context, cmds []redis.Cmder) error {
	var short, first error
	for attempt := 0; len(cmds) > 0; attempt++ {
		groups, err := h.byMaster(ctx, cmds)
		if err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		var moved []redis.Cmder
		for c, group := range groups {
			pipe := c.Pipeline()
			for _, cmd := range group {
				pipe.Process(ctx, cmd)
			}
			wait := redis.NewIntCmd(ctx, "wait", h.wait, h.waitTimeout.Milliseconds())
			pipe.Process(ctx, wait)
			pipe.Exec(ctx)
			if err := firstTransportErr(group); err != nil {
				// A master that does not answer may have been replaced:
				// the next write asks the cluster again.
				if cc, ok := h.rdb.(*redis.ClusterClient); ok {
					cc.ReloadState(ctx)
				}
				first = cmp(first, err)
				continue
			}
			for _, cmd := range group {
				if isRedirect(cmd.Err()) && attempt < 3 {
					moved = append(moved, cmd)
				}
			}
			switch n, err := wait.Result(); {
			case err != nil && short == nil:
				short = fmt.Errorf("%w: WAIT on %s: %v", ErrNotReplicated, c.Options().Addr, err)
			case err == nil && n < int64(h.wait) && short == nil:
				short = fmt.Errorf("%w: %d of %d replicas of %s within %v", ErrNotReplicated, n, h.wait, c.Options().Addr, h.waitTimeout)
			}
		}
		if len(moved) > 0 {
			if cc, ok := h.rdb.(*redis.ClusterClient); ok {
				cc.ReloadState(ctx)
			}
			time.Sleep(time.Duration(attempt+1) * 50 * time.Millisecond)
			for _, cmd := range moved {
				cmd.SetErr(nil)
			}
		}
		cmds = moved
	}
	return cmp(first, short)
}

// byMaster groups write commands by the master of their first key.
func (h *segments) byMaster(ctx context.Context, cmds []redis.Cmder) (map[*redis.Client][]redis.Cmder, error) {
	groups := map[*redis.Client][]redis.Cmder{}
	cc, ok := h.rdb.(*redis.ClusterClient)
	if !ok {
		c, ok := h.rdb.(*redis.Client)
		if !ok {
			return nil, fmt.Errorf("%w: Durable with a %T (it needs a *redis.Client or *redis.ClusterClient)", ErrUnsupported, h.rdb)
		}
		groups[c] = cmds
		return groups, nil
	}
	for _, cmd := range cmds {
		key := fmt.Sprint(cmd.Args()[3]) // fcall fn numkeys key ...
		c, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return nil, err
		}
		groups[c] = append(groups[c], cmd)
	}
	return groups, nil
}

func isRedirect(err error) bool {
	if err == nil {
		return false
	}
	_, moved := redis.IsMovedError(err)
	_, ask := redis.IsAskError(err)
	return moved || ask || redis.IsTryAgainError(err) || redis.IsClusterDownError(err)
}
