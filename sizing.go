package cuckoo

import (
	"fmt"
	"math"

	"github.com/dedupkit/cuckoo/internal/addr"
	"github.com/dedupkit/cuckoo/internal/replay"
	"github.com/dedupkit/cuckoo/internal/table"
)

// targetLoad is the fraction of slots a filter of New(capacity) holds when
// it holds capacity items. It sits below the load at which an insert (a
// breadth-first search of up to 256 buckets, then a random walk of
// DefaultMaxKicks moves) first fails in a table whose bucket count spreads
// the alternate buckets' offsets (plannedBuckets). Measured 2026-11-26
// with bench/firstfail: the least first-failure load over 24
// sizes from 10^5 to 1.6·10^7 items and 2 seeds at 6.4·10^7, random keys;
// for 2-slot buckets of 4 to 6 bits also 1.28·10^8 to 1.02·10^9 items
// (1 to 3 seeds a size), and 2 × 8, 4 × 5 and 4 × 8 at 1.02·10^9:
//
//	first failure      f=4    f=5    f=6    f=7    f=8    f=12   f=16
//	b=2                0.352* 0.518  0.759  0.838  0.849  0.867  0.869
//	b=4                0.889  0.910  0.937  0.948  0.953  0.961  0.964
//	b=8                >1     0.993  0.981  0.983  0.987  0.989  0.990
//	b=4, semi-sorted          0.913        (f=9) 0.960  (f=13) 0.962
//
// (*Up to 2.56·10^8 items; 0.322 at 5.12·10^8, past reliableCapacity. A
// load can pass 1: with 15 or 31 fingerprint values, distinct keys
// often share a bucket pair and a fingerprint, and copies past two are
// counted beside the table.)
//
// The other bucket sizes, which RedisBloom takes (1 to 255), measured
// 2026-11-26 with bench/firstfail the same way: 1, 2 or 3 seeds at each
// of 10^5, 10^6, 3·10^6 and 10^7 items, and one at 3·10^7 for the
// shapes that fill less as they grow (b = 1, 3, 5, 6, 7 and 9); 1- and
// 3-slot buckets also at 2·10^6 to 6·10^7, and 1-slot ones over 600 seeds
// at 10^5 and 40 at 10^6, for they vary from seed to seed much more than
// the others:
//
//	first failure      f=4    f=5    f=6    f=7    f=8    f=9+
//	b=1 (f=16+)                                           0.423
//	b=3                0.781* 0.851* 0.904  0.919  0.927  0.934
//	b=5                0.961  0.942  0.957  0.963  0.971  0.974
//	b=6                >1     0.963  0.973  0.978  0.979  0.980
//	b=7                >1     0.987  0.978  0.982  0.985  0.987
//	b=9 … 255          >1     >1     0.990  0.989  0.991  0.992
//
// (*Falling as the table grows: 0.873 and 0.897 at 10^5 items, hence
// reliableCapacity.) 1-slot buckets fill about half their slots (0.488
// at 3·10^7 items, one seed) but a few seeds in a hundred stop near 0.42,
// and narrower fingerprints than 16 bits stop anywhere from 0.02 to 0.45
// (minOneSlotBits). Tables of up to walkFirstBytes try the walk
// first; at 10^5 and 5·10^5 items (3 seeds each) their first failures lie
// within 0.015 of the search-first ones. Fingerprints of fewer than 8 bits
// give a key's alternate bucket few possible offsets, so the table cannot
// balance as well and fills less; with 2-slot buckets this gets worse as
// the table grows: 4-bit fingerprints failed at 0.322 with 5.12·10^8
// items, under their target, hence reliableCapacity. Frozen in effect:
// changing a value changes the table size New picks, the least bucket
// count a decoded Filter must have, and the growth plan a Scalable
// encoding is checked against (docs/format-scalable.md).
func targetLoad(slots, fpBits uint64) float64 {
	f := min(max(fpBits, 4), 9) - 4
	switch slots {
	case 1:
		return 0.40 // f ≥ 16 only: minOneSlotBits
	case 2:
		return [...]float64{0.33, 0.50, 0.74, 0.82, 0.84, 0.85}[f]
	case 3:
		return [...]float64{0.74, 0.82, 0.88, 0.90, 0.91, 0.92}[f]
	case 4:
		return [...]float64{0.80, 0.89, 0.88, 0.92, 0.94, 0.95}[f]
	case 5:
		return [...]float64{0.92, 0.92, 0.94, 0.94, 0.95, 0.96}[f]
	case 6:
		return [...]float64{0.94, 0.94, 0.95, 0.96, 0.96, 0.96}[f]
	case 7:
		return [...]float64{0.96, 0.96, 0.96, 0.96, 0.97, 0.97}[f]
	case 8:
		return [...]float64{0.88, 0.94, 0.95, 0.96, 0.97, 0.97}[f]
	}
	return 0.97 // 9 to 255 slots
}

