package stamped

import (
	"slices"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testseed"
)

// steady returns a table of the shape holding a stream at capacity for a
// window and a half, as a Window of n keys a window (14 epochs) would,
// sized a little below the loads NewWindow plans for (0.90 of 4-slot
// buckets, 0.78 of 2-slot ones, under their first failures of 0.96 and
// 0.87): n/14 keys an epoch, the sweep emptying the expired slots of 4
// buckets a write and the rest of them when the epoch moves on. It returns
// the stamps of the current epoch and of the entries that expired in it.
func steady(t *testing.T, rng interface{ Uint64() uint64 }, slots, fpBits, n uint64) (tb *Table, now, expired uint64) {
	t.Helper()
	live := n + n/14 + 1
	load := uint64(90)
	if slots == 2 {
		load = 78
	}
	m := (live*100/(slots*load) + 2) &^ 1
	x := New(m, slots, fpBits)
	tb = &x
	var epoch, cursor uint64
	for k := range n + n/2 {
		if e := k * 14 / n; e != epoch {
			tb.SweepRange(cursor, m, (epoch+1)&(Stamps-1))
			epoch, cursor = e, 0
		}
		now, expired = epoch&(Stamps-1), (epoch+1)&(Stamps-1)
		if _, ok := tb.Put(rng.Uint64(), now, expired, true, 500); !ok {
			t.Fatalf("shape %d × %d: the table refused key %d", slots, fpBits, k)
		}
		end := min(cursor+4, m)
		tb.SweepRange(cursor, end, expired)
		cursor = end
	}
	if err := tb.Validate(true, expired, cursor); err != nil {
		t.Fatal(err)
	}
	return tb, now, expired
}

// TestMoveOne: moveOne makes the move searchPath would make, to the bit,
// whenever one move suffices, for the one-window shapes, in tables near
// their steady-state load with expired entries among the live ones.
func TestMoveOne(t *testing.T) {
	rng := testseed.Rand(t)
	for _, shape := range [][2]uint64{{4, 12}, {2, 12}, {4, 8}, {2, 28}} {
		tb, nowStamp, expired := steady(t, rng, shape[0], shape[1], 3000)
		if tb.windows != 1 {
			t.Fatalf("shape %v: %d windows a bucket", shape, tb.windows)
		}
		moved := 0
		for range 5000 {
			i1, i2, fp := tb.Pair(rng.Uint64())
			if tb.hasFree(i1, expired) || tb.hasFree(i2, expired) {
				continue
			}
			if _, _, live := tb.findLive(i1, i2, fp, expired); live {
				continue
			}
			v := fp<<AgeBits | nowStamp
			a, b := *tb, *tb
			a.words, b.words = slices.Clone(tb.words), slices.Clone(tb.words)
			okA := a.moveOne(i1, i2, tb.window(i1, 0), tb.window(i2, 0), v, expired)
			var sc scratch
			okB := b.searchPath(&sc, i1, i2, v, expired, 2*500)
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
