package bloom_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/bloom"
	"github.com/dedupkit/cuckoo/internal/testlong"
)

// params are a constructor's arguments, named.
type params struct {
	name     string
	capacity uint64
	fpr      float64
	opts     []bloom.Option
}

// badParameters are parameters every constructor refuses (the growth and
// tightening ones, all but NewScalable as Scalable-only options).
var badParameters = []params{
	{"capacity=0", 0, 0.01, nil},
	{"capacity=too-large", bloom.MaxCapacity + 1, 0.01, nil},
	{"fpr=0", 100, 0, nil},
	{"fpr=1", 100, 1, nil},
	{"fpr=-0.1", 100, -0.1, nil},
	{"fpr=NaN", 100, math.NaN(), nil},
	{"fpr=+Inf", 100, math.Inf(1), nil},
	{"fpr=below-min", 100, bloom.MinFalsePositiveRate / 2, nil},
	{"table-too-large", bloom.MaxCapacity, bloom.MinFalsePositiveRate, nil},
	{"growth=1", 100, 0.01, []bloom.Option{bloom.WithGrowth(1)}},
	{"growth=NaN", 100, 0.01, []bloom.Option{bloom.WithGrowth(math.NaN())}},
	{"growth=2000", 100, 0.01, []bloom.Option{bloom.WithGrowth(2000)}},
	{"tightening=0.2", 100, 0.01, []bloom.Option{bloom.WithTightening(0.2)}},
	{"tightening=1", 100, 0.01, []bloom.Option{bloom.WithTightening(1)}},
}

func TestConstructorErrors(t *testing.T) {
	cases := badParameters
	for _, kind := range kinds {
		for _, tc := range cases {
			if kind.name != "NewScalable" && (strings.HasPrefix(tc.name, "growth") || strings.HasPrefix(tc.name, "tightening")) {
				continue
			}
			t.Run(kind.name+"/"+tc.name, func(t *testing.T) {
				f, err := kind.new(tc.capacity, tc.fpr, tc.opts...)
				if !errors.Is(err, bloom.ErrInvalidParameter) {
					t.Fatalf("got %v, %v; want an error wrapping ErrInvalidParameter", f, err)
				}
				t.Log(err)
			})
		}
	}
	// The Scalable-only options are refused by the other constructors.
	for _, kind := range kinds[:3] {
		for _, o := range []bloom.Option{bloom.WithGrowth(2), bloom.WithTightening(0.8)} {
			if _, err := kind.new(100, 0.01, o); !errors.Is(err, bloom.ErrInvalidParameter) {
				t.Errorf("%s with a Scalable option: got %v", kind.name, err)
			}
		}
	}
	// Limits themselves are accepted.
	for _, kind := range kinds {
		for _, p := range []float64{bloom.MinFalsePositiveRate, 0.999999} {
			if _, err := kind.new(1000, p); err != nil {
				t.Errorf("%s(1000, %g): %v", kind.name, p, err)
			}
		}
	}
	if _, err := bloom.NewScalable(10, bloom.WithFalsePositiveRate(0.01), bloom.WithGrowth(bloom.MinGrowth), bloom.WithTightening(bloom.MinTightening)); err != nil {
		t.Error(err)
	}
	if _, err := bloom.NewScalable(10, bloom.WithFalsePositiveRate(0.01), bloom.WithGrowth(bloom.MaxGrowth), bloom.WithTightening(bloom.MaxTightening)); err != nil {
		t.Error(err)
	}
}

// TestNoFalseNegatives adds up to three times the capacity, at boundary
// capacities (one word, one block, either side of them), and checks every
// key after every step of growth.
func TestNoFalseNegatives(t *testing.T) {
	for _, kind := range kinds {
		for _, c := range []uint64{1, 2, 5, 63, 64, 65, 511, 512, 513, 10_000} {
			t.Run(fmt.Sprintf("%s/capacity=%d", kind.name, c), func(t *testing.T) {
				f, err := kind.new(c, 0.01)
				if err != nil {
					t.Fatal(err)
				}
				fill(f, 0, c)
				requirePresent(t, f, 0, c)
				fill(f, c, 3*c)
				requirePresent(t, f, 0, 3*c)
			})
		}
	}
}

