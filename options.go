package cuckoo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/dedupkit/cuckoo/internal/option"
)

// An Option sets a parameter of a filter at construction.
type Option func(*config) error

type config struct {
	fpBits      int     // 0: not set
	slots       int     // 0: not set
	fpr         float64 // 0: not set
	maxKicks    int     // 0: not set
	seed        uint64
	seedSet     bool
	semi        bool
	growth      float64          // Scalable only; 0: not set
	segments    int              // New only; 0: not set
	buckets     uint64           // New and a Concurrent without growth only; 0: not set (replayhook.go)
	planVersion int              // plan version of a fixed table; 0: the current one (replayhook.go)
	clock       func() time.Time // NewWindow only; nil: the default clock
}

// Limits of the parameters.
const (
	MinFingerprintBits = 4
	MaxFingerprintBits = 32
	// DefaultFingerprintBits and DefaultBucketSize are the shape of New(n)
	// with no options: an expected false-positive rate of about 0.012 % at
	// full load, 16.8 bits per item.
	DefaultFingerprintBits = 16
	DefaultBucketSize      = 4
	// MaxBucketSize is the largest bucket size WithBucketSize accepts
	// (RedisBloom's bound; the encodings keep it in one byte).
	MaxBucketSize = 255
	// DefaultMaxKicks bounds the displacement chain of one insert.
	DefaultMaxKicks = 500
	// MaxMaxKicks is the largest value WithMaxKicks accepts.
	MaxMaxKicks = 1 << 20
	// MaxSegments is the largest value WithSegments accepts.
	MaxSegments = 1 << 16
)

// WithFingerprintBits sets the fingerprint width, from 4 to 32 bits. Every
// width is packed without padding: 12 bits cost 12 bits. Each extra bit
// halves the false-positive rate and costs 1/load bits per item. It cannot
// be combined with [WithFalsePositiveRate].
func WithFingerprintBits(bits int) Option {
	return func(c *config) error {
		if bits < MinFingerprintBits || bits > MaxFingerprintBits {
			return fmt.Errorf("%w: fingerprint bits %d outside [%d, %d]", ErrInvalidParameter, bits, MinFingerprintBits, MaxFingerprintBits)
		}
		c.fpBits = bits
		return nil
	}
}

// WithBucketSize sets the number of slots per bucket, from 1 to
// [MaxBucketSize]; 4 is the default. Larger buckets fill to a higher load
// (about 0.84, 0.95, 0.98 of the slots for 2, 4, 8) but compare more
// fingerprints per lookup, so each doubling needs one more fingerprint bit
// for the same false-positive rate. Buckets of 2, 4 and 8 slots have the
// fast paths (one or two words read and compared at once for the common
// widths); other sizes, which RedisBloom users may ask for, take the
// general path, which reads a bucket in 64-bit windows and is slower, the
// more so the larger the bucket. [New] plans 3-slot buckets at 0.92 of
// their slots (with fingerprints of 9 bits or more), 5 to 7 at 0.96 to
// 0.97, 9 to 255 at 0.97 (sizing.go has the measured loads); 1-slot
// buckets fill only 0.40 of their slots, take fingerprints of 16 bits or
// more, and hold at most 2^26 keys a table (a growing filter any number).
func WithBucketSize(slots int) Option {
	return func(c *config) error {
		if slots < 1 || !validBucketSize(uint64(slots)) {
			return fmt.Errorf("%w: bucket size %d outside [1, %d]", ErrInvalidParameter, slots, MaxBucketSize)
		}
		c.slots = slots
		return nil
	}
}

// validBucketSize reports whether b is a bucket size a filter may have:
// the check of WithBucketSize and of every decoder.
func validBucketSize(b uint64) bool { return b >= 1 && b <= MaxBucketSize }

// WithFalsePositiveRate chooses the smallest fingerprint width whose
// expected false-positive rate with the filter at its capacity is at most p.
// p must be in (0, 1) and at least the rate of 32-bit fingerprints (about
// 2e-9 with 4-slot buckets); a growing filter of 4-slot buckets needs at
// least 1e-7 from an initial capacity of 100 up at the default growth
// (see [NewScalable]). It cannot be combined with
// [WithFingerprintBits].
func WithFalsePositiveRate(p float64) Option {
	return func(c *config) error {
		if !(p > 0 && p < 1) || math.IsNaN(p) {
			return fmt.Errorf("%w: false-positive rate %v outside (0, 1)", ErrInvalidParameter, p)
		}
		c.fpr = p
		return nil
	}
}

