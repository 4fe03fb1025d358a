package bloom_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dedupkit/cuckoo/bloom"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
)

// testRand returns a generator for a randomized test and logs its seed, so
// that a failure can be replayed with -seed.
func testRand(t testing.TB) *rand.Rand { return testseed.Rand(t) }

// statRand returns the generator of the statistical tests, whose bounds
// chance could break: seeded with a constant (the bounds were checked with
// it in every mode CI runs), so that their outcome is the same on every
// run, unless -seed gives another seed to explore with.
func statRand(t testing.TB) *rand.Rand {
	t.Helper()
	return testseed.New(testseed.Fixed(t, 1))
}

// full reports whether the statistical tests run at full size: with
// CUCKOO_LONG=1, and then neither with -short nor under the race detector
// (ten times slower). Otherwise they shrink the filters or the trials,
// never their bounds.
func full() bool { return testlong.Enabled() && !testing.Short() && !testlong.RaceEnabled }

// keyBuf holds one 16-byte key; at returns key i of a family in it without
// allocating. Family 0 holds the keys tests add; others are never added.
type keyBuf [16]byte

func (b *keyBuf) at(family, i uint64) []byte {
	binary.LittleEndian.PutUint64(b[:8], i)
	binary.LittleEndian.PutUint64(b[8:], family*0x9e3779b97f4a7c15+0x5bd1e995)
	return b[:]
}

// key returns a fresh copy of key i of a family.
func key(family, i uint64) []byte {
	var b keyBuf
	return append([]byte(nil), b.at(family, i)...)
}

// set is what every filter type offers.
type set interface {
	Add([]byte) error
	Contains([]byte) bool
	Len() uint64
	SizeInBytes() uint64
	FalsePositiveRate() float64
	EstimatedCount() uint64
	MarshalBinary() ([]byte, error)
}

// kinds are the four constructors, as set constructors.
var kinds = []struct {
	name string
	new  func(capacity uint64, fpr float64, opts ...bloom.Option) (set, error)
}{
	{"New", func(c uint64, p float64, o ...bloom.Option) (set, error) { return rated(bloom.New)(c, p, o...) }},
	{"NewClassic", func(c uint64, p float64, o ...bloom.Option) (set, error) { return rated(bloom.NewClassic)(c, p, o...) }},
	{"NewCounting", func(c uint64, p float64, o ...bloom.Option) (set, error) { return rated(bloom.NewCounting)(c, p, o...) }},
	{"NewScalable", func(c uint64, p float64, o ...bloom.Option) (set, error) { return rated(bloom.NewScalable)(c, p, o...) }},
}

// rated turns a constructor (or plan) into one that takes the target rate
// as an argument, for tables of cases: mk(c, WithFalsePositiveRate(p), o...).
func rated[T any](mk func(uint64, ...bloom.Option) (T, error)) func(uint64, float64, ...bloom.Option) (T, error) {
	return func(c uint64, p float64, o ...bloom.Option) (T, error) {
		return mk(c, append([]bloom.Option{bloom.WithFalsePositiveRate(p)}, o...)...)
	}
}

// filterLayouts are the two constructors of Filter.
var filterLayouts = []struct {
	name string
	new  func(uint64, float64, ...bloom.Option) (*bloom.Filter, error)
}{{"New", rated(bloom.New)}, {"NewClassic", rated(bloom.NewClassic)}}

// fill adds keys [from, to) of family 0.
func fill(s set, from, to uint64) {
	var b keyBuf
	for i := from; i < to; i++ {
		s.Add(b.at(0, i))
	}
}

// requirePresent fails unless keys [from, to) of family 0 are all present.
func requirePresent(t testing.TB, s interface{ Contains([]byte) bool }, from, to uint64) {
	t.Helper()
	var b keyBuf
	missing := 0
	for i := from; i < to; i++ {
		if !s.Contains(b.at(0, i)) {
			if missing++; missing <= 3 {
				t.Errorf("key %d was added but Contains reports it absent", i)
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d added keys missing (false negatives)", missing, to-from)
	}
}

// measureFPR probes n keys of a family never added and returns the share
// reported present.
func measureFPR(s interface{ Contains([]byte) bool }, family, n uint64) float64 {
	var b keyBuf
	fp := 0
	for i := range n {
		if s.Contains(b.at(family, i)) {
			fp++
		}
	}
	return float64(fp) / float64(n)
}

// sigma is the standard deviation of a rate p measured over n probes.
func sigma(p float64, n uint64) float64 { return math.Sqrt(p * (1 - p) / float64(n)) }
