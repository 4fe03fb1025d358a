package server

// The generic key commands: enough for redis-cli, monitoring and scripts
// to list, inspect, rename and delete filters.

import (
	"slices"
	"strconv"
)

var keyCommands = []*command{
	{name: "dbsize", arity: 1, flags: flagReadonly | flagFast, group: "server",
		summary: "Returns the number of keys", exec: handle(parseDBSize)},
	{name: "exists", arity: -2, flags: flagReadonly | flagFast, firstKey: 1, lastKey: -1, step: 1, group: "generic",
		summary: "Counts the given keys that exist", exec: handle(parseExists)},
	{name: "del", arity: -2, flags: flagWrite, firstKey: 1, lastKey: -1, step: 1, group: "generic",
		summary: "Deletes keys", exec: handle(parseDel)},
	{name: "unlink", arity: -2, flags: flagWrite | flagFast, firstKey: 1, lastKey: -1, step: 1, group: "generic",
		summary: "Deletes keys", exec: handle(parseDel)},
	{name: "type", arity: 2, flags: flagReadonly | flagFast, firstKey: 1, lastKey: 1, step: 1, group: "generic",
		summary: "Returns the type of a key", exec: handle(parseType)},
	{name: "keys", arity: 2, flags: flagReadonly, group: "generic",
		summary: "Returns the keys that match a pattern", exec: handle(parseKeys)},
	{name: "scan", arity: -2, flags: flagReadonly, group: "generic",
		summary: "Iterates over the keys", exec: handle(parseScan)},
	{name: "rename", arity: 3, flags: flagWrite, firstKey: 1, lastKey: 2, step: 1, group: "generic",
		summary: "Renames a key, replacing any key of the new name", exec: handle(parseRename)},
	{name: "flushall", arity: -1, flags: flagWrite, group: "server",
		summary: "Deletes every key", exec: handle(parseFlush)},
	{name: "flushdb", arity: -1, flags: flagWrite, group: "server",
		summary: "Deletes every key", exec: handle(parseFlush)},
}

// DBSIZE

type dbSize struct{}

func parseDBSize([][]byte) (dbSize, error) { return dbSize{}, nil }

func (dbSize) run(c *call) { c.w.Int(c.s.ks.count.Load()) }

// EXISTS key...: a key given twice counts twice, as in Redis.

type existsReq struct{ keys [][]byte }

func parseExists(args [][]byte) (existsReq, error) { return existsReq{args[1:]}, nil }

func (r existsReq) run(c *call) {
	n := 0
	for _, k := range r.keys {
		if c.s.ks.get(k) != nil {
			n++
		}
	}
	c.w.Int(int64(n))
}

// DEL key..., UNLINK key...

type delReq struct{ keys [][]byte }

func parseDel(args [][]byte) (delReq, error) { return delReq{args[1:]}, nil }

func (r delReq) run(c *call) {
	n := c.s.ks.remove(r.keys, func(epoch uint64) { c.log(epoch, c.args) })
	c.s.dropLoads(r.keys)
	c.w.Int(int64(n))
}

// TYPE key: RedisBloom's type names, or none.

type typeReq struct{ key []byte }

func parseType(args [][]byte) (typeReq, error) { return typeReq{args[1]}, nil }

func (r typeReq) run(c *call) {
	if o := c.s.ks.get(r.key); o != nil {
		c.w.Simple(o.kind.typeName())
		return
	}
	c.w.Simple("none")
}

// KEYS pattern: the keys in byte order.

type keysReq struct{ pattern []byte }

func parseKeys(args [][]byte) (keysReq, error) { return keysReq{args[1]}, nil }

func (r keysReq) run(c *call) {
	var all, buf []string
	for i := range c.s.ks.shards {
		buf = c.s.ks.shardKeys(i, buf[:0])
		for _, k := range buf {
			if globMatch(r.pattern, []byte(k)) {
				all = append(all, k)
			}
		}
	}
	slices.Sort(all)
	c.w.Array(len(all))
	for _, k := range all {
		c.w.BulkString(k)
	}
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]. The cursor is a
// shard number: each call returns whole shards until it has COUNT keys
// (so it may return more, as Redis may), which guarantees what Redis
// does: a key present for the whole iteration is returned exactly once.

type scanReq struct {
	cursor  uint64
	pattern []byte
	count   int64
	typ     []byte
}

func parseScan(args [][]byte) (scanReq, error) {
	cursor, ok := parseUint(args[1])
	if !ok {
		return scanReq{}, errInvalidCursor
	}
	r := scanReq{cursor: cursor, count: 10}
	for i := 2; i < len(args); i += 2 {
		if i+1 == len(args) {
			return r, errSyntax
		}
		switch {
		case is(args[i], "MATCH"):
			r.pattern = args[i+1]
		case is(args[i], "COUNT"):
			n, ok := parseInt(args[i+1])
			if !ok {
				return r, errNotInteger
			}
			if n < 1 {
				return r, errSyntax
			}
			r.count = n
		case is(args[i], "TYPE"):
			r.typ = args[i+1]
		default:
			return r, errSyntax
		}
	}
	return r, nil
}

func (r scanReq) run(c *call) {
	ks := c.s.ks
	var keys, buf []string
	next := uint64(0)
	for i := r.cursor; i < numShards; i++ {
		buf = ks.shardKeys(int(i), buf[:0])
		for _, k := range buf {
			if r.pattern != nil && !globMatch(r.pattern, []byte(k)) {
				continue
			}
			if r.typ != nil {
				o := ks.get([]byte(k))
				if o == nil || !is(r.typ, upper(o.kind.typeName())) {
					continue
				}
			}
			keys = append(keys, k)
		}
		if int64(len(keys)) >= r.count && i+1 < numShards {
			next = i + 1
			break
		}
	}
	slices.Sort(keys)
	c.w.Array(2)
	c.w.BulkString(strconv.FormatUint(next, 10))
	c.w.Array(len(keys))
	for _, k := range keys {
		c.w.BulkString(k)
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if 'a' <= ch && ch <= 'z' {
			b[i] = ch - ('a' - 'A')
		}
	}
	return string(b)
}

// RENAME key newkey

type renameReq struct{ src, dst []byte }

func parseRename(args [][]byte) (renameReq, error) { return renameReq{args[1], args[2]}, nil }

func (r renameReq) run(c *call) {
	if err := c.s.ks.rename(r.src, r.dst, func(epoch uint64) { c.log(epoch, c.args) }); err != nil {
		c.fail(err)
		return
	}
	c.w.OK()
}

// FLUSHALL [ASYNC | SYNC], FLUSHDB [ASYNC | SYNC]: both run at once.

type flushReq struct{}

func parseFlush(args [][]byte) (flushReq, error) {
	if len(args) > 2 || len(args) == 2 && !is(args[1], "ASYNC") && !is(args[1], "SYNC") {
		return flushReq{}, errSyntax
	}
	return flushReq{}, nil
}

func (flushReq) run(c *call) {
	c.s.ks.flush(func(epoch uint64) { c.log(epoch, [][]byte{[]byte("FLUSHALL")}) })
	c.s.dropLoads(nil)
	c.w.OK()
}
