package redisfilter_test

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
	"github.com/dedupkit/cuckoo/redisfilter"
)

// engineBits is the least table, in bits, of a library filter whose
// inserts search breadth-first before they walk, as the Lua functions do
// (the engine walks first in tables of at most 2 MiB: table.WalkFirstBytes in
// internal/table/insert.go).
const engineBits = 1 << 24

// TestLuaMatchesEngine holds the Lua functions (cuckoo.lua) to the
// library's engine: one random sequence of inserts, duplicate inserts,
// AddUnique calls, deletes and refusals runs through a Filter on a real
// redis-server and through a cuckoo.Filter of the same geometry, seed and
// max kicks, and after each step the test compares segment 0 with the
// engine's segment 0 byte for byte: the table (the segment's string is the
// segment's little-endian words, the same layout, so no mapping is
// needed), the duplicate counters (keyed as the library's encoding keys
// them) and the item count, besides each call's reply and the key's
// Count. Segments other than 0 must stay empty on both sides.
//
// The keys are drawn from those that land in segment 0, so its 64 or so
// buckets fill up: inserts find both buckets full and move other
// fingerprints, and at the end are refused (ErrFull) for want of room.
// Both sides place a fingerprint in the first empty slot of the bucket
// with more empty slots (the first on a tie); when both are full they
// search breadth-first for the shortest chain of moves over the same
// budget, in the same order, and move it hole first; they delete the
// first copy found in the first bucket, then the second. The engine
// searches first only in tables of more than 2 MiB, so the library filter
// has that many segments (the Redis filter as many segments).
//
// What cannot match is the random walk that follows a failed search: the
// engine draws its moves from the key's 64-bit hash, which the Lua
// functions never see (they get a bucket and a fingerprint, and draw
// from those). So before each insert the test works out, on the bytes
// both sides agree on, whether the insert must move fingerprints and
// whether the search finds room (needsRoom). Every step must match byte
// for byte except an insert whose search fails, with max kicks above 1:
// there the walks may end differently, so the test checks each side on
// its own (every key the engine holds is found by both; a refusal leaves
// its side exactly as it was), then copies the engine's segment into the
// segment and goes on from there. With max kicks 1 a failed search leaves
// no walk that could succeed, so those refusals must match too.
func TestLuaMatchesEngine(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	type shape struct{ b, f, kicks, rounds int }
	// rounds: steps per slot of a segment.
	shapes := []shape{{4, 16, 1, 2}, {4, 16, 0, 2}, {3, 12, 0, 2}}
	if !testlong.Enabled() {
		// Max kicks 1 and the default, on odd buckets: the long run has
		// the third and fifteen more.
		shapes = []shape{{4, 16, 1, 2}, {3, 12, 0, 2}}
	}
	if testlong.Enabled() {
		shapes = append(shapes, shape{2, 12, 0, 4}, shape{2, 12, 1, 4}, shape{8, 8, 1, 2}, shape{8, 16, 0, 3}, shape{4, 9, 0, 4},
			shape{4, 16, 0, 8}, shape{8, 32, 1, 2}, shape{2, 32, 0, 4}, shape{1, 16, 0, 4}, shape{1, 20, 1, 4},
			shape{3, 12, 1, 4}, shape{5, 9, 0, 3}, shape{7, 13, 0, 2}, shape{16, 8, 0, 2}, shape{16, 31, 1, 2})
	}
	rdb := singleClient(t)
	for _, sh := range shapes {
		t.Run(fmt.Sprintf("b%d-f%d-kicks%d", sh.b, sh.f, sh.kicks), func(t *testing.T) {
			t.Parallel()
			ctx := ctxOf(t)
			rng := testseed.Rand(t)
			segments := int((engineBits + 64*sh.b*sh.f - 1) / (64 * sh.b * sh.f))
			opts := []redisfilter.Option{redisfilter.WithBucketSize(sh.b), redisfilter.WithFingerprintBits(sh.f),
				redisfilter.WithSegments(segments), redisfilter.WithSeed(rng.Uint64())}
			libOpts := []cuckoo.Option{cuckoo.WithBucketSize(sh.b), cuckoo.WithFingerprintBits(sh.f), cuckoo.WithSegments(segments)}
			if sh.kicks != 0 {
				opts = append(opts, redisfilter.WithMaxKicks(sh.kicks))
				libOpts = append(libOpts, cuckoo.WithMaxKicks(sh.kicks))
			}
			// The least table of that many segments: 64 or so buckets each.
			const capacity = 1
			rf, err := redisfilter.New(ctx, rdb, uniqueName(t), capacity, opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rf.Drop(ctx) })
			lib, err := cuckoo.New(capacity, append(libOpts, cuckoo.WithSeed(rf.Seed()))...)
			if err != nil {
				t.Fatal(err)
			}
			if lib.NumBuckets() != rf.NumBuckets() || lib.MaxKicks() != rf.MaxKicks() {
				t.Fatalf("library filter of %d buckets, %d kicks; Redis filter of %d, %d", lib.NumBuckets(), lib.MaxKicks(), rf.NumBuckets(), rf.MaxKicks())
			}
			if lib.NumBuckets()*uint64(sh.b*sh.f) < engineBits {
				t.Fatalf("a table of %d bits: the engine would walk first", lib.NumBuckets()*uint64(sh.b*sh.f))
			}
			perSegment := rf.NumBuckets() / uint64(segments)
			if perSegment > 128 {
				t.Fatalf("segments of %d buckets: too many to fill in a short sequence", perSegment)
			}
			slots := int(perSegment) * sh.b
			pool := segmentKeys(rf, 2*slots)
			tw := twin{t: t, rf: rf, lib: lib, live: map[string]int{}}
			tw.sync()
			// searched: inserts that found room by the search; walked:
			// inserts whose search failed (differed: those of them whose
			// walks ended differently); refused: inserts refused.
			var searched, walked, differed, refused int
			// Inserts (a fifth of them AddUnique, a fifth duplicates of a
			// key held) and deletes (of keys held, and a few of keys
			// that may not be): deletes are rare until the first refusal,
			// then nearly as frequent as inserts, so the segment fills up,
			// then churns while full.
			insert := func(k []byte, unique bool) (full bool) {
				room, found := tw.needsRoom(k)
				// With max kicks 1 a failed search leaves the walk no
				// move to try: both sides must refuse alike.
				walk := room && !found && sh.kicks != 1
				full, same := tw.add(k, unique, walk)
				switch {
				case room && found:
					searched++
				case walk:
					walked++
					if !same {
						differed++
					}
				}
				if full {
					refused++
				}
				return full
			}
			steps := sh.rounds * slots
			delFrom := 17
			for step := range steps {
				k := pool[rng.IntN(len(pool))]
				op := rng.IntN(20)
				if op >= delFrom && len(tw.live) == 0 {
					op = 0
				}
				switch {
				case op < delFrom:
					if op%5 == 4 && len(tw.live) > 0 {
						k = tw.anyLive(rng.IntN(len(tw.live)))
					}
					if insert(k, op%5 == 3) {
						delFrom = 11
					}
				default:
					if op == 19 && tw.lib.Count(k) != 0 && tw.live[string(k)] == 0 {
						// An absent key that shares a fingerprint and a
						// bucket with one present would delete that one's
						// copy: a delete of keys never added is tested
						// only where it finds nothing.
						continue
					}
					if op < 19 {
						k = tw.anyLive(rng.IntN(len(tw.live)))
					}
					tw.del(k)
				}
				if tw.failed {
					t.Fatalf("step %d", step)
				}
			}
			// Then the segment filled to the brim: keys not held are added
			// until three are refused.
			for i, n := 0, refused+3; refused < n && i < len(pool); i++ {
				if tw.live[string(pool[i])] == 0 {
					insert(pool[i], false)
				}
				if tw.failed {
					t.Fatalf("filling up, key %d", i)
				}
			}
			tw.checkOtherSegments()
			t.Logf("%d buckets a segment, %d steps: %d inserts made room by the search, %d needed the walk (%d of them ended differently), %d refused; %d keys live",
				perSegment, steps, searched, walked, differed, refused, len(tw.live))
			if searched == 0 || refused == 0 {
				t.Fatalf("the sequence did not exercise the search (%d inserts) and refusals (%d)", searched, refused)
			}
		})
	}
}

