package redisfilter_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// TestWindowLuaMatchesLibrary holds the window functions (cuckoo.lua) to
// the library's cuckoo.Window: one random sequence of operations runs
// through a one-segment redisfilter.Window on a real redis-server and
// through a cuckoo.Window of the same shape, seed and max kicks, both
// reading one test clock (the server's library is loaded with its clock
// reading a key the test sets, LoadTestClockLibrary; the library Window's
// WithClock returns the same time). After each step the test compares the
// segment with the library's encoding byte for byte: the table, the epoch of
// the latest write and the sweep's cursor, and the stamp counts the segment
// keeps with those of the library's table; and every reply: Add's error,
// AddUnique's added, Touch's seen, Delete's found, Contains, Len.
//
// The operations are single-key writes and batches of up to 32 keys (one
// function call, one reading of the clock, as the library's batch reads
// it once), lookups, and batches of keys at times of their own
// (TouchBatchAt, as a clock of event times). The clock ticks within an
// epoch, moves 1 to 3 epochs, idles 13 to 40, goes back a little or by
// several epochs, and leaps years ahead: the sweep, the passes of an
// advance (the rest of the sweep, the aging pass, the clearing) and the
// time that never runs backwards all run on both sides. The keys come from
// a pool of about three times the table's slots, a window of them
// churning, so that inserts fill the table, move entries by the search and
// the random walk (which the functions draw from the key's hash as the
// library does, so walks match too), and are refused when no room is
// left.
func TestWindowLuaMatchesLibrary(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	type shape struct {
		b, f, kicks int
		window      time.Duration
		steps       int
	}
	shapes := []shape{
		{4, 12, 0, 14 * time.Second, 600},
		{4, 13, 1, time.Hour, 400},
		{2, 12, 0, 1400 * time.Millisecond, 400},
		{8, 16, 3, 24 * time.Hour, 400},
		{8, 4, 0, 14 * time.Second, 300},
	}
	if !testlong.Enabled() {
		// Three of the five, one with max kicks above 1 and one with a
		// window of seconds; the long run has the five and seven more.
		shapes = []shape{shapes[0], shapes[2], shapes[3]}
	}
	if testlong.Enabled() {
		shapes = append(shapes, shape{4, 12, 0, 14 * time.Second, 5000}, shape{4, 20, 0, 7 * 24 * time.Hour, 3000},
			shape{2, 28, 2, time.Minute, 3000}, shape{8, 4, 0, 14 * time.Second, 3000}, shape{4, 9, 0, 90 * time.Minute, 3000},
			shape{8, 12, 1, time.Millisecond, 3000}, shape{2, 17, 0, 100 * 365 * 24 * time.Hour, 1000})
	}
	for _, sh := range shapes {
		t.Run(fmt.Sprintf("b%d-f%d-kicks%d-%v", sh.b, sh.f, sh.kicks, sh.window), func(t *testing.T) {
			t.Parallel()
			skipWithoutRedis(t)
			srv, err := redistest.Start(redistest.Config{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Stop() })
			rdb := clientOf(t, srv)
			ctx := ctxOf(t)
			if err := redisfilter.LoadTestClockLibrary(ctx, rdb); err != nil {
				t.Fatal(err)
			}
			rng := testseed.Rand(t)
			seed := rng.Uint64()
			opts := []redisfilter.Option{redisfilter.WithBucketSize(sh.b), redisfilter.WithFingerprintBits(sh.f),
				redisfilter.WithSegments(1), redisfilter.WithSeed(seed)}
			libOpts := []cuckoo.Option{cuckoo.WithBucketSize(sh.b), cuckoo.WithFingerprintBits(sh.f), cuckoo.WithSeed(seed)}
			if sh.kicks != 0 {
				opts = append(opts, redisfilter.WithMaxKicks(sh.kicks))
				libOpts = append(libOpts, cuckoo.WithMaxKicks(sh.kicks))
			}
			const perWindow = 60
			tw := &windowTwin{t: t, ctx: ctx, rdb: rdb, now: time.Date(2026, 5, 4, 3, 2, 1, 123456789, time.UTC)}
			tw.setClock(tw.now)
			rw, err := redisfilter.NewWindow(ctx, rdb, uniqueName(t), perWindow, sh.window, opts...)
			if err != nil {
				t.Fatal(err)
			}
			lib, err := cuckoo.NewWindow(perWindow, sh.window, append(libOpts, cuckoo.WithClock(func() time.Time { return tw.now }))...)
			if err != nil {
				t.Fatal(err)
			}
			if lib.NumBuckets() != rw.NumBuckets() || lib.MaxKicks() != rw.MaxKicks() || lib.Granularity() != rw.Granularity() {
				t.Fatalf("library window of %d buckets, %d kicks, granularity %v; Redis window of %d, %d, %v",
					lib.NumBuckets(), lib.MaxKicks(), lib.Granularity(), rw.NumBuckets(), rw.MaxKicks(), rw.Granularity())
			}
			tw.rw, tw.lib, tw.libOpts = rw, lib, libOpts
			gran := (int64(sh.window) + cuckoo.WindowEpochs - 1) / cuckoo.WindowEpochs
			slots := int(lib.NumBuckets()) * sh.b
			pool := make([][]byte, 3*slots)
			for i := range pool {
				pool[i] = fmt.Appendf(nil, "key-%d-%x", i, rng.Uint32())
			}
			tw.compare("start")
			counts := map[string]int{}
			for step := range sh.steps {
				// A window of the pool churns: keys come from a range that
				// slides, so that old keys expire while new ones come.
				base := step * len(pool) / max(sh.steps, 1)
				pick := func() []byte { return pool[(base+rng.IntN(slots+slots/2))%len(pool)] }
				var what string
				switch op := rng.IntN(100); {
				case op < 40:
					what = tw.moveClock(rng, gran)
				case op < 52:
					what = tw.single(rng, pick())
				case op < 75:
					keys := make([][]byte, 1+rng.IntN(32))
					for i := range keys {
						keys[i] = pick()
					}
					what = tw.batch(rng, keys)
				case op < 85:
					keys := make([][]byte, 1+rng.IntN(32))
					times := make([]time.Time, len(keys))
					for i := range keys {
						keys[i] = pick()
						times[i] = tw.now.Add(time.Duration(rng.Int64N(4*gran) - 3*gran))
					}
					what = tw.touchAt(keys, times)
				case op < 87:
					what = tw.pushOrPull(rng)
				case op < 97:
					keys := make([][]byte, 1+rng.IntN(40))
					for i := range keys {
						keys[i] = pick()
					}
					what = tw.lookups(keys)
				default:
					what = tw.length()
				}
				counts[what]++
				tw.compare(fmt.Sprintf("step %d (%s)", step, what))
			}
			t.Logf("steps: %v; refused inserts: %d", counts, tw.full)
		})
	}
}