func TestAddUniqueAndLen(t *testing.T) {
	type adder interface {
		AddUnique([]byte) (bool, error)
		Contains([]byte) bool
		Len() uint64
	}
	b, _ := bloom.New(10_000, bloom.WithFalsePositiveRate(1e-6), bloom.WithSeed(1))
	c, _ := bloom.NewClassic(10_000, bloom.WithFalsePositiveRate(1e-6), bloom.WithSeed(1))
	n, _ := bloom.NewCounting(10_000, bloom.WithFalsePositiveRate(1e-6), bloom.WithSeed(1))
	s, _ := bloom.NewScalable(1_000, bloom.WithFalsePositiveRate(1e-6), bloom.WithSeed(1))
	for name, f := range map[string]adder{"New": b, "NewClassic": c, "NewCounting": n, "NewScalable": s} {
		t.Run(name, func(t *testing.T) {
			var kb keyBuf
			// At 1e-6 with a tenth of the capacity used, no false positive
			// is expected among 1000 keys (probability < 1e-9).
			for i := range uint64(1000) {
				if !addedOK(f.AddUnique(kb.at(0, i))) {
					t.Fatalf("AddUnique of new key %d = false", i)
				}
			}
			for i := range uint64(1000) {
				if addedOK(f.AddUnique(kb.at(0, i))) {
					t.Fatalf("AddUnique of present key %d = true", i)
				}
			}
			if f.Len() != 1000 {
				t.Fatalf("Len = %d after 1000 distinct keys added twice, want 1000", f.Len())
			}
			requirePresent(t, f, 0, 1000)
		})
	}
	// Filter and Scalable count a repeated Add once; Counting counts copies.
	var kb keyBuf
	for range 3 {
		b.Add(kb.at(2, 0))
		s.Add(kb.at(2, 0))
		n.Add(kb.at(2, 0))
	}
	if b.Len() != 1001 || s.Len() != 1001 || n.Len() != 1003 {
		t.Errorf("Len after a key added 3 times: Filter %d (want 1001), Scalable %d (want 1001), Counting %d (want 1003)", b.Len(), s.Len(), n.Len())
	}
}

func TestStringVariants(t *testing.T) {
	b, _ := bloom.New(1000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(7))
	c, _ := bloom.NewCounting(1000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(7))
	s, _ := bloom.NewScalable(1000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(7))
	b.AddString("apple")
	c.AddString("apple")
	s.AddString("apple")
	if !b.Contains([]byte("apple")) || !c.Contains([]byte("apple")) || !s.Contains([]byte("apple")) {
		t.Error("AddString and Contains disagree")
	}
	b2, _ := bloom.New(1000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(7))
	b2.Add([]byte("pear"))
	if !b2.ContainsString("pear") || addedOK(b2.AddUniqueString("pear")) || !addedOK(b2.AddUniqueString("plum")) {
		t.Error("string and byte variants disagree")
	}
	if !c.DeleteString("apple") || c.ContainsString("apple") {
		t.Error("DeleteString did not remove the key")
	}
	if !s.ContainsString("apple") || addedOK(s.AddUniqueString("apple")) {
		t.Error("Scalable string variants disagree")
	}
}

// TestSameStateSameBytes: the same parameters, seed and keys give the same
// bits and the same encoding, whatever the order of the adds; another seed
// gives other bits.
func TestSameStateSameBytes(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			a, _ := kind.new(2000, 0.01, bloom.WithSeed(42))
			b, _ := kind.new(2000, 0.01, bloom.WithSeed(42))
			c, _ := kind.new(2000, 0.01, bloom.WithSeed(43))
			var kb keyBuf
			for i := range uint64(1000) {
				a.Add(kb.at(0, i))
				b.Add(kb.at(0, 999-i))
				c.Add(kb.at(0, i))
			}
			ea, _ := a.MarshalBinary()
			eb, _ := b.MarshalBinary()
			ec, _ := c.MarshalBinary()
			if kind.name != "NewScalable" && !bytes.Equal(ea, eb) {
				// A Scalable filter may store a key in a different layer
				// depending on the order, so only the others are compared.
				t.Error("same keys in another order encode differently")
			}
			if bytes.Equal(ea, ec) {
				t.Error("different seeds encode the same")
			}
		})
	}
}