// WithMaxKicks bounds how many fingerprints one insert may displace before
// it gives up with [ErrFull] (default 500). Fewer kicks make the worst
// insert faster but the filter fill to a lower load: below about 100 the
// capacity guarantee of [New] no longer holds.
func WithMaxKicks(n int) Option {
	return func(c *config) error {
		if n < 1 || n > MaxMaxKicks {
			return fmt.Errorf("%w: max kicks %d outside [1, %d]", ErrInvalidParameter, n, MaxMaxKicks)
		}
		c.maxKicks = n
		return nil
	}
}

// WithSeed sets the hash seed. Filters with the same parameters and seed
// store the same keys in the same places, so operations on them give the
// same results and encodings. By default every filter draws a random seed,
// which keeps an adversary who cannot read the filter from crafting keys
// that collide in it.
func WithSeed(seed uint64) Option {
	return func(c *config) error {
		c.seed, c.seedSet = seed, true
		return nil
	}
}

// WithSemiSorting stores each bucket's four fingerprints sorted, with their
// low 4 bits encoded together in 12 bits instead of 16 (Fan et al., section
// 5.2): one bit less per item for the same false-positive rate. A 13-bit
// semi-sorted filter takes 12.63 bits per item, like a plain 12-bit one, at
// half its rate (0.093 %). Lookups decode a small table, and inserts and
// deletes re-sort a bucket, so both are slower than a plain table's
// (docs/benchmarks.md). It requires 4-slot buckets.
func WithSemiSorting() Option {
	return func(c *config) error {
		c.semi = true
		return nil
	}
}

// WithSegments splits the table of [New] into n segments of equal size,
// each holding the two buckets of every key it holds: a key's segment is
// fixed by its hash, and moves never leave it. A segmented filter behaves
// like any other (the same rate; lookups take the general path, not the
// one the common unsegmented shapes have); each segment is
// sized for its share of the capacity plus room for the chance variation
// of that share, so it takes a little more memory (under 1 % for segments
// of 10^5 keys or more). Its use is to keep one filter in n pieces that
// can live apart: package redisfilter stores each segment in its own
// Redis key, and a filter file built with n segments can be pushed there
// and pulled back bit for bit. n must be in [1, MaxSegments]; 1 (the
// default) is an unsegmented table. Scalable and Concurrent filters do not
// take it.
func WithSegments(n int) Option {
	return func(c *config) error {
		if n < 1 || n > MaxSegments {
			return fmt.Errorf("%w: segments %d outside [1, %d]", ErrInvalidParameter, n, MaxSegments)
		}
		c.segments = n
		return nil
	}
}

// WithClock sets the clock a [Window] reads its time from, instead of the
// wall clock: a test's clock, or the time of the events a Window
// deduplicates (set it before each event). The Window never goes back in
// time: a reading earlier than one it has seen counts as that one. now must
// not be nil; it is called on every write and on lookups that find a
// matching fingerprint, from the goroutine that makes the call. Only
// NewWindow uses it.
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if now == nil {
			return fmt.Errorf("%w: nil clock", ErrInvalidParameter)
		}
		c.clock = now
		return nil
	}
}

// resolve applies opts over the defaults and checks how they combine.
func resolve(opts []Option) (config, error) {
	var c config
	if err := option.Apply(&c, opts); err != nil {
		return c, err
	}
	if c.fpBits != 0 && c.fpr != 0 {
		return c, fmt.Errorf("%w: WithFingerprintBits and WithFalsePositiveRate both given", ErrInvalidParameter)
	}
	if c.slots == 0 {
		c.slots = DefaultBucketSize
	}
	if c.semi && c.slots != 4 {
		return c, fmt.Errorf("%w: semi-sorting needs 4-slot buckets, not %d", ErrInvalidParameter, c.slots)
	}
	if c.fpr != 0 {
		bits, ok := fingerprintBitsFor(c.fpr, uint64(c.slots))
		if !ok {
			return c, fmt.Errorf("%w: false-positive rate %v is below what 32-bit fingerprints reach", ErrInvalidParameter, c.fpr)
		}
		c.fpBits = bits
	}
	if c.fpBits == 0 {
		c.fpBits = DefaultFingerprintBits
	}
	if least := minFingerprintBits(uint64(c.slots)); uint64(c.fpBits) < least {
		return c, fmt.Errorf("%w: %d-bit fingerprints in 1-slot buckets: they need %d bits or more (narrower ones fill a fraction of the slots)", ErrInvalidParameter, c.fpBits, least)
	}
	if c.maxKicks == 0 {
		c.maxKicks = DefaultMaxKicks
	}
	if c.segments == 0 {
		c.segments = 1
	}
	if !c.seedSet {
		c.seed = rand.Uint64()
	}
	return c, nil
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
