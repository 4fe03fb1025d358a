package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Batch sizes. A round is the keys one pipeline carries (bounding the
// memory of the commands being built); a command carries up to
// lookupChunk keys for lookups (one BITFIELD_RO) and writeChunk for
// writes (one function call, during which the shard's server does nothing
// else: well under a millisecond below 90 % load, a few milliseconds when
// a full shard makes its keys search and walk for room).
const (
	roundKeys = 1 << 13
	// roundsInFlight is how many rounds of reads overlap.
	roundsInFlight = 3
	lookupChunk    = 128
	writeChunk     = 32
	// writeRound is the keys one pipeline of writes carries: go-redis
	// gives a pipeline's replies one read deadline (ReadTimeout, 3 s by
	// default), and writes to a nearly full filter run at a few thousand
	// keys a second on a busy server.
	writeRound = 1 << 12
)

// located is a key's place: its shard, buckets and fingerprint.
type located struct {
	shard      int
	i1, i2, fp uint64
}

// group locates keys and returns their places and their indexes ordered
// by shard, keys of a shard in input order.
func (f *Filter) group(keys [][]byte) ([]located, []int32) {
	loc := make([]located, len(keys))
	for i, k := range keys {
		s, i1, i2, fp := f.g.locateKey(k)
		loc[i] = located{s, i1, i2, fp}
	}
	return loc, orderByShard(loc, f.m.shards)
}

// orderByShard returns the indexes of loc ordered by shard (a stable
// counting sort: keys of a shard stay in input order).
func orderByShard(loc []located, shards int) []int32 {
	counts := make([]int32, shards+1)
	for i := range loc {
		counts[loc[i].shard+1]++
	}
	for s := 1; s <= shards; s++ {
		counts[s] += counts[s-1]
	}
	order := make([]int32, len(loc))
	for i := range loc {
		s := loc[i].shard
		order[counts[s]] = int32(i)
		counts[s]++
	}
	return order
}

// chunks calls fn for each run of at most n indexes of order that share a
// shard.
func chunks(loc []located, order []int32, n int, fn func(shard int, idx []int32)) {
	for lo := 0; lo < len(order); {
		s := loc[order[lo]].shard
		hi := lo + 1
		for hi < len(order) && hi-lo < n && loc[order[hi]].shard == s {
			hi++
		}
		fn(s, order[lo:hi])
		lo = hi
	}
}

// ContainsBatch sets found[i] to Contains(keys[i]) for every key. It
// groups the keys by shard, reads each group's buckets with one
// BITFIELD_RO per 128 keys, and sends the commands in pipelines (one per
// node of a cluster, in parallel) of up to 8,192 keys, up to three
// pipelines in flight at once. found must be at least as long as keys.
// On an error, found holds some results and garbage.
func (f *Filter) ContainsBatch(ctx context.Context, keys [][]byte, found []bool) error {
	if len(found) < len(keys) {
		return fmt.Errorf("%w: %d results for %d keys", ErrInvalidParameter, len(found), len(keys))
	}
	return overlapRounds(len(keys), func(lo, hi int) error {
		return f.containsRound(ctx, keys[lo:hi], found[lo:hi])
	})
}

// overlapRounds calls round for each run [lo, hi) of at most roundKeys of
// n keys, with up to roundsInFlight calls running at once, and returns the
// first error. Lookups use it, and the Bloom filter's adds (setting bits
// commutes): while the servers answer one round, the client builds the
// next and decodes the last, so a single node's server is not left idle
// between pipelines. The cuckoo filter's writes do not: their keys of a
// shard are added in input order.
func overlapRounds(n int, round func(lo, hi int) error) error {
	if n <= roundKeys {
		return round(0, n)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, roundsInFlight)
	)
	for lo := 0; lo < n; lo += roundKeys {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed {
			break
		}
		slots <- struct{}{}
		wg.Add(1)
		go func(lo, hi int) {
			defer func() { <-slots; wg.Done() }()
			if err := round(lo, hi); err != nil {
				mu.Lock()
				first = cmp(first, err)
				mu.Unlock()
			}
		}(lo, min(lo+roundKeys, n))
	}
	wg.Wait()
	return first
}

func (f *Filter) containsRound(ctx context.Context, keys [][]byte, found []bool) error {
	loc, order := f.group(keys)
	var cmds []redis.Cmder
	var groups [][]int32
	chunks(loc, order, lookupChunk, func(s int, idx []int32) {
		n := 2
		for _, i := range idx {
			n += 3 * (f.g.fields(loc[i].i1) + f.g.fields(loc[i].i2))
		}
		args := make([]any, 0, n)
		args = append(args, "bitfield_ro", f.tables[s])
		for _, i := range idx {
			args = f.g.appendFields(args, loc[i].i1)
			args = f.g.appendFields(args, loc[i].i2)
		}
		cmd := redis.NewIntSliceCmd(ctx, args...)
		cmd.SetFirstKeyPos(1)
		cmds = append(cmds, cmd)
		groups = append(groups, idx)
	})
	if err := f.send(ctx, cmds); err != nil {
		return err
	}
	var buf [40]byte
	for c, cmd := range cmds {
		vals, err := cmd.(*redis.IntSliceCmd).Result()
		if err != nil {
			return err
		}
		for _, i := range groups[c] {
			l := &loc[i]
			var bb []byte
			var sh uint
			bb, sh, vals = f.g.bucketBytes(buf[:], vals, l.i1)
			hit := f.g.has(bb, sh, l.fp)
			bb, sh, vals = f.g.bucketBytes(buf[:], vals, l.i2)
			found[i] = hit || f.g.has(bb, sh, l.fp)
		}
	}
	return nil
}

