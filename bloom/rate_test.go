package bloom_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/dedupkit/cuckoo/bloom"
)

// TestDefaultRate: a constructor given no WithFalsePositiveRate targets
// DefaultFalsePositiveRate, and its plan is the one of that explicit rate.
func TestDefaultRate(t *testing.T) {
	type targeted interface{ TargetFalsePositiveRate() float64 }
	mks := map[string]func(uint64, ...bloom.Option) (targeted, error){
		"New":         func(c uint64, o ...bloom.Option) (targeted, error) { return bloom.New(c, o...) },
		"NewClassic":  func(c uint64, o ...bloom.Option) (targeted, error) { return bloom.NewClassic(c, o...) },
		"NewCounting": func(c uint64, o ...bloom.Option) (targeted, error) { return bloom.NewCounting(c, o...) },
		"NewScalable": func(c uint64, o ...bloom.Option) (targeted, error) { return bloom.NewScalable(c, o...) },
	}
	for name, mk := range mks {
		f, err := mk(1000, bloom.WithSeed(1))
		if err != nil {
			t.Fatal(name, err)
		}
		if got := f.TargetFalsePositiveRate(); got != bloom.DefaultFalsePositiveRate {
			t.Errorf("%s: target %v, want the default %v", name, got, bloom.DefaultFalsePositiveRate)
		}
	}
	def, err := bloom.NewPlan(1000)
	if err != nil {
		t.Fatal(err)
	}
	explicit, _ := bloom.NewPlan(1000, bloom.WithFalsePositiveRate(bloom.DefaultFalsePositiveRate))
	if def != explicit {
		t.Fatalf("default plan %+v, explicit %+v", def, explicit)
	}
}

// TestRateOption: WithFalsePositiveRate refuses rates outside
// [MinFalsePositiveRate, 1) with ErrInvalidParameter, on every constructor.
func TestRateOption(t *testing.T) {
	for _, p := range []float64{0, -0.1, 1, 1.5, bloom.MinFalsePositiveRate / 2} {
		for _, kind := range kinds {
			t.Run(fmt.Sprintf("%s/p=%g", kind.name, p), func(t *testing.T) {
				if _, err := kind.new(100, p); !errors.Is(err, bloom.ErrInvalidParameter) {
					t.Fatalf("err = %v", err)
				}
			})
		}
	}
}
