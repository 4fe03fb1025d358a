// Package planner is the sizing calculator behind `cuckoo plan`: for a
// number of keys and a target false-positive rate it works out what every
// filter this module builds would cost — each cuckoo filter shape (bucket
// size, fingerprint bits, semi-sorted buckets) and each Bloom variant — and
// recommends one, with the reason.
//
// The figures come from the filter packages' own sizing, without building
// anything: cuckoo.NewPlan for the cuckoo filters, bloom.NewPlan and its
// siblings for the Bloom filters, so they are exactly what the
// constructors build. The one exception is the growing cuckoo filter,
// which the cuckoo package cannot plan: it is grown from a sixteenth of
// the keys at a reference size and its bits per key scaled (see
// measureCuckooScalable).
package planner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/bloom"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
)

// Option is one way to build the filter.
type Option struct {
	Name            string  // e.g. "cuckoo b=4 f=17", "bloom blocked"
	Kind            string  // the CLI's kind name: cuckoo, bloom-blocked, …
	BucketSize      int     // cuckoo: slots per bucket
	FingerprintBits int     // cuckoo: bits per fingerprint
	SemiSorted      bool    // cuckoo: semi-sorted buckets
	HashCount       int     // Bloom: k
	Bytes           uint64  // memory with Items keys
	BitsPerItem     float64 // Bytes·8 / Items
	FPR             float64 // expected false-positive rate with Items keys
	Deletes         bool    // supports deleting keys
	Grows           bool    // grows past its capacity without losing its rate
	Lookup          string  // what a lookup touches
	Available       bool    // this build of the module can make it
	Flags           string  // cuckoo build flags that make it, with --capacity Capacity
	// Capacity is the --capacity that makes the filter planned: Items, or
	// for a growing filter the sixteenth of them it is planned to start
	// from (started at Items, it would be another filter, smaller).
	Capacity uint64
	Note     string
}

// Needs constrains the recommendation.
type Needs struct {
	Delete   bool // keys must be deletable
	Grow     bool // the number of keys is not known in advance
	Smallest bool // recommend the smallest, whatever its speed
}

// Plan is the answer for one (items, rate).
type Plan struct {
	Items       uint64
	FPR         float64
	Needs       Needs
	Options     []Option
	Recommended int     // index into Options, -1 when none fits
	Reason      string  // why
	LowerBound  float64 // log2(1/FPR): no filter can use fewer bits per item
}

// ErrParameter is wrapped by New's errors.
var ErrParameter = errors.New("planner: invalid parameter")

// MaxItems is the most keys New plans for.
const MaxItems = 1 << 40

// New plans for items keys at the target rate fpr.
func New(items uint64, fpr float64, needs Needs) (Plan, error) {
	if items == 0 || items > MaxItems {
		return Plan{}, fmt.Errorf("%w: items %d outside [1, 2^40]", ErrParameter, items)
	}
	if !(fpr > 0 && fpr < 1) {
		return Plan{}, fmt.Errorf("%w: rate %v outside (0, 1)", ErrParameter, fpr)
	}
	p := Plan{Items: items, FPR: fpr, Needs: needs, LowerBound: math.Log2(1 / fpr), Recommended: -1}
	flagFPR := "--fpr " + formatRate(fpr)
	for _, b := range []int{2, 4, 8} {
		if o, ok := cuckooOption(items, fpr, b, false); ok {
			if b != 4 {
				o.Flags += fmt.Sprintf(" --bucket-size %d", b)
			}
			p.Options = append(p.Options, o)
		}
	}
	if o, ok := cuckooOption(items, fpr, 4, true); ok {
		o.Flags = " --semi-sorted"
		o.Lookup = "2 buckets, each decoded (about 1.5× a plain lookup)"
		o.Note = "one bit less per item; slower lookups and inserts"
		p.Options = append(p.Options, o)
	}
	if o, err := measureCuckooScalable(items, fpr); err == nil {
		p.Options = append(p.Options, o)
	}
	for _, kind := range []filterfile.Kind{filterfile.BloomBlocked, filterfile.BloomClassic,
		filterfile.BloomCounting, filterfile.BloomScalable} {
		if o, err := bloomOption(kind, items, fpr); err == nil {
			p.Options = append(p.Options, o)
		}
	}
	for i := range p.Options {
		o := &p.Options[i]
		o.Capacity = items
		if o.Grows {
			o.Capacity = max(items/16, 1)
		}
		if o.Flags == "" {
			o.Flags = flagFPR
		} else {
			o.Flags = flagFPR + o.Flags
		}
		switch {
		case o.Kind == "cuckoo-scalable":
			o.Flags += " --grow"
		case strings.HasPrefix(o.Kind, "bloom-"):
			o.Flags += " --bloom=" + o.Kind[len("bloom-"):]
		}
	}
	p.recommend()
	return p, nil
}

