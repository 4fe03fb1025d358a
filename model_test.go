package cuckoo_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dedupkit/cuckoo"
)

// model is the reference: a multiset of key numbers.
type model map[uint64]uint64

func (m model) total() uint64 {
	var n uint64
	for _, c := range m {
		n += c
	}
	return n
}

// runModel applies steps random operations to f and to a model, checking
// after every step (checkStep). Keys come from a small universe so that duplicates,
// deletes of present keys and full buckets all happen often.
func runModel(t *testing.T, f *cuckoo.Filter, r *rand.Rand, steps int, universe uint64) {
	m := model{}
	fulls := 0
	for step := 0; step < steps; step++ {
		k := r.Uint64N(universe)
		switch op := r.IntN(10); {
		case op < 4: // Add
			var before []byte
			if fulls < 50 {
				before, _ = f.MarshalBinary()
			}
			if err := f.Add(key(0, k)); err != nil {
				if !errors.Is(err, cuckoo.ErrFull) {
					t.Fatalf("step %d: Add: %v", step, err)
				}
				if before != nil {
					if after, _ := f.MarshalBinary(); !bytes.Equal(before, after) {
						t.Fatalf("step %d: a failed Add changed the filter", step)
					}
				}
				fulls++
				break
			}
			m[k]++
		case op < 6: // AddUnique
			present := f.Contains(key(0, k))
			added, err := f.AddUnique(key(0, k))
			if err != nil && !errors.Is(err, cuckoo.ErrFull) {
				t.Fatalf("step %d: AddUnique: %v", step, err)
			}
			if present && (added || err != nil) || !present && added == (err != nil) {
				t.Fatalf("step %d: AddUnique = %v, %v with Contains = %v", step, added, err, present)
			}
			if added {
				m[k]++
			}
		case op < 9: // Delete a key the model holds (deleting others is documented to harm)
			if m[k] == 0 {
				break
			}
			if !f.Delete(key(0, k)) {
				t.Fatalf("step %d: Delete of key %d with %d copies failed", step, k, m[k])
			}
			if m[k]--; m[k] == 0 {
				delete(m, k)
			}
		default: // hammer one key with copies
			n := 1 + r.IntN(20)
			for i := 0; i < n; i++ {
				if err := f.Add(key(0, k)); err != nil {
					if !errors.Is(err, cuckoo.ErrFull) {
						t.Fatal(err)
					}
					break
				}
				m[k]++
			}
		}
		checkStep(t, f, m, k, step)
		if step%64 == 0 {
			if err := f.CheckInvariants(); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
	}
	checkSet(t, f, m, steps)
	t.Logf("%d steps, %d keys, %d items, %d full inserts, load %.3f", steps, len(m), m.total(), fulls, f.LoadFactor())
}

// TestModel runs runModel on filters of every layout and many widths:
// 20,000 steps each in the long checks (CUCKOO_LONG=1), 1,500 in the quick
// run, 4,000 with -short, 1,000 under the race detector.
func TestModel(t *testing.T) {
	t.Parallel()
	r := testRand(t)
	steps := sized(20_000, 1_500, 4_000, 1_000)
	for _, l := range layouts {
		for _, bits := range []int{4, 8, 12, 16, 19, 32} {
			t.Run(fmt.Sprintf("%v/f=%d", l, bits), func(t *testing.T) {
				capacity := uint64(50 + r.IntN(400))
				f, err := cuckoo.New(capacity, l.opts(bits, cuckoo.WithSeed(r.Uint64()))...)
				if err != nil {
					t.Fatal(err)
				}
				runModel(t, f, r, steps, capacity*3/2)
			})
		}
	}
}
