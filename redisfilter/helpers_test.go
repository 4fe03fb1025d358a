package redisfilter_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testparallel"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// Servers shared by the tests that do not break them: one node and one
// 3-master cluster, started on first use and stopped by TestMain. Tests
// that kill, restart or reshard servers start their own.
var shared struct {
	mu      sync.Mutex
	dir     string
	single  *redistest.Server
	cluster *redistest.Cluster
}

func TestMain(m *testing.M) {
	flag.Parse()
	testparallel.Raise(3)
	if _, _, err := redistest.Binaries(); err != nil {
		// The examples need a server and cannot skip: run the tests
		// (which skip, saying how to install one) and the fuzz seeds only.
		fmt.Fprintf(os.Stderr, "redisfilter: no redis-server; the tests skip and the examples do not run: install it with '%s'\n", redistest.Install)
		flag.Set("test.run", "^(Test|Fuzz)")
	}
	code := m.Run()
	if exampleServer.s != nil {
		exampleServer.s.Stop()
		os.RemoveAll(exampleServer.dir)
	}
	shared.mu.Lock()
	if shared.single != nil {
		shared.single.Stop()
	}
	if shared.cluster != nil {
		shared.cluster.Stop()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	shared.mu.Unlock()
	os.Exit(code)
}

func sharedDir(t testing.TB) string {
	if shared.dir == "" {
		d, err := os.MkdirTemp("", "redisfilter-test-")
		if err != nil {
			t.Fatal(err)
		}
		shared.dir = d
	}
	return shared.dir
}

func skipWithoutRedis(t testing.TB) {
	t.Helper()
	if _, _, err := redistest.Binaries(); err != nil {
		t.Skipf("no redis-server: install it with '%s' to run this test", redistest.Install)
	}
}

// singleServer returns the shared single node.
func singleServer(t testing.TB) *redistest.Server {
	t.Helper()
	skipWithoutRedis(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.single == nil {
		dir := sharedDir(t) + "/single"
		os.MkdirAll(dir, 0o755)
		s, err := redistest.Start(redistest.Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		shared.single = s
	}
	return shared.single
}

// sharedCluster returns the shared 3-master cluster.
func sharedCluster(t testing.TB) *redistest.Cluster {
	t.Helper()
	skipWithoutRedis(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cluster == nil {
		c, err := redistest.StartCluster(sharedDir(t)+"/cluster", 3, 0, redistest.Config{})
		if err != nil {
			t.Fatal(err)
		}
		shared.cluster = c
	}
	return shared.cluster
}

// singleClient returns a client of the shared single node, closed at the
// end of the test.
func singleClient(t testing.TB) *redis.Client {
	return clientOf(t, singleServer(t))
}

// clientOf returns a client of s, with generous timeouts
// (redistest.ClientTimeout), closed at the end of the test.
func clientOf(t testing.TB, s *redistest.Server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, DialTimeout: redistest.ClientTimeout,
		ReadTimeout: redistest.ClientTimeout, WriteTimeout: redistest.ClientTimeout})
	t.Cleanup(func() { c.Close() })
	return c
}

// clusterClient returns a client of the shared cluster.
func clusterClient(t testing.TB) *redis.ClusterClient {
	return clusterClientOf(t, sharedCluster(t))
}

// clusterClientOf returns a client of c, with generous timeouts
// (redistest.ClientTimeout), closed at the end of the test.
func clusterClientOf(t testing.TB, c *redistest.Cluster) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Protocol: 2, DialTimeout: redistest.ClientTimeout,
		ReadTimeout: redistest.ClientTimeout, WriteTimeout: redistest.ClientTimeout})
	t.Cleanup(func() { cc.Close() })
	return cc
}

// topologies runs fn against a single node and, in the long run, against
// the cluster, in parallel with each other and with the package's other
// parallel tests (each test names its own filters). The cluster variants
// run the same functions through a cluster client, at the cost of a second
// run of each test, so the quick run leaves them to the long one (the
// split and its cost: docs/testing.md). What only a cluster does (redirects, resharding, segments spread over the
// masters, a lost replica) has tests of its own, which the quick run keeps,
// and the model tests keep their cluster variant there (bothTopologies).
func topologies(t *testing.T, fn func(t *testing.T, rdb redis.UniversalClient)) {
	t.Parallel()
	runTopologies(t, testlong.Enabled(), fn)
}

// bothTopologies is topologies with the cluster variant in the quick run
// too, for the model tests.
func bothTopologies(t *testing.T, fn func(t *testing.T, rdb redis.UniversalClient)) {
	t.Parallel()
	runTopologies(t, true, fn)
}

// topologiesBeforeParallel is topologies for a test whose assertions follow
// the real clock (a window's expiry): it runs among the sequential tests,
// before the package's parallel ones, so that they take no time from it;
// its two topologies still run together.
func topologiesBeforeParallel(t *testing.T, fn func(t *testing.T, rdb redis.UniversalClient)) {
	runTopologies(t, testlong.Enabled(), fn)
}

// runTopologies runs fn on the single node and, if cluster is set and the
// run is not -short (the race run), on the cluster.
func runTopologies(t *testing.T, cluster bool, fn func(t *testing.T, rdb redis.UniversalClient)) {
	t.Run("single", func(t *testing.T) {
		t.Parallel()
		fn(t, singleClient(t))
	})
	t.Run("cluster", func(t *testing.T) {
		switch {
		case testing.Short():
			t.Skip("cluster in -short mode")
		case !cluster:
			t.Skip("cluster variant in the long run only (CUCKOO_LONG=1)")
		}
		t.Parallel()
		fn(t, clusterClient(t))
	})
}

var nameSeq struct {
	sync.Mutex
	n int
}

// uniqueName returns a filter name no other test uses.
func uniqueName(t testing.TB) string {
	nameSeq.Lock()
	defer nameSeq.Unlock()
	nameSeq.n++
	return fmt.Sprintf("%s-%d-%d", t.Name(), nameSeq.n, time.Now().UnixNano()%1e6)
}

func ctxOf(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// key returns the i-th key of a test set: decimal, with a prefix.
func key(prefix string, i int) []byte { return strconv.AppendInt([]byte(prefix), int64(i), 10) }

func keys(prefix string, n int) [][]byte {
	k := make([][]byte, n)
	for i := range k {
		k[i] = key(prefix, i)
	}
	return k
}

// addAll adds keys with AddBatch and fails the test unless every one was
// added.
func addAll(t testing.TB, ctx context.Context, f *redisfilter.Filter, keys [][]byte) {
	t.Helper()
	errs := make([]error, len(keys))
	if err := f.AddBatch(ctx, keys, errs); err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("AddBatch: %s: %v", keys[i], err)
		}
	}
}