func formatRate(p float64) string { return fmt.Sprint(p) }

// cuckooOption is the cuckoo filter of bucket size b that meets fpr.
func cuckooOption(items uint64, fpr float64, b int, semi bool) (Option, bool) {
	opts := []cuckoo.Option{cuckoo.WithBucketSize(b), cuckoo.WithFalsePositiveRate(fpr)}
	if semi {
		opts = append(opts, cuckoo.WithSemiSorting())
	}
	pl, err := cuckoo.NewPlan(items, opts...)
	if err != nil {
		return Option{}, false
	}
	return fromCuckooPlan(pl), true
}

func fromCuckooPlan(pl cuckoo.Plan) Option {
	name := fmt.Sprintf("cuckoo b=%d f=%d", pl.BucketSize, pl.FingerprintBits)
	if pl.SemiSorted {
		name += " semi-sorted"
	}
	return Option{
		Name: name, Kind: "cuckoo",
		BucketSize: pl.BucketSize, FingerprintBits: pl.FingerprintBits, SemiSorted: pl.SemiSorted,
		Bytes: pl.SizeInBytes, BitsPerItem: pl.BitsPerItem, FPR: pl.FalsePositiveRate,
		Deletes: true, Lookup: "2 buckets (2 cache lines)", Available: true,
	}
}

// bloomPlan is the bloom package's plan for items keys at rate p in a
// filter of the kind; the growing kind starts at a sixteenth of the keys,
// as for a count not known in advance.
func bloomPlan(kind filterfile.Kind, items uint64, p float64) (bloom.Plan, error) {
	switch kind {
	case filterfile.BloomBlocked:
		return bloom.NewPlan(items, bloom.WithFalsePositiveRate(p))
	case filterfile.BloomClassic:
		return bloom.NewClassicPlan(items, bloom.WithFalsePositiveRate(p))
	case filterfile.BloomCounting:
		return bloom.NewCountingPlan(items, bloom.WithFalsePositiveRate(p))
	case filterfile.BloomScalable:
		return bloom.NewScalablePlan(max(items/16, 1), items, bloom.WithFalsePositiveRate(p))
	}
	return bloom.Plan{}, fmt.Errorf("%w: %s is no Bloom filter", ErrParameter, kind)
}

// bloomOption is the Bloom filter of the kind for items keys at rate fpr.
func bloomOption(kind filterfile.Kind, items uint64, fpr float64) (Option, error) {
	pl, err := bloomPlan(kind, items, fpr)
	if err != nil {
		return Option{}, err
	}
	o := Option{Kind: kind.String(), HashCount: pl.HashCount, Bytes: pl.SizeInBytes, BitsPerItem: pl.BitsPerItem,
		FPR: pl.FalsePositiveRate, Available: true, Deletes: kind.CanDelete(), Grows: kind.Grows()}
	k := pl.HashCount
	switch kind {
	case filterfile.BloomBlocked:
		o.Name, o.Lookup = "bloom blocked", "1 cache line"
	case filterfile.BloomClassic:
		o.Name, o.Lookup = "bloom classic", fmt.Sprintf("k=%d bits anywhere (up to %d cache lines)", k, k)
	case filterfile.BloomCounting:
		o.Name, o.Lookup = "bloom counting", fmt.Sprintf("k=%d counters (up to %d cache lines)", k, k)
		o.Note = "4-bit counters: 4× a classic filter"
	case filterfile.BloomScalable:
		o.Name, o.Lookup = "bloom scalable, from N/16", fmt.Sprintf("1 cache line per layer (%d layers)", pl.NumTables)
		o.Note = "grown from a sixteenth of N (memory depends on where N falls between growths); each layer has a tighter rate"
	}
	return o, nil
}

