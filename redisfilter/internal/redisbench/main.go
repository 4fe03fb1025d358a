// Command redisbench measures redisfilter against the exact set people
// keep in Redis today, on servers it starts itself (a single node and a
// 3-master cluster, redis-server on loopback): for n keys, AddBatch and
// ContainsBatch of a cuckoo filter at the given rate against SADD and
// SISMEMBER pipelined in batches of 32,768 keys, one pipeline after the
// other, into a set split into as many keys as the filter has segments; the
// memory per key of each (MEMORY USAGE); and the servers' CPU time per
// key (INFO cpu, summed over the masters), which is what bounds a server
// shared by many clients. Rounds interleave the two (odd rounds run the
// set first); it prints the medians as a markdown table.
//
//	go run ./redisfilter/internal/redisbench -n 1000000 -rounds 3
//
// With -window D it measures a window filter (redisfilter.NewWindow of n
// keys a window D, at the rate) against the cuckoo filter of the same
// capacity and rate instead, each with its default segments: both filled
// from empty, then looked up.
//
//	go run ./redisfilter/internal/redisbench -n 1000000 -rounds 5 -window 24h -fpr 0.0019
//
// A benchmark, not a test: run it near the end of a change, on a quiet
// machine, with nice.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dedupkit/cuckoo/internal/hash"
	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

const batch = 1 << 15 // keys per set pipeline

