package redisfilter_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// exampleAddr returns the address of a Redis server for the examples: the
// shared test server, started on first use. (In a program this is your
// server's address, or a ClusterClient's seed nodes.)
func exampleAddr() string {
	exampleServer.Do(func() {
		dir, err := os.MkdirTemp("", "redisfilter-example-")
		if err != nil {
			panic(err)
		}
		s, err := redistest.Start(redistest.Config{Dir: dir})
		if err != nil {
			panic(err)
		}
		exampleServer.s, exampleServer.dir = s, dir
	})
	return exampleServer.s.Addr
}

var exampleServer struct {
	sync.Once
	s   *redistest.Server
	dir string
}

func Example() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr()})
	defer rdb.Close()

	// Create the filter, or open it if another process did: every process
	// that calls New with these parameters shares it.
	seen, err := redisfilter.New(ctx, rdb, "crawler:seen", 1_000_000, redisfilter.WithFalsePositiveRate(0.001))
	if err != nil {
		panic(err)
	}
	defer seen.Drop(ctx) // an example cleans up; a real filter stays

	for _, url := range []string{"https://a.example/", "https://b.example/", "https://a.example/"} {
		added, err := seen.AddUnique(ctx, []byte(url)) // atomic: one process wins
		if err != nil {
			panic(err)
		}
		fmt.Println(url, "new:", added)
	}
	ok, _ := seen.Contains(ctx, []byte("https://b.example/"))
	n, _ := seen.Len(ctx)
	fmt.Println("contains b:", ok, "items:", n, "segments:", seen.Segments())
	// Output:
	// https://a.example/ new: true
	// https://b.example/ new: true
	// https://a.example/ new: false
	// contains b: true items: 2 segments: 18
}

func ExampleFilter_AddBatch() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr()})
	defer rdb.Close()
	f, err := redisfilter.New(ctx, rdb, "example:batch", 10_000, redisfilter.WithSeed(1))
	if err != nil {
		panic(err)
	}
	defer f.Drop(ctx)

	keys := [][]byte{[]byte("a"), []byte("b"), []byte("a")}
	errs := make([]error, len(keys))
	f.AddBatch(ctx, keys, errs) // its error is the first of errs, other than ErrFull
	for i, err := range errs {
		switch {
		case errors.Is(err, redisfilter.ErrFull):
			fmt.Println("no room for", string(keys[i]))
		case errors.Is(err, redisfilter.ErrUnconfirmed):
			fmt.Println(string(keys[i]), "may or may not be in: Redis did not answer in time")
		case err != nil:
			fmt.Println(string(keys[i]), "not added:", err)
		}
	}
	probe := [][]byte{[]byte("a"), []byte("b"), []byte("c")}
	found := make([]bool, len(probe))
	if err := f.ContainsBatch(ctx, probe, found, make([]error, len(probe))); err != nil {
		panic(err) // a key could not be read: its found is false, its error says why
	}
	count, _ := f.Count(ctx, []byte("a"))
	fmt.Println(found, "a counted", count, "times")
	// Output:
	// [true true false] a counted 2 times
}

// ExamplePush uploads a filter file built by the library (or by 'cuckoo
// build --segments N') and pulls it back.
func ExamplePush() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr()})
	defer rdb.Close()

	local, _ := cuckoo.New(100_000, cuckoo.WithSegments(4), cuckoo.WithSeed(7))
	local.AddString("alice")
	local.AddString("bob")

	shared, err := redisfilter.Push(ctx, rdb, "example:pushed", local, false)
	if err != nil {
		panic(err)
	}
	defer shared.Drop(ctx)
	shared.Add(ctx, []byte("carol")) // any client adds to the shared copy

	back, err := shared.Snapshot(ctx) // a library filter again
	if err != nil {
		panic(err)
	}
	fmt.Println(back.ContainsString("alice"), back.ContainsString("carol"), back.Len(), back.Segments())
	// Output:
	// true true 3 4
}

func ExampleNewBloom() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr()})
	defer rdb.Close()
	b, err := redisfilter.NewBloom(ctx, rdb, "example:bloom", 1_000_000, redisfilter.WithFalsePositiveRate(0.01))
	if err != nil {
		panic(err)
	}
	defer b.Drop(ctx)
	b.Add(ctx, []byte("x"))
	x, _ := b.Contains(ctx, []byte("x"))
	fmt.Println(x, b.HashCount(), "bits per key,", b.Segments(), "segments")
	// Output:
	// true 6 bits per key, 19 segments
}

// ExampleWithRetryHorizon opens a filter whose writes wait up to 10 s for
// a stalled or failing-over server (and are remembered for 30 s, so that
// one sent again runs once), and tells the three outcomes of a write
// apart.
func ExampleWithRetryHorizon() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr()})
	defer rdb.Close()
	if _, err := redisfilter.New(ctx, rdb, "example:retry", 1000); err != nil {
		panic(err)
	}
	f, err := redisfilter.Open(ctx, rdb, "example:retry",
		redisfilter.WithRetryHorizon(10*time.Second), redisfilter.WithRetryWindow(30*time.Second))
	if err != nil {
		panic(err)
	}
	defer f.Drop(ctx)

	added, err := f.AddUnique(ctx, []byte("order-1234"))
	switch {
	case errors.Is(err, redisfilter.ErrUnconfirmed):
		fmt.Println("unknown: Redis did not answer within 10 s; the key may be in")
	case err != nil:
		fmt.Println("not added:", err)
	case added:
		fmt.Println("new: process it")
	default:
		fmt.Println("seen before: skip it")
	}
	// Output: new: process it
}