func TestUnion(t *testing.T) {
	for _, mk := range filterLayouts {
		t.Run(mk.name, func(t *testing.T) {
			a, _ := mk.new(20_000, 0.01, bloom.WithSeed(5))
			b, _ := mk.new(20_000, 0.01, bloom.WithSeed(5))
			fill(a, 0, 6000)
			fill(b, 4000, 10_000) // overlaps a on 2000 keys
			if err := a.Union(b); err != nil {
				t.Fatal(err)
			}
			requirePresent(t, a, 0, 10_000)
			if a.Len() < 12_000-20 || a.Len() > 12_000 {
				t.Errorf("Len after Union = %d, want the sum of both (about 12000)", a.Len())
			}
			if est := float64(a.EstimatedCount()); math.Abs(est-10_000) > 300 {
				t.Errorf("EstimatedCount after Union = %v, want about 10000 distinct keys", est)
			}
			if err := a.Union(a); err != nil {
				t.Errorf("Union with itself: %v", err)
			}

			before, _ := a.MarshalBinary()
			for name, other := range map[string]func() (*bloom.Filter, error){
				"seed":     func() (*bloom.Filter, error) { return mk.new(20_000, 0.01, bloom.WithSeed(6)) },
				"capacity": func() (*bloom.Filter, error) { return mk.new(40_000, 0.01, bloom.WithSeed(5)) },
				"rate":     func() (*bloom.Filter, error) { return mk.new(20_000, 0.001, bloom.WithSeed(5)) },
				"layout": func() (*bloom.Filter, error) {
					if mk.name == "New" {
						return bloom.NewClassic(20_000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(5))
					}
					return bloom.New(20_000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(5))
				},
				"zero": func() (*bloom.Filter, error) { return new(bloom.Filter), nil },
				"nil":  func() (*bloom.Filter, error) { return nil, nil },
			} {
				o, _ := other()
				if err := a.Union(o); !errors.Is(err, bloom.ErrIncompatible) {
					t.Errorf("Union with a different %s: got %v, want ErrIncompatible", name, err)
				}
				if after, _ := a.MarshalBinary(); !bytes.Equal(before, after) {
					t.Errorf("failed Union with a different %s changed the receiver", name)
				}
			}
		})
	}
}

func TestResetAndClone(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			f, _ := kind.new(1000, 0.01, bloom.WithSeed(3))
			fill(f, 0, 5000) // the Scalable filter grows
			size := f.SizeInBytes()
			c := clone(f)
			enc, _ := f.MarshalBinary()
			if ce, _ := c.MarshalBinary(); !bytes.Equal(enc, ce) {
				t.Fatal("Clone encodes differently")
			}
			reset(f)
			if f.Len() != 0 || f.EstimatedCount() != 0 || f.FalsePositiveRate() != 0 {
				t.Errorf("after Reset: Len %d, EstimatedCount %d, FalsePositiveRate %g", f.Len(), f.EstimatedCount(), f.FalsePositiveRate())
			}
			if kind.name != "NewScalable" && f.SizeInBytes() != size {
				t.Errorf("Reset changed the size from %d to %d", size, f.SizeInBytes())
			}
			if kind.name == "NewScalable" && f.(*bloom.Scalable).NumTables() != 1 {
				t.Errorf("Reset kept %d layers", f.(*bloom.Scalable).NumTables())
			}
			if got := measureFPR(f, 0, 5000); got != 0 {
				t.Errorf("after Reset %g of the old keys are still reported", got)
			}
			// The clone shares nothing with the original.
			requirePresent(t, c, 0, 5000)
			fill(f, 0, 10)
			if ce, _ := c.MarshalBinary(); !bytes.Equal(enc, ce) {
				t.Fatal("adding to the original changed the clone")
			}
		})
	}
}

func clone(s set) set {
	switch f := s.(type) {
	case *bloom.Filter:
		return f.Clone()
	case *bloom.Counting:
		return f.Clone()
	case *bloom.Scalable:
		return f.Clone()
	}
	panic("unknown type")
}

