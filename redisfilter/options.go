package redisfilter

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/option"
)

// An Option sets a parameter of a new filter ([New], [NewBloom]), or of
// the handle that New, Open, NewBloom and OpenBloom return: how it
// retries ([WithRetryWindow], [WithRetryHorizon], the only options Open
// and OpenBloom take).
type Option func(*config) error

type config struct {
	fpr       float64 // 0: not set
	fpBits    int     // 0: not set
	slots     int     // 0: not set
	kicks     int     // 0: not set
	segments  int     // 0: default
	seed      uint64
	seedSet   bool
	cuckooOK  bool // an option only cuckoo filters take was given
	filterOpt bool // an option that describes a new filter was given

	window, horizon time.Duration // 0: default
	horizonSet      bool
}

// WithFalsePositiveRate sets the target false-positive rate p of a new
// filter, which holding its capacity of keys has an expected rate of at
// most p. For [New] and [NewWindow] it chooses the smallest fingerprint
// width that meets p, as [cuckoo.WithFalsePositiveRate] does, and cannot
// be combined with [WithFingerprintBits]; without it New uses the
// library's default 16-bit fingerprints (about 0.012 %), NewWindow the
// library window's 12 bits (about 0.19 %). For [NewBloom] it sizes the bits
// as [bloom.WithFalsePositiveRate] does, [bloom.DefaultFalsePositiveRate]
// (the same 0.012 %) without it.
func WithFalsePositiveRate(p float64) Option {
	return func(c *config) error {
		if !(p > 0 && p < 1) {
			return fmt.Errorf("%w: false-positive rate %v outside (0, 1)", ErrInvalidParameter, p)
		}
		c.fpr = p
		c.filterOpt = true
		return nil
	}
}

// WithFingerprintBits sets the fingerprint width, 4 to 32 bits (default
// 16), as [cuckoo.WithFingerprintBits] does; a window's, 4 to 28 (default
// 12). Cuckoo filters and windows only.
func WithFingerprintBits(bits int) Option {
	return func(c *config) error {
		c.fpBits, c.cuckooOK = bits, true
		c.filterOpt = true
		return nil
	}
}

// WithBucketSize sets the slots per bucket, 1 to [cuckoo.MaxBucketSize]
// (default 4), as [cuckoo.WithBucketSize] does; the library's constraints
// on the other parameters apply (1-slot buckets need 16-bit fingerprints or
// wider). The Lua functions and the lookups work on any size alike. A
// window's buckets have 2, 4 or 8 slots. Cuckoo filters and windows only.
func WithBucketSize(slots int) Option {
	return func(c *config) error {
		if slots < 1 || slots > cuckoo.MaxBucketSize {
			return fmt.Errorf("%w: bucket size %d (want 1 to %d)", ErrInvalidParameter, slots, cuckoo.MaxBucketSize)
		}
		c.slots, c.cuckooOK = slots, true
		c.filterOpt = true
		return nil
	}
}

// WithMaxKicks bounds the fingerprints one insert may displace before it
// gives up with [ErrFull] (default 500), as [cuckoo.WithMaxKicks] does.
// Cuckoo filters and windows only.
func WithMaxKicks(n int) Option {
	return func(c *config) error {
		c.kicks, c.cuckooOK = n, true
		c.filterOpt = true
		return nil
	}
}

// WithSeed sets the hash seed (default: random). Two filters of the same
// parameters and seed put the same keys in the same places; a pushed
// filter file keeps its own seed.
func WithSeed(seed uint64) Option {
	return func(c *config) error {
		c.seed, c.seedSet = seed, true
		c.filterOpt = true
		return nil
	}
}