// segmentKeys returns n keys that land in segment 0 of f.
func segmentKeys(f *redisfilter.Filter, n int) [][]byte {
	var out [][]byte
	buf := []byte("twin-")
	for i := 0; len(out) < n; i++ {
		k := strconv.AppendInt(buf[:5], int64(i), 10)
		if s, _, _, _ := redisfilter.Locate(f, k); s == 0 {
			out = append(out, slices.Clone(k))
		}
	}
	return out
}

// twin runs each step on both filters and compares them.
type twin struct {
	t      *testing.T
	rf     *redisfilter.Filter
	lib    *cuckoo.Filter
	live   map[string]int // copies of each key held, as the engine says
	order  []string       // the keys of live, and keys once in it
	last   redisfilter.Segment
	failed bool
}

// anyLive returns the n-th key held, in the order keys were first added
// (not a map's order, so that a seed replays the same sequence).
func (w *twin) anyLive(n int) []byte {
	for _, k := range w.order {
		if w.live[k] == 0 {
			continue
		}
		if n == 0 {
			return []byte(k)
		}
		n--
	}
	panic("no live key")
}

// needsRoom reports whether an insert of key must move other
// fingerprints (its two buckets are full, without two copies of its
// fingerprint between them), and if so whether the breadth-first search
// that both sides run first finds room: the search's outcome, not its
// chain, worked out here on the bytes both sides agree on. Its budget
// and rules are those of both: up to min(2·max kicks, 256) slots, level
// by level, never into a bucket already on the chain.
func (w *twin) needsRoom(key []byte) (room, found bool) {
	_, i1, i2, fp := redisfilter.Locate(w.rf, key)
	b := uint64(w.rf.BucketSize())
	slot := func(i, j uint64) uint64 { return redisfilter.Slot(w.rf, w.last.Table, i, j) }
	type node struct {
		bucket, fp, alt uint64
		parent          int
	}
	var q []node
	copies := 0
	for _, i := range []uint64{i1, i2} {
		for j := range b {
			switch v := slot(i, j); v {
			case 0:
				return false, false
			case fp:
				copies++
				fallthrough
			default:
				q = append(q, node{bucket: i, fp: v, parent: -1})
			}
		}
	}
	if copies >= 2 {
		return false, false
	}
	onChain := func(k int, i uint64) bool {
		for ; k >= 0; k = q[k].parent {
			if q[k].bucket == i {
				return true
			}
		}
		return false
	}
	budget := min(2*w.rf.MaxKicks(), 256)
	for lo := 0; lo < len(q); {
		hi := len(q)
		for k := lo; k < hi; k++ {
			n := &q[k]
			n.alt = redisfilter.Alt(w.rf, n.bucket, n.fp)
			if onChain(k, n.alt) {
				n.alt = n.bucket
				continue
			}
			for j := range b {
				if slot(n.alt, j) == 0 {
					return true, true
				}
			}
		}
		for k := lo; k < hi && len(q) < budget; k++ {
			if q[k].alt == q[k].bucket {
				continue
			}
			for j := range min(b, uint64(budget-len(q))) {
				q = append(q, node{bucket: q[k].alt, fp: slot(q[k].alt, j), parent: k})
			}
		}
		lo = hi
	}
	return true, false
}

