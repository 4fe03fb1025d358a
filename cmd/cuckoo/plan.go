package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/planner"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
	"github.com/dedupkit/cuckoo/internal/svgplot"
)

const planHelp = `Usage: cuckoo plan --items N [--fpr P] [flags]

The sizing calculator: for N keys at the false-positive rate P, what every
filter this tool builds would cost — each cuckoo filter shape (2-, 4- or
8-slot buckets, the fingerprint bits the rate needs, semi-sorted buckets)
and each Bloom filter (blocked, classic, counting, scalable) — its memory,
bits per item and expected rate, and which to pick, with the reason and the
flags that build it. Nothing is allocated at the planned size.

--svg draws bits per item against the rate for every setting of every
filter (each fingerprint width from 4 to 32 bits; Bloom rates from 10 % to
1e-9), with the lower bound log2(1/rate) and the options for P marked.

Examples:
  cuckoo plan --items 1e9 --fpr 0.001
  cuckoo plan --items 50M --fpr 1% --delete
  cuckoo plan --items 10M --fpr 1e-4 --svg tradeoffs.svg
  cuckoo plan --items 10M --fpr 1e-4 --json | jq '.options[] | {name, bits_per_item}'
`

type planFlags struct {
	items    countValue
	fpr      rateValue
	needs    planner.Needs
	svg      string
	asJSON   bool
	quietSVG bool
}

func (f *planFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.items, "items", "number of distinct keys `N` to hold (required)")
	fs.Var(&f.fpr, "fpr", fmt.Sprintf("target false-positive `rate` (default %v)", filterfile.DefaultPlanRate))
	fs.BoolVar(&f.needs.Delete, "delete", false, "keys must be deletable: recommend only filters that delete")
	fs.BoolVar(&f.needs.Grow, "grow", false, "the number of keys is not known: recommend only filters that grow")
	fs.BoolVar(&f.needs.Smallest, "smallest", false, "recommend the smallest filter, whatever its speed")
	fs.Var((*nameValue)(&f.svg), "svg", "draw bits per item against the rate for every filter to `file` (SVG)")
	fs.BoolVar(&f.asJSON, "json", false, "print the plan as JSON")
}

func planCommand() *command {
	return newCommand("plan", "compare what each filter costs for N keys at a rate, and pick one", planHelp,
		(*planFlags).register, func(e *env, f *planFlags, pos []string) error {
			if err := noArgs("plan", pos); err != nil {
				return err
			}
			return runPlan(e, f)
		})
}

func runPlan(e *env, f *planFlags) error {
	if !f.items.set {
		return usageErr("give the number of keys, e.g. --items 10M", "no --items")
	}
	if f.items.n == 0 || f.items.n > planner.MaxItems {
		return usageErr("give a number from 1 to 2^40", "bad --items %s", units.Count(f.items.n))
	}
	p, err := planner.New(f.items.n, f.fpr.or(filterfile.DefaultPlanRate), f.needs)
	if err != nil {
		return usageErr("see 'cuckoo plan --help'", "%v", unwrap(err))
	}
	if f.svg != "" {
		if err := e.writeFile(f.svg, func(w io.Writer) error { return planChart(p).Write(w) }); err != nil {
			return err
		}
	}
	if f.asJSON {
		return printPlanJSON(e.stdout, p)
	}
	printPlan(e.stdout, p)
	return nil
}

