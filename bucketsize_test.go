package cuckoo_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/testlong"
)

// The bucket sizes other than 2, 4 and 8, which the general path serves
// (RedisBloom takes 1 to 255): every filter type must keep its promises
// with them.

// oddShapes are bucket sizes and fingerprint widths on each side of the
// word boundaries of the general path: one slot, buckets of less than a
// word, of one word exactly (16 × 4), of several words, of 255 slots.
var oddShapes = []struct{ b, f int }{
	{1, 16}, {1, 20}, {1, 32}, {3, 4}, {3, 12}, {3, 16}, {3, 21}, {5, 8}, {5, 13}, {6, 16}, {7, 9},
	{9, 7}, {12, 16}, {15, 4}, {16, 4}, {16, 8}, {17, 16}, {31, 32}, {64, 8}, {100, 12}, {255, 16}, {255, 32},
}

// TestAnyBucketSize: a Filter of any bucket size holds its capacity of
// distinct keys, finds each, counts copies, deletes, and round-trips
// through its encoding to the same bytes. Filters of 3,000 keys; of
// 1,000 under the race detector, which compiles in the invariant checks:
// they walk the whole table after every operation.
func TestAnyBucketSize(t *testing.T) {
	n := uint64(size(3000, 3000, 1000))
	for _, sh := range oddShapes {
		t.Run(fmt.Sprintf("b=%d/f=%d", sh.b, sh.f), func(t *testing.T) {
			f, err := cuckoo.New(n, cuckoo.WithBucketSize(sh.b), cuckoo.WithFingerprintBits(sh.f), cuckoo.WithSeed(uint64(sh.b*100+sh.f)))
			if err != nil {
				t.Fatal(err)
			}
			if f.BucketSize() != sh.b || f.FingerprintBits() != sh.f {
				t.Fatalf("shape %d × %d", f.BucketSize(), f.FingerprintBits())
			}
			for i := range uint64(n) {
				if err := f.Add(key(0, i)); err != nil {
					t.Fatalf("key %d of %d refused: %v", i, n, err)
				}
			}
			for range 5 {
				f.AddString("hot")
			}
			if got := f.CountString("hot"); got < 5 {
				t.Fatalf("Count of a key added 5 times: %d", got)
			}
			for i := range uint64(n) {
				if !f.Contains(key(0, i)) {
					t.Fatalf("key %d lost", i)
				}
			}
			for i := uint64(0); i < n; i += 2 {
				if !f.Delete(key(0, i)) {
					t.Fatalf("Delete of key %d failed", i)
				}
			}
			for i := uint64(1); i < n; i += 2 {
				if !f.Contains(key(0, i)) {
					t.Fatalf("key %d lost after the deletes", i)
				}
			}
			if err := f.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
			data := mustMarshal(t, f)
			var g cuckoo.Filter
			if err := g.UnmarshalBinary(data); err != nil {
				t.Fatal(err)
			}
			if again := mustMarshal(t, &g); !bytes.Equal(again, data) {
				t.Fatal("decoded filter re-encodes differently")
			}
			for i := uint64(1); i < n; i += 2 {
				if !g.Contains(key(0, i)) {
					t.Fatalf("key %d lost in the round trip", i)
				}
			}
		})
	}
}

// TestAnyBucketSizeRate: the false-positive rate of odd bucket sizes at
// capacity is the one expectedFPR gives (FalsePositiveRate), within 5σ,
// over at least 100/rate probes.
func TestAnyBucketSizeRate(t *testing.T) {
	t.Parallel()
	testlong.SkipUnderRace(t)
	for _, sh := range []struct{ b, f int }{{1, 16}, {3, 8}, {5, 10}, {16, 12}} {
		n := uint64(20_000)
		f, err := cuckoo.New(n, cuckoo.WithBucketSize(sh.b), cuckoo.WithFingerprintBits(sh.f), cuckoo.WithSeed(7))
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := f.Add(key(0, i)); err != nil {
				t.Fatal(err)
			}
		}
		p := f.FalsePositiveRate()
		probes := uint64(max(200_000, 100/p))
		fp := 0
		for i := range probes {
			if f.Contains(key(1, i)) {
				fp++
			}
		}
		bound := p*float64(probes) + 5*math.Sqrt(p*(1-p)*float64(probes))
		t.Logf("b=%d f=%d: %d false positives in %d probes, expected %.0f", sh.b, sh.f, fp, probes, p*float64(probes))
		if float64(fp) > bound {
			t.Errorf("b=%d f=%d: %d false positives in %d probes, more than %.0f", sh.b, sh.f, fp, probes, bound)
		}
	}
}