func reset(s set) {
	switch f := s.(type) {
	case *bloom.Filter:
		f.Reset()
	case *bloom.Counting:
		f.Reset()
	case *bloom.Scalable:
		f.Reset()
	}
}

func TestZeroValues(t *testing.T) {
	zeros := map[string]set{"Filter": new(bloom.Filter), "Counting": new(bloom.Counting), "Scalable": new(bloom.Scalable)}
	// A zero Scalable's Add sets it up (TestZeroValueWrites).
	for name, z := range zeros {
		t.Run(name, func(t *testing.T) {
			if z.Contains([]byte("x")) || z.Len() != 0 || z.SizeInBytes() != 0 || z.FalsePositiveRate() != 0 || z.EstimatedCount() != 0 {
				t.Error("the zero value is not an empty filter")
			}
			if _, err := z.MarshalBinary(); err == nil {
				t.Error("MarshalBinary of the zero value succeeded")
			}
			if name == "Scalable" {
				return
			}
			if err := z.Add([]byte("x")); !errors.Is(err, bloom.ErrUninitialized) {
				t.Errorf("Add on the zero value: %v, want ErrUninitialized", err)
			}
		})
	}
}

// TestEstimatedCount states the accuracy of EstimatedCount: within 1 % of
// the number of distinct keys (for Scalable: of the keys inserted, Len)
// from a tenth of the capacity to twice the capacity (measured: under 0.3 %
// at 10^5 keys), for every kind.
func TestEstimatedCount(t *testing.T) {
	testlong.SkipUnderRace(t)
	const c = 100_000
	for _, kind := range kinds {
		for _, p := range []float64{0.1, 0.01, 0.0001} {
			t.Run(fmt.Sprintf("%s/fpr=%g", kind.name, p), func(t *testing.T) {
				f, _ := kind.new(c, p)
				added := uint64(0)
				for _, n := range []uint64{c / 10, c / 2, c, 2 * c} {
					fill(f, added, n)
					added = n
					est := f.EstimatedCount()
					want := n
					if kind.name == "NewScalable" {
						// A Scalable filter does not insert the keys that are
						// false positives when added: its bits hold Len keys.
						want = f.Len()
					}
					rel := (float64(est) - float64(want)) / float64(want)
					t.Logf("n=%d: estimate %d (%+.3f %%)", n, est, 100*rel)
					if math.Abs(rel) > 0.01 {
						t.Errorf("n=%d: EstimatedCount %d is off by %.2f %%", n, est, 100*rel)
					}
				}
			})
		}
	}
}

func TestGetters(t *testing.T) {
	b, _ := bloom.New(1000, bloom.WithFalsePositiveRate(0.01))
	c, _ := bloom.NewClassic(1000, bloom.WithFalsePositiveRate(0.01))
	n, _ := bloom.NewCounting(1000, bloom.WithFalsePositiveRate(0.01))
	if b.Capacity() != 1000 || c.Capacity() != 1000 || n.Capacity() != 1000 {
		t.Error("Capacity")
	}
	if b.HashCount() != 6 || c.HashCount() != 6 || n.HashCount() != 7 {
		t.Errorf("HashCount: blocked %d, classic %d, counting %d; want 6, 6, 7 at 1 %%", b.HashCount(), c.HashCount(), n.HashCount())
	}
	// A counting filter has as many cells as a classic one, to within the
	// 64 cells of a classic table's word: its words hold 16.
	if cellsN, cellsC := n.SizeInBytes()*2, c.SizeInBytes()*8; b.SizeInBytes()%64 != 0 || cellsN+64 < cellsC || cellsC+64 < cellsN {
		t.Errorf("sizes: blocked %d, classic %d, counting %d", b.SizeInBytes(), c.SizeInBytes(), n.SizeInBytes())
	}
	s, _ := bloom.NewScalable(1000, bloom.WithFalsePositiveRate(0.01), bloom.WithGrowth(3))
	if s.Capacity() != 1000 || s.NumTables() != 1 {
		t.Error("Scalable Capacity or NumTables")
	}
	fill(s, 0, 1500)
	if s.Capacity() != 4000 || s.NumTables() != 2 {
		t.Errorf("after growth: Capacity %d, NumTables %d; want 4000, 2", s.Capacity(), s.NumTables())
	}
}
