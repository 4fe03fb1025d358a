// Package quickbench is the measurement behind `cuckoo bench`: a quick,
// single-process benchmark of every filter this module builds, on this
// machine — nanoseconds per Add and per Contains (of keys present and
// absent), the false-positive rate measured over absent keys, and bits per
// item. It is for a first look at the trade-offs on one's own hardware;
// the package benchmarks (go test -bench) and the bench/ module are the
// careful measurements.
//
// Timings are wall-clock over whole passes (one time.Now per pass, not per
// key), so a pass of a million keys is measured to well under 1 %; a
// shared or busy machine still adds noise, which is why each pass is run
// Repeat times and the fastest kept.
package quickbench

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
)

// Config says what to measure.
type Config struct {
	Items  uint64  // keys added to each filter
	FPR    float64 // target rate of each filter
	Absent uint64  // absent keys probed for the rate (0: from FPR, see Run)
	Repeat int     // passes per timing; the fastest is kept (0: 3)
	Seed   uint64  // for the keys and the filters' hash seeds
	// Filters to measure; nil: all (see Specs).
	Filters []Filter
	// OnResult, when set, is called after each filter is measured.
	OnResult func(Result)
}

// Filter is one filter to measure.
type Filter struct {
	Name string
	Spec filterfile.Spec
}

// Result is one filter's figures.
type Result struct {
	Name          string
	Kind          filterfile.Kind
	AddNs         float64 // per Add
	HitNs         float64 // per Contains of a key added
	MissNs        float64 // per Contains of a key never added
	FPR           float64 // measured over the absent keys
	ExpectedFPR   float64 // the filter's own expectation at the end
	BitsPerItem   float64
	Bytes         uint64
	FalsePositive uint64 // absent keys reported present
	Absent        uint64 // absent keys probed
}

// Specs returns the filters `cuckoo bench` measures by default: the
// cuckoo filter with 2-, 4- and 8-slot buckets and semi-sorted, and every
// Bloom filter, all for items keys at rate fpr; the growing filters start
// at a sixteenth of items and grow.
func Specs(items uint64, fpr float64, seed uint64) []Filter {
	spec := func(k filterfile.Kind) filterfile.Spec {
		return filterfile.Spec{Kind: k, Capacity: items, FPR: fpr, Seed: seed, SeedSet: true}
	}
	var fs []Filter
	for _, b := range []int{4, 2, 8} {
		s := spec(filterfile.Cuckoo)
		s.BucketSize = b
		fs = append(fs, Filter{fmt.Sprintf("cuckoo b=%d", b), s})
	}
	semi := spec(filterfile.Cuckoo)
	semi.SemiSorted = true
	fs = append(fs, Filter{"cuckoo semi-sorted", semi})
	for _, k := range []filterfile.Kind{filterfile.BloomBlocked, filterfile.BloomClassic, filterfile.BloomCounting} {
		fs = append(fs, Filter{"bloom " + k.String()[len("bloom-"):], spec(k)})
	}
	// A growing filter is for when the count is unknown: start it 16×
	// too small, so that it grows as it would in use.
	for _, k := range []filterfile.Kind{filterfile.CuckooScalable, filterfile.BloomScalable} {
		grow := spec(k)
		grow.Capacity = max(items/16, 1)
		fs = append(fs, Filter{strings.Replace(k.String(), "-", " ", 1) + "/16", grow})
	}
	return fs
}

// absentFor is the number of absent keys to probe: enough to see about
// 100 false positives at the target rate, at least the number of items,
// at most 10 million.
func absentFor(items uint64, fpr float64) uint64 {
	return uint64(min(max(100/fpr, float64(items)), 1e7))
}

// Run measures every filter and returns the results in order.
func Run(c Config) ([]Result, error) {
	if c.Items == 0 {
		return nil, fmt.Errorf("quickbench: no items")
	}
	if c.Repeat <= 0 {
		c.Repeat = 3
	}
	if c.Absent == 0 {
		c.Absent = absentFor(c.Items, c.FPR)
	}
	if c.Filters == nil {
		c.Filters = Specs(c.Items, c.FPR, c.Seed)
	}
	present := makeKeys(c.Items, c.Seed, 0)
	absent := makeKeys(c.Absent, c.Seed, 1)
	var out []Result
	for _, fl := range c.Filters {
		r, err := measure(fl, present, absent, c.Repeat)
		if err != nil {
			return out, fmt.Errorf("%s: %w", fl.Name, err)
		}
		out = append(out, r)
		if c.OnResult != nil {
			c.OnResult(r)
		}
	}
	return out, nil
}

// keys is a flat array of 16-byte keys.
type keys struct {
	data []byte
	n    uint64
}

func (k keys) at(i uint64) []byte { return k.data[16*i : 16*i+16 : 16*i+16] }

// makeKeys returns n random 16-byte keys of a family: families never
// share a key (the last byte tells them apart).
func makeKeys(n, seed, family uint64) keys {
	r := rand.New(rand.NewPCG(seed, family))
	data := make([]byte, 16*n)
	for i := range n {
		binary.LittleEndian.PutUint64(data[16*i:], r.Uint64())
		binary.LittleEndian.PutUint64(data[16*i+8:], r.Uint64()&^0xff|family)
	}
	return keys{data, n}
}

func measure(fl Filter, present, absent keys, repeat int) (Result, error) {
	r := Result{Name: fl.Name, Kind: fl.Spec.Kind, AddNs: math.Inf(1), HitNs: math.Inf(1), MissNs: math.Inf(1)}
	var f *filterfile.Filter
	for range repeat {
		g, err := filterfile.New(fl.Spec)
		if err != nil {
			return r, err
		}
		start := time.Now()
		for i := range present.n {
			if err := g.Add(present.at(i)); err != nil {
				return r, err
			}
		}
		r.AddNs = min(r.AddNs, perOp(time.Since(start), present.n))
		f = g
	}
	for range repeat {
		start := time.Now()
		for i := range present.n {
			if !f.Contains(present.at(i)) {
				return r, fmt.Errorf("a key added is reported absent: a false negative")
			}
		}
		r.HitNs = min(r.HitNs, perOp(time.Since(start), present.n))
	}
	for range repeat {
		var fp uint64
		start := time.Now()
		for i := range absent.n {
			if f.Contains(absent.at(i)) {
				fp++
			}
		}
		r.MissNs = min(r.MissNs, perOp(time.Since(start), absent.n))
		r.FalsePositive = fp
	}
	r.Absent = absent.n
	r.FPR = float64(r.FalsePositive) / float64(absent.n)
	r.ExpectedFPR = f.FalsePositiveRate()
	r.Bytes = f.SizeInBytes()
	r.BitsPerItem = float64(r.Bytes*8) / float64(present.n)
	return r, nil
}

func perOp(d time.Duration, n uint64) float64 { return float64(d.Nanoseconds()) / float64(n) }