func main() {
	n := flag.Int("n", 1_000_000, "keys")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	fpr := flag.Float64("fpr", 0.001, "the filter's false-positive rate")
	only := flag.String("only", "", "single or cluster (default both)")
	window := flag.Duration("window", 0, "measure a window filter of this window against the cuckoo filter (0: the cuckoo filter against a set)")
	flag.Parse()

	dir, err := os.MkdirTemp("", "redisbench-")
	check(err)
	defer os.RemoveAll(dir)
	cleanup = append(cleanup, func() { os.RemoveAll(dir) })
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	present, absent := randKeys(rng, *n), randKeys(rng, *n)

	type topology struct {
		name string
		rdb  redis.UniversalClient
		stop func()
	}
	var tops []topology
	// An interrupt stops the servers before exiting.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		check(fmt.Errorf("interrupted"))
	}()
	if *only != "cluster" {
		os.MkdirAll(dir+"/single", 0o755)
		s, err := redistest.Start(redistest.Config{Dir: dir + "/single"})
		check(err)
		tops = append(tops, topology{"single node", redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2}), func() { s.Stop() }})
		cleanup = append(cleanup, func() { s.Stop() })
	}
	if *only != "single" {
		c, err := redistest.StartCluster(dir+"/cluster", 3, 0, redistest.Config{})
		check(err)
		tops = append(tops, topology{"3-master cluster", redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Protocol: 2}), c.Stop})
		cleanup = append(cleanup, c.Stop)
	}
	version := "?"
	if info, err := tops[0].rdb.Info(ctx, "server").Result(); err == nil {
		for _, l := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
				version = v
			}
		}
	}
	fmt.Printf("redisbench: %d keys (16 random hex characters), rate %g, %d rounds, Redis %s, %s, GOMAXPROCS %d, %s\n\n",
		*n, *fpr, *rounds, version, runtime.Version(), runtime.GOMAXPROCS(0), time.Now().UTC().Format("2006-01-02"))

	for _, t := range tops {
		res := map[string][]float64{}
		var segments, peerSegments int
		for r := range *rounds {
			var f, set members
			if *window == 0 {
				cf, err := redisfilter.New(ctx, t.rdb, fmt.Sprintf("bench-%d", r), uint64(*n), redisfilter.WithFalsePositiveRate(*fpr))
				check(err)
				f, set = cf, setOf(t.rdb, cf.Segments())
			} else {
				w, err := redisfilter.NewWindow(ctx, t.rdb, fmt.Sprintf("bench-%d", r), uint64(*n), *window, redisfilter.WithFalsePositiveRate(*fpr))
				check(err)
				cf, err := redisfilter.New(ctx, t.rdb, fmt.Sprintf("bench-peer-%d", r), uint64(*n), redisfilter.WithFalsePositiveRate(*fpr))
				check(err)
				f, set = w, cf
			}
			segments, peerSegments = f.Segments(), set.Segments()
			errs := make([]error, *n)
			found := make([]bool, *n)

			// Odd rounds run the set first: whichever runs first after the
			// adds pays for the machine's caches and the client's garbage.
			fp := 0
			steps := [][2]func(){
				{func() {
					measure(ctx, t.rdb, res, "add filter", *n, func() { check(f.AddBatch(ctx, present, errs)) })
					for _, e := range errs {
						check(e)
					}
				}, func() { measure(ctx, t.rdb, res, "add set", *n, func() { check(set.AddBatch(ctx, present, errs)) }) }},
				{func() {
					measure(ctx, t.rdb, res, "hit filter", *n, func() { check(f.ContainsBatch(ctx, present, found, errs)) })
					for _, ok := range found {
						if !ok {
							check(fmt.Errorf("a false negative"))
						}
					}
				}, func() {
					measure(ctx, t.rdb, res, "hit set", *n, func() { check(set.ContainsBatch(ctx, present, found, errs)) })
				}},
				{func() {
					measure(ctx, t.rdb, res, "miss filter", *n, func() { check(f.ContainsBatch(ctx, absent, found, errs)) })
					for _, ok := range found {
						if ok {
							fp++
						}
					}
				}, func() {
					measure(ctx, t.rdb, res, "miss set", *n, func() { check(set.ContainsBatch(ctx, absent, found, errs)) })
				}},
			}
			for _, st := range steps {
				if r%2 == 0 {
					st[0]()
					st[1]()
				} else {
					st[1]()
					st[0]()
				}
			}
			mem, err := f.MemoryUsage(ctx)
			check(err)
			res["mem filter"] = append(res["mem filter"], float64(mem)/float64(*n))
			mem, err = set.MemoryUsage(ctx)
			check(err)
			res["mem set"] = append(res["mem set"], float64(mem)/float64(*n))
			res["fpr"] = append(res["fpr"], float64(fp)/float64(*n))
			check(f.Drop(ctx))
			check(set.Drop(ctx))
			fmt.Fprintf(os.Stderr, "%s round %d done\n", t.name, r+1)
		}
		m := func(k string) float64 { return median(res[k]) }
		if *window == 0 {
			fmt.Printf("### %s (%d filter segments, %d set keys)\n\n", t.name, segments, segments)
			fmt.Printf("| operation, %d keys | cuckoo filter in Redis | set (SADD/SISMEMBER pipelined) | filter / set |\n", *n)
		} else {
			fmt.Printf("### %s (window: %d segments; cuckoo filter: %d)\n\n", t.name, segments, peerSegments)
			fmt.Printf("| operation, %d keys | window filter (%v) | cuckoo filter | window / filter (time per key: the median of the rounds' ratios) |\n", *n, *window)
		}
		fmt.Printf("|---|---:|---:|---:|\n")
		for _, op := range []struct{ label, key string }{
			{"add (AddBatch / SADD), keys/s", "add"},
			{"lookup of present keys (ContainsBatch / SISMEMBER), keys/s", "hit"},
			{"lookup of absent keys, keys/s", "miss"},
		} {
			if *window != 0 {
				// Both sides are filters: the operations are the batches.
				op.label = strings.NewReplacer(" / SADD", "", " / SISMEMBER", "").Replace(op.label)
			}
			a, b := m(op.key+" filter"), m(op.key+" set")
			ratio := fmt.Sprintf("%.2f×", a/b)
			if *window != 0 {
				// Paired rounds: the ratio of each round's times, whose
				// median holds still where the times themselves swing.
				var rs []float64
				for r := range res[op.key+" filter"] {
					rs = append(rs, res[op.key+" set"][r]/res[op.key+" filter"][r])
				}
				ratio = fmt.Sprintf("%.2f (%s)", median(rs), ratios(rs))
			}
			fmt.Printf("| %s | %s | %s | %s |\n", op.label, si(a), si(b), ratio)
		}
		for _, op := range []struct{ label, key string }{
			{"server CPU per key added, µs", "add"},
			{"server CPU per present key looked up, µs", "hit"},
			{"server CPU per absent key looked up, µs", "miss"},
		} {
			a, b := m(op.key+" filter cpu"), m(op.key+" set cpu")
			fmt.Printf("| %s | %.3f | %.3f | %.2f× |\n", op.label, a, b, a/b)
		}
		if *window == 0 {
			fmt.Printf("| memory per key (MEMORY USAGE), bytes | %.2f | %.2f | 1/%.1f |\n", m("mem filter"), m("mem set"), m("mem set")/m("mem filter"))
			fmt.Printf("| false-positive rate measured | %.4f %% | 0 | |\n\n", 100*m("fpr"))
		} else {
			fmt.Printf("| memory per key (MEMORY USAGE), bytes | %.3f | %.3f | %.3f× |\n", m("mem filter"), m("mem set"), m("mem filter")/m("mem set"))
			fmt.Printf("| false-positive rate measured (window) | %.4f %% | | |\n\n", 100*m("fpr"))
		}
		fmt.Printf("Rounds (keys/s): add %s / %s; hit %s / %s; miss %s / %s\n\n",
			list(res["add filter"]), list(res["add set"]), list(res["hit filter"]), list(res["hit set"]), list(res["miss filter"]), list(res["miss set"]))
		t.rdb.Close()
		t.stop()
	}
}

