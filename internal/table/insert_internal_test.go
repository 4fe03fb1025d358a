package table

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// twoWindowShapes are the plain bucket shapes read as two windows: 4
// slots of 17 to 32 bits, 8 slots of 9 to 16 (three lanes and one, two
// and two, seven and one, four and four).
var twoWindowShapes = [][2]uint64{
	{4, 17}, {4, 18}, {4, 20}, {4, 21}, {4, 22}, {4, 31}, {4, 32},
	{8, 9}, {8, 12}, {8, 15}, {8, 16},
}

// randomSlots fills every slot of t with a random value, a third of them
// empty.
func randomSlots(t *Table, r *rand.Rand) {
	for i := range t.NumBuckets {
		for s := range t.Slots {
			v := r.Uint64() & t.FPMask
			if r.IntN(3) == 0 {
				v = 0
			}
			t.PlainSet(i, s, v)
		}
	}
}

// TestTwoWindowBucketsMatchSlotBySlot: the two-window reads of a bucket
// (windowPair, and HasRoom, AppendBucket and Replace on it) agree with
// reading and writing it slot by slot, in every bucket, the last one
// (whose three words end at the padding word) included.
func TestTwoWindowBucketsMatchSlotBySlot(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 1))
	for _, shape := range twoWindowShapes {
		t.Run(fmt.Sprintf("b=%d/f=%d", shape[0], shape[1]), func(t *testing.T) {
			tb := New(66, shape[0], shape[1], false)
			if tb.Windows != 2 {
				t.Fatalf("%d windows, want 2", tb.Windows)
			}
			randomSlots(&tb, r)
			for i := range tb.NumBuckets {
				var slots []uint64
				for s := range tb.Slots {
					slots = append(slots, tb.plainGet(i, s))
				}
				w0, w1 := tb.windowPair(i * tb.BucketBits)
				for s, v := range slots {
					w, lane := w0, uint64(s)
					if lane >= tb.Lanes {
						w, lane = w1, lane-tb.Lanes
					}
					if got := w >> (lane * tb.FPBits) & tb.FPMask; got != v {
						t.Fatalf("bucket %d slot %d: windows give %#x, the slot holds %#x", i, s, got, v)
					}
				}
				if got, want := tb.HasRoom(i), slices.Contains(slots, 0); got != want {
					t.Fatalf("bucket %d %x: HasRoom %v", i, slots, got)
				}
				var got []uint64
				for _, n := range tb.AppendBucket(nil, i, tb.Slots, -1) {
					got = append(got, uint64(n.Tag))
				}
				if !slices.Equal(got, slots) {
					t.Fatalf("bucket %d: AppendBucket %x, slots %x", i, got, slots)
				}
				for _, old := range append(slices.Clone(slots), r.Uint64()&tb.FPMask) {
					replaced := tb
					replaced.Words = slices.Clone(tb.Words)
					want := tb
					want.Words = slices.Clone(tb.Words)
					s, found := want.plainFind(i, old)
					if found {
						want.PlainSet(i, s, 1)
					}
					if ok := replaced.Replace(i, old, 1); ok != found || !slices.Equal(replaced.Words, want.Words) {
						t.Fatalf("bucket %d %x: Replace(%#x) = %v, or a different table from slot by slot", i, slots, old, ok)
					}
				}
			}
		})
	}
}

// addSlotBySlot is Add as the general path does it, bucket by bucket and
// slot by slot (Copies, Insert): the reference of the SWAR paths. The
// buckets are crowded when they hold most copies of fp.
func addSlotBySlot(t *Table, in *Inserts, i1, i2, fp, h uint64, maxKicks int, most uint64) Outcome {
	if t.Copies(i1, fp)+t.Copies(i2, fp) >= most {
		return Crowded
	}
	a, b := i1, i2
	if t.Copies(i2, 0) > t.Copies(i1, 0) {
		a, b = i2, i1
	}
	if !t.Insert(a, fp) && !t.Insert(b, fp) && !t.makeRoom(in, i1, i2, fp, h, maxKicks) {
		return Full
	}
	return Stored
}

// TestAddMatchesSlotBySlot fills tables of every plain shape past full
// with keys of which a fifth repeat an earlier one, and checks after each
// insert that Add and AddAbsent leave the table bit for bit as the slot by
// slot reference does (Copies and Insert; for AddAbsent, Contains and then
// the reference), and end the same way. The moves of full tables (a walk
// in these small tables, then the search) are the same code on both sides.
func TestAddMatchesSlotBySlot(t *testing.T) {
	shapes := append(slices.Clone(twoWindowShapes), [2]uint64{4, 16}, [2]uint64{4, 8}, [2]uint64{2, 12}, [2]uint64{1, 20})
	for _, shape := range shapes {
		t.Run(fmt.Sprintf("b=%d/f=%d", shape[0], shape[1]), func(t *testing.T) {
			r := rand.New(rand.NewPCG(shape[0], shape[1]))
			fast, ref := New(128, shape[0], shape[1], false), New(128, shape[0], shape[1], false)
			var inFast, inRef Inserts
			var keys []uint64
			counts := map[Outcome]int{}
			for step := range 1200 {
				h := r.Uint64()
				if len(keys) > 0 && r.IntN(5) == 0 {
					h = keys[r.IntN(len(keys))]
				}
				keys = append(keys, h)
				i1, fp := fast.Locate(h)
				i2 := fast.AltIndex(i1, fp)
				var got, want Outcome
				if step%2 == 0 {
					got = fast.Add(&inFast, i1, i2, fp, h, 50)
					want = addSlotBySlot(&ref, &inRef, i1, i2, fp, h, 50, MaxSlotCopies)
				} else {
					got = fast.AddAbsent(&inFast, i1, i2, fp, h, 50)
					want = Present
					if !ref.Contains(h) {
						want = addSlotBySlot(&ref, &inRef, i1, i2, fp, h, 50, MaxSlotCopies)
					}
				}
				if got != want || !slices.Equal(fast.Words, ref.Words) {
					t.Fatalf("step %d (hash %#x): %v, the reference %v, or the tables differ", step, h, got, want)
				}
				counts[got]++
			}
			// The test saw every ending.
			for _, o := range []Outcome{Stored, Crowded, Full, Present} {
				if counts[o] == 0 {
					t.Fatalf("no insert ended %d: %v", o, counts)
				}
			}
		})
	}
}
