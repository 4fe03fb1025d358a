package cuckoo

import (
	"math/rand/v2"
	"testing"

	"github.com/dedupkit/cuckoo/internal/addr"
)

// TestSpreadBucketsSteps checks what spreadBuckets relies on: from any
// count, maxSpreadSteps steps of 2 (a table of one segment) or of
// segmentAlign (a segment) reach a count whose offsets spread. Every
// start up to 2^22 is tried, then random ones up to 2^32.
func TestSpreadBucketsSteps(t *testing.T) {
	t.Parallel()
	starts := func(yield func(uint64) bool) {
		for m := uint64(minSpreadBuckets); m < 1<<22; m += 2 {
			if !yield(m) {
				return
			}
		}
		r := rand.New(rand.NewPCG(5, 6))
		for range 1 << 20 {
			if !yield(r.Uint64N(maxBuckets-1<<22)&^1 + 1<<22) {
				return
			}
		}
	}
	for _, step := range []uint64{2, segmentAlign} {
		worst := 0
		for m := range starts {
			if step == segmentAlign {
				m = m / segmentAlign * segmentAlign
			}
			k := 0
			for !addr.Spread(m + uint64(k)*step) {
				k++
				if k == maxSpreadSteps {
					t.Fatalf("step %d: no count from %d on spreads within %d steps", step, m, maxSpreadSteps)
				}
			}
			worst = max(worst, k)
		}
		t.Logf("step %d: at most %d steps", step, worst)
	}
}

// TestPlannedBucketsSpread checks New's plan against the count decoders
// require: never fewer buckets, a few more at most, and offsets that
// spread once the table is large enough.
func TestPlannedBucketsSpread(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		capacity := uint64(1) << r.IntN(33)
		capacity += r.Uint64N(capacity)
		slots := []uint64{2, 4, 8}[r.IntN(3)]
		f := uint64(4 + r.IntN(29))
		segments := uint64(1)
		if r.IntN(3) == 0 {
			segments = uint64(2 + r.IntN(64))
		}
		var least uint64
		var lok bool
		if segments == 1 {
			least, lok = bucketsFor(capacity, slots, f)
		} else {
			least, lok = segmentedBuckets(capacity, segments, slots, f)
		}
		if !lok {
			continue
		}
		m := plannedBuckets(least, segments)
		step := uint64(2)
		if segments > 1 {
			step = segmentAlign
		}
		ms, leastS := m/segments, least/segments
		if m%segments != 0 || ms < leastS || ms > leastS+(maxSpreadSteps-1)*step || (ms-leastS)%step != 0 {
			t.Fatalf("capacity %d, %d segments, b=%d f=%d: %d buckets a segment, least %d", capacity, segments, slots, f, ms, leastS)
		}
		if ms >= minSpreadBuckets && !addr.Spread(ms) && leastS+maxSpreadSteps*step <= maxBuckets/segments {
			t.Fatalf("capacity %d, %d segments, b=%d f=%d: %d buckets a segment do not spread", capacity, segments, slots, f, ms)
		}
		if ms < minSpreadBuckets && ms != leastS {
			t.Fatalf("capacity %d: a small table's count changed from %d to %d", capacity, leastS, ms)
		}
	}
}

// TestPlannedBucketsAtTheLimit: where no count from the least one up to
// maxBuckets spreads (2^32 itself does not), New keeps the least count
// rather than refuse the capacity.
func TestPlannedBucketsAtTheLimit(t *testing.T) {
	capacity := uint64(16_149_075_422) // b=4, f=8: the least count is 2^32
	least, ok := bucketsFor(capacity, 4, 8)
	if !ok || least != maxBuckets || addr.Spread(maxBuckets) {
		t.Fatalf("least count %d (%v), want 2^32, which does not spread", least, ok)
	}
	if m := plannedBuckets(least, 1); m != maxBuckets {
		t.Fatalf("planned %d, want 2^32", m)
	}
}