// windowTwin is a redisfilter.Window and a cuckoo.Window given the same
// operations at the same times.
type windowTwin struct {
	t    *testing.T
	ctx  context.Context
	rdb  redis.UniversalClient
	rw   *redisfilter.Window
	lib  *cuckoo.Window
	now  time.Time
	full int

	libOpts []cuckoo.Option
}

func (tw *windowTwin) setClock(t time.Time) {
	tw.now = t
	if err := redisfilter.SetTestClock(tw.ctx, tw.rdb, t); err != nil {
		tw.t.Fatal(err)
	}
}

// moveClock moves the clock as a random schedule does, and names the
// move.
func (tw *windowTwin) moveClock(rng *rand.Rand, gran int64) string {
	d := func(epochs float64) time.Duration { return time.Duration(epochs * float64(gran)) }
	var what string
	var by time.Duration
	switch r := rng.IntN(100); {
	case r < 45:
		by, what = d(rng.Float64()/3), "tick"
	case r < 70:
		by, what = d(1+rng.Float64()/2), "next epoch"
	case r < 82:
		by, what = d(2+rng.Float64()*2), "2-3 epochs"
	case r < 88:
		by, what = d(13+rng.Float64()*4), "13-16 epochs"
	case r < 92:
		by, what = d(30+rng.Float64()*10), "30-40 epochs"
	case r < 97:
		by, what = -d(rng.Float64()*3), "back"
	default:
		by, what = time.Duration(rng.IntN(3)+1)*365*24*time.Hour, "years ahead"
	}
	next := tw.now.Add(by)
	if next.Year() > 2100 {
		next = tw.now
	}
	tw.setClock(next)
	return what
}