// WithSegments sets the number of segments the table is split into (1 to
// 65536), as [cuckoo.WithSegments] does for a library filter; each
// segment is one Redis string (its segment key). Each segment is served by
// the master of its hash slot, and one segment's operations run one at a
// time, so more segments spread the load over more masters; each segment
// also costs about 200 bytes of Redis overhead, and a cuckoo segment is
// sized for its share of the keys plus a margin for chance (under 1 % of
// the memory for segments of 10^5 keys or more, more for small ones).
//
// The default gives a filter of up to 65,536 keys one segment, a larger
// one at least 16 segments (so a cluster's masters share it) of at most
// 2^20 keys each (under about 2.5 MiB at 16-bit fingerprints), choosing
// among the counts up to about twice that the one whose segments best
// fill the allocator's size classes (which are a quarter of a power of two
// apart, so a segment just past one wastes up to a fifth of its memory).
// A window's segments hold at most 32,768 keys a window by default (see
// [NewWindow]); a window of one segment is what [Window.Snapshot] takes.
func WithSegments(n int) Option {
	return func(c *config) error {
		if n < 1 || n > cuckoo.MaxSegments {
			return fmt.Errorf("%w: segments %d outside [1, %d]", ErrInvalidParameter, n, cuckoo.MaxSegments)
		}
		c.segments = n
		c.filterOpt = true
		return nil
	}
}

// WithRetryWindow sets W, how long a segment remembers the reply of each
// write call (default [DefaultRetryWindow], or twice the retry horizon
// if that is longer): a copy of the call that runs within W of the first
// run returns the first run's reply and changes nothing, so a write runs
// once however often this package sends it (go-redis does not send a
// write again on its own: every copy is counted). Each write call keeps one small key in its segment's hash slot
// for W: about 130 bytes plus the filter's name for a single-key write,
// 5 bytes per key for batches (docs/redis.md gives the figures). A
// longer window spends more memory and survives longer stalls: a copy
// that waits in a stalled server for longer than W runs again (it
// changes nothing for AddUnique, adds a copy for Add, removes one for
// Delete). It must be at least twice the retry horizon. A Bloom
// filter's writes set bits, which any number of runs may do: they keep
// no record, and only the horizon applies to them.
func WithRetryWindow(w time.Duration) Option {
	return func(c *config) error {
		if w < time.Millisecond {
			return fmt.Errorf("%w: retry window %v below 1ms", ErrInvalidParameter, w)
		}
		c.window = w
		return nil
	}
}

// WithRetryHorizon sets H, how long a write (or lookup) whose outcome is
// unknown is sent again (default [DefaultRetryHorizon], or half the retry
// window if that is shorter): no reply came back (a timeout, a closed
// connection: the server stalled, restarted or failed over), no
// connection could be made, or the server answered that it cannot run it
// yet (LOADING, BUSY, TRYAGAIN, CLUSTERDOWN, MASTERDOWN, READONLY). A
// write is sent by this package only, once per send; go-redis's own
// retries apply within each send of a lookup. Past H a write returns an
// error wrapping [ErrUnconfirmed] if some copy of it may have run, else
// the last refusal (or [ErrNotSent] if no copy reached Redis); a lookup,
// an error saying no reply came; and a batch stops, marking the keys it
// did not send with [ErrNotSent]. 0 sends each call once; the horizon
// must be at most half the retry window, so that the last send's reply
// still arrives within it.
func WithRetryHorizon(h time.Duration) Option {
	return func(c *config) error {
		if h < 0 {
			return fmt.Errorf("%w: retry horizon %v below 0", ErrInvalidParameter, h)
		}
		c.horizon, c.horizonSet = h, true
		return nil
	}
}

func resolve(opts []Option) (config, error) {
	var c config
	if err := option.Apply(&c, opts); err != nil {
		return c, err
	}
	if !c.seedSet {
		c.seed = rand.Uint64()
	}
	return c, nil
}

// cuckooOptions returns the library options of c, for planning the table
// of segments segments.
func (c *config) cuckooOptions(segments int) []cuckoo.Option {
	o := []cuckoo.Option{cuckoo.WithSegments(segments)}
	if c.fpr != 0 {
		o = append(o, cuckoo.WithFalsePositiveRate(c.fpr))
	}
	if c.fpBits != 0 {
		o = append(o, cuckoo.WithFingerprintBits(c.fpBits))
	}
	if c.slots != 0 {
		o = append(o, cuckoo.WithBucketSize(c.slots))
	}
	if c.kicks != 0 {
		o = append(o, cuckoo.WithMaxKicks(c.kicks))
	}
	return o
}

