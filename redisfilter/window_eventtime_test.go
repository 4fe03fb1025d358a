package redisfilter_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// keyIn returns a key of the window's segment s, its name starting with
// prefix.
func keyIn(t *testing.T, w *redisfilter.Window, s int, prefix string) []byte {
	t.Helper()
	for i := range 100000 {
		k := key(prefix, i)
		if seg, _, _, _ := redisfilter.WindowLocate(w, k); seg == s {
			return k
		}
	}
	t.Fatalf("no key %s… in segment %d", prefix, s)
	return nil
}

// TestWindowEventTimeNeverGoesBack: TouchBatchAt judges each key at the
// latest time the handle knows, as the library's Window with a clock of
// event times does, whichever segment the key falls in: a late key (a
// time before one written already) in a segment that has not seen the
// newest time is judged at the newest, not at its segment's older one
// (steps 3 and 5); the stamp it leaves is the newest time's, so its next
// sighting is judged from there (step 4). A new handle starts from the
// newest epoch of the segments (step 7). Each answer is also the one of a
// cuckoo.Window given the same keys at the same times.
//
// Before the handle kept the time, each segment judged its keys at its
// own time: step 3 reported A seen (5 h after it, by its segment's time),
// step 4 unseen (25 h after the late sighting's stamp), step 5 seen (11 h
// after step 4), and step 8 unseen. A handle that kept the time of its
// own writes only, without reading the segments' epochs first, reports
// step 7 seen (10 h after step 5, by A's segment) and step 8 unseen.
func TestWindowEventTimeNeverGoesBack(t *testing.T) {
	topologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxOf(t)
		const window = 14 * time.Hour // epochs of 1 h
		name := uniqueName(t)
		w1, err := redisfilter.NewWindow(ctx, rdb, name, 1000, window, redisfilter.WithSegments(4),
			redisfilter.WithFingerprintBits(20), redisfilter.WithSeed(7))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w1.Drop(ctx) })
		// A in segment 0, B in segment 1: B's writes move the time on
		// without A's segment seeing it.
		a, b := keyIn(t, w1, 0, "a"), keyIn(t, w1, 1, "b")
		var now time.Time
		lib, err := cuckoo.NewWindow(1000, window, cuckoo.WithFingerprintBits(20), cuckoo.WithClock(func() time.Time { return now }))
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		h := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }
		type ev struct {
			k    []byte
			at   time.Time
			seen bool
		}
		steps := []struct {
			what string
			evs  []ev
		}{
			{"1: A at 0 h", []ev{{a, h(0), false}}},
			{"2: B at 20 h", []ev{{b, h(20), false}}},
			{"3: A late, at 5 h: judged at 20 h, 20 h after A", []ev{{a, h(5), false}}},
			{"4: A at 30 h, 10 h after the late sighting, judged at 20 h", []ev{{a, h(30), true}}},
			{"5: one batch, B at 60 h then A late at 41 h: judged at 60 h, 30 h after A", []ev{{b, h(60), false}, {a, h(41), false}}},
			{"6: B at 100 h", []ev{{b, h(100), false}}},
			{"7: a new handle, A late at 70 h: judged at 100 h, 40 h after A", []ev{{a, h(70), false}}},
			{"8: the new handle, A at 105 h, 5 h after step 7", []ev{{a, h(105), true}}},
		}
		var w2 *redisfilter.Window
		for i, st := range steps {
			w := w1
			if i >= 6 { // steps 7 and 8
				if w2 == nil {
					if w2, err = redisfilter.OpenWindow(ctx, rdb, name); err != nil {
						t.Fatal(err)
					}
				}
				w = w2
			}
			keys, times := make([][]byte, len(st.evs)), make([]time.Time, len(st.evs))
			for j, e := range st.evs {
				keys[j], times[j] = e.k, e.at
			}
			seen, errs := make([]bool, len(keys)), make([]error, len(keys))
			if err := w.TouchBatchAt(ctx, keys, times, seen, errs); err != nil {
				t.Fatalf("step %s: %v", st.what, err)
			}
			for j, e := range st.evs {
				now = e.at
				libSeen, err := lib.Touch(e.k)
				if err != nil {
					t.Fatal(err)
				}
				if errs[j] != nil || seen[j] != e.seen || libSeen != e.seen {
					t.Errorf("step %s: key %s at %v: Redis seen %v (%v), library %v; want %v", st.what, e.k, e.at.Sub(t0), seen[j], errs[j], libSeen, e.seen)
				}
			}
		}
	})
}

// TestWindowEventTimeMatchesLibrary: a stream of events over many
// segments, with time jumps of about the window and late events, written
// with TouchBatchAt in batches of random sizes, gets from Redis the
// answers a cuckoo.Window with a clock of event times gives, key for key
// (28-bit fingerprints: no false positive on either side). Before the
// handle kept the time, late keys were judged at their segment's own
// time: 4 of the 4,000 answers differed.
func TestWindowEventTimeMatchesLibrary(t *testing.T) {
	topologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxOf(t)
		const window = 14 * time.Hour
		w, err := redisfilter.NewWindow(ctx, rdb, uniqueName(t), 2000, window, redisfilter.WithSegments(12),
			redisfilter.WithFingerprintBits(28))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Drop(ctx) })
		var now time.Time
		lib, err := cuckoo.NewWindow(2000, window, cuckoo.WithFingerprintBits(28), cuckoo.WithClock(func() time.Time { return now }))
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(11, 12))
		const events = 4000
		keys, times := make([][]byte, events), make([]time.Time, events)
		at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		for i := range events {
			switch r := rng.IntN(1000); {
			case r < 3:
				at = at.Add(14 * time.Hour)
			case r < 6:
				at = at.Add(15 * time.Hour)
			case r < 15:
				at = at.Add(time.Hour)
			default:
				at = at.Add(time.Duration(rng.IntN(60)) * time.Second)
			}
			times[i] = at
			if rng.IntN(20) == 0 {
				// Late: up to 20 hours before the stream's time.
				times[i] = at.Add(-time.Duration(rng.IntN(20*3600)) * time.Second)
			}
			keys[i] = fmt.Appendf(nil, "id-%d", rng.IntN(300))
		}
		seen, errs := make([]bool, events), make([]error, events)
		for lo := 0; lo < events; {
			hi := min(lo+1+rng.IntN(200), events)
			if err := w.TouchBatchAt(ctx, keys[lo:hi], times[lo:hi], seen[lo:hi], errs[lo:hi]); err != nil {
				t.Fatal(err)
			}
			lo = hi
		}
		differ, printed := 0, 0
		for i := range events {
			now = times[i]
			s, err := lib.Touch(keys[i])
			if err != nil || errs[i] != nil {
				t.Fatalf("event %d: library %v, Redis %v", i, err, errs[i])
			}
			if !s {
				printed++
			}
			if s != seen[i] {
				if differ++; differ <= 5 {
					t.Errorf("event %d (%s at %v): library seen %v, Redis %v", i, keys[i], times[i], s, seen[i])
				}
			}
		}
		if differ > 0 {
			t.Fatalf("%d of %d answers differ", differ, events)
		}
		if printed < 300 || printed > events*9/10 {
			t.Fatalf("%d of %d events unseen: the stream does not exercise the window", printed, events)
		}
	})
}
