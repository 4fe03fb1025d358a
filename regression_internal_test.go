package cuckoo

// Regression tests for the findings of the review of the one-engine
// restructuring: a snapshot racing the release of an emptied table, rate
// bounds of small rates, generations at the largest capacity, and a growing
// table past its load.

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/testlong"
)

// regressionKey is a 16-byte key, as the black-box tests' key(0, i).
func regressionKey(i uint64) []byte {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], i)
	binary.LittleEndian.PutUint64(b[8:], 0x1234)
	return b[:]
}

// A delete that empties the oldest sealed table while MarshalBinary copies
// the tables must not make the snapshot undecodable. (Timing-dependent: the
// delete lands between snapshot's dropLeading and its exclusive sections in
// most attempts.) -short, which the race detector runs with, fills tables
// of 20,000 keys instead of 100,000: the detector slows the copy as much
// as the fill.
func TestSnapshotRacesRelease(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	capacity := uint64(100_000)
	if testing.Short() {
		capacity = 20_000
	}
	for attempt := 0; attempt < 12; attempt++ {
		c, err := NewConcurrent(capacity, WithGrowth(16), WithSeed(uint64(attempt)))
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		for c.NumTables() == 1 {
			if err := c.Add(regressionKey(n)); err != nil {
				t.Fatal(err)
			}
			n++
		}
		// Keys 0..n-2 went to the first table; keep only key n-2 there.
		for i := uint64(0); i+2 < n; i++ {
			if !c.Delete(regressionKey(i)) {
				t.Fatalf("delete %d", i)
			}
		}
		if got := c.st.Load().tables[0].Items(); got != 1 {
			t.Fatalf("first table holds %d items", got)
		}
		done := make(chan []byte)
		started := make(chan struct{})
		go func() {
			close(started)
			data, err := c.MarshalBinary()
			if err != nil {
				t.Error(err)
			}
			done <- data
		}()
		<-started
		time.Sleep(time.Duration(attempt%6) * 200 * time.Microsecond)
		if !c.Delete(regressionKey(n - 2)) {
			t.Fatal("delete of the last key of the first table")
		}
		data := <-done
		var s Scalable
		if err := s.UnmarshalBinary(data); err != nil {
			t.Fatalf("attempt %d: the snapshot does not decode: %v", attempt, err)
		}
	}
}

// The tables' rate bounds must add up to at most the bound the user gave
// (Scalable's doc: "the tables' own bounds add up to at most 15/16 of it").
func TestScalableBoundForSmallRates(t *testing.T) {
	for _, b := range []int{2, 4, 8} {
		for _, p := range []float64{1e-3, 1e-5, 1e-6, 1e-7, 1e-8} {
			c, err := resolve([]Option{WithBucketSize(b), WithFalsePositiveRate(p)})
			if err != nil {
				continue
			}
			g, err := newGrowth(1000, c)
			if err != nil {
				continue
			}
			// Chains of up to 10^9 keys in all (about 4 GB of tables).
			it := g.generations()
			sum, total := it.cur.bound, it.cur.capacity
			for total < 1e9 && sum <= budgetShare*g.bound {
				gen := it.next()
				sum += gen.bound
				total += gen.capacity
			}
			if sum > budgetShare*g.bound {
				t.Errorf("b=%d p=%g: f0=%d; the tables' bounds add up to %.3g > 15p/16 (%.3g p) at generation %d, %d keys in all (width %d)",
					b, p, g.f0, sum, sum/p, it.cur.k, total, it.cur.fpBits)
			}
		}
	}
}

// shape's comment says "c <= maxCapacity: always fits".
func TestMaxCapacityFits(t *testing.T) {
	for _, b := range []uint64{2, 4, 8} {
		for _, f := range []uint64{8, 16, 32} {
			g := schedule{slots: b, f0: f, initial: 1000, factor: 2, bound: 0.01}
			if gen := g.shape(7, maxCapacity(b, f), f); gen.numBuckets == 0 {
				t.Errorf("b=%d f=%d: a generation of capacity maxCapacity = %d gets 0 buckets", b, f, gen.capacity)
			}
		}
	}
}

// Operations split a growing table before it passes growLoad (0.8) of its
// current slots; a decoder must refuse a growing table filled past it.
func TestGrowingTableOverCrowdedRefused(t *testing.T) {
	s, _ := NewScalable(40, WithBucketSize(4), WithFingerprintBits(12), WithSeed(42))
	for i := uint64(0); !s.NewestGrowing() || len(s.levels) < 2; i++ {
		s.Add(regressionKey(i))
	}
	g := s.levels[len(s.levels)-1].Grow
	for i := uint64(1 << 20); g.Insert(bytesKey(regressionKey(i)).hash(s.seed), s.maxKicks); i++ {
	}
	if !g.CrowdedPast() {
		t.Fatal("the growing table is not past its load")
	}
	load := float64(g.Occupied) / float64(g.T.NumBuckets*g.T.Slots)
	data, _ := s.MarshalBinary()
	var d Scalable
	if err := d.UnmarshalBinary(data); err == nil {
		t.Errorf("decoder accepted a growing table at load %.2f, past the load an insert splits at, which no operation leaves", load)
	}
}

// A width given for a growing filter always builds one, and the bound it
// gets (twice the width's rate, raised for the widest) is kept to
// maxChainKeys, and when raised, the next smaller step of 1 % is not.
func TestScalableBoundForGivenWidths(t *testing.T) {
	for _, b := range []int{2, 4, 8} {
		for f := MinFingerprintBits; f <= MaxFingerprintBits; f++ {
			c, err := resolve([]Option{WithBucketSize(b), WithFingerprintBits(f)})
			if err != nil {
				t.Fatal(err)
			}
			for _, initial := range []uint64{1, 1000, 1 << 30} {
				g, err := newGrowth(initial, c)
				if err != nil {
					t.Fatalf("b=%d f=%d initial=%d: %v", b, f, initial, err)
				}
				base := 2 * expectedFPR(targetLoad(g.slots, g.f0), g.slots, g.f0)
				if g.bound < base || !g.boundKept() {
					t.Errorf("b=%d f=%d initial=%d: bound %.3g (twice the width's rate: %.3g) not kept", b, f, initial, g.bound, base)
				}
				if g.bound > base {
					tighter := g
					tighter.bound = g.bound / 1.01
					if tighter.boundKept() {
						t.Errorf("b=%d f=%d initial=%d: bound raised to %.3g, but %.3g is kept too", b, f, initial, g.bound, tighter.bound)
					}
				}
			}
		}
	}
}

// WithFalsePositiveRate's doc: a growing filter of 4-slot buckets takes
// 1e-7 from an initial capacity of 100 up, at the default growth or
// faster; the chain keeps it to
// maxChainKeys.
func TestScalableSmallestDocumentedRate(t *testing.T) {
	c, err := resolve([]Option{WithFalsePositiveRate(1e-7)})
	if err != nil {
		t.Fatal(err)
	}
	for _, initial := range []uint64{100, 1000, 262144, 1 << 20, 1 << 30, 1 << 33} {
		for _, factor := range []float64{DefaultGrowth, MaxGrowth} {
			c.growth = factor
			g, err := newGrowth(initial, c)
			if err != nil {
				t.Errorf("initial %d, growth %v: %v", initial, factor, err)
				continue
			}
			if !g.boundKept() {
				t.Errorf("initial %d, growth %v: bound not kept", initial, factor)
			}
		}
	}
}