// scalableRef is the most keys measureCuckooScalable adds (a variable so
// that tests under the race detector can shrink it).
var scalableRef uint64 = 1 << 18

// measureCuckooScalable is the growing cuckoo filter for items keys at
// rate fpr, started at a sixteenth of them. The cuckoo package has no plan
// for a Scalable, so it is measured: grown from a sixteenth of
// min(items, scalableRef) keys to that many (about 30 ms at the reference
// size), its bits per key scaled to items, and its rate the filter's own
// expectation then.
func measureCuckooScalable(items uint64, fpr float64) (Option, error) {
	n := min(items, scalableRef)
	f, err := cuckoo.NewScalable(max(n/16, 1), cuckoo.WithFalsePositiveRate(fpr), cuckoo.WithSeed(1))
	if err != nil {
		return Option{}, err
	}
	var key [8]byte
	for i := range n {
		binary.LittleEndian.PutUint64(key[:], i)
		if err := f.Add(key[:]); err != nil {
			return Option{}, err
		}
	}
	bpi := float64(f.SizeInBytes()*8) / float64(n)
	bytes := uint64(math.Ceil(bpi * float64(items) / 8))
	return Option{Name: "cuckoo scalable, from N/16", Kind: filterfile.CuckooScalable.String(),
		Bytes: bytes, BitsPerItem: float64(bytes*8) / float64(items), FPR: f.FalsePositiveRate(),
		Available: true, Deletes: true, Grows: true, Lookup: "2 buckets per table, newest first",
		Note: "grown from a sixteenth of N (its newest table grows in place, so memory follows the keys); later tables have wider fingerprints",
	}, nil
}

// recommend picks an option for the needs and explains why.
func (p *Plan) recommend() {
	fits := func(o Option) bool {
		return o.Available && o.FPR <= p.FPR*(1+1e-9) &&
			(!p.Needs.Delete || o.Deletes) && (!p.Needs.Grow || o.Grows)
	}
	best := -1
	for i, o := range p.Options {
		if fits(o) && (best < 0 || o.Bytes < p.Options[best].Bytes) {
			best = i
		}
	}
	if best < 0 {
		p.Reason = "no filter meets these needs at this rate"
		return
	}
	smallest := best
	if !p.Needs.Smallest {
		// Trade a little memory for speed: a blocked Bloom filter's one
		// cache line over a classic one's k; a plain cuckoo filter's
		// simpler buckets over 2- or 8-slot ones.
		for i, o := range p.Options {
			if !fits(o) || i == best {
				continue
			}
			b := p.Options[best]
			within := float64(o.Bytes) <= float64(b.Bytes)*1.15
			if within && o.Kind == "bloom-blocked" && b.Kind == "bloom-classic" {
				best = i
			}
			if within && o.Kind == "cuckoo" && o.BucketSize == 4 && !o.SemiSorted && b.Kind == "cuckoo" {
				best = i
			}
		}
	}
	p.Recommended = best
	r := p.Options[best]
	reason := fmt.Sprintf("%s: %.1f bits per item (%s), expected rate %s", r.Name, r.BitsPerItem,
		units.Bytes(r.Bytes), units.Percent(r.FPR))
	switch {
	case best != smallest:
		s := p.Options[smallest]
		reason += fmt.Sprintf("; %s is %.0f %% smaller but slower: its lookups touch %s", s.Name,
			100*(1-float64(s.Bytes)/float64(r.Bytes)), s.Lookup)
	default:
		reason += "; the smallest that meets the rate"
		var needs []string
		if p.Needs.Delete {
			needs = append(needs, "deletes")
		}
		if p.Needs.Grow {
			needs = append(needs, "grows")
		}
		if len(needs) > 0 {
			reason += " and " + joinAnd(needs)
		}
	}
	// Name the runner-up of the other family, which is what users compare.
	alt := -1
	for i, o := range p.Options {
		if fits(o) && isCuckoo(o) != isCuckoo(r) && (alt < 0 || o.Bytes < p.Options[alt].Bytes) {
			alt = i
		}
	}
	if alt >= 0 {
		a := p.Options[alt]
		reason += fmt.Sprintf("; the best %s would take %.1f bits per item", map[bool]string{true: "cuckoo filter", false: "Bloom filter"}[isCuckoo(a)], a.BitsPerItem)
	}
	if isCuckoo(r) && !p.Needs.Delete {
		reason += "; it can also delete keys"
	}
	if !r.Deletes {
		reason += "; it cannot delete keys (--delete to require it)"
	}
	p.Reason = reason
}

