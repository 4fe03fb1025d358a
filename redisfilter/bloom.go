package redisfilter

import (
	"context"
	"fmt"
	"math/bits"

	"github.com/dedupkit/cuckoo/bloom"
	"github.com/dedupkit/cuckoo/internal/hash"
	"github.com/redis/go-redis/v9"
)

// Bloom is a blocked Bloom filter kept in Redis: the layout of the
// library's [bloom.New], each key's k bits in one 512-bit block, so an add
// is one BITFIELD SET and a lookup one BITFIELD_RO on one segment, with no
// script (Bloom filters work on any Redis from 6.0, and Valkey). The
// blocks are split into segments as a cuckoo filter's buckets are; each
// segment's string holds its blocks as the library's table holds them
// (little-endian 64-bit words), so the bytes mean the same thing in both.
//
// A Bloom is safe for concurrent use, and any number of clients may add
// and look up at once: setting bits commutes. Keys cannot be deleted. An
// add may run any number of times, so one whose outcome is unknown (no
// reply) is sent again until the retry horizon ([WithRetryHorizon]); its
// errors mean what a [Filter]'s do: [ErrUnconfirmed] if a copy may have
// run (whatever a later copy was told), [ErrNotSent] if none reached
// Redis, any other error not applied.
type Bloom struct {
	rdb        redis.UniversalClient
	name       string
	m          meta
	perSegment uint64 // blocks per segment
	segments   []string
	retry      retryPolicy
}

// golden is γ, the odd constant that steps the library's position stream
// (bloom's blocked layout, docs/format.md "Bloom filters / Hashing").
const golden = 0x9e3779b97f4a7c15

// bloomSampleKeys is the capacity of the library filter NewBloom reads
// the keys per block from, for larger capacities.
const bloomSampleKeys = 1 << 20

// NewBloom returns the Bloom filter called name in rdb, creating it empty
// if it does not exist, sized as the library's [bloom.New](capacity,
// [bloom.WithFalsePositiveRate](p)) (or a few blocks larger): its
// false-positive rate with capacity keys in is at most the target p of
// [WithFalsePositiveRate], [bloom.DefaultFalsePositiveRate] if not given.
// If a filter of that name exists with the same parameters (the seed and
// segment count compared only when given) NewBloom opens it; with others
// it returns an error wrapping [ErrMismatch]. It takes
// [WithFalsePositiveRate], [WithSegments], [WithSeed] and
// [WithRetryHorizon]; the cuckoo options are refused.
func NewBloom(ctx context.Context, rdb redis.UniversalClient, name string, capacity uint64, opts ...Option) (*Bloom, error) {
	c, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	if c.cuckooOK {
		return nil, fmt.Errorf("%w: bucket size, fingerprint bits and max kicks are cuckoo filter options", ErrInvalidParameter)
	}
	fpr := c.fpr
	if fpr == 0 {
		fpr = bloom.DefaultFalsePositiveRate
	}
	retry, err := c.resolveRetry()
	if err != nil {
		return nil, err
	}
	k, blocks, err := bloomSize(capacity, fpr)
	if err != nil {
		return nil, err
	}
	segments := c.segments
	if segments == 0 {
		segments = bloomSegments(capacity, blocks)
	}
	blocks = (blocks + uint64(segments) - 1) / uint64(segments) * uint64(segments)
	if blocks/uint64(segments)*64 > maxSegmentBytes {
		return nil, fmt.Errorf("%w: segments of %d bytes, above Redis's 512 MiB strings: give WithSegments a larger count", ErrInvalidParameter, blocks/uint64(segments)*64)
	}
	want := meta{kind: "bloom", k: k, blocks: blocks, segments: segments, seed: c.seed, capacity: capacity, fpr: fpr,
		id: newID(), state: stateReady}
	key := metaKey(bloomPrefix, name)
	m := want
	if old, err := rdb.Get(ctx, key).Result(); err == nil {
		if m, err = parseMeta(old, "bloom"); err != nil {
			return nil, err
		}
	} else if err != redis.Nil {
		return nil, noFunctions(ctx, rdb, err)
	}
	b := newBloom(rdb, name, m, retry)
	if m.id == want.id {
		// A new filter: make the segments (idempotently: writing 0 into the
		// last bit creates a missing string of the right size and changes
		// no existing one), then claim the name.
		if err := b.eachSegment(ctx, func(s int) redis.Cmder {
			return redis.NewIntSliceCmd(ctx, "bitfield", b.segments[s], "incrby", "u1", b.perSegment*512-1, 0)
		}); err != nil {
			return nil, err
		}
		old, err := claimMeta(ctx, rdb, key, want.encode())
		if err != nil {
			return nil, err
		}
		if old == "" {
			return b, nil
		}
		if m, err = parseMeta(old, "bloom"); err != nil {
			return nil, err
		}
		b = newBloom(rdb, name, m, retry)
	}
	if d := m.diff(&want, c.seedSet, c.segments != 0); d != "" {
		return nil, fmt.Errorf("%w: Bloom filter %q has %s", ErrMismatch, name, d)
	}
	return b, nil
}

