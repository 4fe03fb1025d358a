package redisfilter

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// luaLibrary is the Redis Functions library that updates cuckoo segments,
// loaded with FUNCTION LOAD into every master.
//
//go:embed cuckoo.lua
var luaLibrary string

// libraryName is the library's name (its first line says it too), and
// the prefix of its functions' names. Frozen: see cuckoo.lua.
const libraryName = "ckf2"

// The library's functions.
const (
	fnAdd    = libraryName + "_add"
	fnDel    = libraryName + "_del"
	fnCount  = libraryName + "_count"
	fnCreate = libraryName + "_create"
	fnPut    = libraryName + "_put"
	fnDump   = libraryName + "_dump"
)

// libraryRevision is the revision of luaLibrary (its second line).
var libraryRevision = revision(luaLibrary)

// revision returns the revision a library's code states ("-- revision N"
// on a line of its own), or 0.
func revision(code string) int {
	for _, l := range strings.SplitN(code, "\n", 8) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "-- revision "); ok {
			if n, err := strconv.Atoi(v); err == nil {
				return n
			}
		}
	}
	return 0
}

// ensureFunctions loads the library into every master that lacks it or
// holds an older revision of it; a newer revision (loaded by a newer
// client) stays, as its functions keep the arguments and replies of
// this one's. Other versions of the library (ckf1) are left alone, for
// their clients. Servers without Redis Functions get an error wrapping
// ErrUnsupported that names the version needed.
func ensureFunctions(ctx context.Context, rdb redis.UniversalClient) error {
	load := func(ctx context.Context, c redis.Cmdable) error {
		libs, err := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: libraryName, WithCode: true}).Result()
		if err != nil {
			return noFunctions(ctx, c, err)
		}
		for _, l := range libs {
			if l.Name == libraryName && revision(l.Code) >= libraryRevision {
				return nil
			}
		}
		if err := c.FunctionLoadReplace(ctx, luaLibrary).Err(); err != nil {
			return noFunctions(ctx, c, err)
		}
		return nil
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return load(ctx, n) })
	case *redis.Ring:
		return fmt.Errorf("%w: a redis.Ring client (use a ClusterClient, or a Client per filter)", ErrUnsupported)
	default:
		return load(ctx, rdb)
	}
}

// noFunctions explains err when the server does not know FUNCTION, from
// what its INFO says it is: cuckoo serve (which answers RedisBloom's CF.*
// and BF.* commands itself, and says redis_version 8.0.0 for the clients
// that check it), a Redis older than 7.0, or a server that claims a
// version with Functions but is not a Redis that has them (a proxy,
// another implementation).
func noFunctions(ctx context.Context, c redis.Cmdable, err error) error {
	if !isUnknownCommand(err) {
		return err
	}
	const need = "redisfilter's filters need Redis 7.0 or later, or Valkey 7.2 or later"
	var version, cuckooVersion string
	if info, ierr := c.Info(ctx, "server").Result(); ierr == nil {
		for _, l := range strings.Split(info, "\n") {
			l = strings.TrimSpace(l)
			if v, ok := strings.CutPrefix(l, "redis_version:"); ok {
				version = v
			}
			if v, ok := strings.CutPrefix(l, "cuckoo_version:"); ok {
				cuckooVersion = v
			}
		}
	}
	switch {
	case cuckooVersion != "":
		return fmt.Errorf("%w: the server is cuckoo serve (%s), which has no Redis Functions: it answers RedisBloom's CF.* and BF.* commands itself; %s", ErrUnsupported, cuckooVersion, need)
	case version == "":
		return fmt.Errorf("%w: the server has no Redis Functions (FUNCTION: %v) and does not say its version; %s", ErrUnsupported, err, need)
	case major(version) >= 7:
		return fmt.Errorf("%w: the server says it is Redis %s but has no Redis Functions (FUNCTION: %v): it is not a Redis that offers them (a proxy, another server, or FUNCTION renamed away); %s", ErrUnsupported, version, err, need)
	}
	return fmt.Errorf("%w: the server is Redis %s, which has no Redis Functions; %s", ErrUnsupported, version, need)
}

// major returns the major number of a version such as 7.0.15 (0 when it
// has none).
func major(version string) int {
	n, _ := strconv.Atoi(strings.SplitN(version, ".", 2)[0])
	return n
}

func isUnknownCommand(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.Contains(err.Error(), "unknown command")
}

// pipeline sends cmds in one pipeline (one per node of a cluster; a
// single command on its own) and returns the first error that is not a
// reply of Redis. Each command holds its reply or its error.
func pipeline(ctx context.Context, rdb redis.UniversalClient, cmds []redis.Cmder) error {
	if len(cmds) == 1 {
		return transportErr(rdb.Process(ctx, cmds[0]))
	}
	pipe := rdb.Pipeline()
	for _, c := range cmds {
		pipe.Process(ctx, c)
	}
	pipe.Exec(ctx)
	return firstTransportErr(cmds)
}

// transportErr returns err unless it is an error replied by Redis (those
// stay in their commands).
func transportErr(err error) error {
	var re redis.Error
	if err == nil || errors.Is(err, redis.Nil) || errors.As(err, &re) {
		return nil
	}
	return err
}

// firstTransportErr returns the first error of cmds that Redis did not
// reply (a connection or a context error).
func firstTransportErr(cmds []redis.Cmder) error {
	for _, c := range cmds {
		if err := transportErr(c.Err()); err != nil {
			return err
		}
	}
	return nil
}

func isWrite(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		if c.Name() == "fcall" {
			return true
		}
	}
	return false
}

// replyErr maps an error Redis replied to a function call.
func replyErr(err error) error {
	if err == nil {
		return nil
	}
	if strings.HasPrefix(err.Error(), "CKFGONE") {
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	return err
}