func isCuckoo(o Option) bool { return strings.HasPrefix(o.Kind, "cuckoo") }

func joinAnd(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return fmt.Sprintf("%s and %s", s[0], s[1])
}

// Curve is one filter family's trade-off between bits per item and the
// false-positive rate.
type Curve struct {
	Name   string
	Points []CurvePoint
	Bound  bool // the information-theoretic lower bound, not a filter
}

// CurvePoint is one setting: its expected rate at capacity and its size.
type CurvePoint struct {
	FPR, BitsPerItem float64
	Label            string // e.g. "f=12"
}

// Curves returns, for items keys, bits per item against the rate for
// every cuckoo shape (each fingerprint width from 4 to 32 bits) and the
// blocked and classic Bloom filters (rates from 10 % to 1e-9; a counting
// filter is four times a classic one), and the lower bound log2(1/ε).
func Curves(items uint64) []Curve {
	var cs []Curve
	for _, shape := range []struct {
		b    int
		semi bool
	}{{2, false}, {4, false}, {8, false}, {4, true}} {
		c := Curve{Name: fmt.Sprintf("cuckoo b=%d", shape.b)}
		if shape.semi {
			c.Name += " semi-sorted"
		}
		for f := cuckoo.MinFingerprintBits; f <= cuckoo.MaxFingerprintBits; f++ {
			opts := []cuckoo.Option{cuckoo.WithBucketSize(shape.b), cuckoo.WithFingerprintBits(f)}
			if shape.semi {
				opts = append(opts, cuckoo.WithSemiSorting())
			}
			pl, err := cuckoo.NewPlan(items, opts...)
			if err != nil {
				continue
			}
			label := ""
			if f%4 == 0 && shape.b == 4 && !shape.semi {
				label = fmt.Sprintf("f=%d", f)
			}
			c.Points = append(c.Points, CurvePoint{pl.FalsePositiveRate, pl.BitsPerItem, label})
		}
		cs = append(cs, c)
	}
	// Counting filters are four times classic ones: off the scale, left out.
	for _, kind := range []filterfile.Kind{filterfile.BloomBlocked, filterfile.BloomClassic} {
		c := Curve{Name: "bloom " + kind.String()[len("bloom-"):]}
		for e := -1.0; e >= -9.0; e -= 0.5 {
			pl, err := bloomPlan(kind, items, math.Pow(10, e))
			if err != nil {
				continue
			}
			c.Points = append(c.Points, CurvePoint{pl.FalsePositiveRate, pl.BitsPerItem, ""})
		}
		cs = append(cs, c)
	}
	bound := Curve{Name: "lower bound log2(1/ε)", Bound: true}
	for e := -1.0; e >= -9.0; e -= 1 {
		bound.Points = append(bound.Points, CurvePoint{math.Pow(10, e), -e * math.Log2(10), ""})
	}
	return append(cs, bound)
}
