package cuckoo

import (
	"fmt"

	"github.com/dedupkit/cuckoo/internal/option"
	"github.com/dedupkit/cuckoo/internal/table/stamped"
)

// WindowStampBits is the width of the age stamp beside each fingerprint in
// a Window's slot (docs/window.md): a slot holds f + WindowStampBits bits.
// Frozen: the encoding records it.
const WindowStampBits = stamped.AgeBits

// NewWindowPlan returns the Plan of NewWindow(perWindow, window, opts...)
// (the window's length does not change the table), or the error NewWindow
// would return, without allocating: Capacity is perWindow, and Load and
// FalsePositiveRate are those of the live entries a steady stream of
// perWindow keys a window keeps (the keys of window + granularity).
//
// It also plans the table of a window split into segments, as package
// redisfilter keeps one (a Redis string a segment): with [WithSegments](S),
// S > 1, each segment is sized for its share of the live entries with the
// margin [New] gives a segment of a Filter, and holds a multiple of 64
// buckets. NewWindow itself takes no segments.
func NewWindowPlan(perWindow uint64, opts ...Option) (Plan, error) {
	var asked config
	if err := option.Apply(&asked, opts); err != nil {
		return Plan{}, err
	}
	segments := uint64(max(asked.segments, 1))
	c, err := resolveWindow(append(opts[:len(opts):len(opts)], WithSegments(1)))
	if err != nil {
		return Plan{}, err
	}
	slots, fpBits := uint64(c.slots), uint64(c.fpBits)
	var m uint64
	if segments == 1 {
		if m, err = windowBuckets(perWindow, slots, fpBits); err != nil {
			return Plan{}, err
		}
	} else {
		least, ok := uint64(0), perWindow > 0 && perWindow <= 1<<62
		if ok {
			least, ok = leastBuckets(windowLive(perWindow), segments, slots, fpBits)
		}
		if !ok {
			return Plan{}, fmt.Errorf("%w: %d keys a window in %d segments: capacity 0, or more than 2^32 buckets", ErrInvalidParameter, perWindow, segments)
		}
		m = plannedBuckets(least, segments)
	}
	layout := stamped.Layout(m, slots, fpBits)
	tableBytes := (layout.PayloadWords() + 1) * 8
	load := float64(windowLive(perWindow)) / float64(m*slots)
	return Plan{
		Capacity:          perWindow,
		BucketSize:        c.slots,
		FingerprintBits:   c.fpBits,
		Segments:          int(segments),
		NumBuckets:        m,
		SizeInBytes:       tableBytes,
		Load:              load,
		BitsPerItem:       float64(tableBytes*8) / float64(perWindow),
		FalsePositiveRate: expectedFPR(load, slots, fpBits),
	}, nil
}