// OpenBloom returns the existing Bloom filter called name, or an error
// wrapping [ErrNotFound]. It takes the handle's options only
// ([WithRetryHorizon]).
func OpenBloom(ctx context.Context, rdb redis.UniversalClient, name string, opts ...Option) (*Bloom, error) {
	retry, err := handleOptions(opts)
	if err != nil {
		return nil, err
	}
	m, err := readMeta(ctx, rdb, bloomPrefix, "bloom", name)
	if err != nil {
		return nil, err
	}
	return newBloom(rdb, name, m, retry), nil
}

func newBloom(rdb redis.UniversalClient, name string, m meta, retry retryPolicy) *Bloom {
	b := &Bloom{rdb: rdb, name: name, m: m, perSegment: m.blocks / uint64(m.segments), retry: retry}
	for s := range m.segments {
		b.segments = append(b.segments, segmentKey(bloomPrefix, "", name, s, m.segments))
	}
	return b
}

// bloomSize returns the library's bits per key and block count for
// capacity keys at rate fpr. bloom has no sizing call that allocates
// nothing, so the block count comes from a library filter: of capacity
// keys up to 2^20, else of 2^20 keys scaled up (rounded up, so the
// filter is never smaller than the library's).
func bloomSize(capacity uint64, fpr float64) (k int, blocks uint64, err error) {
	sample := min(capacity, bloomSampleKeys)
	lib, err := bloom.New(sample, bloom.WithFalsePositiveRate(fpr), bloom.WithSeed(0))
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrInvalidParameter, err)
	}
	blocks = lib.SizeInBytes() / 64
	if capacity > sample {
		hi, lo := bits.Mul64(capacity, blocks)
		q, r := bits.Div64(hi, lo, sample)
		if hi >= sample {
			return 0, 0, fmt.Errorf("%w: capacity %d", ErrInvalidParameter, capacity)
		}
		blocks = q
		if r != 0 {
			blocks++
		}
	}
	return lib.HashCount(), blocks, nil
}

// bloomSegments is the default segment count of a Bloom filter of blocks
// blocks for capacity keys, chosen as a cuckoo filter's (see WithSegments).
func bloomSegments(capacity, blocks uint64) int {
	return fitSegments(min(leastSegments(capacity), blocks), func(s uint64) (uint64, bool) {
		return (blocks + s - 1) / s * 64, s <= blocks
	})
}

// locate returns a key's segment and the Redis bit offsets (BITFIELD
// numbers bits most significant first) of its k bits: bit p of its block
// is bit p%64 of the block's word p/64, the word stored little-endian.
func (b *Bloom) locate(key []byte, offs []int64) (int, []int64) {
	h := hash.Sum64(key, b.m.seed)
	j, _ := bits.Mul64(h, b.m.blocks)
	s := j / b.perSegment
	base := (j - s*b.perSegment) * 512
	offs = offs[:0]
	x, n := h, b.m.k
	for n > 0 {
		y := hash.Mix64(x)
		x += golden
		for range min(n, 7) {
			p := y & 511                              // word (y>>6)&7, bit y&63
			byteStart := base + p>>6*64 + (p&63)>>3*8 // in bits
			offs = append(offs, int64(byteStart+7-p&7))
			y >>= 9
		}
		n -= 7
	}
	return int(s), offs
}

