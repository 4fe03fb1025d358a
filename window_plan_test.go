package cuckoo_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo"
)

// TestNewWindowPlanDescribesNewWindow: the plan of a Window is the table
// NewWindow builds (buckets, bucket size, fingerprint width), and the
// parameters NewWindow refuses, NewWindowPlan refuses too.
func TestNewWindowPlanDescribesNewWindow(t *testing.T) {
	shapes := [][]cuckoo.Option{
		nil,
		{cuckoo.WithFalsePositiveRate(0.001)},
		{cuckoo.WithFalsePositiveRate(0.05), cuckoo.WithBucketSize(2)},
		{cuckoo.WithFingerprintBits(20), cuckoo.WithBucketSize(8)},
		{cuckoo.WithFingerprintBits(28)},
	}
	for _, n := range []uint64{1, 7, 1000, 65_536, 1_000_003} {
		for k, opts := range shapes {
			t.Run(fmt.Sprintf("n=%d/shape%d", n, k), func(t *testing.T) {
				p, err := cuckoo.NewWindowPlan(n, opts...)
				if err != nil {
					t.Fatal(err)
				}
				w, err := cuckoo.NewWindow(n, time.Hour, opts...)
				if err != nil {
					t.Fatal(err)
				}
				if p.NumBuckets != w.NumBuckets() || p.BucketSize != w.BucketSize() || p.FingerprintBits != w.FingerprintBits() ||
					p.Capacity != n || p.Segments != 1 {
					t.Fatalf("plan %+v; NewWindow: %d buckets of %d slots of %d bits", p, w.NumBuckets(), w.BucketSize(), w.FingerprintBits())
				}
				if want := uint64(w.EncodedSize()) - 80 - 4 + 8; p.SizeInBytes != want {
					t.Fatalf("plan's table of %d bytes, the Window's %d (with its padding word)", p.SizeInBytes, want)
				}
			})
		}
	}
	for _, opts := range [][]cuckoo.Option{
		{cuckoo.WithBucketSize(3)},
		{cuckoo.WithFingerprintBits(29)},
		{cuckoo.WithSemiSorting()},
		{cuckoo.WithGrowth(2)},
	} {
		_, perr := cuckoo.NewWindowPlan(100, opts...)
		_, werr := cuckoo.NewWindow(100, time.Hour, opts...)
		if !errors.Is(perr, cuckoo.ErrInvalidParameter) || !errors.Is(werr, cuckoo.ErrInvalidParameter) {
			t.Errorf("NewWindowPlan: %v; NewWindow: %v", perr, werr)
		}
	}
	if _, err := cuckoo.NewWindowPlan(0); !errors.Is(err, cuckoo.ErrInvalidParameter) {
		t.Errorf("NewWindowPlan(0): %v", err)
	}
}

// TestNewWindowPlanSegments: a window split into segments has whole
// segments of a multiple of 64 buckets, at least as many buckets as the
// unsplit one (each segment holds its share of the live entries with a
// margin for chance), and not many more for large windows.
func TestNewWindowPlanSegments(t *testing.T) {
	for _, tc := range []struct {
		n        uint64
		segments int
	}{{1, 2}, {1000, 4}, {1_000_000, 16}, {100_000_000, 100}} {
		one, err := cuckoo.NewWindowPlan(tc.n)
		if err != nil {
			t.Fatal(err)
		}
		p, err := cuckoo.NewWindowPlan(tc.n, cuckoo.WithSegments(tc.segments))
		if err != nil {
			t.Fatal(err)
		}
		per := p.NumBuckets / uint64(tc.segments)
		if p.Segments != tc.segments || per*uint64(tc.segments) != p.NumBuckets || per%64 != 0 || p.NumBuckets < one.NumBuckets {
			t.Fatalf("%d keys in %d segments: %+v (unsplit: %d buckets)", tc.n, tc.segments, p, one.NumBuckets)
		}
		if tc.n >= 1_000_000 && float64(p.NumBuckets) > 1.05*float64(one.NumBuckets) {
			t.Errorf("%d keys in %d segments: %d buckets, unsplit %d", tc.n, tc.segments, p.NumBuckets, one.NumBuckets)
		}
	}
}