// TestAnyBucketSizeScalable: a Scalable of any bucket size grows past
// many tables without losing a key, and round-trips: 30,000 keys from
// 100; under the race detector (which compiles in the invariant checks,
// slow for buckets of hundreds of slots) 3,000 from 10, and buckets of up
// to 16 slots.
func TestAnyBucketSizeScalable(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	for _, b := range []int{1, 3, 5, 16, 100, 255} {
		t.Run(fmt.Sprint("b=", b), func(t *testing.T) {
			if b > 16 {
				// Tables of 3,000 keys have one or two buckets of this size.
				testlong.SkipUnderRace(t)
			}
			s, err := cuckoo.NewScalable(uint64(size(100, 100, 10)), cuckoo.WithBucketSize(b), cuckoo.WithSeed(uint64(b)))
			if err != nil {
				t.Fatal(err)
			}
			n := uint64(size(30_000, 30_000, 3_000))
			for i := range n {
				if err := s.Add(key(0, i)); err != nil {
					t.Fatalf("key %d refused: %v", i, err)
				}
			}
			if s.NumTables() < 3 || s.BucketSize() != b {
				t.Fatalf("%d tables of %d-slot buckets", s.NumTables(), s.BucketSize())
			}
			for i := uint64(0); i < n; i += 3 {
				if !s.Delete(key(0, i)) {
					t.Fatalf("Delete of key %d failed", i)
				}
			}
			if err := s.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
			data, err := s.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var g cuckoo.Scalable
			if err := g.UnmarshalBinary(data); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if i%3 != 0 && !g.Contains(key(0, i)) {
					t.Fatalf("key %d lost", i)
				}
			}
		})
	}
}