// bucketsFor returns the even bucket count that holds capacity items at the
// target load, and false when that exceeds maxBuckets.
//
// A small table is unlucky more often: a few keys piling into a few
// buckets is likelier, and the load at which its first insert fails
// spreads wider. So the load is lowered by smallTableMargin, a term that
// shrinks as capacity^-3/4: the largest loads at which 20,000 tables of
// random seeds each held all their keys, for n from 5 to 5,000, lie above
// it (b = 2 needs the widest margin: a 7-key table, about 0.35 of its
// target load). From 10^4 keys on it costs under 0.5 % of the memory.
func bucketsFor(capacity, slots, fpBits uint64) (uint64, bool) {
	load := targetLoad(slots, fpBits) * smallTableMargin(capacity, slots)
	need := math.Ceil(float64(capacity) / (float64(slots) * load))
	if need > maxBuckets {
		return 0, false
	}
	m := uint64(need)
	m += m & 1
	m = max(m, 2)
	if m > maxBuckets {
		return 0, false
	}
	return m, true
}

// smallTableMargin is the factor of the target load for a table of
// capacity items (see bucketsFor). 1-slot buckets need by far the widest
// margin: the least first failures of 3,000 seeds lie at 0.34 of the
// slots for 1,000 and 3,000 items, and 3 keys sharing one bucket pair
// fill it, so tiny tables are made 20 times their keys.
func smallTableMargin(capacity, slots uint64) float64 {
	c, floor := 4.5, 0.35
	switch slots {
	case 1:
		c, floor = 300, 0.05
	case 2:
		c, floor = 13, 0.25
	case 8:
		c = 4
	}
	return max(floor, 1-c/math.Pow(float64(capacity), 0.75))
}

// leastBuckets returns the least bucket count that holds capacity items
// in segments segments (1 for an unsegmented table) at the target load:
// bucketsFor's, or segmentedBuckets', and false when it exceeds
// maxBuckets. Decoders require a Filter to have at least this many.
func leastBuckets(capacity, segments, slots, fpBits uint64) (uint64, bool) {
	if segments <= 1 {
		return bucketsFor(capacity, slots, fpBits)
	}
	return segmentedBuckets(capacity, segments, slots, fpBits)
}

// plannedBuckets returns the bucket count New gives a table whose least
// count (leastBuckets) is least, in segments segments: least raised by a
// few buckets per segment when need be so that the offsets of the
// alternate buckets spread (spreadBuckets), or least itself when the
// raised count would pass maxBuckets. A Scalable's growth plan does not
// raise its counts, and files written before New raised counts hold the
// least ones.
func plannedBuckets(least, segments uint64) uint64 {
	n, step := max(segments, 1), uint64(2)
	if n > 1 {
		step = segmentAlign
	}
	if ms := spreadBuckets(least/n, step); ms <= maxBuckets/n {
		return ms * n
	}
	return least
}

// spreadBuckets returns the least count m + k·step, k ≥ 0, whose offsets
// spread (addr.Spread), for tables of at least minSpreadBuckets buckets;
// smaller tables keep m, the count their margin was measured at
// (smallTableMargin). A table whose offsets do not spread can fail
// inserts well below the target load (bench/notes.md, item 23).
// TestSpreadBucketsSteps checks that maxSpreadSteps steps always find a
// count for both steps used.
func spreadBuckets(m, step uint64) uint64 {
	if m < minSpreadBuckets {
		return m
	}
	for k := uint64(0); k < maxSpreadSteps; k++ {
		if addr.Spread(m + k*step) {
			return m + k*step
		}
	}
	return m
}