// members is what a round measures: a filter, a window, or a set.
type members interface {
	AddBatch(ctx context.Context, keys [][]byte, errs []error) error
	ContainsBatch(ctx context.Context, keys [][]byte, found []bool, errs []error) error
	MemoryUsage(ctx context.Context) (uint64, error)
	Drop(ctx context.Context) error
	Segments() int
}

// set is the exact set, split into keys as the filter is into segments.
type set struct {
	rdb  redis.UniversalClient
	keys []string
}

func setOf(rdb redis.UniversalClient, n int) *set {
	s := &set{rdb: rdb}
	for i := range n {
		s.keys = append(s.keys, fmt.Sprintf("bench-set:{%d}", i))
	}
	return s
}

func (s *set) key(member []byte) string {
	return s.keys[hash.Sum64(member, 0)%uint64(len(s.keys))]
}

// AddBatch adds the members with SADD, pipelined (errs is unused).
func (s *set) AddBatch(ctx context.Context, members [][]byte, _ []error) error {
	s.each(ctx, members, func(p redis.Pipeliner, key string, m []byte) { p.SAdd(ctx, key, m) })
	return nil
}

// ContainsBatch looks the members up with SISMEMBER, pipelined (the
// replies are not read into found).
func (s *set) ContainsBatch(ctx context.Context, members [][]byte, _ []bool, _ []error) error {
	s.each(ctx, members, func(p redis.Pipeliner, key string, m []byte) { p.SIsMember(ctx, key, m) })
	return nil
}

func (s *set) Segments() int { return len(s.keys) }

// each sends one command per member, made by cmd, in pipelines of batch.
func (s *set) each(ctx context.Context, members [][]byte, cmd func(p redis.Pipeliner, key string, m []byte)) {
	for lo := 0; lo < len(members); lo += batch {
		pipe := s.rdb.Pipeline()
		for _, m := range members[lo:min(lo+batch, len(members))] {
			cmd(pipe, s.key(m), m)
		}
		_, err := pipe.Exec(ctx)
		check(err)
	}
}

func (s *set) MemoryUsage(ctx context.Context) (uint64, error) {
	var total uint64
	for _, k := range s.keys {
		n, err := s.rdb.MemoryUsage(ctx, k, 0).Result()
		if err != nil {
			return 0, err
		}
		total += uint64(n)
	}
	return total, nil
}

func (s *set) Drop(ctx context.Context) error {
	for _, k := range s.keys {
		if err := s.rdb.Del(ctx, k).Err(); err != nil {
			return err
		}
	}
	return nil
}

func randKeys(rng *rand.Rand, n int) [][]byte {
	const hex = "0123456789abcdef"
	keys := make([][]byte, n)
	for i := range keys {
		k := make([]byte, 16)
		for j := range k {
			k[j] = hex[rng.IntN(16)]
		}
		keys[i] = k
	}
	return keys
}

// serverCPU returns the CPU seconds (user and system) the servers behind
// rdb have used, summed over a cluster's masters.
func serverCPU(ctx context.Context, rdb redis.UniversalClient) float64 {
	parse := func(info string) float64 {
		var sec float64
		for _, l := range strings.Split(info, "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
			if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
				x, err := strconv.ParseFloat(v, 64)
				check(err)
				sec += x
			}
		}
		return sec
	}
	if c, ok := rdb.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		var sec float64
		check(c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			info, err := m.Info(ctx, "cpu").Result()
			mu.Lock()
			sec += parse(info)
			mu.Unlock()
			return err
		}))
		return sec
	}
	info, err := rdb.Info(ctx, "cpu").Result()
	check(err)
	return parse(info)
}

// measure runs fn, which handles n keys, and appends to res[op] its keys
// per second and to res[op+" cpu"] the servers' CPU microseconds per key.
func measure(ctx context.Context, rdb redis.UniversalClient, res map[string][]float64, op string, n int, fn func()) {
	cpu0, start := serverCPU(ctx, rdb), time.Now()
	fn()
	wall := time.Since(start).Seconds()
	res[op] = append(res[op], float64(n)/wall)
	res[op+" cpu"] = append(res[op+" cpu"], 1e6*(serverCPU(ctx, rdb)-cpu0)/float64(n))
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func si(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.0fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func ratios(v []float64) string {
	var s []string
	for _, x := range v {
		s = append(s, fmt.Sprintf("%.2f", x))
	}
	return strings.Join(s, " ")
}

func list(v []float64) string {
	var s []string
	for _, x := range v {
		s = append(s, si(x))
	}
	return strings.Join(s, " ")
}

// cleanup stops the servers started so far (stopping twice is harmless).
var cleanup []func()

// check ends the program on an error, stopping the servers first.
func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "redisbench:", err)
		for _, c := range cleanup {
			c()
		}
		os.Exit(1)
	}
}
