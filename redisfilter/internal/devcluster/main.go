// Command devcluster starts a local Redis Cluster to try package
// redisfilter and 'cuckoo push/pull/dedup --redis' against, the same kind
// of cluster the tests start: redis-server processes on free loopback
// ports, in a temporary directory, stopped (and the directory removed) on
// Ctrl-C.
//
//	go run ./redisfilter/internal/devcluster                # 3 masters
//	go run ./redisfilter/internal/devcluster -replicas 1    # 3 masters + 3 replicas
//	go run ./redisfilter/internal/devcluster -single        # one plain server
//
// It needs redis-server and redis-cli 7.0 or later (Debian, Ubuntu:
// apt-get install -y redis-server redis-tools).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/dedupkit/cuckoo/internal/redistest"
)

func main() {
	masters := flag.Int("masters", 3, "masters of the cluster")
	replicas := flag.Int("replicas", 0, "replicas of each master")
	single := flag.Bool("single", false, "start one plain server instead of a cluster")
	aof := flag.Bool("aof", false, "append-only files with appendfsync always")
	flag.Parse()

	dir, err := os.MkdirTemp("", "devcluster-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	cfg := redistest.Config{AOF: *aof}
	var stop func()
	var addrs []string
	if *single {
		cfg.Dir = dir
		s, err := redistest.Start(cfg)
		if err != nil {
			fail(err)
		}
		stop, addrs = func() { s.Stop() }, []string{s.Addr}
	} else {
		c, err := redistest.StartCluster(dir, *masters, *replicas, cfg)
		if err != nil {
			fail(err)
		}
		stop, addrs = c.Stop, c.Addrs()
	}
	list := strings.Join(addrs, ",")
	fmt.Printf("Redis running in %s:\n  %s\n\n", dir, strings.Join(addrs, "\n  "))
	fmt.Printf("Try:\n  redis-cli -c -p %s\n", strings.Split(addrs[0], ":")[1])
	flagCluster := ""
	if !*single {
		flagCluster = " --cluster"
	}
	fmt.Printf("  go run ./cmd/cuckoo build --segments 16 --capacity 1M -o seen.ckoo FILE\n")
	fmt.Printf("  go run ./cmd/cuckoo push seen.ckoo --redis %s%s --name seen\n", addrs[0], flagCluster)
	fmt.Printf("  go run ./cmd/cuckoo dedup --redis %s%s --name seen FILE\n", list, flagCluster)
	fmt.Printf("\nCtrl-C stops the servers and removes %s.\n", dir)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	stop()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "devcluster:", err)
	os.Exit(1)
}
