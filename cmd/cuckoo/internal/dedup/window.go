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

// LineSet is a Set that also reads the lines its keys come from (a
// WindowSet reads each line's time). A Deduper gives a LineSet the lines.
type LineSet interface {
	Set
	// AddUniqueLines is AddUniqueBatch with the lines (their content
	// and terminator) the keys come from: keys[i] is from lines[i].
	AddUniqueLines(lines, keys [][]byte, added []bool) (processed int, err error)
}

// WindowSet is the Set of a window dedup: added[i] is true when keys[i]
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

// AddUniqueBatch is AddUniqueLines for arrival time.
func (s *WindowSet) AddUniqueBatch(keys [][]byte, added []bool) (int, error) {
	if s.times != nil {
		panic("dedup: a WindowSet of event time needs the lines (AddUniqueLines)")
	}
	n, err := s.w.TouchBatch(keys, added)
	for i := range added[:n] {
		added[i] = !added[i]
	}
	return n, err
}

// AddUniqueLines touches each key at its line's time; it stops at the
// first line without a time (an error wrapping ErrTime) or the window's
// error (a full one's wraps cuckoo.ErrFull).
func (s *WindowSet) AddUniqueLines(lines, keys [][]byte, added []bool) (int, error) {
	if s.times == nil {
		return s.AddUniqueBatch(keys, added)
	}
	for i, line := range lines {
		t, err := s.times.Time(Content(line))
		if err != nil {
			return i, err
		}
		*s.now = t
		seen, err := s.w.Touch(keys[i])
		if err != nil {
			return i, err
		}
		added[i] = !seen
	}
	return len(lines), nil
}

// FalsePositiveRate is the window's rate now.
func (s *WindowSet) FalsePositiveRate() float64 { return s.w.FalsePositiveRate() }

// RateIsCheap is true: a window's rate is O(1).
func (s *WindowSet) RateIsCheap() bool { return true }

// addBatch hands a batch to the Deduper's set: with its lines to a
// LineSet.
func (d *Deduper) addBatch(lines, keys [][]byte, added []bool) (int, error) {
	if ls, ok := d.seen.(LineSet); ok {
		return ls.AddUniqueLines(lines, keys, added)
	}
	return d.seen.AddUniqueBatch(keys, added)
}
