package redisfilter

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/codec"
	"github.com/dedupkit/cuckoo/internal/format"
	"github.com/redis/go-redis/v9"
)

// A window of one segment is the library Window's table, epoch and sweep
// cursor, so a window file (docs/format.md, kind 3) converts to a segment
// and back without touching a slot: its header is internal/format's
// WindowHeader, then the table's words and the checksum.

// PushWindow uploads a library window into Redis as the window filter
// called name, with the same parameters, seed, table, epoch and sweep
// cursor: every lookup and later write gives the same answer there as in
// src would at the same times (by the clock of the segment's server from
// then on). The window is one segment (the library's Window has one
// table), whose whole load one master serves; its window must be at
// least [MinWindow].
//
// If a window of that name exists, PushWindow returns an error wrapping
// [ErrExists], unless replace is set: then it drops it first. While the
// upload runs, NewWindow and OpenWindow of the name return [ErrBusy]. It
// takes the handle's options only ([WithRetryWindow], [WithRetryHorizon]).
func PushWindow(ctx context.Context, rdb redis.UniversalClient, name string, src *cuckoo.Window, replace bool, opts ...Option) (*Window, error) {
	retry, err := handleOptions(opts)
	if err != nil {
		return nil, err
	}
	enc, err := src.MarshalBinary()
	if err != nil {
		return nil, err
	}
	// The library writes the latest format; the layout of the table below
	// is version 1's.
	h, err := format.ReadWindowHeader(codec.NewBytesDecoder(enc))
	if err != nil {
		return nil, fmt.Errorf("%w: the library's encoding: %w", ErrUnsupported, err)
	}
	if h.Version != format.Version1 || h.StampBits != cuckoo.WindowStampBits || h.Epochs != cuckoo.WindowEpochs {
		return nil, fmt.Errorf("%w: a window encoding of a layout PushWindow does not know (%x)", ErrUnsupported, enc[:format.WindowHeaderSize])
	}
	window := h.Window
	if window < int64(MinWindow) {
		return nil, fmt.Errorf("%w: a window of %v; Redis windows are at least %v", ErrUnsupported, src.Window(), MinWindow)
	}
	m := meta{
		kind: "window", b: int(h.Slots), f: int(h.FPBits), buckets: h.Buckets, segments: 1,
		seed: h.Seed, kicks: int(h.MaxKicks), capacity: h.PerWindow,
		window: window, id: newID(), state: statePushing,
	}
	words := h.Words
	if sb := 8*words + trailerBytes; sb > maxSegmentBytes {
		return nil, fmt.Errorf("%w: a window of %d bytes, above Redis's 512 MiB strings", ErrUnsupported, sb)
	}
	if err := ensureFunctions(ctx, rdb); err != nil {
		return nil, err
	}
	if err := claimName(ctx, rdb, windowPrefix, name, m.encode(), replace); err != nil {
		return nil, err
	}
	w := newWindow(rdb, name, m, retry)
	epoch := h.Epoch
	table := enc[format.WindowHeaderSize : format.WindowHeaderSize+8*words]
	args := []any{w.m.id, string(table) + w.trailer(epoch), h.Cursor}
	// The first nanosecond of the next epoch; none (-1) when it is before
	// 1970, as every time the server reads is past it.
	eh, el := int64(-1), int64(0)
	if next := (epoch + 1) * w.gran; epoch+1 > 0 && next > 0 {
		eh, el = next>>32, next&math.MaxUint32
	}
	args = append(args, eh, el)
	for _, n := range w.stampCounts(table) {
		args = append(args, n)
	}
	if err := w.eachSegment(ctx, func(s int) redis.Cmder { return w.fcall(ctx, fnWSet, s, args) },
		func(s int, c redis.Cmder) error { return c.Err() }); err != nil {
		return nil, err
	}
	w.m.state = stateReady
	if err := rdb.SetArgs(ctx, metaKey(windowPrefix, name), w.m.encode(), redis.SetArgs{Mode: "XX"}).Err(); err != nil {
		return nil, err
	}
	return w, nil
}

