package cuckoo_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo"
)

// The Window's targets (issue 32) are ratios to a Filter of the same
// capacity and rate: BenchmarkWindowTargets measures both in the same
// rounds (see there).

var windowBenchSizes = []uint64{1_000_000, 10_000_000}

// windowBenchClocks are the clocks the Window is measured with: the
// default one, and one that returns a fixed time (as an event clock or a
// caller's cached clock does), which shows the cost of the Window itself.
var windowBenchClocks = []string{"default", "fixed"}

type benchWindowKey struct {
	n     uint64
	clock string
}

var windowCache = map[benchWindowKey]*cuckoo.Window{}

// fullWindow returns a shared Window holding the present keys 0..n-1, all
// in the window.
func fullWindow(b *testing.B, n uint64, clock string) *cuckoo.Window {
	keys := cachedKeys(0, n)
	cache.Lock()
	defer cache.Unlock()
	k := benchWindowKey{n, clock}
	if w := windowCache[k]; w != nil {
		return w
	}
	opts := []cuckoo.Option{cuckoo.WithSeed(1)}
	if clock == "fixed" {
		now := time.Now()
		opts = append(opts, cuckoo.WithClock(func() time.Time { return now }))
	}
	w, err := cuckoo.NewWindow(n, 24*time.Hour, opts...)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := w.AddBatch(keys); err != nil {
		b.Fatal(err)
	}
	windowCache[k] = w
	return w
}

// BenchmarkWindowTargets measures the Window against a Filter of the same
// capacity and fingerprint width in paired rounds: each b.Loop iteration
// times a round of one, then a round of the other (the order alternating),
// and the benchmark reports the median of the rounds' ratios, which a busy
// machine disturbs far less than separate runs. Run it with a fixed number
// of rounds:
//
//	go test -run '^$' -bench BenchmarkWindowTargets -benchtime 40x
//
// ratio is window/peer time per operation (memory: bytes); peer-ns and
// window-ns are each side's median. Lookups: clock=fixed gives the Window
// a clock that returns a fixed time (as an event clock, or a clock the
// caller caches, does), which shows the cost of the Window itself and of
// a call to the caller's clock; clock=default reads the default clock's
// coarse copy (an atomic load), as every Contains that finds a
// fingerprint does. Inserts, with a clock that moves
// window/n per Add: op=add/fill fills both from empty to n keys (the
// Filter's usual measure); op=add/stream is the Window's steady state, a
// stream at capacity, against a Filter's fill and against a Filter kept at
// capacity by deleting its oldest key for each new one (peer=sliding).
func BenchmarkWindowTargets(b *testing.B) {
	const round = 100_000
	for _, n := range append([]uint64{100_000}, windowBenchSizes...) {
		f, keys := fullFilter(b, benchShape{n, 4, cuckoo.DefaultWindowFingerprintBits, false})
		absent := cachedKeys(1, n)
		for _, clock := range windowBenchClocks {
			for _, hit := range []bool{true, false} {
				b.Run(fmt.Sprintf("op=contains/n=%s/hit=%v/clock=%s", human(n), hit, clock), func(b *testing.B) {
					w := fullWindow(b, n, clock)
					probe := keys
					if !hit {
						probe = absent
					}
					i, j, found := 0, 0, 0
					pairedRounds(b, round,
						func() {
							if f.Contains(probe[i]) {
								found++
							}
							if i++; i == len(probe) {
								i = 0
							}
						},
						func() {
							if w.Contains(probe[j]) {
								found++
							}
							if j++; j == len(probe) {
								j = 0
							}
						})
					if hit && found < 2*round*b.N {
						b.Fatalf("present keys missing: %d found", found)
					}
				})
			}
		}
		for _, peer := range []string{"fill", "sliding"} {
			for _, mode := range []string{"fill", "stream"} {
				if mode == "fill" && peer == "sliding" {
					continue
				}
				b.Run(fmt.Sprintf("op=add/n=%s/window=%s/peer=%s", human(n), mode, peer), func(b *testing.B) {
					benchAdd(b, n, mode, peer, round)
				})
			}
		}
		b.Run(fmt.Sprintf("op=memory/n=%s", human(n)), func(b *testing.B) {
			w := fullWindow(b, n, "fixed")
			for b.Loop() {
			}
			b.ReportMetric(float64(w.SizeInBytes())/float64(f.SizeInBytes()), "ratio")
			b.ReportMetric(float64(f.SizeInBytes()*8)/float64(n), "peer-bits/key")
			b.ReportMetric(float64(w.SizeInBytes()*8)/float64(n), "window-bits/key")
		})
	}
}

