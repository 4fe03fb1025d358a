package bloom_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/dedupkit/cuckoo/bloom"
	"github.com/dedupkit/cuckoo/internal/testlong"
)

// TestCountingModel applies random Adds, Deletes and lookups to a Counting
// filter and to a multiset (a map of counts), and checks after every step:
//   - every key in the multiset is reported present (no false negatives);
//   - Delete of a key Contains reports absent returns false and leaves the
//     encoding byte for byte unchanged;
//   - Len equals Adds minus successful Deletes.
//
// Keys that are false positives are never deleted: that is the documented
// unsafe use.
func TestCountingModel(t *testing.T) {
	r := testRand(t)
	steps := 30_000
	if testing.Short() || testlong.RaceEnabled {
		steps = 6_000
	}
	// A small filter and a small universe, so that counters are shared,
	// repeated keys are common, and some counters saturate.
	f, err := bloom.NewCounting(500, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(r.Uint64()))
	if err != nil {
		t.Fatal(err)
	}
	model := map[uint64]int{}
	var length uint64
	var kb keyBuf
	check := func(step int) {
		for k, c := range model {
			if c > 0 && !f.Contains(kb.at(0, k)) {
				t.Fatalf("step %d: key %d added %d times more than deleted is absent", step, k, c)
			}
		}
		if f.Len() != length {
			t.Fatalf("step %d: Len %d, want %d", step, f.Len(), length)
		}
	}
	for step := range steps {
		k := r.Uint64N(800)
		key := kb.at(0, k)
		switch op := r.IntN(10); {
		case op < 5:
			f.Add(key)
			model[k]++
			length++
		case op < 8 && model[k] > 0:
			if !f.Delete(key) {
				t.Fatalf("step %d: Delete of present key %d = false", step, k)
			}
			model[k]--
			length--
		default:
			if model[k] > 0 || f.Contains(key) {
				continue // present, or a false positive: not safe to delete
			}
			before, _ := f.MarshalBinary()
			if f.Delete(key) {
				t.Fatalf("step %d: Delete of absent key %d = true", step, k)
			}
			if after, _ := f.MarshalBinary(); !bytes.Equal(before, after) {
				t.Fatalf("step %d: Delete of absent key %d changed the filter", step, k)
			}
		}
		if step%100 == 0 {
			check(step)
		}
	}
	check(steps)
}

// TestCountingDeleteRestores: adding a key n times and deleting it n times
// restores the filter exactly, when no counter saturates.
func TestCountingDeleteRestores(t *testing.T) {
	f, _ := bloom.NewCounting(10_000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(9))
	fill(f, 0, 5000)
	before, _ := f.MarshalBinary()
	x := key(3, 1)
	for range 3 {
		f.Add(x)
	}
	for i := range 3 {
		if !f.Delete(x) {
			t.Fatalf("Delete %d of a key added 3 times = false", i)
		}
	}
	if after, _ := f.MarshalBinary(); !bytes.Equal(before, after) {
		t.Error("3 Adds then 3 Deletes did not restore the filter")
	}
	if f.Contains(x) {
		t.Error("the deleted key is still present") // would be a false positive: p < 1e-2, fixed seed
	}
}

// TestCountingSaturation: counters stop at 15 and are never decremented
// from there, so no Delete can cause a false negative; the price is that a
// key added 16 times or more stays present after as many Deletes.
func TestCountingSaturation(t *testing.T) {
	f, _ := bloom.NewCounting(1000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(11))
	fill(f, 0, 1000)
	hot := key(5, 0)
	for range 40 {
		f.Add(hot) // wraps a 4-bit counter twice if it did not saturate
	}
	requirePresent(t, f, 0, 1000)
	for i := range 40 {
		if !f.Delete(hot) {
			t.Fatalf("Delete %d of a key added 40 times = false", i)
		}
	}
	if !f.Contains(hot) {
		t.Error("a key with saturated counters became absent") // counters at 15 must not move
	}
	requirePresent(t, f, 0, 1000)
	if f.Len() != 1000 {
		t.Errorf("Len %d, want 1000", f.Len())
	}
	// Union saturates too.
	g := f.Clone()
	for range 20 {
		if err := g.Union(f); err != nil {
			t.Fatal(err)
		}
	}
	requirePresent(t, g, 0, 1000)
	for i := range uint64(1000) {
		g.Delete(key(0, i))
	}
	requirePresent(t, g, 0, 1000) // every counter saturated by the unions
}

func TestCountingUnion(t *testing.T) {
	a, _ := bloom.NewCounting(10_000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(4))
	b, _ := bloom.NewCounting(10_000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(4))
	fill(a, 0, 3000)
	fill(b, 3000, 6000)
	if err := a.Union(b); err != nil {
		t.Fatal(err)
	}
	requirePresent(t, a, 0, 6000)
	if a.Len() != 6000 {
		t.Errorf("Len %d, want 6000", a.Len())
	}
	// The union holds b's copies: deleting them leaves a's keys.
	var kb keyBuf
	for i := uint64(3000); i < 6000; i++ {
		if !a.Delete(kb.at(0, i)) {
			t.Fatalf("Delete of merged key %d = false", i)
		}
	}
	requirePresent(t, a, 0, 3000)
	before, _ := a.MarshalBinary()
	for name, o := range map[string]func() *bloom.Counting{
		"seed": func() *bloom.Counting {
			c, _ := bloom.NewCounting(10_000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(5))
			return c
		},
		"capacity": func() *bloom.Counting {
			c, _ := bloom.NewCounting(20_000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(4))
			return c
		},
		"zero": func() *bloom.Counting { return new(bloom.Counting) },
		"nil":  func() *bloom.Counting { return nil },
	} {
		if err := a.Union(o()); !errors.Is(err, bloom.ErrIncompatible) {
			t.Errorf("Union with a different %s: %v", name, err)
		}
	}
	if after, _ := a.MarshalBinary(); !bytes.Equal(before, after) {
		t.Error("a failed Union changed the receiver")
	}
}