func printPlan(w io.Writer, p planner.Plan) {
	fmt.Fprintf(w, "%s at a false-positive rate of %s\n", units.Counted(p.Items, "key"), units.Rate(p.FPR))
	fmt.Fprintf(w, "no filter can use fewer than %.2f bits per key (log2 1/rate)\n\n", p.LowerBound)
	width := len("filter")
	for _, o := range p.Options {
		width = max(width, len(o.Name))
	}
	fmt.Fprintf(w, "  %-*s  %10s  %8s  %13s  %6s  %5s\n", width, "filter", "memory", "bits/key", "expected rate", "delete", "grows")
	for i, o := range p.Options {
		mark := "  "
		if i == p.Recommended {
			mark = "> "
		}
		fmt.Fprintf(w, "%s%-*s  %10s  %8.2f  %13s  %6s  %5s\n", mark, width, o.Name, units.Bytes(o.Bytes), o.BitsPerItem,
			units.Percent(o.FPR), yesNo(o.Deletes), yesNo(o.Grows))
	}
	fmt.Fprintln(w)
	if p.Recommended < 0 {
		fmt.Fprintf(w, "No recommendation: %s.\n", p.Reason)
		return
	}
	r := p.Options[p.Recommended]
	fmt.Fprintf(w, "> Recommended: %s.\n", p.Reason)
	fmt.Fprintf(w, "Lookups touch %s.", r.Lookup)
	if r.Note != "" {
		fmt.Fprintf(w, " Note: %s.", r.Note)
	}
	fmt.Fprintf(w, "\n\nBuild it:  cuckoo build -o FILE --capacity %d %s KEYS-FILE...\n", r.Capacity, strings.TrimSpace(r.Flags))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func printPlanJSON(w io.Writer, p planner.Plan) error {
	type option struct {
		Name            string  `json:"name"`
		Kind            string  `json:"kind"`
		BucketSize      int     `json:"bucket_size,omitempty"`
		FingerprintBits int     `json:"fingerprint_bits,omitempty"`
		SemiSorted      bool    `json:"semi_sorted,omitempty"`
		HashCount       int     `json:"hash_count,omitempty"`
		Bytes           uint64  `json:"bytes"`
		BitsPerItem     float64 `json:"bits_per_item"`
		FPR             float64 `json:"fpr"`
		Deletes         bool    `json:"deletes"`
		Grows           bool    `json:"grows"`
		Lookup          string  `json:"lookup"`
		Capacity        uint64  `json:"capacity"`
		Flags           string  `json:"flags"`
		Recommended     bool    `json:"recommended,omitempty"`
	}
	out := struct {
		Items       uint64   `json:"items"`
		FPR         float64  `json:"fpr"`
		LowerBound  float64  `json:"lower_bound_bits_per_item"`
		Options     []option `json:"options"`
		Recommended string   `json:"recommended,omitempty"`
		Reason      string   `json:"reason"`
	}{Items: p.Items, FPR: p.FPR, LowerBound: p.LowerBound, Reason: p.Reason}
	for i, o := range p.Options {
		out.Options = append(out.Options, option{o.Name, o.Kind, o.BucketSize, o.FingerprintBits, o.SemiSorted, o.HashCount,
			o.Bytes, o.BitsPerItem, o.FPR, o.Deletes, o.Grows, o.Lookup, o.Capacity, strings.TrimSpace(o.Flags), i == p.Recommended})
		if i == p.Recommended {
			out.Recommended = o.Name
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// planChart draws the curves of every filter, the options for the asked
// rate as points, and the recommendation labelled.
func planChart(p planner.Plan) *svgplot.Chart {
	c := &svgplot.Chart{
		Title:  fmt.Sprintf("Bits per key against false-positive rate (%s)", units.Counted(p.Items, "key")),
		XLabel: "false-positive rate (log scale; better to the right)", YLabel: "bits per key",
		XLog: true, XReverse: true, Width: 800, Height: 520,
	}
	for _, cv := range planner.Curves(p.Items) {
		s := svgplot.Series{Name: cv.Name, Line: true, Marker: !cv.Bound && strings.HasPrefix(cv.Name, "cuckoo"), Dashed: cv.Bound}
		if cv.Bound {
			s.Color = "#555555"
		}
		for _, pt := range cv.Points {
			s.Points = append(s.Points, svgplot.Point{X: pt.FPR, Y: pt.BitsPerItem, Label: pt.Label})
		}
		c.Series = append(c.Series, s)
	}
	picked := svgplot.Series{Name: "options for " + units.Percent(p.FPR), Color: "#000000"}
	for i, o := range p.Options {
		label := ""
		if i == p.Recommended {
			label = "recommended: " + o.Name
		}
		picked.Points = append(picked.Points, svgplot.Point{X: o.FPR, Y: o.BitsPerItem, Label: label})
	}
	c.Series = append(c.Series, picked)
	return c
}
