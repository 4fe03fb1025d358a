package dedup

import "time"

// A window dedup (cuckoo dedup --window) drops a line when its key was
// seen within the window before it. "Seen" is any earlier line with the
// key, written or dropped: every line refreshes its key's age, so an id
// that comes every hour under a 24-hour window is written once. The
// line's time is when it is read (arrival time), or the time in one of its
// fields (event time).

// Window is the seen-set of a window dedup: a filter that forgets keys
// older than its window (a cuckoo.Window), reading its time from a clock
// the WindowSet sets for event time.
type Window interface {
	// Touch reports whether key is in the window and makes it fresh.
	Touch(key []byte) (seen bool, err error)
	// TouchBatch is Touch for every key, in order, at one reading of
	// the clock.
	TouchBatch(keys [][]byte, seen []bool) (processed int, err error)
	FalsePositiveRate() float64
}

// WindowSet is the SeenSet of a window dedup: added[i] is true when keys[i]
// was not in the window (its line is written), and every key is made
// fresh.
type WindowSet struct {
	w     Window
	times *TimeField // nil: arrival time
	now   *time.Time // the time the Window's clock returns, for event time
}

// NewWindowSet returns the set of a window dedup over w. With times nil a
// line's time is when it is read, and w reads the wall clock. Otherwise
// each line's time is the one times reads from it, and w's clock must
// return *now, which the set sets before each key.
func NewWindowSet(w Window, times *TimeField, now *time.Time) *WindowSet {
	return &WindowSet{w: w, times: times, now: now}
}

// AddUniqueBatch touches every key at one reading of the clock: for
// arrival time (a WindowSet of event time takes blocks, AddUniqueBlock).
func (s *WindowSet) AddUniqueBatch(keys [][]byte, added []bool) (int, error) {
	if s.times != nil {
		panic("dedup: a WindowSet of event time needs the lines' times (AddUniqueBlock)")
	}
	n, err := s.w.TouchBatch(keys, added)
	for i := range added[:n] {
		added[i] = !added[i]
	}
	return n, err
}

// Needs asks for the lines' keys, and for event time their times, which
// the Deduper's workers read.
func (s *WindowSet) Needs() Needs { return Needs{Keys: true, Times: s.times} }

// AddUniqueBlock touches each key of b; by event time at its line's time,
// one at a time. It stops at the first line without a time (an error
// wrapping ErrTime) or the window's error (a full one's wraps
// cuckoo.ErrFull).
func (s *WindowSet) AddUniqueBlock(b *Block, added []bool) (int, error) {
	keys := b.Keys()
	if s.times == nil {
		return s.AddUniqueBatch(keys, added)
	}
	times, timeErr := b.Times()
	for i, t := range times {
		*s.now = t
		seen, err := s.w.Touch(keys[i])
		if err != nil {
			return i, err
		}
		added[i] = !seen
	}
	return len(times), timeErr
}

// FalsePositiveRate is the window's rate now.
func (s *WindowSet) FalsePositiveRate() float64 { return s.w.FalsePositiveRate() }

// RateIsCheap is true: a window's rate is O(1).
func (s *WindowSet) RateIsCheap() bool { return true }
