package planner

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestPlanOptions(t *testing.T) {
	start := time.Now()
	p, err := New(10_000_000, 0.0001, Needs{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("planned in %v", time.Since(start))
	byName := map[string]Option{}
	for _, o := range p.Options {
		byName[o.Name] = o
		t.Logf("%-28s %6.2f bits/item  %.3g  %s", o.Name, o.BitsPerItem, o.FPR, o.Flags)
		if o.Bytes == 0 || math.Abs(o.BitsPerItem-float64(o.Bytes*8)/1e7) > 1e-9 {
			t.Errorf("%s: %d bytes but %.3f bits per item", o.Name, o.Bytes, o.BitsPerItem)
		}
		if o.BitsPerItem < p.LowerBound {
			t.Errorf("%s: %.2f bits per item, below the lower bound %.2f", o.Name, o.BitsPerItem, p.LowerBound)
		}
	}
	for _, name := range []string{"cuckoo b=4 f=17", "cuckoo b=2 f=16", "cuckoo b=8 f=18", "cuckoo b=4 f=17 semi-sorted",
		"cuckoo scalable, from N/16", "bloom blocked", "bloom classic", "bloom counting", "bloom scalable, from N/16"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("no option %q", name)
		}
	}
	// Counting filters take four times a classic one.
	if c, k := byName["bloom counting"], byName["bloom classic"]; math.Abs(float64(c.Bytes)/float64(k.Bytes)-4) > 0.01 {
		t.Errorf("counting %d bytes, classic %d: want a ratio of 4", c.Bytes, k.Bytes)
	}
	// At 0.01 % the 4-slot cuckoo filter is the recommendation (DESIGN:
	// cuckoo beats Bloom below ~0.4 %).
	if p.Recommended < 0 || p.Options[p.Recommended].Name != "cuckoo b=4 f=17" {
		t.Fatalf("recommended %+v; reason %s", p.Options[max(p.Recommended, 0)], p.Reason)
	}
	if !strings.Contains(p.Reason, "bits per item") {
		t.Errorf("reason %q does not give the size", p.Reason)
	}
}

func TestRecommendation(t *testing.T) {
	for _, c := range []struct {
		name  string
		fpr   float64
		needs Needs
		want  string
	}{
		{"high-rate-bloom", 0.05, Needs{}, "bloom blocked"},
		{"high-rate-delete", 0.05, Needs{Delete: true}, "cuckoo"},
		{"low-rate", 1e-6, Needs{}, "cuckoo b=4"},
		{"grow", 0.001, Needs{Grow: true}, ""},
		{"grow-delete", 0.001, Needs{Grow: true, Delete: true}, "cuckoo scalable"},
	} {
		t.Run("case="+c.name, func(t *testing.T) {
			p, err := New(1_000_000, c.fpr, c.needs)
			if err != nil {
				t.Fatal(err)
			}
			if p.Recommended < 0 {
				t.Fatalf("no recommendation: %s", p.Reason)
			}
			r := p.Options[p.Recommended]
			if !strings.HasPrefix(r.Name, c.want) {
				t.Fatalf("recommended %s, want %s; reason: %s", r.Name, c.want, p.Reason)
			}
			if r.FPR > c.fpr {
				t.Fatalf("recommended %s at rate %v above the target %v", r.Name, r.FPR, c.fpr)
			}
			if c.needs.Delete && !r.Deletes {
				t.Fatalf("recommended %s, which cannot delete", r.Name)
			}
			if c.needs.Grow && !r.Grows {
				t.Fatalf("recommended %s, which cannot grow", r.Name)
			}
		})
	}
}

func TestPlanErrors(t *testing.T) {
	for _, c := range []struct {
		items uint64
		fpr   float64
	}{{0, 0.01}, {1 << 41, 0.01}, {100, 0}, {100, 1}, {100, math.NaN()}} {
		if _, err := New(c.items, c.fpr, Needs{}); !errors.Is(err, ErrParameter) {
			t.Errorf("New(%d, %v): %v, want ErrParameter", c.items, c.fpr, err)
		}
	}
}

func TestPlanHuge(t *testing.T) {
	// A trillion keys must plan without allocating the filter.
	p, err := New(1_000_000_000_000, 0.001, Needs{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range p.Options {
		if o.Bytes < 1_000_000_000_000 {
			t.Errorf("%s: %d bytes for 10^12 keys", o.Name, o.Bytes)
		}
	}
}

func TestCurves(t *testing.T) {
	cs := Curves(1_000_000)
	if len(cs) < 7 {
		t.Fatalf("%d curves", len(cs))
	}
	for _, c := range cs {
		if len(c.Points) < 5 {
			t.Errorf("%s: %d points", c.Name, len(c.Points))
		}
		for _, p := range c.Points {
			if !(p.FPR > 0 && p.FPR < 1) || !(p.BitsPerItem > 0) {
				t.Errorf("%s: bad point %+v", c.Name, p)
			}
		}
	}
}