// Add adds key: one BITFIELD on its segment, setting its k bits, sent
// until it has a reply or the retry horizon passes (then the error wraps
// [ErrUnconfirmed] if a copy may have run).
func (b *Bloom) Add(ctx context.Context, key []byte) error {
	var buf [64]int64
	s, offs := b.locate(key, buf[:0])
	cmd := redis.NewIntSliceCmd(ctx, b.bitfield(s, true, offs, 1)...)
	cmd.SetFirstKeyPos(1)
	errs, _, _ := b.retry.settle(ctx, []redis.Cmder{cmd}, idempotentWrites, b.sender(ctx))
	return errs[0]
}

// bitfield returns the arguments of a BITFIELD (add: setting the bits at
// offs to 1) or BITFIELD_RO (reading them) of segment s, with room for
// the fields of keys keys.
func (b *Bloom) bitfield(s int, add bool, offs []int64, keys int) []any {
	args := make([]any, 0, 2+4*b.m.k*keys)
	if add {
		args = append(args, "bitfield", b.segments[s])
	} else {
		args = append(args, "bitfield_ro", b.segments[s])
	}
	return appendBits(args, add, offs)
}

// appendBits appends the fields that set (add) or read the bits at offs.
func appendBits(args []any, add bool, offs []int64) []any {
	for _, o := range offs {
		if add {
			args = append(args, "set", "u1", o, 1)
		} else {
			args = append(args, "get", "u1", o)
		}
	}
	return args
}

func (b *Bloom) sender(ctx context.Context) func([]redis.Cmder) error {
	return func(cmds []redis.Cmder) error { return pipeline(ctx, b.rdb, cmds) }
}

// Contains reports whether key may be in the filter: always true for a
// key added, true with the false-positive rate for others. One
// BITFIELD_RO, sent again until the retry horizon if no reply comes.
func (b *Bloom) Contains(ctx context.Context, key []byte) (bool, error) {
	var buf [64]int64
	s, offs := b.locate(key, buf[:0])
	cmd := redis.NewIntSliceCmd(ctx, b.bitfield(s, false, offs, 1)...)
	cmd.SetFirstKeyPos(1)
	if errs, _, _ := b.retry.settle(ctx, []redis.Cmder{cmd}, reads, b.sender(ctx)); errs[0] != nil {
		return false, errs[0]
	}
	for _, v := range cmd.Val() {
		if v == 0 {
			return false, nil
		}
	}
	return true, nil
}

// AddBatch adds every key and sets errs[i] to key i's result: nil
// (added), an error wrapping [ErrUnconfirmed] (maybe added), one wrapping
// [ErrNotSent] (not sent), or another error, such as a refusal Redis
// replied to every copy (not added). It returns the first of those
// errors. One
// BITFIELD per 128 keys of a segment, in pipelines (one per node of a
// cluster) of up to 8,192 keys, up to three of them in flight at once.
// errs must be at least as long as keys.
func (b *Bloom) AddBatch(ctx context.Context, keys [][]byte, errs []error) error {
	if err := checkBatch(len(keys), len(errs)); err != nil {
		return err
	}
	return b.batch(ctx, keys, true, nil, errs)
}

// ContainsBatch sets found[i] to Contains(keys[i]) and errs[i] to nil
// for every key it read; a key it could not read gets found[i] = false
// and the error in errs[i], as [Filter.ContainsBatch] does. It returns
// the first of those errors. One BITFIELD_RO per 128 keys of a segment, in
// pipelines as AddBatch's. found and errs must be at least as long as
// keys.
func (b *Bloom) ContainsBatch(ctx context.Context, keys [][]byte, found []bool, errs []error) error {
	if err := checkBatch(len(keys), len(found), len(errs)); err != nil {
		return err
	}
	return b.batch(ctx, keys, false, found, errs)
}

