package filterfile

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
)

// cuckooWindow is the CuckooWindow kind: a cuckoo.Window, whose clock is
// the wall clock unless SetWindowClock gives another (dedup --time-field
// sets the time of each line).
type cuckooWindow struct {
	*cuckoo.Window
	clock *windowClock
}

// windowClock is the clock a cuckooWindow's Window reads: now, or the wall
// clock while now is nil. The Window is built reading it, so that a
// decoded Window (which keeps its receiver's clock) can be given another.
type windowClock struct{ now func() time.Time }

func (c *windowClock) read() time.Time {
	if c.now == nil {
		return time.Now()
	}
	return c.now()
}

func newCuckooWindow(s Spec) (impl, error) {
	if s.Window <= 0 {
		return nil, fmt.Errorf("%w: a window filter needs a window", cuckoo.ErrInvalidParameter)
	}
	c := &windowClock{}
	w, err := cuckoo.NewWindow(s.Capacity, s.Window, append(cuckooOptions(s), cuckoo.WithClock(c.read))...)
	if err != nil {
		return nil, err
	}
	return cuckooWindow{w, c}, nil
}

func emptyCuckooWindow() impl {
	c := &windowClock{}
	w, err := cuckoo.NewWindow(1, time.Second, cuckoo.WithClock(c.read))
	if err != nil {
		panic("filterfile: " + err.Error())
	}
	return cuckooWindow{w, c}
}

func (c cuckooWindow) Delete(key []byte) (bool, error) { return c.Window.Delete(key), nil }

// TargetFalsePositiveRate returns the expected rate with the window at
// capacity: its live entries (the keys of a window and a granularity) in
// its slots, as NewWindow sizes it.
func (c cuckooWindow) TargetFalsePositiveRate() float64 {
	slots := float64(c.NumBuckets()) * float64(c.BucketSize())
	live := float64(c.Capacity()) * (1 + 1/float64(cuckoo.WindowEpochs))
	q := 1 / (math.Exp2(float64(c.FingerprintBits())) - 1)
	return -math.Expm1(2 * float64(c.BucketSize()) * min(live/slots, 1) * math.Log1p(-q))
}

func (c cuckooWindow) facts(add addFact) {
	add("items", "keys in the window", c.Len(), units.Count(c.Len()))
	add("capacity", "capacity", c.Capacity(), units.Counted(c.Capacity(), "distinct key")+" a window")
	add("window_seconds", "window", c.Window.Window().Seconds(), c.Window.Window().String())
	add("granularity_seconds", "granularity", c.Granularity().Seconds(),
		c.Granularity().Round(time.Millisecond).String()+" (a key is found for at least the window, at most this much longer)")
	cuckooShape(add, c.LoadFactor(), c.BucketSize(), c.FingerprintBits(), false, " + a 4-bit age")
	add("buckets", "buckets", c.NumBuckets(), units.Count(c.NumBuckets()))
	add("fpr", "false positives now", c.FalsePositiveRate(), units.Rate(c.FalsePositiveRate()))
	add("fpr_at_capacity", "false positives at capacity", c.TargetFalsePositiveRate(), units.Rate(c.TargetFalsePositiveRate()))
}

// ErrNotWindow is returned by SetWindowClock for a filter of another kind.
var ErrNotWindow = errors.New("filterfile: not a window filter")

// Window returns the cuckoo.Window of a CuckooWindow filter, or nil.
func (f *Filter) Window() *cuckoo.Window {
	if w, ok := f.f.(cuckooWindow); ok {
		return w.Window
	}
	return nil
}

// SetWindowClock makes a CuckooWindow filter read its time from now (nil:
// the wall clock) from then on: dedup --time-field sets it to the time of
// the line at hand.
func (f *Filter) SetWindowClock(now func() time.Time) error {
	w, ok := f.f.(cuckooWindow)
	if !ok {
		return ErrNotWindow
	}
	w.clock.now = now
	return nil
}

// Touch reports whether key is in a window filter's window and makes it
// fresh (cuckoo.Window.Touch); a full window's error wraps ErrFull. Other
// kinds return ErrNotWindow.
func (f *Filter) Touch(key []byte) (seen bool, err error) {
	w := f.Window()
	if w == nil {
		return false, ErrNotWindow
	}
	seen, err = w.Touch(key)
	return seen, full(err)
}

// TouchBatch is Touch for every key, in order, at one reading of the
// clock (cuckoo.Window.TouchBatch).
func (f *Filter) TouchBatch(keys [][]byte, seen []bool) (processed int, err error) {
	w := f.Window()
	if w == nil {
		return 0, ErrNotWindow
	}
	n, err := w.TouchBatch(keys, seen)
	return n, full(err)
}