// TestAnyBucketSizeConcurrent: a Concurrent of an odd bucket size, fixed
// and growing, written by several goroutines, holds every key.
func TestAnyBucketSizeConcurrent(t *testing.T) {
	for _, b := range []int{1, 3, 16} {
		for _, growing := range []bool{false, true} {
			opts := []cuckoo.Option{cuckoo.WithBucketSize(b), cuckoo.WithSeed(3)}
			if growing {
				opts = append(opts, cuckoo.WithGrowth(2))
			}
			c, err := cuckoo.NewConcurrent(2000, opts...)
			if err != nil {
				t.Fatal(err)
			}
			const workers, each = 4, 500
			var wg sync.WaitGroup
			for w := range uint64(workers) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range uint64(each) {
						if err := c.Add(key(w, i)); err != nil {
							t.Errorf("b=%d: %v", b, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			for w := range uint64(workers) {
				for i := range uint64(each) {
					if !c.Contains(key(w, i)) {
						t.Fatalf("b=%d growing=%v: key %d/%d lost", b, growing, w, i)
					}
				}
			}
		}
	}
}

// TestOneSlotNeedsWideFingerprints: 1-slot buckets take fingerprints of
// 16 bits or more (narrower ones fill a few percent to a third of the
// slots), and a rate picks at least 16.
func TestOneSlotNeedsWideFingerprints(t *testing.T) {
	if _, err := cuckoo.New(100, cuckoo.WithBucketSize(1), cuckoo.WithFingerprintBits(15)); !errors.Is(err, cuckoo.ErrInvalidParameter) {
		t.Fatalf("1 × 15: %v", err)
	}
	f, err := cuckoo.New(100, cuckoo.WithBucketSize(1), cuckoo.WithFalsePositiveRate(0.1))
	if err != nil || f.FingerprintBits() != 16 {
		t.Fatalf("1 slot at 10 %%: %v bits, %v", f.FingerprintBits(), err)
	}
}

// TestBucketCapacityHolds is TestNewHoldsItsCapacityAtEverySeed for the odd bucket
// sizes: New(n) has room for n distinct keys for n from 1 to 1000, for
// many seeds (20,000 with CUCKOO_LONG=1, 300 otherwise; a tenth of that
// for n = 1000).
func TestBucketCapacityHolds(t *testing.T) {
	t.Parallel()
	testlong.SkipUnderRace(t)
	seeds := uint64(300)
	if testlong.Enabled() {
		seeds = 20_000
	}
	shapes := []struct{ b, f int }{{1, 16}, {1, 32}, {3, 6}, {3, 16}, {5, 16}, {6, 8}, {7, 16}, {9, 16}, {16, 8}, {64, 16}, {255, 16}}
	ns := []uint64{1, 2, 3, 7, 100, 1000}
	if testing.Short() {
		ns = ns[:5]
	}
	checkCapacityHolds(t, shapes, ns, seeds)
}

// TestGoldenOddBuckets decodes the committed encodings of filters of odd
// bucket sizes (format version 1, which takes any size from 1 to 255):
// decoders read them forever. Regenerate with -update only for a new
// format version.
func TestGoldenOddBuckets(t *testing.T) {
	for _, tc := range []struct {
		file    string
		b, bits int
	}{{"filter-v1-b1-f16.bin", 1, 16}, {"filter-v1-b3-f12.bin", 3, 12}, {"filter-v1-b16-f8.bin", 16, 8}} {
		path := filepath.Join("testdata", tc.file)
		if *update {
			if err := os.WriteFile(path, mustMarshal(t, sample(t, tc.b, tc.bits)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		g := checkGoldenFilter(t, tc.file, data)
		if g.BucketSize() != tc.b || g.FingerprintBits() != tc.bits {
			t.Fatalf("%s: %d × %d", tc.file, g.BucketSize(), g.FingerprintBits())
		}
	}
	// A Scalable of 3-slot buckets, encoded by format version 1.
	path := filepath.Join("testdata", "scalable-v1-b3-f12.bin")
	if *update {
		s := sampleScalable(t, layout{b: 3}, 12)
		data, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s cuckoo.Scalable
	if err := s.UnmarshalBinary(data); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for i := uint64(0); i < 300; i++ {
		if !s.Contains(key(0, i)) {
			t.Fatalf("%s: key %d missing", path, i)
		}
	}
}

// FuzzBucketSize runs random operations on filters of any bucket size
// against a model multiset.
func FuzzBucketSize(f *testing.F) {
	f.Add(uint8(1), uint8(16), []byte{0, 1, 2, 3, 0x40, 0x41, 0x80, 0x81, 0xc0})
	f.Add(uint8(3), uint8(4), bytes.Repeat([]byte{0, 0x80, 7}, 50))
	f.Add(uint8(255), uint8(32), []byte("the quick brown fox jumps over the lazy dog"))
	f.Add(uint8(16), uint8(4), bytes.Repeat([]byte{1, 2, 3, 0xc1}, 40))
	f.Fuzz(func(t *testing.T, b, bits uint8, ops []byte) {
		slots := max(int(b), 1)
		fb := 4 + int(bits)%29
		if slots == 1 {
			fb = max(fb, 16)
		}
		fl, err := cuckoo.New(16, cuckoo.WithBucketSize(slots), cuckoo.WithFingerprintBits(fb), cuckoo.WithSeed(uint64(bits)))
		if err != nil {
			t.Fatal(err)
		}
		applyOps(t, fl, ops)
	})
}
