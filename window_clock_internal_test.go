package cuckoo

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/testseed"
)

// TestWindowCoarseClock drives a Window of the default clock from a fake
// source: writers read the exact time, lookups a coarse time behind it by
// anything less than two ticks (a tick, and a tick's delay of the
// goroutine), never going back. A key added at t must be found at every
// time up to t + window, and past t + window + Granularity() only at the
// false-positive rate.
func TestWindowCoarseClock(t *testing.T) {
	for _, window := range []time.Duration{24 * time.Hour, time.Hour, 6 * time.Second} {
		t.Run(fmt.Sprintf("window=%v", window), func(t *testing.T) {
			rng := testseed.Rand(t)
			const n = 3000
			w, err := NewWindow(n, window, WithSeed(3))
			if err != nil {
				t.Fatal(err)
			}
			if w.coarse == nil {
				t.Fatalf("window %v: no coarse clock", window)
			}
			tick := w.coarse.tick
			if g := w.Granularity(); g > window/4 || g != time.Duration(15*w.gran-w.window)+2*tick {
				t.Fatalf("granularity %v, tick %v, epoch %v", g, tick, time.Duration(w.gran))
			}
			fake := &fakeTime{wall: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano(), mono: 1e9}
			w.fake = fake
			w.anchor()
			w.coarse.ns.Store(fake.mono) // started: no goroutine, the test ticks it

			type entry struct {
				h  uint64
				at int64 // exact Unix ns of its Add
			}
			var keys []entry
			// Lookups of keys in the epoch past window + granularity, and
			// how many found them: the ones a wrong bound would find.
			checks, fp := 0, 0
			limit := int64(window + w.Granularity())
			for step := 0; step < 1000; step++ {
				// Time moves by up to a quarter of an epoch, a few keys
				// are added (about n a window), and time moves again for
				// the lookups: the Window's time is the later of the
				// coarse clock's and the latest write's.
				fake.mono += rng.Int64N(w.gran / 4)
				at := w.nanos()
				for range 1 + rng.IntN(20) {
					h := rng.Uint64()
					if err := w.AddHash(h); err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					keys = append(keys, entry{h: h, at: at})
				}
				fake.mono += rng.Int64N(w.gran / 4)
				// The coarse clock lags by less than two ticks and never
				// goes back.
				lagged := fake.mono - rng.Int64N(2*int64(tick))
				w.coarse.ns.Store(max(w.coarse.ns.Load(), lagged))
				now := w.nanos()
				kept := keys[:0]
				for _, k := range keys {
					age := now - k.at
					switch {
					case age <= int64(window):
						if !w.ContainsHash(k.h) {
							t.Fatalf("step %d: key added %v ago not found (window %v)", step, time.Duration(age), window)
						}
					case age > limit && age <= limit+w.gran:
						checks++
						if w.ContainsHash(k.h) {
							fp++
						}
					}
					if age <= limit+int64(window) {
						kept = append(kept, k)
					}
				}
				keys = kept
			}
			if err := w.validate(true); err != nil {
				t.Fatal(err)
			}
			rate := w.FalsePositiveRate()
			// A key is looked up about 8 times in that epoch, and a false
			// positive tends to stay one: a wide bound for correlated
			// trials. A bound a tick too low finds about 1 % of them.
			mean := float64(checks) * rate
			t.Logf("%d lookups past window + granularity, %d found (%.1f expected)", checks, fp, mean)
			if bound := int(mean + 10*math.Sqrt(mean) + 4); fp > bound || checks < 2000 {
				t.Fatalf("%d of %d lookups found keys past window + granularity (bound %d)", fp, checks, bound)
			}
		})
	}
}

// TestWindowCoarseClockShortWindow: windows shorter than 5.6 s read the
// exact clock on lookups too, and their granularity is the epochs' alone.
func TestWindowCoarseClockShortWindow(t *testing.T) {
	for _, window := range []time.Duration{time.Millisecond, time.Second, 5 * time.Second} {
		w, err := NewWindow(10, window)
		if err != nil {
			t.Fatal(err)
		}
		if w.coarse != nil || w.Granularity() != time.Duration(15*w.gran-w.window) {
			t.Fatalf("window %v: coarse %v, granularity %v", window, w.coarse != nil, w.Granularity())
		}
	}
	w, err := NewWindow(10, time.Hour, WithClock(time.Now))
	if err != nil {
		t.Fatal(err)
	}
	if w.coarse != nil {
		t.Fatal("a Window of WithClock has a coarse clock")
	}
}

// TestWindowCoarseClockTicks: the default clock's goroutine starts with the
// first lookup that reads the clock, moves the time lookups read, survives
// a decode, and ends once the Window is unreachable.
func TestWindowCoarseClockTicks(t *testing.T) {
	w, err := NewWindow(100, 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddString("k"); err != nil {
		t.Fatal(err)
	}
	c := w.coarse
	if c.ns.Load() != 0 {
		t.Fatal("the coarse clock started with an Add")
	}
	if !w.ContainsString("k") {
		t.Fatal("key not found")
	}
	first := c.ns.Load()
	if first == 0 || c.exited == nil {
		t.Fatal("the coarse clock did not start with a lookup")
	}
	deadline := time.Now().Add(30 * time.Second)
	for c.ns.Load() == first {
		if time.Now().After(deadline) {
			t.Fatal("the coarse clock did not tick")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, exact := c.ns.Load(), monoNanos(); got > exact {
		t.Fatalf("coarse clock %d ahead of the exact one %d", got, exact)
	}
	enc, err := w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.UnmarshalBinary(enc); err != nil || w.coarse != c {
		t.Fatalf("decoding: %v, clock kept %v", err, w.coarse == c)
	}
	exited := c.exited
	w, c = nil, nil
	for {
		runtime.GC()
		select {
		case <-exited:
			return
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the coarse clock's goroutine still runs after its Window was dropped")
		}
	}
}

// TestWindowCoarseClockEdge: the bound is tight. A key added at the start
// of an epoch, looked up with no write since and the coarse clock almost
// two ticks behind, is found up to window + Granularity() after its Add and
// not a nanosecond later.
func TestWindowCoarseClockEdge(t *testing.T) {
	for _, window := range []time.Duration{24 * time.Hour, 7 * time.Second} {
		w, err := NewWindow(100, window)
		if err != nil {
			t.Fatal(err)
		}
		tick := int64(w.coarse.tick)
		at := (floorDiv(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano(), w.gran) + 1) * w.gran
		fake := &fakeTime{wall: at - 1e9, mono: 1e9}
		w.fake = fake
		w.anchor()
		if err := w.AddUint64(7); err != nil {
			t.Fatal(err)
		}
		limit := at + int64(window+w.Granularity())
		for _, c := range []struct {
			exact int64
			lag   int64
			found bool
		}{
			{at + int64(window), 0, true},
			{limit - 2, 2*tick - 1, true},
			{limit + 1, 2*tick - 1, false},
			{limit - 2*tick, 0, false}, // without the lag: the epochs' bound
		} {
			fake.mono = 1e9 + c.exact - at
			w.coarse.ns.Store(fake.mono - c.lag)
			if got := w.ContainsUint64(7); got != c.found {
				t.Fatalf("window %v: at +%v with the clock %v behind: found %v", window,
					time.Duration(c.exact-at), time.Duration(c.lag), got)
			}
		}
	}
}
