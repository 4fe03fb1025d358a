package filterfile

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// TestWindowClock: a window filter loaded from a file reads the clock
// SetWindowClock gives it, and a filter of another kind refuses one.
func TestWindowClock(t *testing.T) {
	f, err := New(Spec{Kind: CuckooWindow, Capacity: 100, Window: time.Hour, FPR: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := f.SetWindowClock(func() time.Time { return now }); err != nil {
		t.Fatal(err)
	}
	f.Add([]byte("a"))
	var buf bytes.Buffer
	if _, err := f.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	g, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if g.Kind() != CuckooWindow || g.Window() == nil || g.Window().Window() != time.Hour {
		t.Fatalf("loaded %v", g.Kind())
	}
	later := now.Add(30 * time.Minute)
	g.SetWindowClock(func() time.Time { return later })
	if !g.Contains([]byte("a")) {
		t.Fatal("a key added 30 minutes before is gone")
	}
	later = now.Add(2 * time.Hour)
	if g.Contains([]byte("a")) {
		t.Fatal("a key added 2 hours before is found in a 1-hour window")
	}
	for _, fact := range g.Info() {
		if fact.Key == "window_seconds" && fact.Value != 3600.0 {
			t.Fatalf("info: window %v", fact.Value)
		}
	}
	c, _ := New(Spec{Kind: Cuckoo, Capacity: 10})
	if err := c.SetWindowClock(time.Now); !errors.Is(err, ErrNotWindow) || c.Window() != nil {
		t.Fatalf("SetWindowClock on a cuckoo filter: %v", err)
	}
	if _, err := New(Spec{Kind: CuckooWindow, Capacity: 10}); err == nil {
		t.Fatal("a window filter without a window")
	}
}
