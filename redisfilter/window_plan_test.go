package redisfilter

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo"
)

// TestPlannedStringIsTheSegmentString checks that the string length the
// plans fit to the allocator (planSegmentBytes, windowStringBytes) is the
// length of the strings New and NewWindow make (newGeometry), for every
// bucket size, a spread of fingerprint widths and segment counts: a
// window's slot holds its stamp too, and the segment count is chosen for
// the strings' size classes, so a plan that counted fingerprints alone
// would fit strings a third shorter than the real ones at 12 bits.
func TestPlannedStringIsTheSegmentString(t *testing.T) {
	for _, b := range []int{2, 4, 8} {
		for _, f := range []int{4, 7, 10, 12, 13, 16, 17, 22, 28} {
			for _, s := range []int{1, 3, 16} {
				opts := []Option{WithBucketSize(b), WithFingerprintBits(f), WithSegments(s)}
				wp, err := NewWindowPlan(50_000, time.Hour, opts...)
				if err != nil {
					t.Fatal(err)
				}
				wm := meta{kind: "window", b: b, f: f, buckets: wp.NumBuckets, segments: s}
				if got, want := windowStringBytes(&wp), newGeometry(&wm).strLen; got != want {
					t.Fatalf("window b=%d f=%d segments=%d: planned strings of %d bytes, NewWindow makes %d", b, f, s, got, want)
				}
				fp, err := NewPlan(50_000, opts...)
				if err != nil {
					t.Fatal(err)
				}
				fm := meta{kind: "cuckoo", b: b, f: f, buckets: fp.NumBuckets, segments: s}
				if got, want := planSegmentBytes(&fp, fp.FingerprintBits), newGeometry(&fm).strLen; got != want {
					t.Fatalf("filter b=%d f=%d segments=%d: planned strings of %d bytes, New makes %d", b, f, s, got, want)
				}
			}
		}
	}
}

// windowMemoryBand is a range of capacities and fingerprint widths and the
// most a window's Redis memory may be there against a cuckoo filter's of
// the same capacity and rate (docs/benchmarks.md, Window filters in
// Redis, gives the same table).
type windowMemoryBand struct {
	fromKeys, toKeys uint64 // capacities [fromKeys, toKeys)
	minBits, maxBits int    // fingerprint widths [minBits, maxBits]
	most             float64
}

var windowMemoryBands = []windowMemoryBand{
	{3e5, 1e7 + 1, 12, cuckoo.MaxWindowFingerprintBits, 1.5},
	{1e5, 3e5, 12, cuckoo.MaxWindowFingerprintBits, 1.51},
	{1e4, 1e5, 14, cuckoo.MaxWindowFingerprintBits, 1.51},
	{1e4, 1e5, 12, 13, 1.67},
	{1e4, 1e7 + 1, 10, 11, 1.67},
}

// TestWindowPlanMemoryAgainstFilter holds the Redis memory of the window
// NewWindowPlan plans to windowMemoryBands' bounds, against the cuckoo
// filter NewPlan plans for the same capacity and rate, at 20 capacities a
// decade from 10^4 to 10^7 keys and rates from 1 % to 10^-5. The memory is
// segmentsMemory's (the strings' size classes and each segment's keys),
// which TestWindowMemoryUsageMatchesPlan checks against MEMORY USAGE on a
// real server. The bounds start from the layout's cost: a window's slot holds a 4-bit
// stamp beside its f-bit fingerprint and its table the keys of 15 epochs
// for a window of 14, (15/14)·(f+4)/f of the filter's table, 1.5× at 10
// bits, 1.43× at 12; above that come the window's smaller segments (more of them, each
// with its headroom) and the allocator's size classes, which with one
// string or a few can put the window's strings just above a class and the
// filter's just below.
func TestWindowPlanMemoryAgainstFilter(t *testing.T) {
	worst := make([]float64, len(windowMemoryBands))
	for _, rate := range []float64{1e-2, 5e-3, 1.9e-3, 1e-3, 5e-4, 1e-4, 1e-5} {
		for k := range 61 {
			n := uint64(math.Round(math.Pow(10, 4+float64(k)/20)))
			wp, err := NewWindowPlan(n, 24*time.Hour, WithFalsePositiveRate(rate))
			if err != nil {
				t.Fatal(err)
			}
			fp, err := NewPlan(n, WithFalsePositiveRate(rate))
			if err != nil {
				t.Fatal(err)
			}
			if wp.FingerprintBits != fp.FingerprintBits {
				t.Fatalf("%d keys at rate %g: the window has %d-bit fingerprints, the filter %d", n, rate, wp.FingerprintBits, fp.FingerprintBits)
			}
			f := wp.FingerprintBits
			ratio := float64(windowPlanMemory(&wp)) / float64(filterPlanMemory(&fp))
			in := false
			for i, b := range windowMemoryBands {
				if n >= b.fromKeys && n < b.toKeys && f >= b.minBits && f <= b.maxBits {
					in = true
					worst[i] = max(worst[i], ratio)
					if ratio > b.most {
						t.Errorf("%d keys at rate %g (%d-bit fingerprints): the window (%d segments) takes %.3f× the filter's memory (%d segments), above %.2f×",
							n, rate, f, wp.Segments, ratio, fp.Segments, b.most)
					}
				}
			}
			if !in {
				t.Fatalf("%d keys, %d-bit fingerprints: in no band", n, f)
			}
		}
	}
	for i, b := range windowMemoryBands {
		t.Logf("keys [%g, %g), f %d..%d: at most %.3f× (bound %.2f×)", float64(b.fromKeys), float64(b.toKeys), b.minBits, b.maxBits, worst[i], b.most)
	}
}