const (
	minSpreadBuckets = 1 << 10
	maxSpreadSteps   = 16
)

// segmentedBuckets returns the bucket count of a table of n segments that
// holds capacity items, and false when it exceeds maxBuckets. A segment
// receives each key with probability 1/n, so its share of capacity keys
// is binomial: each is sized for its mean plus 6 standard deviations (and
// 6 keys, for small shares), which a segment exceeds with probability
// below 10^-9, and rounded up to a multiple of segmentAlign buckets.
func segmentedBuckets(capacity, n, slots, fpBits uint64) (uint64, bool) {
	ms, ok := bucketsFor(segmentShare(capacity, n), slots, fpBits)
	if !ok {
		return 0, false
	}
	ms = (ms + segmentAlign - 1) / segmentAlign * segmentAlign
	if ms > maxBuckets/n {
		return 0, false
	}
	return ms * n, true
}

// segmentShare is the share of capacity keys one of n segments is sized
// for (see segmentedBuckets): capacity itself when n ≤ 1.
func segmentShare(capacity, n uint64) uint64 {
	if n <= 1 {
		return capacity
	}
	mean := float64(capacity) / float64(n)
	share := uint64(math.Ceil(mean + 6*math.Sqrt(mean*(1-1/float64(n))) + 6))
	return min(share, capacity)
}

// expectedFPR is the probability that a key never added is reported present
// when a fraction load of the slots is occupied: each of the 2b slots of its
// two buckets is occupied with probability load, and an occupied slot
// matches with probability 1/(2^f - 1) (fingerprints are uniform over the
// non-zero f-bit values).
func expectedFPR(load float64, slots, fpBits uint64) float64 {
	q := 1 / (math.Exp2(float64(fpBits)) - 1)
	return -math.Expm1(2 * float64(slots) * load * math.Log1p(-q))
}

// reliableCapacity is the most keys New plans one table (or segment) of
// the shape for. With 2-slot buckets and fingerprints of 4 or 5 bits, the
// load at which inserts first fail keeps falling as the table grows (see
// targetLoad): 4-bit fingerprints held their target load up to 2.56·10^8
// keys and fell below it at 5.12·10^8; 5-bit ones were 5 % above theirs at
// 2.56·10^8 keys and 3.5 % at 1.02·10^9. 3-slot buckets of 4 and 5 bits
// fall too (0.87 to 0.78, 0.90 to 0.85, from 10^5 to 3·10^7 keys), and
// 1-slot buckets were measured up to 6·10^7 keys only. The limits are a margin below
// where the measurements end or the trend reaches the target, not points
// measured to fail: past them New refuses the shape rather than plan a
// table that may refuse keys before its capacity.
func reliableCapacity(slots, fpBits uint64) uint64 {
	switch {
	case slots == 2 && fpBits == 4:
		return 1 << 27
	case slots == 2 && fpBits == 5:
		return 1 << 28
	case slots == 1:
		return 1 << 26
	case slots == 3 && fpBits <= 5:
		return 1 << 25
	}
	return math.MaxUint64
}

// minOneSlotBits is the narrowest fingerprint 1-slot buckets take: with
// fewer bits a key's alternate bucket has so few possible offsets that the
// table fills 2 to 40 % of its slots before an insert fails, erratically
// from one size to the next, against about half of them from 16 bits on
// (see targetLoad).
const minOneSlotBits = 16

// minFingerprintBits returns the narrowest fingerprint buckets of slots
// slots take.
func minFingerprintBits(slots uint64) uint64 {
	if slots == 1 {
		return minOneSlotBits
	}
	return MinFingerprintBits
}

// fingerprintBitsFor returns the smallest width whose expected rate at the
// target load is at most p.
func fingerprintBitsFor(p float64, slots uint64) (int, bool) {
	for f := minFingerprintBits(slots); f <= MaxFingerprintBits; f++ {
		if expectedFPR(targetLoad(slots, f), slots, f) <= p {
			return int(f), true
		}
	}
	return 0, false
}

