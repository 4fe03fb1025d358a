package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// redisFlags name a filter in Redis: the server (or cluster) and the
// filter's name. Commands that talk to Redis (push, pull, dedup --redis)
// share them.
type redisFlags struct {
	url     string
	name    string
	cluster bool
	wait    waitValue // --redis-wait (dedup)
}

// waitValue is --redis-wait: a duration of 0 or more, and whether it was
// given.
type waitValue struct {
	d   time.Duration
	set bool
}

func (v *waitValue) String() string { return v.d.String() }

func (v *waitValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return wantError("a duration of 0 or more, such as 30s or 2m")
	}
	v.d, v.set = d, true
	return nil
}

func (f *redisFlags) register(fs *flag.FlagSet) {
	fs.Var((*redisURLValue)(&f.url), "redis", "the Redis server: a `URL` (redis://[user:password@]host:port[/db], rediss:// for TLS) or host:port; several host:port, comma-separated, for a cluster")
	fs.Var((*nameValue)(&f.name), "name", "the filter's `name` in Redis")
	fs.BoolVar(&f.cluster, "cluster", false, "the server is a node of a Redis Cluster (implied by several addresses)")
}

// redisURLValue is --redis: a redis:// or rediss:// URL, or host:port,
// several comma-separated for a cluster. The URL's own fields (a user, a
// database, options) are go-redis's to check, when it is used.
type redisURLValue string

func (v *redisURLValue) String() string { return (*nameValue)(v).String() }

func (v *redisURLValue) Set(s string) error {
	const want = "want a redis:// or rediss:// URL, or host:port (several, comma-separated, for a cluster)"
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		if scheme != "redis" && scheme != "rediss" || rest == "" {
			return wantError(want)
		}
	} else {
		for _, a := range strings.Split(s, ",") {
			_, port, err := net.SplitHostPort(a)
			if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
				return wantError(want)
			}
		}
	}
	*v = redisURLValue(s)
	return nil
}

// registerWait registers --redis-wait, for the commands whose writes
// wait for a stalled server (dedup).
func (f *redisFlags) registerWait(fs *flag.FlagSet) {
	f.wait.d = redisfilter.DefaultRetryHorizon
	fs.Var(&f.wait, "redis-wait", "with --redis: how long a batch waits for a stalled, restarting or failing-over Redis before the run stops (status 3), as a `duration` (30s, 2m)")
}

// remedyRedis is the remedy of errors reaching Redis.
const remedyRedis = "check --redis and that the server is up"

// connect returns a client of the server the flags name, after a PING.
func (f *redisFlags) connect(ctx context.Context, cmd string) (redis.UniversalClient, error) {
	remedy := "see 'cuckoo " + cmd + " --help'"
	if f.url == "" {
		return nil, usageErr(remedy, "no --redis URL")
	}
	if f.name == "" {
		return nil, usageErr(remedy, "no --name: name the filter in Redis")
	}
	var rdb redis.UniversalClient
	switch {
	case strings.HasPrefix(f.url, "redis://") || strings.HasPrefix(f.url, "rediss://"):
		if f.cluster {
			opt, err := redis.ParseClusterURL(f.url)
			if err != nil {
				return nil, usageErr(remedy, "bad --redis %q: %v", f.url, err)
			}
			rdb = redis.NewClusterClient(opt)
		} else {
			opt, err := redis.ParseURL(f.url)
			if err != nil {
				return nil, usageErr(remedy, "bad --redis %q: %v", f.url, err)
			}
			rdb = redis.NewClient(opt)
		}
	default: // host:port, several for a cluster (checked by redisURLValue)
		addrs := strings.Split(f.url, ",")
		rdb = redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs, IsClusterMode: f.cluster})
	}
	quietRedisLog.Do(func() { redis.SetLogger(quietLogger{}) })
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		rdb.Close()
		return nil, dataErr(remedyRedis, "cannot reach Redis at %s: %v", f.url, err)
	}
	// A node of a cluster answers PING like a server of its own, and then
	// MOVED for the keys of the other nodes' slots: told now, rather than
	// when a command meets such a key. A server that refuses INFO (an ACL)
	// is not checked here; redisErr recognises the MOVED reply then.
	if !f.cluster {
		if info, err := rdb.Info(pctx, "cluster").Result(); err == nil && strings.Contains(info, "cluster_enabled:1") {
			rdb.Close()
			return nil, clusterErr(f)
		}
	}
	return rdb, nil
}

// quietRedisLog silences go-redis once per process. Its client logs dial
// failures itself, and the command reports errors its own way, one line.
// The logger is global, shared with every client of the process, so it is
// set once rather than at each connection.
var quietRedisLog sync.Once

// quietLogger drops go-redis's log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// clusterErr is the error of a cluster node given without --cluster.
func clusterErr(f *redisFlags) error {
	return usageErr("add --cluster", "%s is a node of a Redis Cluster", f.url)
}

// redisErr explains an error of package redisfilter for cmd.
func redisErr(f *redisFlags, err error) error {
	switch {
	case redisfilter.IsClusterRedirect(err):
		return clusterErr(f)
	case errors.Is(err, redisfilter.ErrNotFound):
		return dataErr("create it with 'cuckoo push' or 'cuckoo dedup --redis ... --capacity N'", "no filter %q in Redis at %s", f.name, f.url)
	case errors.Is(err, redisfilter.ErrExists):
		return dataErr("give --replace to replace it, or another --name", "a filter %q exists in Redis at %s", f.name, f.url)
	case errors.Is(err, redisfilter.ErrMismatch):
		return usageErr("use the filter's own parameters, or another --name", "%v", unwrap(err))
	case errors.Is(err, redisfilter.ErrInvalidParameter):
		return paramErr("see the command's --help for the ranges", err)
	case errors.Is(err, redisfilter.ErrFull):
		return &cliError{code: exitFull, msg: fmt.Sprintf("the filter %q in Redis is full", f.name), remedy: "push a larger one, or use another --name"}
	case errors.Is(err, redisfilter.ErrBusy):
		return dataErr("if no push is running, one was interrupted: rerun it with 'cuckoo push --replace'", "the filter %q in Redis is being pushed", f.name)
	case errors.Is(err, redisfilter.ErrUnsupported), errors.Is(err, redisfilter.ErrCorrupt):
		return dataErr("nothing was changed", "%v", unwrap(err))
	}
	return dataErr(remedyRedis, "Redis at %s: %v", f.url, unwrap(err))
}
