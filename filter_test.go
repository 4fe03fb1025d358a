package cuckoo_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/addr"
	"github.com/dedupkit/cuckoo/internal/invariants"
	"github.com/dedupkit/cuckoo/internal/testlong"
)

func TestNewRejectsInvalidParameters(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capacity uint64
		opts     []cuckoo.Option
	}{
		{"capacity=0", 0, nil},
		{"bucket=-1", 100, []cuckoo.Option{cuckoo.WithBucketSize(-1)}},
		{"bucket=0", 100, []cuckoo.Option{cuckoo.WithBucketSize(0)}},
		{"bucket=256", 100, []cuckoo.Option{cuckoo.WithBucketSize(256)}},
		{"bits=0", 100, []cuckoo.Option{cuckoo.WithFingerprintBits(0)}},
		{"bits=3", 100, []cuckoo.Option{cuckoo.WithFingerprintBits(3)}},
		{"bits=33", 100, []cuckoo.Option{cuckoo.WithFingerprintBits(33)}},
		{"fpr=0", 100, []cuckoo.Option{cuckoo.WithFalsePositiveRate(0)}},
		{"fpr=1", 100, []cuckoo.Option{cuckoo.WithFalsePositiveRate(1)}},
		{"fpr=-0.1", 100, []cuckoo.Option{cuckoo.WithFalsePositiveRate(-0.1)}},
		{"fpr=NaN", 100, []cuckoo.Option{cuckoo.WithFalsePositiveRate(math.NaN())}},
		{"fpr=1e-12", 100, []cuckoo.Option{cuckoo.WithFalsePositiveRate(1e-12)}},
		{"bits+fpr", 100, []cuckoo.Option{cuckoo.WithFingerprintBits(8), cuckoo.WithFalsePositiveRate(0.01)}},
		{"kicks=0", 100, []cuckoo.Option{cuckoo.WithMaxKicks(0)}},
		{"kicks=-1", 100, []cuckoo.Option{cuckoo.WithMaxKicks(-1)}},
		{"capacity=2^40", 1 << 40, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := cuckoo.New(tc.capacity, tc.opts...)
			if err == nil || f != nil {
				t.Fatalf("New = %v, %v; want an error and no filter", f, err)
			}
			if !errors.Is(err, cuckoo.ErrInvalidParameter) {
				t.Fatalf("error %q does not wrap ErrInvalidParameter", err)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	f, err := cuckoo.New(1000)
	if err != nil {
		t.Fatal(err)
	}
	if f.BucketSize() != 4 || f.FingerprintBits() != 16 || f.MaxKicks() != 500 {
		t.Fatalf("defaults: %v f=%d kicks=%d", f.BucketSize(), f.FingerprintBits(), f.MaxKicks())
	}
	if f.Capacity() != 1000 || f.Len() != 0 || f.LoadFactor() != 0 || f.FalsePositiveRate() != 0 {
		t.Fatalf("new filter: capacity %d len %d load %v fpr %v", f.Capacity(), f.Len(), f.LoadFactor(), f.FalsePositiveRate())
	}
	g, _ := cuckoo.New(1000)
	if f.Seed() == g.Seed() {
		t.Fatal("two filters drew the same random seed")
	}
}

func TestFalsePositiveRateOption(t *testing.T) {
	for _, tc := range []struct {
		p    float64
		b    int
		want int
	}{
		{0.03, 4, 8}, {0.01, 4, 10}, {0.001, 4, 13}, {0.0002, 4, 16}, {0.0001, 4, 17},
		{0.5, 4, 4}, {0.01, 2, 9}, {0.01, 8, 11},
	} {
		f, err := cuckoo.New(1000, cuckoo.WithFalsePositiveRate(tc.p), cuckoo.WithBucketSize(tc.b))
		if err != nil {
			t.Fatal(err)
		}
		if f.FingerprintBits() != tc.want {
			t.Errorf("p=%v b=%d: %d bits, want %d", tc.p, tc.b, f.FingerprintBits(), tc.want)
		}
		// The chosen width meets p at the target load and the one below does not.
		fb := f.FingerprintBits()
		if r := cuckoo.ExpectedFPR(cuckoo.TargetLoad(tc.b, fb), tc.b, fb); r > tc.p {
			t.Errorf("p=%v: chosen width gives %v", tc.p, r)
		}
		if fb > 4 && cuckoo.ExpectedFPR(cuckoo.TargetLoad(tc.b, fb-1), tc.b, fb-1) <= tc.p {
			t.Errorf("p=%v: %d bits would do", tc.p, fb-1)
		}
	}
}

// TestReliableCapacity checks the capacities New refuses for 2-slot
// buckets of 4- and 5-bit fingerprints, whose first failures fall as the
// table grows (see reliableCapacity), per table or segment; that a rate
// asked for is met with wider fingerprints there instead; and that
// growing filters, which add a table when one fills, take any capacity.
func TestReliableCapacity(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		bits  int
		limit uint64
	}{{4, 1 << 27}, {5, 1 << 28}} {
		opts := []cuckoo.Option{cuckoo.WithBucketSize(2), cuckoo.WithFingerprintBits(tc.bits)}
		if _, err := cuckoo.NewPlan(tc.limit, opts...); err != nil {
			t.Errorf("f=%d, capacity %d: %v", tc.bits, tc.limit, err)
		}
		if _, err := cuckoo.NewPlan(tc.limit+1, opts...); !errors.Is(err, cuckoo.ErrInvalidParameter) {
			t.Errorf("f=%d, capacity %d: err = %v, want ErrInvalidParameter", tc.bits, tc.limit+1, err)
		}
		// 64 segments share the capacity: each holds about a 64th.
		if _, err := cuckoo.NewPlan(tc.limit*8, append(opts, cuckoo.WithSegments(64))...); err != nil {
			t.Errorf("f=%d, capacity %d in 64 segments: %v", tc.bits, tc.limit*8, err)
		}
	}
	// 4-slot buckets have no such limit.
	if _, err := cuckoo.NewPlan(1<<33, cuckoo.WithFingerprintBits(4)); err != nil {
		t.Error(err)
	}
	// 0.09 takes 4-bit fingerprints in 2-slot buckets where they are reliable.
	for _, tc := range []struct {
		capacity uint64
		want     int
	}{{1 << 27, 4}, {1<<27 + 1, 5}, {1<<28 + 1, 6}} {
		p, err := cuckoo.NewPlan(tc.capacity, cuckoo.WithBucketSize(2), cuckoo.WithFalsePositiveRate(0.09))
		if err != nil {
			t.Fatal(err)
		}
		if p.FingerprintBits != tc.want || p.FalsePositiveRate > 0.09 {
			t.Errorf("capacity %d at 0.09: %d bits (rate %v), want %d", tc.capacity, p.FingerprintBits, p.FalsePositiveRate, tc.want)
		}
	}
	if testing.Short() || testlong.RaceEnabled {
		return
	}
	s, err := cuckoo.NewScalable(1<<27+1, cuckoo.WithBucketSize(2), cuckoo.WithFingerprintBits(4))
	if err != nil {
		t.Fatalf("NewScalable past the limit: %v", err)
	}
	if err := s.AddString("a"); err != nil || !s.ContainsString("a") {
		t.Fatalf("Scalable past the limit: Add %v", err)
	}
}

// TestMemoryIsPacked checks issue 2's sizing promise: the table is within
// 10% of capacity × f / 8 bytes for 4-slot buckets with f >= 7 and 8-slot
// buckets with f >= 5, for capacities that are not powers of two, and
// exactly capacity × f / load otherwise, the load being the target load
// less the small-table margin (bucketsFor). (2-slot buckets fill to
// about 0.87 at most, and the smallest fingerprints fill 4- and 8-slot
// buckets to 0.84 and 0.91 at worst, so those shapes cannot be within 10%;
// see targetLoad.)
func TestMemoryIsPacked(t *testing.T) {
	t.Parallel()
	for _, l := range layouts {
		b := l.b
		for _, bits := range []int{4, 5, 6, 8, 9, 12, 13, 16, 17, 24, 31, 32} {
			for _, n := range []uint64{1000, 4097, 65535, 65537, 100_003, 1_100_000, 3_000_017} {
				f, err := cuckoo.New(n, l.opts(bits)...)
				if err != nil {
					t.Fatal(err)
				}
				ideal := float64(n) * float64(l.slotBits(bits)) / 8
				limit := 1 / (cuckoo.TargetLoad(b, bits) * cuckoo.SmallTableMargin(n, b)) * 1.005
				if b == 8 && bits >= 5 || b == 4 && bits >= 7 {
					limit = min(limit, 1.10)
				}
				slack := float64(16 + 2*b*bits/8) // the padding word, and rounding to an even bucket count
				if got := float64(f.TableBytes()); got > ideal*limit+slack || got < ideal {
					t.Errorf("%v f=%d n=%d: table %0.f bytes, ideal %0.f (ratio %.3f)", l, bits, n, got, ideal, got/ideal)
				}
			}
		}
	}
	// The example of the issue: 1.1 million 12-bit items take about 1.7 MB.
	f, _ := cuckoo.New(1_100_000, cuckoo.WithFingerprintBits(12))
	if s := f.SizeInBytes(); s > 1_800_000 {
		t.Errorf("1.1M 12-bit items: %d bytes", s)
	}
}

// TestCapacityFits adds exactly capacity distinct keys to filters of many
// shapes and sizes, boundaries included: none may fail, all must be found.
// The long checks (CUCKOO_LONG=1) add filters of 1,000,003 keys, and fill
// those of 65,536 keys and more at three seeds (the quick run, at one, and
// those of 100,001 keys only at f = 12 and 13, like the larger ones).
func TestCapacityFits(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	sizes := []uint64{1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 100, 1000, 4099}
	if !testlong.RaceEnabled {
		sizes = append(sizes, 65536, 100_001)
	}
	if longRun() {
		sizes = append(sizes, 1_000_003)
	}
	for _, l := range layouts {
		b := l
		for _, bits := range []int{4, 7, 8, 12, 13, 16, 20, 32} {
			for _, n := range sizes {
				if (n > 100_001 || n == 100_001 && !longRun()) && bits != 12 && bits != 13 {
					continue
				}
				seeds := uint64(3)
				if n >= 65536 && !longRun() {
					seeds = 1
				}
				for seed := uint64(1); seed <= seeds; seed++ {
					f, err := cuckoo.New(n, l.opts(bits, cuckoo.WithSeed(seed))...)
					if err != nil {
						t.Fatal(err)
					}
					for i := uint64(0); i < n; i++ {
						if err := f.Add(key(0, i)); err != nil {
							t.Fatalf("%v f=%d n=%d seed=%d: Add #%d: %v (load %.3f)", b, bits, n, seed, i, err, f.LoadFactor())
						}
					}
					for i := uint64(0); i < n; i++ {
						if !f.Contains(key(0, i)) {
							t.Fatalf("%v f=%d n=%d: key %d lost", b, bits, n, i)
						}
					}
					if f.Len() != n {
						t.Fatalf("Len = %d, want %d", f.Len(), n)
					}
				}
			}
		}
	}
}

// TestCapacityFitsSpreadOffsets fills to capacity tables whose least
// bucket count (the count New planned before it checked the offsets, see
// internal/addr.Spread) does not spread: with that count, seed 2 of the
// first case stops at load 0.880, below the 0.89 planned. The tables of
// more than 10^6 keys are filled in the long checks (CUCKOO_LONG=1).
func TestCapacityFitsSpreadOffsets(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	cases := []struct {
		l    layout
		bits int
		n    uint64
	}{
		{layouts[1], 5, 452_024}, {layouts[1], 5, 513_995}, {layouts[3], 5, 452_024},
		{layouts[1], 5, 1_633_556}, {layouts[1], 4, 4_257_279},
	}
	for _, tc := range cases {
		p, err := cuckoo.NewPlan(tc.n, tc.l.opts(tc.bits)...)
		if err != nil {
			t.Fatal(err)
		}
		if least := leastBuckets(t, tc.n, tc.l.opts(tc.bits)...); addr.Spread(least) || !addr.Spread(p.NumBuckets) {
			t.Fatalf("%v f=%d n=%d: least count %d spreads or planned %d does not", tc.l, tc.bits, tc.n, least, p.NumBuckets)
		}
	}
	// Invariant checks after every insert walk the duplicate counters,
	// which 5-bit fingerprints fill: too slow for this many inserts.
	if testlong.RaceEnabled || invariants.Enabled {
		return
	}
	for _, tc := range cases {
		if !longRun() && tc.n > 1_000_000 {
			continue
		}
		for seed := uint64(1); seed <= 3; seed++ {
			f, err := cuckoo.New(tc.n, tc.l.opts(tc.bits, cuckoo.WithSeed(seed))...)
			if err != nil {
				t.Fatal(err)
			}
			for i := uint64(0); i < tc.n; i++ {
				if err := f.Add(key(1, i)); err != nil {
					t.Fatalf("%v f=%d n=%d seed=%d: Add #%d: %v (load %.4f)", tc.l, tc.bits, tc.n, seed, i, err, f.LoadFactor())
				}
			}
		}
	}
}

// TestFirstFailureLoad fills distinct keys until the first ErrFull and
// checks the load reached: at least 0.80, 0.93 and 0.96 for 2-, 4- and
// 8-slot buckets (issue 2). Measured here at 10^6 keys (the long checks,
// CUCKOO_LONG=1; 10^5 otherwise): about 0.87, 0.96, 0.989.
func TestFirstFailureLoad(t *testing.T) {
	t.Parallel()
	testlong.SkipUnderRace(t)
	n := uint64(sized(1_000_000, 100_000, 100_000, 100_000))
	for _, tc := range []struct {
		l    layout
		want float64
	}{{layouts[0], 0.80}, {layouts[1], 0.93}, {layouts[2], 0.96}, {layouts[3], 0.93}} {
		t.Run(tc.l.String(), func(t *testing.T) {
			f, _ := cuckoo.New(n, tc.l.opts(12, cuckoo.WithSeed(7))...)
			for i := uint64(0); ; i++ {
				if err := f.Add(key(0, i)); err != nil {
					if !errors.Is(err, cuckoo.ErrFull) {
						t.Fatal(err)
					}
					break
				}
			}
			t.Logf("first ErrFull at load %.4f", f.LoadFactor())
			if f.LoadFactor() < tc.want {
				t.Fatalf("first ErrFull at load %.4f, want >= %.2f", f.LoadFactor(), tc.want)
			}
		})
	}
}

// TestOverfillLosesNothing adds twice the capacity: every key whose Add
// returned nil must still be found, every failed Add must leave the filter
// byte for byte as it was, and Len must count the successes. Filters of
// 3,000 keys in the long checks (CUCKOO_LONG=1), of 1,000 otherwise: each
// failed Add walks its whole kick path and back.
func TestOverfillLosesNothing(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	for _, l := range layouts {
		for _, bits := range []int{6, 12} {
			t.Run(fmt.Sprintf("%v/f=%d", l, bits), func(t *testing.T) {
				n := uint64(sized(3000, 1000, 1000, 1000))
				f, _ := cuckoo.New(n, l.opts(bits, cuckoo.WithSeed(uint64(l.b*100+bits)))...)
				var ok []uint64
				fails := 0
				for i := uint64(0); i < 2*n; i++ {
					var before []byte
					if fails < 200 { // comparing bytes is slow: check the first failures
						before, _ = f.MarshalBinary()
					}
					err := f.Add(key(0, i))
					switch {
					case err == nil:
						ok = append(ok, i)
					case errors.Is(err, cuckoo.ErrFull):
						if before != nil {
							if after, _ := f.MarshalBinary(); !bytes.Equal(before, after) {
								t.Fatalf("failed Add #%d changed the filter", i)
							}
						}
						fails++
					default:
						t.Fatal(err)
					}
				}
				if fails == 0 {
					t.Fatal("over-filling never failed")
				}
				for _, i := range ok {
					if !f.Contains(key(0, i)) {
						t.Fatalf("key %d, added successfully, is missing after %d failed inserts", i, fails)
					}
				}
				if f.Len() != uint64(len(ok)) {
					t.Fatalf("Len = %d, want %d", f.Len(), len(ok))
				}
				if err := f.CheckInvariants(); err != nil {
					t.Fatal(err)
				}
				t.Logf("%d added, %d refused, load %.3f", len(ok), fails, f.LoadFactor())
			})
		}
	}
}

// TestDuplicatesWithoutLimit: one key added 100,000 times, then deleted as
// many times, in filters too small to hold that many slots (10,000 times
// under the race detector, which compiles in the invariant checks after
// every operation).
func TestDuplicatesWithoutLimit(t *testing.T) {
	copies := size(100_000, 100_000, 10_000)
	for _, b := range layouts {
		f, _ := cuckoo.New(100, b.opts(16, cuckoo.WithSeed(1))...)
		hot := []byte("hot key")
		f.Add(hot)
		f.Add(hot)
		sizeWithTwo := f.SizeInBytes()
		for i := 2; i < copies; i++ {
			if err := f.Add(hot); err != nil {
				t.Fatalf("%v: Add #%d of one key: %v", b, i, err)
			}
		}
		if c := f.Count(hot); c != uint64(copies) {
			t.Fatalf("%v: Count = %d, want %d", b, c, copies)
		}
		if f.Len() != uint64(copies) {
			t.Fatalf("%v: Len = %d", b, f.Len())
		}
		if grew := f.SizeInBytes() - sizeWithTwo; grew > 64 {
			t.Fatalf("%v: %d more copies of one key took %d bytes", b, copies-2, grew)
		}
		// The hot key takes two slots: the rest of the capacity still fits.
		for i := uint64(0); i < 98; i++ {
			if err := f.Add(key(0, i)); err != nil {
				t.Fatalf("%v: distinct key %d after the hot key: %v", b, i, err)
			}
		}
		for i := 0; i < copies; i++ {
			if !f.Contains(hot) {
				t.Fatalf("%v: hot key absent with %d copies left", b, copies-i)
			}
			if !f.Delete(hot) {
				t.Fatalf("%v: Delete #%d failed", b, i)
			}
		}
		if f.Contains(hot) || f.Count(hot) != 0 || f.Delete(hot) {
			t.Fatalf("%v: hot key still present after %d deletes", b, copies)
		}
		for i := uint64(0); i < 98; i++ {
			if !f.Contains(key(0, i)) {
				t.Fatalf("%v: key %d lost", b, i)
			}
		}
		if f.Len() != 98 {
			t.Fatalf("%v: Len = %d, want 98", b, f.Len())
		}
		if err := f.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFalsePositiveRate measures the rate over absent keys at full load
// and compares it with theory, for f = 8, 12, 16 and b = 2, 4, 8.
//
// Bounds: with N probes and expected rate p the count is binomial, sigma =
// sqrt(p(1-p)/N). The measured rate must lie within expected ± 5 sigma, and
// (issue 2) at most 10% above 2·b·load/(2^f−1). N is chosen so that 5 sigma
// is under 5% of the rate, which keeps the second bound meaningful. That
// is a long check (CUCKOO_LONG=1): the quick run and -short fill 200,000
// keys, probe fewer (at least 250,000 instead of 10^6; 5 sigma is then
// about 35% of the rate) and check the 5-sigma band only. It does not run
// under the race detector.
// The filters' seeds are fixed: the outcome is the same on every run.
func TestFalsePositiveRate(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	testlong.SkipUnderRace(t)
	quick := !longRun()
	n := uint64(sized(1_000_000, 200_000, 200_000, 50_000))
	for _, l := range layouts {
		b := l.b
		for _, bits := range []int{8, 12, 13, 16} {
			if bits == 13 && !l.semi {
				continue
			}
			t.Run(fmt.Sprintf("f=%d/%v", bits, l), func(t *testing.T) {
				f, _ := cuckoo.New(n, l.opts(bits, cuckoo.WithSeed(uint64(bits*10+b)))...)
				for i := uint64(0); i < n; i++ {
					if err := f.Add(key(0, i)); err != nil {
						t.Fatal(err)
					}
				}
				load := f.LoadFactor()
				expected := f.FalsePositiveRate()
				theory := 2 * float64(b) * load / (math.Exp2(float64(bits)) - 1)
				probes := uint64(math.Ceil(10000 / expected)) // 5 sigma ~ 5% of the rate
				if quick {
					probes = uint64(math.Ceil(200 / expected))
				}
				probes = max(probes, uint64(sized(1_000_000, 250_000, 250_000, 250_000)))
				hits := 0
				for i := uint64(0); i < probes; i++ {
					if f.Contains(key(1, i)) {
						hits++
					}
				}
				got := float64(hits) / float64(probes)
				sigma := math.Sqrt(expected * (1 - expected) / float64(probes))
				t.Logf("load %.4f: measured %.3g over %d probes, expected %.3g, 2bα/(2^f-1) = %.3g", load, got, probes, expected, theory)
				if math.Abs(got-expected) > 5*sigma {
					t.Errorf("measured %.4g, expected %.4g ± %.2g (5 sigma)", got, expected, 5*sigma)
				}
				if !quick && got > 1.10*theory {
					t.Errorf("measured %.4g is more than 10%% above %.4g", got, theory)
				}
			})
		}
	}
}

func TestStringAndHashVariants(t *testing.T) {
	f, _ := cuckoo.New(1000, cuckoo.WithSeed(3))
	g, _ := cuckoo.New(1000, cuckoo.WithSeed(3))
	for i := uint64(0); i < 500; i++ {
		k := key(0, i)
		if err := f.Add(k); err != nil {
			t.Fatal(err)
		}
		if err := g.AddString(string(k)); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := f.MarshalBinary()
	b, _ := g.MarshalBinary()
	if !bytes.Equal(a, b) {
		t.Fatal("AddString and Add build different filters")
	}
	// The seeds are fixed, and with them no two of the 500 keys share a
	// fingerprint and a bucket: each key's count is exactly 1.
	for i := uint64(0); i < 500; i++ {
		s := string(key(0, i))
		if !g.ContainsString(s) || g.CountString(s) != 1 {
			t.Fatalf("string key %d: contains %v count %d", i, g.ContainsString(s), g.CountString(s))
		}
		if added, err := g.AddUniqueString(s); added || err != nil {
			t.Fatalf("AddUniqueString of a present key = %v, %v", added, err)
		}
		if !g.DeleteString(s) || g.ContainsString(s) && g.CountString(s) == 0 {
			t.Fatalf("DeleteString %d", i)
		}
	}
	if g.Len() != 0 {
		t.Fatalf("Len = %d after deleting all", g.Len())
	}
	u, _ := cuckoo.New(1000, cuckoo.WithSeed(3))
	for v := uint64(0); v < 500; v++ {
		if err := u.AddUint64(v); err != nil {
			t.Fatal(err)
		}
		if !u.Contains(binary.LittleEndian.AppendUint64(nil, v)) {
			t.Fatalf("AddUint64(%d) is not Add of its little-endian bytes", v)
		}
	}
	for v := uint64(0); v < 500; v++ {
		if !u.ContainsUint64(v) || u.CountUint64(v) != 1 || !u.DeleteUint64(v) {
			t.Fatalf("integer key %d", v)
		}
	}
	if u.Len() != 0 {
		t.Fatal("integer keys left behind")
	}
	h, _ := cuckoo.New(1000)
	for v := uint64(0); v < 500; v++ {
		if err := h.AddHash(v * 0x9e3779b97f4a7c15); err != nil {
			t.Fatal(err)
		}
	}
	for v := uint64(0); v < 500; v++ {
		if !h.ContainsHash(v*0x9e3779b97f4a7c15) || h.CountHash(v*0x9e3779b97f4a7c15) == 0 {
			t.Fatalf("hash %d missing", v)
		}
	}
	for v := uint64(0); v < 500; v++ {
		if !h.DeleteHash(v * 0x9e3779b97f4a7c15) {
			t.Fatalf("DeleteHash %d", v)
		}
	}
	if h.Len() != 0 {
		t.Fatal("hash keys left behind")
	}
}

func TestAddUnique(t *testing.T) {
	f, _ := cuckoo.New(1000, cuckoo.WithSeed(4))
	for i := uint64(0); i < 100; i++ {
		added, err := f.AddUnique(key(0, i))
		if err != nil || !added {
			t.Fatalf("first AddUnique of %d = %v, %v", i, added, err)
		}
		added, err = f.AddUnique(key(0, i))
		if err != nil || added {
			t.Fatalf("second AddUnique of %d = %v, %v", i, added, err)
		}
	}
	if f.Len() != 100 {
		t.Fatalf("Len = %d", f.Len())
	}
}

func TestReset(t *testing.T) {
	f, _ := cuckoo.New(1000, cuckoo.WithSeed(5))
	empty, _ := f.MarshalBinary()
	for i := uint64(0); i < 900; i++ {
		f.Add(key(0, i%300))
	}
	f.Reset()
	if f.Len() != 0 || f.LoadFactor() != 0 || f.Contains(key(0, 1)) {
		t.Fatal("Reset left items behind")
	}
	if after, _ := f.MarshalBinary(); !bytes.Equal(empty, after) {
		t.Fatal("a reset filter encodes differently from a new one")
	}
}

func TestZeroFilter(t *testing.T) {
	var f cuckoo.Filter
	if err := f.Add([]byte("x")); !errors.Is(err, cuckoo.ErrUninitialized) {
		t.Fatalf("Add on the zero Filter: %v", err)
	}
	if f.Contains([]byte("x")) || f.Delete([]byte("x")) || f.Count([]byte("x")) != 0 || f.Len() != 0 ||
		f.LoadFactor() != 0 || f.FalsePositiveRate() != 0 || f.Capacity() != 0 {
		t.Fatal("the zero Filter is not empty")
	}
	if _, err := f.MarshalBinary(); err == nil {
		t.Fatal("the zero Filter encoded")
	}
	f.Reset()
}

func TestNoAllocations(t *testing.T) {
	for _, shape := range []struct {
		l    layout
		bits int
	}{{layouts[1], 16}, {layouts[1], 8}, {layouts[1], 12}, {layouts[0], 16}, {layouts[2], 8}, {layouts[1], 20}, {layouts[2], 32}, {layouts[3], 13}, {layouts[3], 24}} {
		f, _ := cuckoo.New(10000, shape.l.opts(shape.bits)...)
		k := []byte("https://example.com/a/key")
		s := string(k)
		i := uint64(0)
		allocs := testing.AllocsPerRun(1000, func() {
			i++
			f.Add(key(0, i%5000))
			f.AddString(s)
			f.Contains(k)
			f.ContainsString(s)
			f.Count(k)
			f.Delete(key(0, i%5000))
			f.DeleteString(s)
			f.AddHash(i * 0x9e3779b97f4a7c15)
			f.ContainsHash(i)
			f.DeleteHash(i * 0x9e3779b97f4a7c15)
			f.AddUint64(i)
			f.ContainsUint64(i)
			f.CountUint64(i)
			f.DeleteUint64(i)
		})
		if allocs != 0 {
			t.Errorf("%v f=%d: %v allocations per run", shape.l, shape.bits, allocs)
		}
	}
}

// TestEveryShape runs a small add/find/delete cycle through every
// fingerprint width and bucket size: each side of every lane and window
// layout (buckets of one word, straddling words, several windows). Filters
// of 777 keys; of 200 under the race detector, which compiles in the
// invariant checks: they walk the whole table after every operation.
func TestEveryShape(t *testing.T) {
	n := uint64(size(777, 777, 200))
	for _, b := range layouts {
		for bits := 4; bits <= 32; bits++ {
			f, err := cuckoo.New(n, b.opts(bits, cuckoo.WithSeed(uint64(bits)))...)
			if err != nil {
				t.Fatal(err)
			}
			for i := uint64(0); i < n; i++ {
				if err := f.Add(key(0, i)); err != nil {
					t.Fatalf("%v f=%d: Add %d: %v", b, bits, i, err)
				}
			}
			if err := f.CheckInvariants(); err != nil {
				t.Fatalf("%v f=%d: %v", b, bits, err)
			}
			for i := uint64(0); i < n; i++ {
				if !f.Contains(key(0, i)) || f.Count(key(0, i)) == 0 {
					t.Fatalf("%v f=%d: key %d missing", b, bits, i)
				}
			}
			for i := uint64(0); i < n; i++ {
				if !f.Delete(key(0, i)) {
					t.Fatalf("%v f=%d: Delete %d", b, bits, i)
				}
			}
			if f.Len() != 0 || f.LoadFactor() != 0 {
				t.Fatalf("%v f=%d: Len %d load %v after deleting all", b, bits, f.Len(), f.LoadFactor())
			}
		}
	}
}

func TestAltIndexIsAnInvolution(t *testing.T) {
	r := testRand(t)
	for n := 0; n < 100000; n++ {
		m := 2 + 2*r.Uint64N(1<<31-1)
		if n%3 == 0 {
			m = 2 + 2*r.Uint64N(8)
		}
		i := r.Uint64N(m)
		fp := 1 + r.Uint64N(1<<32-1)
		j := cuckoo.AltIndexForTest(m, i, fp)
		if j >= m || j == i || cuckoo.AltIndexForTest(m, j, fp) != i {
			t.Fatalf("m=%d i=%d fp=%d: alt %d, back %d", m, i, fp, j, cuckoo.AltIndexForTest(m, j, fp))
		}
	}
}

// TestSemiSortedTarget checks issue 3's space target for WithSemiSorting:
// at most 12.7 bits per item at a measured false-positive rate of at most
// 0.1 %. A 13-bit semi-sorted filter stores 12 bits per slot at a load of
// 0.95 (12.63 bits per item) with an expected rate of 0.093 %. The rate is
// measured over enough absent keys that 5 sigma is 5 % of it: 10^6 keys
// and 11·10^6 probes in the long checks (CUCKOO_LONG=1); otherwise 10^5
// keys and 10^6 probes, where 5 sigma is 16 % of it. The seed is fixed.
func TestSemiSortedTarget(t *testing.T) {
	t.Parallel()
	n := uint64(sized(1_000_000, 100_000, 100_000, 100_000))
	f, err := cuckoo.New(n, cuckoo.WithFingerprintBits(13), cuckoo.WithSemiSorting(), cuckoo.WithSeed(13))
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(0); i < n; i++ {
		if err := f.Add(key(0, i)); err != nil {
			t.Fatal(err)
		}
	}
	bitsPerItem := float64(f.TableBytes()*8) / float64(n)
	probes := uint64(sized(11_000_000, 1_000_000, 1_000_000, 1_000_000))
	hits := 0
	for i := uint64(0); i < probes; i++ {
		if f.Contains(key(1, i)) {
			hits++
		}
	}
	got := float64(hits) / float64(probes)
	sigma := math.Sqrt(0.001 / float64(probes))
	t.Logf("%.3f bits per item, measured rate %.4f%% (expected %.4f%%)", bitsPerItem, 100*got, 100*f.FalsePositiveRate())
	if bitsPerItem > 12.7 {
		t.Errorf("%.3f bits per item, want <= 12.7", bitsPerItem)
	}
	if got > 0.001+5*sigma {
		t.Errorf("measured rate %.4f%%, want <= 0.1%%", 100*got)
	}
}

// TestNewHoldsItsCapacityAtEverySeed: New(n) holds n distinct keys, over 20,000
// seeds for each n of 1, 2, 3, 7 and 100 and each bucket size in the long
// checks (CUCKOO_LONG=1), the seeds 0 to 1,999 otherwise, and a tenth of
// that for n = 1000; not under the race detector. With
// 2-slot buckets this failed for 12 of 20,000 filters of 7 keys before
// small tables were given their margin (the first: seed 198, 12-bit
// fingerprints).
func TestNewHoldsItsCapacityAtEverySeed(t *testing.T) {
	t.Parallel()
	testlong.SkipUnderRace(t)
	seeds := uint64(sized(20_000, 2_000, 2_000, 500))
	checkCapacityHolds(t, []struct{ b, f int }{{2, 6}, {2, 12}, {2, 16}, {4, 8}, {4, 16}, {8, 8}, {8, 16}}, []uint64{1, 2, 3, 7, 100, 1000}, seeds)
}

// checkCapacityHolds fills New(n) filters of each shape with n keys, for
// seeds seeds (a tenth of them for n of 1,000 and more, whose tables have
// the room of many buckets and nine tenths of the work), and fails when
// one refuses a key.
func checkCapacityHolds(t *testing.T, shapes []struct{ b, f int }, ns []uint64, seeds uint64) {
	t.Helper()
	for _, c := range shapes {
		for _, n := range ns {
			failed := 0
			seeds := seeds
			if n >= 1000 {
				seeds = max(seeds/10, 1)
			}
			for seed := range seeds {
				f, err := cuckoo.New(n, cuckoo.WithBucketSize(c.b), cuckoo.WithFingerprintBits(c.f), cuckoo.WithSeed(seed))
				if err != nil {
					t.Fatal(err)
				}
				for k := range n {
					if err := f.AddUint64(k); err != nil {
						if failed++; failed <= 3 {
							t.Errorf("b=%d f=%d n=%d seed=%d: key %d refused: %v", c.b, c.f, n, seed, k, err)
						}
						break
					}
				}
			}
			if failed > 0 {
				t.Errorf("b=%d f=%d n=%d: %d of %d filters refused one of their first n keys", c.b, c.f, n, failed, seeds)
			}
		}
	}
}

// TestSegments: a segmented filter holds its capacity, keeps each key's
// two buckets in one segment (the segment fixed by the hash), finds every
// key after a round trip, and deletes; growing filters refuse segments.
func TestSegments(t *testing.T) {
	for _, c := range []struct {
		n        uint64
		segments int
		b, f     int
	}{{1000, 2, 4, 16}, {10_000, 3, 4, 12}, {100_000, 64, 4, 16}, {5000, 7, 2, 16}, {3000, 5, 8, 8}} {
		f, err := cuckoo.New(c.n, cuckoo.WithSegments(c.segments), cuckoo.WithBucketSize(c.b), cuckoo.WithFingerprintBits(c.f), cuckoo.WithSeed(c.n))
		if err != nil {
			t.Fatal(err)
		}
		m := f.NumBuckets()
		if f.Segments() != c.segments || m%uint64(c.segments) != 0 || (m/uint64(c.segments))%64 != 0 {
			t.Fatalf("%+v: %d segments of %d buckets", c, f.Segments(), m)
		}
		seg := m / uint64(c.segments)
		for i := uint64(0); i < c.n; i++ {
			if err := f.Add(key(0, i)); err != nil {
				t.Fatalf("%+v: Add #%d: %v", c, i, err)
			}
			i1, i2 := f.BucketsForTest(key(0, i))
			if i1/seg != i2/seg {
				t.Fatalf("%+v: key %d in buckets %d and %d, segments %d and %d", c, i, i1, i2, i1/seg, i2/seg)
			}
		}
		var g cuckoo.Filter
		if err := g.UnmarshalBinary(mustMarshal(t, f)); err != nil {
			t.Fatal(err)
		}
		for i := uint64(0); i < c.n; i++ {
			if !g.Contains(key(0, i)) {
				t.Fatalf("%+v: key %d lost in the round trip", c, i)
			}
		}
		for i := uint64(0); i < c.n; i += 2 {
			if !g.Delete(key(0, i)) {
				t.Fatalf("%+v: Delete #%d", c, i)
			}
		}
		for i := uint64(1); i < c.n; i += 2 {
			if !g.Contains(key(0, i)) {
				t.Fatalf("%+v: key %d lost after deletes", c, i)
			}
		}
		if err := g.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []func() error{
		func() error { _, err := cuckoo.New(10, cuckoo.WithSegments(0)); return err },
		func() error { _, err := cuckoo.New(10, cuckoo.WithSegments(cuckoo.MaxSegments+1)); return err },
		func() error { _, err := cuckoo.NewScalable(10, cuckoo.WithSegments(2)); return err },
		func() error { _, err := cuckoo.NewConcurrent(10, cuckoo.WithSegments(2)); return err },
	} {
		if err := bad(); !errors.Is(err, cuckoo.ErrInvalidParameter) {
			t.Errorf("got %v, want ErrInvalidParameter", err)
		}
	}
}

// TestAddNearCapacityAllocatesNothing: inserts that must search for room
// (the last keys before capacity) allocate nothing but the growth of the
// random walk's path, which the filter keeps for the next walk (at most
// one doubling per power of two of MaxKicks), for every layout.
func TestAddNearCapacityAllocatesNothing(t *testing.T) {
	for _, l := range layouts {
		const n = 20_000
		f, err := cuckoo.New(n, l.opts(13, cuckoo.WithSeed(7))...)
		if err != nil {
			t.Fatal(err)
		}
		i := uint64(0)
		for ; i < n*9/10; i++ {
			f.Add(key(0, i))
		}
		a := testing.AllocsPerRun(1, func() {
			for end := i + n/20; i < end; i++ {
				if err := f.Add(key(0, i)); err != nil {
					t.Fatal(err)
				}
			}
		})
		if a > 10 {
			t.Errorf("%v: %v allocations for %d inserts near capacity", l, a, n/20)
		}
	}
}