// add inserts key on both sides. It returns whether the engine refused it
// and whether the two sides agree afterwards. They must, unless the insert
// needed the random walk (walk); then the sides are checked each on its
// own and made equal again.
func (w *twin) add(key []byte, unique, walk bool) (full, same bool) {
	ctx := ctxOf(w.t)
	var rErr, lErr error
	var rAdded, lAdded = true, true
	if unique {
		rAdded, rErr = w.rf.AddUnique(ctx, key)
		lAdded, lErr = w.lib.AddUnique(key)
	} else {
		rErr, lErr = w.rf.Add(ctx, key), w.lib.Add(key)
	}
	if rErr != nil && !errors.Is(rErr, redisfilter.ErrFull) {
		w.t.Fatal(rErr)
	}
	if lErr != nil && !errors.Is(lErr, cuckoo.ErrFull) {
		w.t.Fatal(lErr)
	}
	full = lErr != nil
	if !full && lAdded {
		if w.live[string(key)]++; w.live[string(key)] == 1 && !slices.Contains(w.order, string(key)) {
			w.order = append(w.order, string(key))
		}
	}
	before := w.last
	agree := (rErr != nil) == full && rAdded == lAdded
	if !agree && !walk {
		w.t.Errorf("add %q (unique %v): Redis %v %v, engine %v %v", key, unique, rAdded, rErr, lAdded, lErr)
		w.failed = true
	}
	r, same := w.compare(key, walk)
	if full && !w.equal(before, w.last) {
		w.t.Errorf("add %q refused by the engine: its segment changed", key)
		w.failed = true
	}
	if rErr != nil && !w.equal(before, r) {
		w.t.Errorf("add %q refused by Redis: its segment changed", key)
		w.failed = true
	}
	if agree && same {
		return full, true
	}
	if walk {
		w.resync()
	}
	return full, false
}

