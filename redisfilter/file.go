package redisfilter

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/codec"
	"github.com/dedupkit/cuckoo/internal/format"
	"github.com/redis/go-redis/v9"
)

// The segments of a filter are the segments of a library filter's table, so
// a filter file (docs/format.md, kind 1) converts to segments and back
// without touching a bucket: its header is internal/format's TableHeader,
// then the table's words, the duplicate counters and the checksum.

// Push uploads a library filter into Redis as the cuckoo filter called
// name, with the same parameters, seed and table: every lookup, count and
// later insert gives the same answer there as in src. src must be a plain
// (not semi-sorted) [cuckoo.Filter]; build it with
// [cuckoo.WithSegments](n) to get n segments (a filter of one segment
// becomes one segment, whose whole load one master serves).
//
// If a filter of that name exists, Push returns an error wrapping
// [ErrExists], unless replace is set: then it drops it first. While the
// upload runs, New and Open of the name return [ErrBusy]. Push sends each
// segment in one function call. It takes the handle's options only
// ([WithRetryWindow], [WithRetryHorizon]), for the Filter it returns.
func Push(ctx context.Context, rdb redis.UniversalClient, name string, src *cuckoo.Filter, replace bool, opts ...Option) (*Filter, error) {
	retry, err := handleOptions(opts)
	if err != nil {
		return nil, err
	}
	if src.SemiSorted() {
		return nil, fmt.Errorf("%w: a semi-sorted filter (build it without semi-sorting to push it)", ErrUnsupported)
	}
	enc, err := src.MarshalBinary()
	if err != nil {
		return nil, err
	}
	// The library writes the latest format; the layout of the table and
	// counters below is version 1's.
	h, err := format.ReadTableHeader(codec.NewBytesDecoder(enc))
	if err != nil {
		return nil, fmt.Errorf("%w: the library's encoding: %w", ErrUnsupported, err)
	}
	if h.Version != format.Version1 || h.Flags != 0 {
		return nil, fmt.Errorf("%w: a filter encoding of a layout Push does not know (%x)", ErrUnsupported, enc[:format.TableHeaderSize])
	}
	m := meta{
		kind: "cuckoo", b: int(h.Slots), f: int(h.FPBits), buckets: h.Buckets, segments: int(h.Segments),
		seed: h.Seed, kicks: int(h.MaxKicks), capacity: h.Capacity, id: newID(), state: statePushing,
	}
	if err := ensureFunctions(ctx, rdb); err != nil {
		return nil, err
	}
	if err := claimName(ctx, rdb, cuckooPrefix, name, m.encode(), replace); err != nil {
		return nil, err
	}
	f := newFilter(rdb, name, m, retry)
	le := binary.LittleEndian
	tableEnd := format.TableHeaderSize + 8*h.Words
	table := enc[format.TableHeaderSize:tableEnd]
	counters := make([][]any, m.segments)
	dups := enc[tableEnd : uint64(len(enc))-format.ChecksumSize]
	for len(dups) >= format.TableCounterSize {
		k, copies := le.Uint64(dups), le.Uint64(dups[8:])
		dups = dups[format.TableCounterSize:]
		i, fp := k>>32, k&0xffffffff
		s := i / f.g.perSegment
		lo := i - s*f.g.perSegment
		counters[s] = append(counters[s], counterField(lo, f.g.alt(lo, fp), fp), strconv.FormatUint(copies, 10))
	}
	err = f.eachSegment(ctx, func(s int) redis.Cmder {
		part := table[uint64(s)*f.g.segmentBytes : uint64(s+1)*f.g.segmentBytes]
		n := f.g.occupied(part)
		for k := 1; k < len(counters[s]); k += 2 {
			c, _ := strconv.ParseUint(counters[s][k].(string), 10, 64)
			n += c
		}
		args := append([]any{f.m.id, part, n}, counters[s]...)
		return f.fcall(ctx, fnPut, s, args)
	}, func(s int, c redis.Cmder) error { return c.Err() })
	if err != nil {
		return nil, err
	}
	f.m.state = stateReady
	if err := rdb.SetArgs(ctx, metaKey(cuckooPrefix, name), f.m.encode(), redis.SetArgs{Mode: "XX"}).Err(); err != nil {
		return nil, err
	}
	return f, nil
}

