package filterfile

import (
	"fmt"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/bloom"
)

// The false-positive rate policy of the command, in one place: the rate a
// user gives (--fpr) goes unchanged to the filter package of every kind,
// whose constructors make it a bound: on the expected rate at capacity for
// the kinds of fixed size, and at every size for the growing kinds.

// Default rates when --fpr is not given.
const (
	// DefaultRate is the target of the filters dedup and build make.
	DefaultRate = 1e-4
	// DefaultPlanRate is the rate plan and bench compare the filters at.
	DefaultPlanRate = 1e-3
)

// farAbove is how many times its target a loaded filter's expected rate
// must be for the command to warn: far more than the model's error and
// than a cuckoo filter filled past its nominal capacity reach, so only a
// fixed-size Bloom filter filled far beyond its capacity (by a program
// other than this command, which refuses to) gets a warning.
const farAbove = 2

// CheckRate returns an error when a filter of the spec's kind and shape
// cannot reach the spec's rate, saying what it reaches instead. Rates must
// already lie in (0, 1). A spec that sets the fingerprint width instead of
// a rate is not checked.
func CheckRate(s Spec) error {
	if s.FPR == 0 || s.FingerprintBits != 0 {
		return nil
	}
	lowest, how := bloom.MinFalsePositiveRate, "a Bloom filter reaches"
	if !s.Kind.IsBloom() {
		opts := cuckooOptions(Spec{BucketSize: s.BucketSize, SemiSorted: s.SemiSorted, FingerprintBits: cuckoo.MaxFingerprintBits})
		p, err := cuckoo.NewPlan(1_000_000, opts...)
		if err != nil {
			return nil // a bad shape, which New reports
		}
		lowest = p.FalsePositiveRate
		how = fmt.Sprintf("a cuckoo filter reaches (with %d-bit fingerprints, the widest)", cuckoo.MaxFingerprintBits)
	}
	if s.FPR < lowest {
		return fmt.Errorf("below %.2g, the lowest rate %s", lowest, how)
	}
	return nil
}

// FarAboveTarget reports whether the filter's expected false-positive rate
// is far above the rate it was built for, and returns both.
func (f *Filter) FarAboveTarget() (rate, target float64, far bool) {
	rate, target = f.FalsePositiveRate(), f.f.TargetFalsePositiveRate()
	return rate, target, target > 0 && rate > farAbove*target
}
