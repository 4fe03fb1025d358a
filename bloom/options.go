package bloom

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dedupkit/cuckoo/internal/option"
)

// Limits and defaults of the constructors' parameters.
const (
	// MaxCapacity is the largest capacity a constructor accepts: 2^40 keys.
	MaxCapacity = 1 << 40

	// MinFalsePositiveRate is the smallest target rate a constructor
	// accepts. Rates must lie in [MinFalsePositiveRate, 1).
	MinFalsePositiveRate = 1e-15

	// DefaultFalsePositiveRate is the target rate of a constructor given
	// no [WithFalsePositiveRate]: 0.012 %, the rate of a cuckoo.New filter
	// with no options (16-bit fingerprints, 4-slot buckets) at its
	// capacity, so that a filter of either family built with only a
	// capacity makes about as many false positives.
	DefaultFalsePositiveRate = 1.2e-4

	// DefaultGrowth is the factor by which each new layer of a [Scalable]
	// filter is larger than the one before.
	DefaultGrowth = 2.0
	// MinGrowth and MaxGrowth bound [WithGrowth].
	MinGrowth = 1.25
	MaxGrowth = 1024.0

	// DefaultTightening is the ratio between the target rates of successive
	// layers of a [Scalable] filter.
	DefaultTightening = 0.8
	// MinTightening and MaxTightening bound [WithTightening].
	MinTightening = 0.5
	MaxTightening = 0.95
)

// An Option sets a parameter of a filter at construction. Options that do
// not apply to a constructor make it fail with [ErrInvalidParameter].
type Option func(*config) error

type config struct {
	fpr        float64 // 0: not set
	seed       uint64
	seedSet    bool
	growth     float64 // 0: not set (Scalable only)
	tightening float64 // 0: not set (Scalable only)
}

// WithFalsePositiveRate sets the target false-positive rate p, in
// [[MinFalsePositiveRate], 1): the filter is sized so that, holding its
// capacity of distinct keys, its expected rate is at most p (a [Scalable]
// keeps it at every size). Without it the target is
// [DefaultFalsePositiveRate]. Every constructor takes it.
func WithFalsePositiveRate(p float64) Option {
	return func(c *config) error {
		if !validRate(p) {
			return fmt.Errorf("%w: false-positive rate %v outside [%v, 1)", ErrInvalidParameter, p, MinFalsePositiveRate)
		}
		c.fpr = p
		return nil
	}
}

// WithSeed sets the hash seed. Filters with the same parameters and seed
// set the same bits for the same keys, so they give the same answers and
// encode to the same bytes, and only such filters can be merged with Union.
// By default every filter draws a random seed, so that an adversary who
// cannot read the filter cannot craft keys that collide in it.
func WithSeed(seed uint64) Option {
	return func(c *config) error {
		c.seed, c.seedSet = seed, true
		return nil
	}
}

// WithGrowth sets how much larger each new layer of a [Scalable] filter is
// than the one before: a factor in [[MinGrowth], [MaxGrowth]], 2 by default.
// A larger factor means fewer layers to probe but coarser memory steps. It
// applies to [NewScalable] only.
func WithGrowth(factor float64) Option {
	return func(c *config) error {
		c.growth = factor
		return checkRange("growth factor", factor, MinGrowth, MaxGrowth)
	}
}

// WithTightening sets the ratio r between the target rates of successive
// layers of a [Scalable] filter, in [[MinTightening], [MaxTightening]], 0.8
// by default. Layer i is built for the rate p·(1−r)·r^i, so the rates of all
// layers, however many, add up to less than the target p. A smaller r makes
// the first layers cheaper and later ones dearer (each layer costs about
// 1.44·log2(1/r) bits per key more than the one before); RedisBloom uses
// 0.5. It applies to [NewScalable] only.
func WithTightening(r float64) Option {
	return func(c *config) error {
		c.tightening = r
		return checkRange("tightening ratio", r, MinTightening, MaxTightening)
	}
}

// checkRange returns an error wrapping ErrInvalidParameter unless v lies
// in [lo, hi]; a failing option's error stops the constructor, so what it
// set is never used.
func checkRange(what string, v, lo, hi float64) error {
	if !(v >= lo && v <= hi) {
		return fmt.Errorf("%w: %s %v outside [%v, %v]", ErrInvalidParameter, what, v, lo, hi)
	}
	return nil
}

// resolve applies opts, checks the common parameters and fills in the
// defaults. scalable says whether the Scalable-only options are allowed.
func resolve(capacity uint64, scalable bool, opts []Option) (config, error) {
	var c config
	if capacity == 0 || capacity > MaxCapacity {
		return c, fmt.Errorf("%w: capacity %d outside [1, %d]", ErrInvalidParameter, capacity, uint64(MaxCapacity))
	}
	if err := option.Apply(&c, opts); err != nil {
		return c, err
	}
	if !scalable && (c.growth != 0 || c.tightening != 0) {
		return c, fmt.Errorf("%w: WithGrowth and WithTightening apply to NewScalable only", ErrInvalidParameter)
	}
	if c.fpr == 0 {
		c.fpr = DefaultFalsePositiveRate
	}
	if c.growth == 0 {
		c.growth = DefaultGrowth
	}
	if c.tightening == 0 {
		c.tightening = DefaultTightening
	}
	if !c.seedSet {
		c.seed = rand.Uint64() // ChaCha8, seeded by the runtime from the OS
	}
	return c, nil
}

func validRate(p float64) bool {
	return p >= MinFalsePositiveRate && p < 1 && !math.IsNaN(p)
}