// cuckooPlan returns the plan of a filter of capacity keys: the library's
// own plan for a table of that many segments.
func (c *config) cuckooPlan(capacity uint64) (cuckoo.Plan, error) {
	segments := c.segments
	if segments == 0 {
		var err error
		if segments, err = c.defaultSegments(capacity); err != nil {
			return cuckoo.Plan{}, err
		}
	}
	p, err := cuckoo.NewPlan(capacity, c.cuckooOptions(segments)...)
	if err != nil {
		return p, fmt.Errorf("%w: %w", ErrInvalidParameter, err)
	}
	return p, nil
}

// Segmenting defaults (see WithSegments).
const (
	maxKeysPerSegment  = 1 << 20
	minKeysPerSegment  = 1 << 16
	defaultMinSegments = 16
	maxSegmentBytes    = 512 << 20 // Redis's largest string
	segmentOverhead    = 200       // bytes of Redis bookkeeping per segment, about
)

// defaultSegments picks the segment count of a filter of capacity keys.
func (c *config) defaultSegments(capacity uint64) (int, error) {
	var perr error
	s := fitSegments(leastSegments(capacity), func(s uint64) (uint64, bool) {
		p, err := cuckoo.NewPlan(capacity, c.cuckooOptions(int(s))...)
		if err != nil {
			perr = err
			return 0, false
		}
		return planSegmentBytes(&p, p.FingerprintBits), true
	})
	if s == 0 {
		return 0, fmt.Errorf("%w: %w", ErrInvalidParameter, perr)
	}
	return s, nil
}

// leastSegments is the fewest segments the default gives capacity keys: one
// up to minKeysPerSegment keys, else at least defaultMinSegments (or one per
// minKeysPerSegment keys, if fewer) and one per maxKeysPerSegment keys.
func leastSegments(capacity uint64) uint64 {
	s := max(1, min(defaultMinSegments, capacity/minKeysPerSegment), (capacity+maxKeysPerSegment-1)/maxKeysPerSegment)
	return min(s, cuckoo.MaxSegments)
}

// fitSegments returns the segment count from least to 2·least+4 whose segments
// take the least memory in all (segmentsMemory), each segment's string
// being strLen(s) bytes (false: s segments are not possible); 0 if none
// is possible. Allocators round a string up to a size class (a quarter of
// a power of two apart), so nearby counts differ by up to 25 %.
func fitSegments(least uint64, strLen func(s uint64) (uint64, bool)) int {
	best, bestCost := 0, uint64(math.MaxUint64)
	for s := least; s <= min(2*least+4, cuckoo.MaxSegments); s++ {
		n, ok := strLen(s)
		if !ok {
			if best == 0 {
				continue
			}
			break
		}
		if cost := segmentsMemory(s, n); cost < bestCost {
			best, bestCost = int(s), cost
		}
	}
	return best
}

// segmentsMemory is the memory s segments whose strings are n bytes long
// take in Redis, about: each string's allocation, and segmentOverhead for
// its keys and its hash.
func segmentsMemory(s, n uint64) uint64 { return s * (stringAlloc(n) + segmentOverhead) }

// stringAlloc is the memory a Redis string of n bytes takes: its header
// (3, 5, 9 or 17 bytes by length), the bytes and a terminating 0, rounded
// up to jemalloc's size class.
func stringAlloc(n uint64) uint64 {
	hdr := uint64(17)
	switch {
	case n < 1<<8:
		hdr = 3
	case n < 1<<16:
		hdr = 5
	case n < 1<<32:
		hdr = 9
	}
	return sizeClass(hdr + n + 1)
}

// sizeClass rounds n up to jemalloc's size classes: multiples of 16 up to
// 128, then four classes per doubling.
func sizeClass(n uint64) uint64 {
	if n <= 8 {
		return 8
	}
	if n <= 128 {
		return (n + 15) &^ 15
	}
	step := uint64(1) << (bits.Len64(n-1) - 3)
	return (n + step - 1) / step * step
}

// planSegmentBytes returns the bytes of one segment of a plan's table
// whose slots are slotBits wide: a cuckoo filter's fingerprint, or a
// window's fingerprint and stamp.
func planSegmentBytes(p *cuckoo.Plan, slotBits int) uint64 {
	return segmentTableBytes(p.NumBuckets, uint64(p.BucketSize*slotBits), uint64(p.Segments))
}
