package cuckoo

import (
	"slices"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/testseed"
)

// TestWindowMoveOne: moveOne makes the move searchPath would make, to the
// bit, whenever one move suffices, for the one-window shapes, in tables
// near their steady-state load with expired entries among the live ones.
func TestWindowMoveOne(t *testing.T) {
	rng := testseed.Rand(t)
	for _, shape := range [][2]int{{4, 12}, {2, 12}, {4, 8}, {2, 28}} {
		now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		const n = 3000
		w, err := NewWindow(n, time.Hour, WithBucketSize(shape[0]), WithFingerprintBits(shape[1]),
			WithSeed(rng.Uint64()), WithClock(func() time.Time { return now }))
		if err != nil {
			t.Fatal(err)
		}
		if w.t.windows != 1 {
			t.Fatalf("shape %v: %d windows a bucket", shape, w.t.windows)
		}
		// A stream at capacity for a window and a half: the steady state.
		for range n + n/2 {
			if err := w.AddHash(rng.Uint64()); err != nil {
				t.Fatal(err)
			}
			now = now.Add(time.Hour / n)
		}
		nowStamp, expired := w.stamps()
		moved := 0
		for range 5000 {
			h := rng.Uint64()
			tb := &w.t
			i1, fp := tb.locate(h)
			i2 := tb.altIndex(i1, fp)
			if tb.hasFree(i1, expired) || tb.hasFree(i2, expired) {
				continue
			}
			if _, _, live := tb.findLive(i1, i2, fp, expired); live {
				continue
			}
			v := fp<<windowAgeBits | nowStamp
			a, b := *tb, *tb
			a.words, b.words = slices.Clone(tb.words), slices.Clone(tb.words)
			okA := a.moveOne(i1, i2, tb.window(i1, 0), tb.window(i2, 0), v, expired)
			var sc wscratch
			okB := b.searchPath(&sc, i1, i2, v, expired, 2*w.maxKicks)
			if !okA {
				if !slices.Equal(a.words, tb.words) || a.stamps != tb.stamps {
					t.Fatalf("shape %v: moveOne failed and changed the table", shape)
				}
				continue
			}
			moved++
			if !okB || !slices.Equal(a.words, b.words) || a.stamps != b.stamps {
				t.Fatalf("shape %v: moveOne and searchPath differ (search %v)", shape, okB)
			}
		}
		t.Logf("shape %v: %d inserts placed by one move", shape, moved)
		if moved < 50 {
			t.Fatalf("shape %v: only %d inserts placed by one move", shape, moved)
		}
	}
}
