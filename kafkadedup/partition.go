package kafkadedup

import (
	"fmt"
	"io"
	"time"

	"github.com/dedupkit/cuckoo"
)

// seen is the filter of one input partition: exactly one of its fields is
// set. The kinds are concrete types, not an interface, so that judging a
// record makes no interface call.
type seen struct {
	window  *cuckoo.Window   // WithWindow
	growing *cuckoo.Scalable // no window, no capacity
	fixed   *cuckoo.Filter   // no window, WithCapacity
	now     *time.Time       // the time the window's clock returns
}

// newSeen makes an empty filter as the config asks.
func newSeen(c *config) (*seen, error) {
	s := &seen{now: new(time.Time)}
	opts := []cuckoo.Option{cuckoo.WithFalsePositiveRate(c.fpr)}
	if c.seedSet {
		opts = append(opts, cuckoo.WithSeed(c.seed))
	}
	var err error
	switch {
	case c.window > 0:
		now := s.now
		opts = append(opts, cuckoo.WithClock(func() time.Time { return *now }))
		s.window, err = cuckoo.NewWindow(c.capacity, c.window, opts...)
	case c.capacity > 0:
		s.fixed, err = cuckoo.New(c.capacity, opts...)
	default:
		s.growing, err = cuckoo.NewScalable(growingStart, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidParameter, err)
	}
	return s, nil
}

// growingStart is the first capacity of a growing filter: small, so that a
// Processor of many quiet partitions stays small; the filter grows by
// tables at the rate asked.
const growingStart = 1 << 16

// readSeen decodes a snapshot's filter of the kind the config asks for.
func readSeen(c *config, r io.Reader) (*seen, error) {
	s := &seen{now: new(time.Time)}
	var err error
	switch {
	case c.window > 0:
		// A Window decoded keeps the clock of the one it is decoded into:
		// make one with the event clock (and the smallest table), then
		// decode over it.
		now := s.now
		if s.window, err = cuckoo.NewWindow(1, c.window, cuckoo.WithClock(func() time.Time { return *now })); err != nil {
			return nil, err
		}
		_, err = s.window.ReadFrom(r)
		if err == nil && s.window.Window() != c.window {
			err = fmt.Errorf("the snapshot's window is %v, not %v: a Processor keeps the window its state was made with", s.window.Window(), c.window)
		}
	case c.capacity > 0:
		s.fixed = new(cuckoo.Filter)
		_, err = s.fixed.ReadFrom(r)
	default:
		s.growing = new(cuckoo.Scalable)
		_, err = s.growing.ReadFrom(r)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// judge records key as seen at time t (read only by a window), and
// reports whether the record is kept: its key was not seen within the
// window before it (or ever, without a window).
func (s *seen) judge(key []byte, t time.Time) (keep bool, err error) {
	switch {
	case s.window != nil:
		// Time never goes back within a partition: the Window holds its
		// time at the latest it has seen.
		*s.now = t
		seen, err := s.window.Touch(key)
		return !seen, err
	case s.fixed != nil:
		return s.fixed.AddUnique(key)
	default:
		return s.growing.AddUnique(key)
	}
}

func (s *seen) encodedSize() int64 {
	switch {
	case s.window != nil:
		return s.window.EncodedSize()
	case s.fixed != nil:
		return s.fixed.EncodedSize()
	default:
		return s.growing.EncodedSize()
	}
}

func (s *seen) writeTo(w io.Writer) (int64, error) {
	switch {
	case s.window != nil:
		return s.window.WriteTo(w)
	case s.fixed != nil:
		return s.fixed.WriteTo(w)
	default:
		return s.growing.WriteTo(w)
	}
}

// size returns the filter's memory, its keys and its false-positive rate
// now.
func (s *seen) size() (bytes, keys uint64, rate float64) {
	switch {
	case s.window != nil:
		return s.window.SizeInBytes(), s.window.Len(), s.window.FalsePositiveRate()
	case s.fixed != nil:
		return s.fixed.SizeInBytes(), s.fixed.Len(), s.fixed.FalsePositiveRate()
	default:
		return s.growing.SizeInBytes(), s.growing.Len(), s.growing.FalsePositiveRate()
	}
}

// partition is what a Processor keeps about an input partition it owns.
type partition struct {
	topic string
	part  int32
	seen  *seen

	// next is the offset after the last record the filter has judged (or
	// replayed): the offset its state goes with once committed.
	next int64
	// ptr is the state pointer committed with the partition's offsets:
	// the latest snapshot, or the base of an empty filter.
	ptr pointer
	// sinceSnapshot counts the records judged since the snapshot (or the
	// empty base) ptr names; lastSnapshot is when it was taken.
	sinceSnapshot int64
	lastSnapshot  time.Time
	// lso is the partition's last stable offset, as the latest fetch of
	// it said: what it lags behind.
	lso int64
}
