package dedup

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeWindow is a Window over an exact map of each key's latest time,
// with a window of one hour.
type fakeWindow struct {
	now  *time.Time
	last map[string]time.Time
}

func (f *fakeWindow) Touch(key []byte) (bool, error) {
	t, ok := f.last[string(key)]
	f.last[string(key)] = *f.now
	return ok && f.now.Sub(t) <= time.Hour, nil
}

func (f *fakeWindow) TouchBatch(keys [][]byte, seen []bool) (int, error) {
	for i, k := range keys {
		seen[i], _ = f.Touch(k)
	}
	return len(keys), nil
}

func (f *fakeWindow) FalsePositiveRate() float64 { return 0 }

// TestWindowSetInADeduper runs a Deduper over a WindowSet by event time:
// it sees the lines (LineSet), and every line refreshes its key.
func TestWindowSetInADeduper(t *testing.T) {
	now := new(time.Time)
	auto, _ := ParseTimeFormat("")
	tf, _ := NewTimeField("1", "", false, auto)
	spec, _ := ParseFieldSpec("2")
	var out bytes.Buffer
	d := New(NewWindowSet(&fakeWindow{now: now, last: map[string]time.Time{}}, tf, now), &out,
		Config{Key: NewKeyExtractor(spec, "", false)})
	in := "0 a\n1800 a\n3600 a\n7300 a\n7400 b\nbad b\n"
	err := d.Run(strings.NewReader(in))
	var le *LineError
	if !errors.As(err, &le) || le.Line != 6 || !errors.Is(err, ErrTime) {
		t.Fatalf("Run = %v, want a LineError at line 6 wrapping ErrTime", err)
	}
	d.Flush()
	// a at 1800 and 3600 is within an hour of the one before; 7300 is
	// 3700 s after 3600, a new a.
	if want := "0 a\n7300 a\n7400 b\n"; out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
}
