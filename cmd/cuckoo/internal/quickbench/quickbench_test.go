package quickbench

import (
	"testing"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
)

// TestRun checks the benchmark's figures, not its timings: every filter
// is measured, no key added is lost (Run fails on a false negative), and
// the counts and sizes are consistent.
func TestRun(t *testing.T) {
	var seen []string
	rs, err := Run(Config{Items: 5000, FPR: 0.01, Repeat: 1, Seed: 3, OnResult: func(r Result) { seen = append(seen, r.Name) }})
	if err != nil {
		t.Fatal(err)
	}
	specs := Specs(5000, 0.01, 3)
	if len(rs) != len(specs) || len(seen) != len(specs) {
		t.Fatalf("%d results, %d reported, %d filters", len(rs), len(seen), len(specs))
	}
	for _, r := range rs {
		if r.Absent != 10000 { // 100/0.01 = 10,000 > 5,000 items
			t.Errorf("%s: %d absent keys probed, want 10000", r.Name, r.Absent)
		}
		if r.FPR != float64(r.FalsePositive)/float64(r.Absent) {
			t.Errorf("%s: rate %v from %d of %d", r.Name, r.FPR, r.FalsePositive, r.Absent)
		}
		// Expected about 100 false positives; 5σ above is 150, and the
		// filters are sized below the target.
		if r.FalsePositive > 150 {
			t.Errorf("%s: %d false positives in 10,000, want about 100 at most", r.Name, r.FalsePositive)
		}
		if r.Bytes == 0 || r.BitsPerItem != float64(r.Bytes*8)/5000 {
			t.Errorf("%s: %d bytes, %v bits per item", r.Name, r.Bytes, r.BitsPerItem)
		}
		if !(r.AddNs > 0 && r.HitNs > 0 && r.MissNs > 0) {
			t.Errorf("%s: timings %v %v %v", r.Name, r.AddNs, r.HitNs, r.MissNs)
		}
	}
}

func TestAbsentFor(t *testing.T) {
	for _, c := range []struct {
		items uint64
		fpr   float64
		want  uint64
	}{{1000, 0.01, 10000}, {1_000_000, 0.01, 1_000_000}, {1000, 1e-9, 10_000_000}} {
		if got := absentFor(c.items, c.fpr); got != c.want {
			t.Errorf("absentFor(%d, %v) = %d, want %d", c.items, c.fpr, got, c.want)
		}
	}
}

func TestKeysDistinct(t *testing.T) {
	a, b := makeKeys(1000, 1, 0), makeKeys(1000, 1, 1)
	set := map[string]bool{}
	for i := range uint64(1000) {
		set[string(a.at(i))] = true
	}
	for i := range uint64(1000) {
		if set[string(b.at(i))] {
			t.Fatal("an absent key is also a present one")
		}
	}
	if len(set) != 1000 {
		t.Fatalf("%d distinct keys of 1000", len(set))
	}
}

func TestBadFilter(t *testing.T) {
	_, err := Run(Config{Items: 10, FPR: 0.01, Filters: []Filter{{"bad", filterfile.Spec{Kind: filterfile.Cuckoo, Capacity: 10, BucketSize: 300}}}})
	if err == nil {
		t.Fatal("a bad spec was measured")
	}
	if _, err := Run(Config{}); err == nil {
		t.Fatal("no items accepted")
	}
}
