package cuckoo

import (
	"fmt"
	"math"

	"github.com/dedupkit/cuckoo/internal/addr"
)

// platformTableBytes bounds a table's memory on this platform: its words
// are one Go slice, whose size in bytes must fit an int, 2 GiB on a 32-bit
// platform (on a 64-bit one maxBuckets comes first). Where the allocation
// would panic, the constructors refuse a larger table with
// ErrInvalidParameter, the decoders refuse one before allocating it
// (checkTableBytes), and a growing filter does not add one: the insert
// that needed it fails with ErrFull (schedule.nextTable). Plans, which
// allocate nothing, describe it on every platform alike. A MiB is left for
// the padding around the words.
const platformTableBytes = math.MaxInt - 1<<20

// maxTableBytes is the bound every check applies: platformTableBytes.
// Only tests lower it (SetMaxTableBytes), to reach on any platform, with
// small tables, the paths a 32-bit one takes past 2 GiB.
var maxTableBytes uint64 = platformTableBytes

// checkTableBytes refuses to make a table of more than maxTableBytes.
func checkTableBytes(bytes uint64) error {
	if bytes > maxTableBytes {
		return fmt.Errorf("%w: a table of %d bytes is larger than this platform's largest slice", ErrInvalidParameter, bytes)
	}
	return nil
}

// Limits of a table's geometry.
const (
	// maxBuckets keeps a bucket index within 32 bits (the index is taken
	// from the upper 32 bits of the key's hash).
	maxBuckets = 1 << 32
	// segmentAlign is the bucket count every segment of a segmented table
	// is a multiple of, so that segments start on word boundaries.
	segmentAlign = 64
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
// (minOneSlotBits). Tables of up to table.WalkFirstBytes try the walk
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
// non-zero f-bit values). An empty table (load 0, as a zero value's)
// reports nothing.
func expectedFPR(load float64, slots, fpBits uint64) float64 {
	if load == 0 {
		return 0
	}
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
