package redisfilter_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/redisfilter"
)

// TestIsClusterRedirect gives one node of a real cluster to a plain
// client: the filters whose keys another node serves fail with a reply
// IsClusterRedirect recognises, and the others work.
func TestIsClusterRedirect(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	c := sharedCluster(t)
	rdb := clientOf(t, c.Server(c.Addrs()[0]))
	ctx := context.Background()
	var moved, worked int
	for i := range 12 {
		name := fmt.Sprintf("%s-%d", uniqueName(t), i)
		_, err := redisfilter.New(ctx, rdb, name, 1000)
		switch {
		case err == nil:
			worked++
		case redisfilter.IsClusterRedirect(err):
			moved++
		default:
			t.Fatalf("New %s on one node of a cluster: %v, not a redirection", name, err)
		}
	}
	// Each name's keys are on the node asked with probability 1/3: none
	// of 12 redirected has probability (1/3)^12, about 2e-6.
	if moved == 0 {
		t.Fatalf("no name was redirected (%d worked)", worked)
	}
	single := singleClient(t)
	_, err := redisfilter.Open(ctx, single, uniqueName(t))
	if !errors.Is(err, redisfilter.ErrNotFound) || redisfilter.IsClusterRedirect(err) {
		t.Fatalf("Open of a missing filter: %v", err)
	}
	if redisfilter.IsClusterRedirect(nil) || redisfilter.IsClusterRedirect(errors.New("MOVED 1 a:1")) {
		t.Fatal("IsClusterRedirect takes an error that is not a Redis reply for one")
	}
}
