package filterfile

import (
	"fmt"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
)

// cuckooFilter is the Cuckoo kind: a cuckoo.Filter of fixed capacity.
type cuckooFilter struct{ *cuckoo.Filter }

func newCuckoo(s Spec) (impl, error) {
	f, err := cuckoo.New(s.Capacity, cuckooOptions(s)...)
	if err != nil {
		return nil, err
	}
	return cuckooFilter{f}, nil
}

func emptyCuckoo() impl { return cuckooFilter{new(cuckoo.Filter)} }

func (c cuckooFilter) Delete(key []byte) (bool, error) { return c.Filter.Delete(key), nil }

// TargetFalsePositiveRate returns the expected rate at capacity: what the
// filter's fingerprints deliver, at most the rate it was built for.
func (c cuckooFilter) TargetFalsePositiveRate() float64 {
	p, err := c.plan()
	if err != nil {
		return 0
	}
	return p.FalsePositiveRate
}

// plan is cuckoo.NewPlan for the filter's capacity and shape.
func (c cuckooFilter) plan() (cuckoo.Plan, error) {
	return cuckoo.NewPlan(c.Capacity(), cuckooOptions(Spec{BucketSize: c.BucketSize(),
		FingerprintBits: c.FingerprintBits(), SemiSorted: c.SemiSorted()})...)
}

func (c cuckooFilter) facts(add addFact) {
	add("items", "items", c.Len(), units.Count(c.Len())+copiesCount)
	add("capacity", "capacity", c.Capacity(), units.Counted(c.Capacity(), "distinct key"))
	cuckooShape(add, c.LoadFactor(), c.BucketSize(), c.FingerprintBits(), c.SemiSorted(), "")
	add("buckets", "buckets", c.NumBuckets(), units.Count(c.NumBuckets()))
	add("segments", "segments", c.Segments(), fmt.Sprint(c.Segments()))
	add("max_kicks", "max kicks", c.MaxKicks(), fmt.Sprint(c.MaxKicks()))
	add("fpr", "false positives now", c.FalsePositiveRate(), units.Rate(c.FalsePositiveRate()))
	if p, err := c.plan(); err == nil {
		add("fpr_at_capacity", "false positives at capacity", p.FalsePositiveRate, units.Rate(p.FalsePositiveRate))
	}
}

// cuckooScalable is the CuckooScalable kind: a cuckoo.Scalable.
type cuckooScalable struct{ *cuckoo.Scalable }

func newCuckooScalable(s Spec) (impl, error) {
	f, err := cuckoo.NewScalable(s.Capacity, cuckooOptions(s)...)
	if err != nil {
		return nil, err
	}
	return cuckooScalable{f}, nil
}

func emptyCuckooScalable() impl { return cuckooScalable{new(cuckoo.Scalable)} }

func (c cuckooScalable) Delete(key []byte) (bool, error) { return c.Scalable.Delete(key), nil }

func (c cuckooScalable) facts(add addFact) {
	add("items", "items", c.Len(), units.Count(c.Len())+copiesCount)
	add("capacity", "capacity", c.Capacity(), units.Counted(c.Capacity(), "distinct key")+" in the current tables (it grows)")
	add("initial_capacity", "initial capacity", c.InitialCapacity(), units.Count(c.InitialCapacity()))
	add("tables", "tables", c.NumTables(), fmt.Sprintf("%d (growth ×%g)", c.NumTables(), c.Growth()))
	cuckooShape(add, c.LoadFactor(), c.BucketSize(), c.FingerprintBits(), c.SemiSorted(), " in the first table, more in later ones")
	add("fpr", "false positives now", c.FalsePositiveRate(), units.Rate(c.FalsePositiveRate()))
	bound := c.TargetFalsePositiveRate()
	add("fpr_bound", "false positives, bound", bound, units.Rate(bound)+" (at any size)")
}

// CuckooPlan is cuckoo.NewPlan for the fixed-size cuckoo filter s
// describes.
func CuckooPlan(s Spec) (cuckoo.Plan, error) {
	return cuckoo.NewPlan(s.Capacity, cuckooOptions(s)...)
}

// cuckooOptions translates a Spec into the cuckoo package's options.
func cuckooOptions(s Spec) []cuckoo.Option {
	var opts []cuckoo.Option
	if s.BucketSize != 0 {
		opts = append(opts, cuckoo.WithBucketSize(s.BucketSize))
	}
	switch {
	case s.FingerprintBits != 0:
		opts = append(opts, cuckoo.WithFingerprintBits(s.FingerprintBits))
	case s.FPR != 0:
		opts = append(opts, cuckoo.WithFalsePositiveRate(s.FPR))
	}
	if s.SemiSorted {
		opts = append(opts, cuckoo.WithSemiSorting())
	}
	if s.SeedSet {
		opts = append(opts, cuckoo.WithSeed(s.Seed))
	}
	if s.Segments != 0 {
		opts = append(opts, cuckoo.WithSegments(s.Segments))
	}
	return opts
}

// cuckooShape adds the facts a cuckoo filter's table shape gives.
func cuckooShape(add addFact, load float64, slots, bits int, semi bool, bitsNote string) {
	add("load", "load", load, fmt.Sprintf("%.1f %% of the slots", 100*load))
	add("bucket_size", "bucket size", slots, fmt.Sprintf("%d slots", slots))
	fp := fmt.Sprintf("%d bits%s", bits, bitsNote)
	if semi {
		fp += ", semi-sorted buckets"
	}
	add("fingerprint_bits", "fingerprint", bits, fp)
	add("semi_sorted", "semi-sorted", semi, fmt.Sprint(semi))
}
