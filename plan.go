package cuckoo

import (
	"fmt"

	"github.com/dedupkit/cuckoo/internal/replay"
	"github.com/dedupkit/cuckoo/internal/table"
)

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
	SizeInBytes     uint64  // memory of the table
	Load            float64 // fraction of slots used when Capacity keys are in
	BitsPerItem     float64 // table bits per key at capacity
	// FalsePositiveRate is the expected rate with Capacity keys in.
	FalsePositiveRate float64
}

// NewPlan returns the Plan of New(capacity, opts...), or the error New
// would return. It allocates nothing. A plan is the same on every
// platform: on a 32-bit one, New also refuses a table of more than 2 GiB.
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
	if c.buckets == 0 && c.planVersion != replay.PlanLeast && capacity > 0 {
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
	if c.planVersion != replay.PlanLeast {
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
		SizeInBytes:       tableBytes,
		Load:              load,
		BitsPerItem:       float64(tableBytes*8) / float64(capacity),
		FalsePositiveRate: expectedFPR(load, slots, bits),
	}, nil
}