// dropAny drops the filter of a kind (its key prefix) called name whose
// metadata is old, whatever its state.
func dropAny(ctx context.Context, rdb redis.UniversalClient, prefix, name, old string) error {
	kind := "cuckoo"
	if prefix == windowPrefix {
		kind = "window"
	}
	m, err := parseMeta(old, kind)
	if err != nil {
		// Metadata we cannot read: remove just that key.
		return rdb.Del(ctx, metaKey(prefix, name)).Err()
	}
	h := newSegments(rdb, prefix, name, m, retryPolicy{})
	return h.drop(ctx)
}

// Snapshot returns a library filter holding the filter's current state:
// the same parameters, seed and table, so it answers every lookup and
// count as the Redis filter does, and its encoding (MarshalBinary) is the
// filter file of the segments. Each segment is read atomically (one read-only
// function call); with concurrent writers the segments are read at slightly
// different moments. The result is checked by the library's decoder: a
// segment whose contents break a filter invariant gives an error wrapping
// [ErrCorrupt]. It holds the whole table in memory, twice while decoding.
func (f *Filter) Snapshot(ctx context.Context) (*cuckoo.Filter, error) {
	g := &f.g
	words := g.segmentBytes / 8 * g.segments
	type counter struct{ key, copies uint64 }
	var dups []counter
	enc := make([]byte, format.TableHeaderSize, format.TableHeaderSize+8*words+format.ChecksumSize)
	var items uint64
	err := f.eachSegment(ctx, func(s int) redis.Cmder {
		cmd := redis.NewSliceCmd(ctx, "fcall_ro", fnDump, 2, f.tables[s], f.counters[s], f.m.id)
		cmd.SetFirstKeyPos(3)
		return cmd
	}, func(s int, c redis.Cmder) error {
		v, err := c.(*redis.SliceCmd).Result()
		if err != nil {
			return err
		}
		table, ok := v[0].(string)
		fields, ok2 := v[1].([]any)
		if !ok || !ok2 || uint64(len(table)) != g.segmentBytes || len(fields)%2 != 0 {
			return fmt.Errorf("%w: segment %d of %q: a table of %d bytes (want %d)", ErrCorrupt, s, f.name, len(table), g.segmentBytes)
		}
		enc = append(enc, table...)
		for k := 0; k < len(fields); k += 2 {
			name, _ := fields[k].(string)
			val, _ := fields[k+1].(string)
			if name == "id" {
				continue
			}
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return fmt.Errorf("%w: segment %d field %q = %q", ErrCorrupt, s, name, val)
			}
			switch name {
			case "n":
				items += n
			default:
				lo, fp, ok := parseCounterField(name)
				if !ok || lo >= g.perSegment || fp == 0 || fp > g.fpMax {
					return fmt.Errorf("%w: segment %d counter %q", ErrCorrupt, s, name)
				}
				dups = append(dups, counter{(uint64(s)*g.perSegment+lo)<<32 | fp, n})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(dups, func(a, b counter) int { return cmpUint(a.key, b.key) })
	le := binary.LittleEndian
	for _, d := range dups {
		enc = le.AppendUint64(enc, d.key)
		enc = le.AppendUint64(enc, d.copies)
	}
	h := format.TableHeader{Slots: uint8(g.b), FPBits: uint8(g.f), MaxKicks: uint32(f.m.kicks), Seed: g.seed,
		Capacity: f.m.capacity, Buckets: g.buckets, Items: items, Words: words, Counters: uint64(len(dups)), Segments: uint32(g.segments)}
	h.Append(enc[:0]) // over the zeroes the file started with
	enc = codec.AppendChecksum(enc)
	var out cuckoo.Filter
	if err := out.UnmarshalBinary(enc); err != nil {
		return nil, fmt.Errorf("%w: %q does not decode as a filter: %w", ErrCorrupt, f.name, err)
	}
	return &out, nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// MemoryUsage returns what Redis reports (MEMORY USAGE, every element
// counted) for the filter's keys together: its segments and its metadata.
// One command per key, pipelined.
func (f *Filter) MemoryUsage(ctx context.Context) (uint64, error) {
	return memoryUsage(ctx, f.rdb, f.Keys())
}

// memoryUsage sums MEMORY USAGE over keys.
func memoryUsage(ctx context.Context, rdb redis.UniversalClient, keys []string) (uint64, error) {
	var total uint64
	for lo := 0; lo < len(keys); lo += segmentBatch {
		pipe := rdb.Pipeline()
		var cmds []*redis.IntCmd
		for _, k := range keys[lo:min(lo+segmentBatch, len(keys))] {
			cmds = append(cmds, pipe.MemoryUsage(ctx, k, 0))
		}
		pipe.Exec(ctx)
		for _, c := range cmds {
			n, err := c.Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return 0, err
			}
			total += uint64(n)
		}
	}
	return total, nil
}