// Plan describes the filter New would build for a capacity and options,
// without allocating it: what a sizing calculator needs. NumBuckets is
// the least count that holds Capacity at the target load, or a few more:
// New raises the count when that count's alternate-bucket offsets would
// not spread (docs/format.md).
type Plan struct {
	Capacity        uint64  // keys that always fit
	BucketSize      int     // slots per bucket
	FingerprintBits int     // bits per fingerprint
	SemiSorted      bool    // buckets stored semi-sorted: f-1 bits per slot
	Segments        int     // segments of the table (WithSegments)
	NumBuckets      uint64  // buckets in the table
	TableBytes      uint64  // memory of the table
	Load            float64 // fraction of slots used when Capacity keys are in
	BitsPerItem     float64 // table bits per key at capacity
	// FalsePositiveRate is the expected rate with Capacity keys in.
	FalsePositiveRate float64
}

// NewPlan returns the Plan of New(capacity, opts...), or the error New
// would return. It allocates nothing.
func NewPlan(capacity uint64, opts ...Option) (Plan, error) {
	c, err := resolve(opts)
	if err != nil {
		return Plan{}, err
	}
	return fixedPlan(capacity, c)
}

// fixedPlan is plan for a table that must hold capacity keys itself (New,
// a Concurrent without growth): it also keeps the shape within
// reliableCapacity, widening a fingerprint the rate option chose, and
// refusing one given, where a segment's share of capacity passes it.
// (A growing filter adds a table when one fills, so it needs no limit.)
// A table of a given bucket count, or of plan version replay.PlanLeast,
// has no limit either: the limits came with replay.PlanSpread.
func fixedPlan(capacity uint64, c config) (Plan, error) {
	if c.buckets == 0 && c.plan != replay.PlanLeast && capacity > 0 {
		share := segmentShare(capacity, uint64(c.segments))
		for c.fpr != 0 && share > reliableCapacity(uint64(c.slots), uint64(c.fpBits)) && c.fpBits < MaxFingerprintBits {
			c.fpBits++ // a wider fingerprint meets the rate asked for too
		}
		if limit := reliableCapacity(uint64(c.slots), uint64(c.fpBits)); share > limit {
			return Plan{}, fmt.Errorf("%w: capacity %d: %d-slot buckets of %d-bit fingerprints hold at most %d keys a table (or segment) reliably; use wider fingerprints or larger buckets",
				ErrInvalidParameter, capacity, c.slots, c.fpBits, limit)
		}
	}
	return plan(capacity, c)
}

// plan returns the Plan of a table of capacity keys and shape c, with the
// bucket count c gives (replayhook.go), or else the count of c's plan
// version: the least count (replay.PlanLeast) or plannedBuckets' (the
// current version).
func plan(capacity uint64, c config) (Plan, error) {
	if capacity == 0 {
		return Plan{}, fmt.Errorf("%w: capacity 0", ErrInvalidParameter)
	}
	slots, bits, segments := uint64(c.slots), uint64(c.fpBits), uint64(c.segments)
	least, ok := leastBuckets(capacity, segments, slots, bits)
	if !ok {
		return Plan{}, fmt.Errorf("%w: capacity %d needs more than 2^32 buckets", ErrInvalidParameter, capacity)
	}
	m := least
	if c.plan != replay.PlanLeast {
		m = plannedBuckets(least, segments)
	}
	if c.buckets != 0 {
		m = c.buckets
		if m < least || m > maxBuckets || m%2 != 0 || segments > 1 && m%(segments*segmentAlign) != 0 {
			return Plan{}, fmt.Errorf("%w: %d buckets for capacity %d: need an even count of at least %d (with segments, a multiple of 64 per segment)",
				ErrInvalidParameter, m, capacity, least)
		}
	}
	layout := table.Layout(m, slots, bits, c.semi)
	tableBytes := (layout.PayloadWords() + 1) * 8
	load := float64(capacity) / float64(m*slots)
	return Plan{
		Capacity:          capacity,
		BucketSize:        c.slots,
		FingerprintBits:   int(bits),
		SemiSorted:        c.semi,
		Segments:          c.segments,
		NumBuckets:        m,
		TableBytes:        tableBytes,
		Load:              load,
		BitsPerItem:       float64(tableBytes*8) / float64(capacity),
		FalsePositiveRate: expectedFPR(load, slots, bits),
	}, nil
}