func (b *Bloom) batch(ctx context.Context, keys [][]byte, add bool, found []bool, errs []error) error {
	kind := reads
	if add {
		kind = idempotentWrites
	}
	sent, err := overlapRounds(len(keys), func(lo, hi int) (bool, error) {
		var buf [64]int64
		loc := make([]located, hi-lo)
		offs := make([][]int64, hi-lo)
		for i, k := range keys[lo:hi] {
			s, o := b.locate(k, buf[:0])
			loc[i].segment = s
			offs[i] = append([]int64(nil), o...)
		}
		order := orderBySegment(loc, b.m.segments)
		var cmds []redis.Cmder
		var groups [][]int32
		chunks(loc, order, lookupChunk, func(s int, idx []int32) {
			args := b.bitfield(s, add, nil, len(idx))
			for _, i := range idx {
				args = appendBits(args, add, offs[i])
			}
			cmd := redis.NewIntSliceCmd(ctx, args...)
			cmd.SetFirstKeyPos(1)
			cmds = append(cmds, cmd)
			groups = append(groups, idx)
		})
		cerrs, stop, _ := b.retry.settle(ctx, cmds, kind, b.sender(ctx))
		var err error
		for c, cmd := range cmds {
			if cerrs[c] != nil {
				err = cmp(err, cerrs[c])
				for _, i := range groups[c] {
					errs[lo+int(i)] = cerrs[c]
					if !add {
						found[lo+int(i)] = false
					}
				}
				continue
			}
			vals := cmd.(*redis.IntSliceCmd).Val()
			for _, i := range groups[c] {
				errs[lo+int(i)] = nil
				if add {
					continue
				}
				all := true
				for range offs[i] {
					all = all && vals[0] == 1
					vals = vals[1:]
				}
				found[lo+int(i)] = all
			}
		}
		return stop, err
	})
	markNotSent(errs[sent:len(keys)], 0)
	if !add {
		clear(found[sent:len(keys)])
	}
	return err
}

// eachSegment sends one command per segment, in pipelines.
func (b *Bloom) eachSegment(ctx context.Context, mk func(s int) redis.Cmder) error {
	for lo := 0; lo < len(b.segments); lo += segmentBatch {
		var cmds []redis.Cmder
		for s := lo; s < min(lo+segmentBatch, len(b.segments)); s++ {
			cmds = append(cmds, mk(s))
		}
		pipeline(ctx, b.rdb, cmds)
		for _, c := range cmds {
			if err := c.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Name returns the filter's name.
func (b *Bloom) Name() string { return b.name }

// HashCount returns k, the bits set per key.
func (b *Bloom) HashCount() int { return b.m.k }

// Capacity returns the number of keys the filter was sized for: up to that
// many, its false-positive rate stays at or below its target.
func (b *Bloom) Capacity() uint64 { return b.m.capacity }

// TargetFalsePositiveRate returns the rate the filter was built for (see
// [WithFalsePositiveRate]).
func (b *Bloom) TargetFalsePositiveRate() float64 { return b.m.fpr }

// Segments returns the number of segments (Redis strings) the blocks are
// split into.
func (b *Bloom) Segments() int { return b.m.segments }

// SizeInBytes returns the bytes of the segments' blocks together.
func (b *Bloom) SizeInBytes() uint64 { return b.m.blocks * 64 }

// Keys returns the Redis keys of the filter: its metadata, then its
// segments.
func (b *Bloom) Keys() []string { return append([]string{metaKey(bloomPrefix, b.name)}, b.segments...) }

// MemoryUsage returns what Redis reports (MEMORY USAGE) for the filter's
// keys together.
func (b *Bloom) MemoryUsage(ctx context.Context) (uint64, error) {
	return memoryUsage(ctx, b.rdb, b.Keys())
}

// Drop deletes the filter: its metadata, then its segments.
func (b *Bloom) Drop(ctx context.Context) error {
	if err := b.rdb.Del(ctx, metaKey(bloomPrefix, b.name)).Err(); err != nil {
		return err
	}
	return b.eachSegment(ctx, func(s int) redis.Cmder { return redis.NewIntCmd(ctx, "del", b.segments[s]) })
}