// benchAdd is an op=add row of BenchmarkWindowTargets: keys of family 3,
// new ones throughout.
func benchAdd(b *testing.B, n uint64, mode, peer string, round int) {
	const window = 24 * time.Hour
	var kb [16]byte
	g, _ := cuckoo.New(n, cuckoo.WithSeed(2), cuckoo.WithFingerprintBits(cuckoo.DefaultWindowFingerprintBits))
	gNext, gOldest := uint64(0), uint64(0)
	if peer == "sliding" {
		for ; gNext < n; gNext++ {
			putKey(&kb, 3, gNext)
			g.Add(kb[:])
		}
	}
	now := t0
	gap := window / time.Duration(n)
	w, _ := cuckoo.NewWindow(n, window, cuckoo.WithSeed(2), cuckoo.WithClock(func() time.Time { return now }))
	next := uint64(0)
	if mode == "stream" {
		// The Window starts in its steady state: a window and a quarter
		// of the stream, past which every key before it has expired.
		for ; next < n+n/4; next++ {
			putKey(&kb, 4, next)
			w.Add(kb[:])
			now = now.Add(gap)
		}
	}
	pairedRounds(b, round,
		func() {
			if peer == "sliding" {
				putKey(&kb, 3, gOldest)
				g.Delete(kb[:])
				gOldest++
			} else if gNext == n {
				g.Reset() // a fill restarts from empty
				gNext = 0
			}
			putKey(&kb, 3, gNext)
			if err := g.Add(kb[:]); err != nil {
				b.Fatal(err)
			}
			gNext++
		},
		func() {
			if mode == "fill" && next == n {
				w.Reset()
				next = 0
			}
			putKey(&kb, 4, next)
			if err := w.Add(kb[:]); err != nil {
				b.Fatal(err)
			}
			next++
			if mode == "stream" {
				now = now.Add(gap)
			}
		})
}

// pairedRounds runs, once per b.Loop iteration, a round of rounds calls
// of peer and of window, in alternating order, and reports the median
// ratio of their times and each one's median ns per call.
func pairedRounds(b *testing.B, rounds int, peer, window func()) {
	var ps, ws, ratios []float64
	timeRound := func(op func()) float64 {
		start := time.Now()
		for range rounds {
			op()
		}
		return float64(time.Since(start).Nanoseconds()) / float64(rounds)
	}
	k := 0
	for b.Loop() {
		var p, w float64
		if k%2 == 0 {
			p = timeRound(peer)
			w = timeRound(window)
		} else {
			w = timeRound(window)
			p = timeRound(peer)
		}
		k++
		ps, ws, ratios = append(ps, p), append(ws, w), append(ratios, w/p)
	}
	b.ReportMetric(median(ratios), "ratio")
	b.ReportMetric(median(ps), "peer-ns")
	b.ReportMetric(median(ws), "window-ns")
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	slices.Sort(s)
	return s[len(s)/2]
}

// filterRing is the alternative docs/window.md measures the Window
// against: a ring of periods+1 Filters, one a period of window/periods,
// the current one taking the adds and all of them asked on every lookup;
// the oldest is cleared when a new period starts. Each Filter holds a
// period's keys at a steady pace, at a rate that keeps the ring's (their
// sum) at the rate asked.
type filterRing struct {
	filters []*cuckoo.Filter
	period  time.Duration
	epoch   int64 // the current period, by the clock
	cur     int
	now     func() time.Time
}

func newFilterRing(n uint64, window time.Duration, periods int, rate float64, now func() time.Time) *filterRing {
	r := &filterRing{period: window / time.Duration(periods), now: now}
	for range periods + 1 {
		f, err := cuckoo.New(n/uint64(periods)+1, cuckoo.WithSeed(5), cuckoo.WithFalsePositiveRate(rate/float64(periods+1)))
		if err != nil {
			panic(err)
		}
		r.filters = append(r.filters, f)
	}
	r.epoch = now().UnixNano() / int64(r.period)
	return r
}