// single runs one single-key operation on both sides.
func (tw *windowTwin) single(rng *rand.Rand, key []byte) string {
	t, ctx := tw.t, tw.ctx
	switch rng.IntN(4) {
	case 0:
		lerr := tw.lib.Add(key)
		rerr := tw.rw.Add(ctx, key)
		tw.sameErr("Add", key, lerr, rerr)
		return "Add"
	case 1:
		la, lerr := tw.lib.AddUnique(key)
		ra, rerr := tw.rw.AddUnique(ctx, key)
		tw.sameErr("AddUnique", key, lerr, rerr)
		if la != ra {
			t.Fatalf("AddUnique(%s): library %v, Redis %v", key, la, ra)
		}
		return "AddUnique"
	case 2:
		ls, lerr := tw.lib.Touch(key)
		rs, rerr := tw.rw.Touch(ctx, key)
		tw.sameErr("Touch", key, lerr, rerr)
		if ls != rs {
			t.Fatalf("Touch(%s): library %v, Redis %v", key, ls, rs)
		}
		return "Touch"
	default:
		lf := tw.lib.Delete(key)
		rf, err := tw.rw.Delete(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if lf != rf {
			t.Fatalf("Delete(%s): library %v, Redis %v", key, lf, rf)
		}
		return "Delete"
	}
}

// sameErr fails the test unless the library's and Redis's errors agree:
// both nil, or both ErrFull.
func (tw *windowTwin) sameErr(op string, key []byte, lerr, rerr error) {
	tw.t.Helper()
	lfull, rfull := errors.Is(lerr, cuckoo.ErrFull), errors.Is(rerr, redisfilter.ErrFull)
	if lerr != nil && !lfull || rerr != nil && !rfull || lfull != rfull {
		tw.t.Fatalf("%s(%s): library %v, Redis %v", op, key, lerr, rerr)
	}
	if lfull {
		tw.full++
	}
}

// batch runs one batch (one function call of up to 32 keys) on Redis, and
// its keys one by one at the same time on the library.
func (tw *windowTwin) batch(rng *rand.Rand, keys [][]byte) string {
	t, ctx := tw.t, tw.ctx
	errs := make([]error, len(keys))
	out := make([]bool, len(keys))
	var what string
	switch rng.IntN(4) {
	case 0:
		what = "AddBatch"
		tw.rw.AddBatch(ctx, keys, errs)
		for i, k := range keys {
			tw.sameErr(what, k, tw.lib.Add(k), errs[i])
		}
	case 1:
		what = "AddUniqueBatch"
		tw.rw.AddUniqueBatch(ctx, keys, out, errs)
		for i, k := range keys {
			a, err := tw.lib.AddUnique(k)
			tw.sameErr(what, k, err, errs[i])
			if a != out[i] {
				t.Fatalf("%s: key %d (%s): library %v, Redis %v", what, i, k, a, out[i])
			}
		}
	case 2:
		what = "TouchBatch"
		tw.rw.TouchBatch(ctx, keys, out, errs)
		for i, k := range keys {
			s, err := tw.lib.Touch(k)
			tw.sameErr(what, k, err, errs[i])
			if s != out[i] {
				t.Fatalf("%s: key %d (%s): library %v, Redis %v", what, i, k, s, out[i])
			}
		}
	default:
		what = "DeleteBatch"
		if err := tw.rw.DeleteBatch(ctx, keys, out, errs); err != nil {
			t.Fatal(err)
		}
		for i, k := range keys {
			if f := tw.lib.Delete(k); f != out[i] {
				t.Fatalf("%s: key %d (%s): library %v, Redis %v", what, i, k, f, out[i])
			}
		}
	}
	return what
}

// touchAt runs TouchBatchAt on Redis and, on the library, each key's
// Touch with the clock at its time.
func (tw *windowTwin) touchAt(keys [][]byte, times []time.Time) string {
	seen := make([]bool, len(keys))
	errs := make([]error, len(keys))
	tw.rw.TouchBatchAt(tw.ctx, keys, times, seen, errs)
	now := tw.now
	for i, k := range keys {
		tw.now = times[i]
		s, err := tw.lib.Touch(k)
		tw.sameErr("TouchBatchAt", k, err, errs[i])
		if s != seen[i] {
			tw.t.Fatalf("TouchBatchAt: key %d (%s) at %v: library %v, Redis %v", i, k, times[i], s, seen[i])
		}
	}
	tw.now = now
	return "TouchBatchAt"
}

// pushOrPull replaces the Redis window with the library's (PushWindow),
// or the library's with the Redis window's (Snapshot, decoded into a
// Window of the test clock): the two must go on alike, and a snapshot's
// encoding must be the library's, byte for byte.
func (tw *windowTwin) pushOrPull(rng *rand.Rand) string {
	t, ctx := tw.t, tw.ctx
	if rng.IntN(2) == 0 {
		rw, err := redisfilter.PushWindow(ctx, tw.rdb, tw.rw.Name(), tw.lib, true)
		if err != nil {
			t.Fatal(err)
		}
		tw.rw = rw
		return "PushWindow"
	}
	snap, err := tw.rw.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := snap.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want, err := tw.lib.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Snapshot: %d bytes, the library's %d, not the same", len(got), len(want))
	}
	lib, err := cuckoo.NewWindow(tw.lib.Capacity(), tw.lib.Window(), append(tw.libOpts, cuckoo.WithClock(func() time.Time { return tw.now }))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := lib.UnmarshalBinary(got); err != nil {
		t.Fatal(err)
	}
	tw.lib = lib
	return "Snapshot"
}

// lookups compares Contains and ContainsBatch with the library's.
func (tw *windowTwin) lookups(keys [][]byte) string {
	found := make([]bool, len(keys))
	errs := make([]error, len(keys))
	if err := tw.rw.ContainsBatch(tw.ctx, keys, found, errs); err != nil {
		tw.t.Fatal(err)
	}
	for i, k := range keys {
		one, err := tw.rw.Contains(tw.ctx, k)
		if err != nil {
			tw.t.Fatal(err)
		}
		if l := tw.lib.Contains(k); l != found[i] || l != one {
			tw.t.Fatalf("Contains(%s): library %v, Redis %v (batch), %v (single)", k, l, found[i], one)
		}
	}
	return "lookups"
}

func (tw *windowTwin) length() string {
	n, err := tw.rw.Len(tw.ctx)
	if err != nil {
		tw.t.Fatal(err)
	}
	if l := tw.lib.Len(); l != n {
		tw.t.Fatalf("Len: library %d, Redis %d", l, n)
	}
	return "Len"
}

// compare fails the test unless the segment holds the library's table,
// epoch and cursor, and counts its stamps right.
func (tw *windowTwin) compare(when string) {
	t := tw.t
	t.Helper()
	enc, err := tw.lib.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	epoch, cursor := int64(le.Uint64(enc[48:])), le.Uint64(enc[56:])
	words := enc[80 : len(enc)-4]
	sh, err := redisfilter.WindowSegmentState(tw.ctx, tw.rw, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sh.Table, words) {
		for k := range words {
			if sh.Table[k] != words[k] {
				t.Fatalf("%s: tables differ from byte %d (library %#x, Redis %#x); epoch %d, %d; cursor %d, %d",
					when, k, words[k], sh.Table[k], epoch, sh.Epoch, cursor, sh.Cursor)
			}
		}
	}
	if sh.Epoch != epoch || sh.Cursor != cursor {
		t.Fatalf("%s: library at epoch %d, cursor %d; Redis at %d, %d", when, epoch, cursor, sh.Epoch, sh.Cursor)
	}
	var counts [16]uint64
	for i := range tw.rw.NumBuckets() {
		for j := range uint64(tw.rw.BucketSize()) {
			if v := redisfilter.WindowSlot(tw.rw, words, i, j); v != 0 {
				counts[v&15]++
			}
		}
	}
	if counts != sh.Counts {
		t.Fatalf("%s: stamp counts %v, the segment keeps %v", when, counts, sh.Counts)
	}
}
