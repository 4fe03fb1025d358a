package cuckoo_test

import (
	"fmt"
	"time"

	"github.com/dedupkit/cuckoo"
)

// A Window remembers the keys of the last 24 hours. The clock here is a
// test's; without WithClock a Window reads the wall clock.
func ExampleWindow() {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	w, err := cuckoo.NewWindow(1_000_000, 24*time.Hour, cuckoo.WithSeed(1),
		cuckoo.WithClock(func() time.Time { return now }))
	if err != nil {
		panic(err)
	}
	w.AddString("id-17")

	now = now.Add(23 * time.Hour)
	fmt.Println("after 23 h:", w.ContainsString("id-17"))
	now = now.Add(3 * time.Hour)
	fmt.Println("after 26 h:", w.ContainsString("id-17"))
	fmt.Println("forgotten at most", w.Granularity().Round(time.Minute), "after the window")
	// Output:
	// after 23 h: true
	// after 26 h: false
	// forgotten at most 1h43m0s after the window
}

// Dropping events whose id was seen in the last hour, by the events' own
// time: every event refreshes its id, dropped or not (Touch). AddUnique
// would instead keep an id's first time, and let one through each hour.
func ExampleWindow_Touch() {
	type event struct {
		at time.Time
		id string
	}
	t := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	events := []event{
		{t, "disk-full"},
		{t.Add(20 * time.Minute), "disk-full"},
		{t.Add(70 * time.Minute), "disk-full"},  // 50 minutes after the one before
		{t.Add(200 * time.Minute), "disk-full"}, // quiet for over an hour
	}
	var now time.Time
	w, _ := cuckoo.NewWindow(10_000, time.Hour, cuckoo.WithClock(func() time.Time { return now }))
	for _, e := range events {
		now = e.at
		if seen, _ := w.TouchString(e.id); !seen {
			fmt.Println(e.at.Format("15:04"), e.id)
		}
	}
	// Output:
	// 09:00 disk-full
	// 12:20 disk-full
}
