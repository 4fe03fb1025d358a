package redisfilter_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// claimSentTwice is a hook that runs the first SET ... NX of a filter's
// metadata twice and returns the second reply: what go-redis does when
// the first copy's reply is lost (it sends the command again, MaxRetries
// 3 by default), the first copy having set the key.
type claimSentTwice struct{ twice atomic.Int64 }

func (h *claimSentTwice) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *claimSentTwice) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if cmd.Name() == "set" && strings.Contains(strings.ToLower(fmt.Sprint(args...)), "nx") && h.twice.Add(1) == 1 {
			next(ctx, cmd) // this reply is lost
			cmd.SetErr(nil)
		}
		return next(ctx, cmd)
	}
}
func (h *claimSentTwice) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestPushWhoseClaimWasSentTwiceSucceeds pushes a filter whose claim of
// the name (SET NX GET of its metadata) runs twice, the first reply
// lost: the second copy finds the metadata the first set, which is the
// push's own (its id is new), so the push goes on. It returned ErrExists
// and left the name claimed by a push that never ran: Open then said
// ErrBusy until the filter was pushed again with replace.
func TestPushWhoseClaimWasSentTwiceSucceeds(t *testing.T) {
	t.Parallel()
	ctx := ctxOf(t)
	rdb := singleClient(t)
	rdb.AddHook(&claimSentTwice{})
	lib, err := cuckoo.New(1000)
	if err != nil {
		t.Fatal(err)
	}
	if err := lib.Add([]byte("k")); err != nil {
		t.Fatal(err)
	}
	name := uniqueName(t)
	f, err := redisfilter.Push(ctx, rdb, name, lib, false)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	if ok, err := f.Contains(ctx, []byte("k")); !ok || err != nil {
		t.Fatalf("Contains of a key pushed: %v, %v", ok, err)
	}
	if _, err := redisfilter.Open(ctx, singleClient(t), name); err != nil {
		t.Fatalf("Open after Push: %v", err)
	}
}
