package cuckoo_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo"
)

// The Window's targets (issue 32) are ratios to a Filter of the same
// capacity and rate, so each benchmark below runs both, side by side, for
// benchstat to compare:
//
//	go test -run '^$' -bench 'BenchmarkWindowVsFilter' -count 10 | tee w.txt
//	benchstat -col /kind w.txt

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

func BenchmarkWindowVsFilter(b *testing.B) {
	for _, n := range windowBenchSizes {
		shape := benchShape{n, 4, cuckoo.DefaultWindowFingerprintBits, false}
		for _, hit := range []bool{true, false} {
			name := fmt.Sprintf("op=contains/n=%s/hit=%v", human(n), hit)
			b.Run(name+"/kind=filter", func(b *testing.B) {
				f, keys := fullFilter(b, shape)
				if !hit {
					keys = cachedKeys(1, n)
				}
				benchContains(b, f.Contains, keys, hit)
			})
			for _, clock := range windowBenchClocks {
				b.Run(name+"/kind=window-"+clock, func(b *testing.B) {
					w := fullWindow(b, n, clock)
					keys := cachedKeys(0, n)
					if !hit {
						keys = cachedKeys(1, n)
					}
					benchContains(b, w.Contains, keys, hit)
				})
			}
		}
	}
}

func benchContains(b *testing.B, contains func([]byte) bool, keys [][]byte, hit bool) {
	b.ReportAllocs()
	i, found := 0, 0
	for b.Loop() {
		if contains(keys[i]) {
			found++
		}
		if i++; i == len(keys) {
			i = 0
		}
	}
	if hit && found < b.N {
		b.Fatalf("%d of %d present keys found", found, b.N)
	}
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
// ratio is window/filter time per operation (memory: bytes); filter-ns and
// window-ns are the medians of each side. The Window's clock is a fixed
// time for lookups and one that moves window/n per Add for inserts (a
// stream at capacity), so the rows show the cost of the Window itself;
// clock=default adds the default clock's reading, which every Add and
// every Contains that finds a fingerprint make.
func BenchmarkWindowTargets(b *testing.B) {
	const round = 200_000
	for _, n := range windowBenchSizes {
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
		b.Run(fmt.Sprintf("op=add/n=%s", human(n)), func(b *testing.B) {
			const window = 24 * time.Hour
			g, _ := cuckoo.New(n, cuckoo.WithSeed(2), cuckoo.WithFingerprintBits(cuckoo.DefaultWindowFingerprintBits))
			now := t0
			gap := window / time.Duration(n)
			w, _ := cuckoo.NewWindow(n, window, cuckoo.WithSeed(2), cuckoo.WithClock(func() time.Time { return now }))
			// The Window starts in its steady state: two windows of the stream.
			var kb [16]byte
			next := uint64(0)
			for ; next < 2*n; next++ {
				putKey(&kb, 3, next)
				w.Add(kb[:])
				now = now.Add(gap)
			}
			i := uint64(0)
			pairedRounds(b, round,
				func() {
					if i == n {
						g.Reset() // a Filter's Add is measured from empty to full
						i = 0
					}
					putKey(&kb, 3, i)
					if err := g.Add(kb[:]); err != nil {
						b.Fatal(err)
					}
					i++
				},
				func() {
					putKey(&kb, 3, next)
					if err := w.Add(kb[:]); err != nil {
						b.Fatal(err)
					}
					next++
					now = now.Add(gap)
				})
		})
		b.Run(fmt.Sprintf("op=memory/n=%s", human(n)), func(b *testing.B) {
			w := fullWindow(b, n, "fixed")
			for b.Loop() {
			}
			b.ReportMetric(float64(w.SizeInBytes())/float64(f.SizeInBytes()), "ratio")
			b.ReportMetric(float64(f.SizeInBytes()*8)/float64(n), "filter-bits/key")
			b.ReportMetric(float64(w.SizeInBytes()*8)/float64(n), "window-bits/key")
		})
	}
}

// pairedRounds runs, once per b.Loop iteration, a round of rounds calls
// of filter and of window, in alternating order, and reports the median
// ratio of their times and each one's median ns per call.
func pairedRounds(b *testing.B, rounds int, filter, window func()) {
	var fs, ws, ratios []float64
	timeRound := func(op func()) float64 {
		start := time.Now()
		for range rounds {
			op()
		}
		return float64(time.Since(start).Nanoseconds()) / float64(rounds)
	}
	k := 0
	for b.Loop() {
		var f, w float64
		if k%2 == 0 {
			f = timeRound(filter)
			w = timeRound(window)
		} else {
			w = timeRound(window)
			f = timeRound(filter)
		}
		k++
		fs, ws, ratios = append(fs, f), append(ws, w), append(ratios, w/f)
	}
	b.ReportMetric(median(ratios), "ratio")
	b.ReportMetric(median(fs), "filter-ns")
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
