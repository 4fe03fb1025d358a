package server_test

import (
	"context"
	"fmt"
	"net"

	"github.com/dedupkit/cuckoo/server"
	"github.com/redis/go-redis/v9"
)

// Example serves the filters on a loopback port, without persistence, and
// uses them from go-redis, as a service would.
func Example() {
	cfg := server.DefaultConfig()
	cfg.Dir = "" // nothing saved; give a directory to keep the data
	srv, err := server.New(cfg)
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(ln)

	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String()})
	defer rdb.Close()
	// Size it for the URLs you expect, at a 0.1 % false-positive rate.
	rdb.Do(ctx, "CF.RESERVE", "seen", 10_000_000, "FPR", 0.001)
	for _, url := range []string{"https://a.com/", "https://b.com/", "https://a.com/"} {
		added, err := rdb.CFAddNX(ctx, "seen", url).Result()
		if err != nil {
			panic(err)
		}
		fmt.Println(url, "new:", added)
	}
	// Output:
	// https://a.com/ new: true
	// https://b.com/ new: true
	// https://a.com/ new: false
}