// windowPlanMemory is segmentsMemory of a window's plan.
func windowPlanMemory(p *cuckoo.Plan) uint64 {
	return segmentsMemory(uint64(p.Segments), windowStringBytes(p))
}

// filterPlanMemory is segmentsMemory of a cuckoo filter's plan.
func filterPlanMemory(p *cuckoo.Plan) uint64 {
	return segmentsMemory(uint64(p.Segments), planSegmentBytes(p, p.FingerprintBits))
}

// TestWindowPlanBands is a guard on the table above: its bands cover the
// grid TestWindowPlanMemoryAgainstFilter walks without overlapping.
func TestWindowPlanBands(t *testing.T) {
	for f := 10; f <= cuckoo.MaxWindowFingerprintBits; f++ {
		for _, n := range []uint64{1e4, 99_999, 1e5, 299_999, 3e5, 1e7} {
			hits := 0
			for _, b := range windowMemoryBands {
				if n >= b.fromKeys && n < b.toKeys && f >= b.minBits && f <= b.maxBits {
					hits++
				}
			}
			if hits != 1 {
				t.Errorf("%s in %d bands", fmt.Sprintf("%d keys, f=%d,", n, f), hits)
			}
		}
	}
}

// TestWindowMemoryAccounting checks the rows of docs/benchmarks.md's
// account of a window's memory at 0.19 % (Window filters in Redis): each
// plan's segments, their strings' length and allocation, for a window
// and a cuckoo filter.
func TestWindowMemoryAccounting(t *testing.T) {
	type side struct{ segments, str, alloc uint64 }
	for _, c := range []struct {
		n              uint64
		window, filter side
	}{
		{10_000, side{1, 22_696, 24_576}, side{1, 15_888, 16_384}},
		{29_512, side{1, 66_744, 81_920}, side{1, 46_696, 49_152}},
		{100_000, side{5, 47_624, 49_152}, side{1, 158_064, 163_840}},
		{200_000, side{17, 28_168, 28_672}, side{4, 81_408, 81_920}},
		{1_000_000, side{36, 65_032, 65_536}, side{20, 81_408, 81_920}},
		{10_000_000, side{360, 65_032, 65_536}, side{35, 456_960, 458_752}},
	} {
		wp, err := NewWindowPlan(c.n, 24*time.Hour, WithFalsePositiveRate(0.0019))
		if err != nil {
			t.Fatal(err)
		}
		fp, err := NewPlan(c.n, WithFalsePositiveRate(0.0019))
		if err != nil {
			t.Fatal(err)
		}
		ws, fs := windowStringBytes(&wp), planSegmentBytes(&fp, fp.FingerprintBits)
		w := side{uint64(wp.Segments), ws, stringAlloc(ws)}
		f := side{uint64(fp.Segments), fs, stringAlloc(fs)}
		if w != c.window || f != c.filter {
			t.Errorf("%d keys: window %v, filter %v; the docs say %v and %v", c.n, w, f, c.window, c.filter)
		}
	}
}
