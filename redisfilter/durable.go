package redisfilter

import (
	"context"
	"fmt"
	"sync"
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
//
// A node of a cluster refuses a command whose slot it does not serve
// (MOVED), or, while the slot migrates, one whose keys it does not all
// hold: the source sends it to the target (ASK) when it holds none of
// them, and answers TRYAGAIN when it holds some; the target runs a
// command of several keys after ASKING only if it holds all of them,
// and answers TRYAGAIN otherwise. go-redis's ClusterClient follows MOVED
// and ASK for the commands it routes, but Durable sends through each
// master's own client (the WAIT must follow the writes on their
// connection), which follows neither. So a command refused with ASK is
// sent at once to the node the reply names, after ASKING, on one
// connection with a WAIT after it: a one-off redirect, which does not
// point the slot at the target in the client's map of the slots (as a
// MOVED reply does). All the keys of a call (its segment's two, its
// record and its predecessor's) share the segment's hash tag, so the
// target holds all of them or refuses the call (TRYAGAIN): the record of
// a new call is on neither node until the call runs, so a new call waits
// for the end of the migration, and a call sent again whose first copy
// ran, its record moved with the segment, is answered by the target
// from that record.
//
// Commands refused with MOVED, TRYAGAIN or CLUSTERDOWN, or with ASK
// when the target is not known, are sent again, after a fresh map and a
// pause (redirectPause), up to 3 times; a pause ends when ctx does, and
// the commands then keep their refusals (no copy ran). Each command is
// left with a reply or an error: a refusal it is left with answered the
// last copy, and every copy before it was refused too. sendDurable
// returns the first error that is not a reply of Redis, or else one
// wrapping ErrNotReplicated when a WAIT fell short or failed.
func (h *segments) sendDurable(ctx context.Context, cmds []redis.Cmder) error {
	var short, first error
	cc, _ := h.rdb.(*redis.ClusterClient)
	// send sends group to c in one pipeline with WAIT after it (each
	// command after ASKING if asking), and reports whether Redis replied.
	send := func(c *redis.Client, group []redis.Cmder, asking bool) bool {
		pipe := c.Pipeline()
		for _, cmd := range group {
			if asking {
				pipe.Process(ctx, redis.NewStatusCmd(ctx, "asking"))
			}
			pipe.Process(ctx, cmd)
		}
		wait := redis.NewIntCmd(ctx, "wait", h.wait, h.waitTimeout.Milliseconds())
		pipe.Process(ctx, wait)
		pipe.Exec(ctx)
		if err := firstTransportErr(group); err != nil {
			// A master that does not answer may have been replaced:
			// the next write asks the cluster again.
			if cc != nil {
				cc.ReloadState(ctx)
			}
			first = cmp(first, err)
			return false
		}
		switch n, err := wait.Result(); {
		case err != nil && short == nil:
			short = fmt.Errorf("%w: WAIT on %s: %v", ErrNotReplicated, c.Options().Addr, err)
		case err == nil && n < int64(h.wait) && short == nil:
			short = fmt.Errorf("%w: %d of %d replicas of %s within %v", ErrNotReplicated, n, h.wait, c.Options().Addr, h.waitTimeout)
		}
		return true
	}
	for attempt := 0; len(cmds) > 0; attempt++ {
		groups, err := h.byMaster(ctx, cmds)
		if err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		asked := map[string][]redis.Cmder{}
		for c, group := range groups {
			if !send(c, group, false) {
				continue
			}
			for _, cmd := range group {
				if addr, ok := redis.IsAskError(cmd.Err()); ok && cc != nil {
					asked[addr] = append(asked[addr], cmd)
				}
			}
		}
		for addr, group := range asked {
			if ctx.Err() != nil {
				break // not sent: the ASK stays
			}
			c, done := askTarget(ctx, cc, addr)
			if c == nil {
				continue // the ASK stays, and is sent again below
			}
			for _, cmd := range group {
				cmd.SetErr(nil)
			}
			send(c, group, true)
			done()
		}
		var again []redis.Cmder
		for _, cmd := range cmds {
			if isRedirect(cmd.Err()) && attempt < 3 {
				again = append(again, cmd)
			}
		}
		if len(again) == 0 {
			break
		}
		if cc != nil {
			cc.ReloadState(ctx)
		}
		if !h.redirectPause(ctx, attempt) {
			break // ctx is done: the commands keep their refusals
		}
		for _, cmd := range again {
			cmd.SetErr(nil)
		}
		cmds = again
	}
	return cmp(first, short)
}

// redirectPause waits before sendDurable sends again the commands refused
// with a redirect (attempt counts from 0), and reports whether the pause
// ran its course: false when ctx ended first.
func (h *segments) redirectPause(ctx context.Context, attempt int) bool {
	d := time.Duration(attempt+1) * 50 * time.Millisecond
	if h.pauseHook != nil {
		d = h.pauseHook(d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// askTarget returns a client of the node at addr, which an ASK reply
// named (a master), and a function to call when done with it: the client
// go-redis keeps for that node if its map of the cluster lists it (a
// master that serves slots), else a client of its own with the options
// of cc's nodes (for a master that serves no slot yet: one added to the
// cluster, that receives its first), closed by done. It returns nil if
// cc lists no master. (ForEachMaster reads the cluster's map of the slots
// again: one CLUSTER SLOTS for each ASK followed, during migrations only.)
func askTarget(ctx context.Context, cc *redis.ClusterClient, addr string) (*redis.Client, func()) {
	var mu sync.Mutex
	var known, other *redis.Client
	cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		if c.Options().Addr == addr {
			known = c
		}
		other = c
		return nil
	})
	switch {
	case known != nil:
		return known, func() {}
	case other == nil:
		return nil, nil
	}
	opt := *other.Options()
	opt.Addr = addr
	c := redis.NewClient(&opt)
	return c, func() { c.Close() }
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