// del deletes key on both sides.
func (w *twin) del(key []byte) {
	ctx := ctxOf(w.t)
	rOK, err := w.rf.Delete(ctx, key)
	if err != nil {
		w.t.Fatal(err)
	}
	lOK := w.lib.Delete(key)
	if rOK != lOK {
		w.t.Errorf("delete %q: Redis %v, engine %v", key, rOK, lOK)
		w.failed = true
	}
	if lOK {
		if w.live[string(key)]--; w.live[string(key)] <= 0 {
			delete(w.live, string(key))
		}
	}
	w.compare(key, false)
}

// compare reads both sides after a step on key and reports whether they
// are equal; if they are not and the step may differ (lenient), it checks
// that each side finds all its keys and leaves the rest to the caller.
func (w *twin) compare(key []byte, lenient bool) (redis redisfilter.Segment, same bool) {
	ctx := ctxOf(w.t)
	r, err := redisfilter.SegmentState(ctx, w.rf, 0)
	if err != nil {
		w.t.Fatal(err)
	}
	l, err := redisfilter.EngineSegment(w.rf, w.lib, 0)
	if err != nil {
		w.t.Fatal(err)
	}
	if l.Items != w.lib.Len() {
		w.t.Fatalf("engine's segment 0 holds %d items, the engine %d", l.Items, w.lib.Len())
	}
	rc, err := w.rf.Count(ctx, key)
	if err != nil {
		w.t.Fatal(err)
	}
	same = w.equal(r, l) && rc == w.lib.Count(key)
	w.last = l
	if same {
		return r, true
	}
	if !lenient {
		w.t.Errorf("after a step on %q: Redis segment %s\nengine segment %s\nCount %d and %d\n%s", key, describe(r), describe(l), rc, w.lib.Count(key), w.slotDiff(r.Table, l.Table))
		w.failed = true
		return r, false
	}
	for k, n := range w.live {
		if c := w.lib.Count([]byte(k)); c < uint64(n) {
			w.t.Errorf("engine: Count(%q) = %d after %d adds", k, c, n)
			w.failed = true
		}
	}
	// Redis may hold key where the engine did not (the walks differ), but
	// every key the engine holds but key, Redis holds too.
	var held [][]byte
	for k := range w.live {
		if k != string(key) {
			held = append(held, []byte(k))
		}
	}
	found := make([]bool, len(held))
	if err := w.rf.ContainsBatch(ctx, held, found, make([]error, len(held))); err != nil {
		w.t.Fatal(err)
	}
	for i, ok := range found {
		if !ok {
			w.t.Errorf("Redis: Contains(%q) = false", held[i])
			w.failed = true
		}
	}
	return r, false
}

// resync makes segment 0 the engine's segment 0.
func (w *twin) resync() {
	if err := redisfilter.PutSegment(ctxOf(w.t), w.rf, 0, w.last); err != nil {
		w.t.Fatal(err)
	}
}

// sync records the empty state both sides start from.
func (w *twin) sync() { w.compare(nil, false) }

func (w *twin) equal(a, b redisfilter.Segment) bool {
	return bytes.Equal(a.Table, b.Table) && a.Items == b.Items && maps.Equal(a.Counters, b.Counters)
}

// checkOtherSegments checks that no segment but 0 holds anything, on either
// side.
func (w *twin) checkOtherSegments() {
	ctx := ctxOf(w.t)
	empty := make([]byte, len(w.last.Table))
	for _, s := range []int{1, w.rf.Segments() / 2, w.rf.Segments() - 1} {
		r, err := redisfilter.SegmentState(ctx, w.rf, s)
		if err != nil {
			w.t.Fatal(err)
		}
		l, err := redisfilter.EngineSegment(w.rf, w.lib, s)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, sh := range []redisfilter.Segment{r, l} {
			if !bytes.Equal(sh.Table, empty) || sh.Items != 0 || len(sh.Counters) != 0 {
				w.t.Errorf("segment %d is not empty: %s", s, describe(sh))
			}
		}
	}
}

func describe(s redisfilter.Segment) string {
	return fmt.Sprintf("%d items, counters %v, table %x", s.Items, s.Counters, s.Table)
}

// slotDiff lists the buckets in which two tables differ, slot by slot.
func (w *twin) slotDiff(a, b []byte) string {
	var out []byte
	for i := range w.rf.NumBuckets() / uint64(w.rf.Segments()) {
		var x, y []uint64
		for j := range uint64(w.rf.BucketSize()) {
			x = append(x, redisfilter.Slot(w.rf, a, i, j))
			y = append(y, redisfilter.Slot(w.rf, b, i, j))
		}
		if !slices.Equal(x, y) {
			out = fmt.Appendf(out, "bucket %d: Redis %x, engine %x\n", i, x, y)
		}
	}
	return string(out)
}