// Add adds key to the current period's Filter (once), after moving the
// ring on to the clock's period.
func (r *filterRing) Add(key []byte) error {
	if e := r.now().UnixNano() / int64(r.period); e > r.epoch {
		for range min(e-r.epoch, int64(len(r.filters))) {
			r.cur = (r.cur + 1) % len(r.filters)
			r.filters[r.cur].Reset()
		}
		r.epoch = e
	}
	_, err := r.filters[r.cur].AddUnique(key)
	return err
}

// Contains asks every Filter, the current first.
func (r *filterRing) Contains(key []byte) bool {
	for i := range r.filters {
		if r.filters[(r.cur+len(r.filters)-i)%len(r.filters)].Contains(key) {
			return true
		}
	}
	return false
}

func (r *filterRing) SizeInBytes() uint64 {
	var s uint64
	for _, f := range r.filters {
		s += f.SizeInBytes()
	}
	return s
}

// BenchmarkWindowVsRing measures the Window against rings of Filters of
// the same granularity (14 periods) and of the coarsest the Window's
// targets allow (4), both in their steady state after a stream of a window
// and a quarter at capacity, in paired rounds as BenchmarkWindowTargets:
//
//	go test -run '^$' -bench BenchmarkWindowVsRing -benchtime 40x
//
// It also reports each one's measured false-positive rate over absent
// keys (fpr-peer, fpr-window).
func BenchmarkWindowVsRing(b *testing.B) {
	const window, round = 24 * time.Hour, 100_000
	for _, n := range []uint64{1_000_000} {
		for _, periods := range []int{4, 14} {
			now := t0
			clock := func() time.Time { return now }
			w, _ := cuckoo.NewWindow(n, window, cuckoo.WithSeed(2), cuckoo.WithClock(clock))
			rate := w.FalsePositiveRate()
			gap := window / time.Duration(n)
			var kb [16]byte
			// Both fill to their steady state (a window and a quarter of
			// the stream), so the rate they are sized for is the Window's
			// at capacity.
			warm := n + n/4
			for i := range warm {
				putKey(&kb, 4, i)
				w.Add(kb[:])
				now = now.Add(gap)
			}
			rate = w.FalsePositiveRate()
			now = t0
			ring := newFilterRing(n, window, periods, rate, clock)
			for i := range warm {
				putKey(&kb, 4, i)
				if err := ring.Add(kb[:]); err != nil {
					b.Fatal(err)
				}
				now = now.Add(gap)
			}
			present := make([][]byte, n/2) // added within the last half window
			for i := range present {
				present[i] = key(4, warm-1-uint64(i))
			}
			absent := cachedKeys(1, n)
			for _, hit := range []bool{true, false} {
				probe := present
				if !hit {
					probe = absent
				}
				b.Run(fmt.Sprintf("op=contains/n=%s/periods=%d/hit=%v", human(n), periods, hit), func(b *testing.B) {
					i, j := 0, 0
					pairedRounds(b, round,
						func() { ring.Contains(probe[i%len(probe)]); i++ },
						func() { w.Contains(probe[j%len(probe)]); j++ })
				})
			}
			b.Run(fmt.Sprintf("op=add/n=%s/periods=%d", human(n), periods), func(b *testing.B) {
				next, ringNext := warm, warm
				ringNow, winNow := now, now
				pairedRounds(b, round,
					func() {
						now = ringNow
						putKey(&kb, 4, ringNext)
						ring.Add(kb[:])
						ringNow = ringNow.Add(gap)
						ringNext++
					},
					func() {
						now = winNow
						putKey(&kb, 4, next)
						w.Add(kb[:])
						winNow = winNow.Add(gap)
						next++
					})
			})
			b.Run(fmt.Sprintf("op=memory/n=%s/periods=%d", human(n), periods), func(b *testing.B) {
				for b.Loop() {
				}
				fr, fw := 0, 0
				for _, k := range absent {
					if ring.Contains(k) {
						fr++
					}
					if w.Contains(k) {
						fw++
					}
				}
				b.ReportMetric(float64(w.SizeInBytes())/float64(ring.SizeInBytes()), "ratio")
				b.ReportMetric(float64(ring.SizeInBytes()*8)/float64(n), "peer-bits/key")
				b.ReportMetric(float64(w.SizeInBytes()*8)/float64(n), "window-bits/key")
				b.ReportMetric(float64(fr)/float64(len(absent)), "fpr-peer")
				b.ReportMetric(float64(fw)/float64(len(absent)), "fpr-window")
			})
		}
	}
}