// AddBatch adds every key, as Add does, and sets errs[i] to key i's
// result: nil, or ErrFull. It groups the keys by shard and calls the
// insert function once per 32 keys of a shard, in pipelines (one per
// node of a cluster, in parallel) of up to 4,096 keys; keys of one shard
// are added in their order in keys. The return value is a failure of the transport (or of a
// Durable filter's WAIT): the keys whose errs[i] is then neither nil nor
// ErrFull may or may not have been added. errs must be at least as long
// as keys.
func (f *Filter) AddBatch(ctx context.Context, keys [][]byte, errs []error) error {
	if len(errs) < len(keys) {
		return fmt.Errorf("%w: %d results for %d keys", ErrInvalidParameter, len(errs), len(keys))
	}
	return f.writeBatch(ctx, "ckf1_add", 0, keys, func(i int, code int64) {
		errs[i] = nil
		if code == 0 {
			errs[i] = ErrFull
		}
	}, func(i int, err error) { errs[i] = err })
}

// AddUniqueBatch adds each key that the filter does not report already,
// as AddUnique does (each test-and-insert atomic), and sets added[i] to
// whether key i was added; errs[i] is nil, or ErrFull. A key that appears
// twice in keys is added once. Errors as for [Filter.AddBatch]; added and
// errs must be at least as long as keys.
func (f *Filter) AddUniqueBatch(ctx context.Context, keys [][]byte, added []bool, errs []error) error {
	if len(added) < len(keys) || len(errs) < len(keys) {
		return fmt.Errorf("%w: %d and %d results for %d keys", ErrInvalidParameter, len(added), len(errs), len(keys))
	}
	return f.writeBatch(ctx, "ckf1_add", 1, keys, func(i int, code int64) {
		added[i], errs[i] = code == 1, nil
		if code == 0 {
			errs[i] = ErrFull
		}
	}, func(i int, err error) { added[i], errs[i] = false, err })
}

// DeleteBatch deletes one copy of every key, as Delete does, and sets
// deleted[i] to whether key i had one. Errors as for [Filter.AddBatch].
func (f *Filter) DeleteBatch(ctx context.Context, keys [][]byte, deleted []bool) error {
	if len(deleted) < len(keys) {
		return fmt.Errorf("%w: %d results for %d keys", ErrInvalidParameter, len(deleted), len(keys))
	}
	return f.writeBatch(ctx, "ckf1_del", -1, keys, func(i int, code int64) { deleted[i] = code == 1 },
		func(i int, err error) { deleted[i] = false })
}

// writeBatch calls function fn for keys, in chunks of one shard, and
// hands each key's reply code to done (or its command's error to fail).
// unique is the add functions' mode argument; -1 for none.
func (f *Filter) writeBatch(ctx context.Context, fn string, unique int, keys [][]byte,
	done func(i int, code int64), fail func(i int, err error)) error {
	var retErr error
	for lo := 0; lo < len(keys); lo += writeRound {
		hi := min(lo+writeRound, len(keys))
		loc, order := f.group(keys[lo:hi])
		var cmds []redis.Cmder
		var groups [][]int32
		chunks(loc, order, writeChunk, func(s int, idx []int32) {
			args := f.header(1 + 2*len(idx))
			if unique >= 0 {
				args = append(args, unique)
			}
			for _, i := range idx {
				args = append(args, loc[i].i1, loc[i].fp)
			}
			cmds = append(cmds, f.fcall(ctx, fn, s, args))
			groups = append(groups, idx)
		})
		err := f.run(ctx, cmds)
		if err != nil && !errors.Is(err, ErrNotReplicated) {
			for c, cmd := range cmds {
				for _, i := range groups[c] {
					fail(lo+int(i), cmd.Err())
				}
			}
			return err
		}
		retErr = cmp(retErr, err)
		for c, cmd := range cmds {
			codes, cerr := cmd.(*redis.Cmd).Int64Slice()
			if cerr == nil && len(codes) != len(groups[c]) {
				cerr = fmt.Errorf("%w: %s replied %d codes for %d keys", ErrCorrupt, fn, len(codes), len(groups[c]))
			}
			if cerr != nil {
				cerr = replyErr(cerr)
				for _, i := range groups[c] {
					fail(lo+int(i), cerr)
				}
				retErr = cmp(retErr, cerr)
				continue
			}
			for k, i := range groups[c] {
				done(lo+int(i), codes[k])
			}
		}
	}
	return retErr
}

// cmp returns the first non-nil of a and b.
func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