// stampCounts returns the non-empty slots of each stamp in a segment's
// table.
func (w *Window) stampCounts(table []byte) [1 << cuckoo.WindowStampBits]uint64 {
	var n [1 << cuckoo.WindowStampBits]uint64
	g := &w.g
	for i := range g.perSegment {
		lo, c, sh := g.span(i)
		for j := range g.b {
			if v := g.slot(table[lo:lo+c], sh, j); v != 0 {
				n[v&(1<<cuckoo.WindowStampBits-1)]++
			}
		}
	}
	return n
}

// claimName sets the metadata key of filter name of a kind (its prefix)
// to value unless a filter of that name exists: then it returns an error
// wrapping ErrExists, or with replace drops that filter first.
func claimName(ctx context.Context, rdb redis.UniversalClient, prefix, name, value string, replace bool) error {
	key := metaKey(prefix, name)
	for {
		old, err := claimMeta(ctx, rdb, key, value)
		if err != nil {
			return err
		}
		if old == "" {
			return nil
		}
		if !replace {
			return fmt.Errorf("%w: %q", ErrExists, name)
		}
		if err := dropAny(ctx, rdb, prefix, name, old); err != nil {
			return err
		}
	}
}

// Snapshot returns a library window holding the window's state: the same
// parameters, seed, table, epoch and sweep cursor, so it answers every
// lookup as the Redis window does at the same time, and its encoding
// (MarshalBinary) is the window file of the segment (a window pushed and
// snapshot back is the window pushed, byte for byte). The segment is read
// atomically (one read-only function call), and checked by the library's
// decoder: a segment whose contents break a window invariant gives an error
// wrapping [ErrCorrupt]. The library's Window has one table, so only a
// window of one segment ([WithSegments](1)) can be snapshot; others give
// an error wrapping [ErrUnsupported]. The returned Window reads the
// default clock (the local wall clock), and [cuckoo.WithClock] cannot be
// set on it afterwards: decode its encoding into a Window of your own
// clock if need be.
func (w *Window) Snapshot(ctx context.Context) (*cuckoo.Window, error) {
	if w.m.segments != 1 {
		return nil, fmt.Errorf("%w: window %q has %d segments; the library's Window has one table (make a window to snapshot with WithSegments(1))", ErrUnsupported, w.name, w.m.segments)
	}
	g := &w.g
	cmd := redis.NewSliceCmd(ctx, "fcall_ro", fnDump, 2, w.tables[0], w.counters[0], w.m.id)
	cmd.SetFirstKeyPos(3)
	if err := w.run(ctx, []redis.Cmder{cmd}); err != nil {
		return nil, err
	}
	v, err := cmd.Result()
	if err != nil {
		return nil, replyErr(err)
	}
	str, ok := v[0].(string)
	fields, ok2 := v[1].([]any)
	if !ok || !ok2 || uint64(len(str)) != g.strLen {
		return nil, fmt.Errorf("%w: segment 0 of %q: a string of %d bytes (want %d)", ErrCorrupt, w.name, len(str), g.strLen)
	}
	var cursor uint64
	for k := 0; k+1 < len(fields); k += 2 {
		if name, _ := fields[k].(string); name == "c" {
			val, _ := fields[k+1].(string)
			if cursor, err = strconv.ParseUint(val, 10, 64); err != nil {
				return nil, fmt.Errorf("%w: segment 0 of %q: cursor %q", ErrCorrupt, w.name, val)
			}
		}
	}
	h := format.WindowHeader{Slots: uint8(g.b), FPBits: uint8(g.f), StampBits: cuckoo.WindowStampBits, Epochs: cuckoo.WindowEpochs,
		MaxKicks: uint32(w.m.kicks), Seed: w.m.seed, PerWindow: w.m.capacity, Window: w.m.window,
		Epoch: int64(binary.BigEndian.Uint64([]byte(str[g.segmentBytes:]))), Cursor: cursor, Buckets: w.m.buckets, Words: g.segmentBytes / 8}
	enc := h.Append(make([]byte, 0, format.WindowHeaderSize+g.segmentBytes+format.ChecksumSize))
	enc = append(enc, str[:g.segmentBytes]...)
	enc = codec.AppendChecksum(enc)
	var out cuckoo.Window
	if err := out.UnmarshalBinary(enc); err != nil {
		return nil, fmt.Errorf("%w: %q does not decode as a window: %w", ErrCorrupt, w.name, err)
	}
	return &out, nil
}
