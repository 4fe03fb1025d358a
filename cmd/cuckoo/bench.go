package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/quickbench"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
	"github.com/dedupkit/cuckoo/internal/svgplot"
)

const benchHelp = `Usage: cuckoo bench [--items N] [--fpr P] [--svg FILE] [--json]

A quick benchmark of every filter on this machine: each is built for N
keys at the rate P and filled with N random 16-byte keys; then it measures
nanoseconds per Add, per Contains of a key added (hit) and of a key never
added (miss), the false-positive rate over absent keys (enough for about
100 false positives, at least N, at most 10 million), and bits per item.
Each timing is the fastest of 3 passes. It takes a few seconds at the
default million keys.

For careful comparisons use the package benchmarks (go test -bench) and the
bench/ module of the repository, which also measure other libraries.

Examples:
  cuckoo bench
  cuckoo bench --items 10M --fpr 1e-4 --svg bench.svg
`

type benchFlags struct {
	items  countValue
	fpr    rateValue
	seed   seedValue
	svg    string
	asJSON bool
}

func (f *benchFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.items, "items", "keys per filter `N` (default 1,000,000)")
	fs.Var(&f.fpr, "fpr", fmt.Sprintf("target false-positive `rate` of every filter (default %v)", filterfile.DefaultPlanRate))
	fs.Var(&f.seed, "seed", "`seed` of the keys and the filters (default 1)")
	fs.Var((*nameValue)(&f.svg), "svg", "draw the results to `file` (SVG)")
	fs.BoolVar(&f.asJSON, "json", false, "print the results as JSON")
}

func benchCommand() *command {
	return newCommand("bench", "benchmark the filters on this machine: speed, rate, size", benchHelp,
		(*benchFlags).register, func(e *env, f *benchFlags, pos []string) error {
			if err := noArgs("bench", pos); err != nil {
				return err
			}
			return runBench(e, f)
		})
}

// maxBenchItems keeps the key arrays (16 bytes each, twice) in memory.
const maxBenchItems = 200_000_000

func runBench(e *env, f *benchFlags) error {
	cfg := quickbench.Config{Items: 1_000_000, FPR: f.fpr.or(filterfile.DefaultPlanRate), Seed: 1}
	if f.items.set {
		if f.items.n == 0 || f.items.n > maxBenchItems {
			return usageErr("give from 1 to 200M", "bad --items %s", units.Count(f.items.n))
		}
		cfg.Items = f.items.n
	}
	for _, kind := range []filterfile.Kind{filterfile.Cuckoo, filterfile.BloomBlocked} {
		if err := filterfile.CheckRate(filterfile.Spec{Kind: kind, FPR: cfg.FPR}); err != nil {
			return usageErr("see 'cuckoo bench --help'", "bad --fpr %s: %v", f.fpr.text, err)
		}
	}
	if f.seed.set {
		cfg.Seed = f.seed.n
	}
	w := e.stdout
	if !f.asJSON {
		fmt.Fprintf(w, "%s of 16 bytes, target rate %s, %s %s/%s, %d CPUs\n\n", units.Counted(cfg.Items, "key"),
			units.Percent(cfg.FPR), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
		fmt.Fprintf(w, "%-20s %9s %9s %9s %9s %14s\n", "filter", "add ns", "hit ns", "miss ns", "bits/key", "measured rate")
		cfg.OnResult = func(r quickbench.Result) {
			fmt.Fprintf(w, "%-20s %9.1f %9.1f %9.1f %9.2f %14s\n", r.Name, r.AddNs, r.HitNs, r.MissNs, r.BitsPerItem, units.Percent(r.FPR))
		}
	}
	results, err := quickbench.Run(cfg)
	if err != nil {
		return dataErr("this is a bug; please report it", "%v", unwrap(err))
	}
	if f.svg != "" {
		if err := e.writeFile(f.svg, func(w io.Writer) error { return benchFigure(cfg, results, w) }); err != nil {
			return err
		}
	}
	if f.asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		type row struct {
			Name        string  `json:"name"`
			AddNs       float64 `json:"add_ns"`
			HitNs       float64 `json:"contains_hit_ns"`
			MissNs      float64 `json:"contains_miss_ns"`
			BitsPerItem float64 `json:"bits_per_item"`
			FPR         float64 `json:"measured_fpr"`
			Expected    float64 `json:"expected_fpr"`
			Absent      uint64  `json:"absent_keys_probed"`
		}
		out := struct {
			Items  uint64  `json:"items"`
			FPR    float64 `json:"target_fpr"`
			Go     string  `json:"go"`
			CPUs   int     `json:"cpus"`
			Result []row   `json:"results"`
		}{Items: cfg.Items, FPR: cfg.FPR, Go: runtime.Version(), CPUs: runtime.NumCPU()}
		for _, r := range results {
			out.Result = append(out.Result, row{r.Name, r.AddNs, r.HitNs, r.MissNs, r.BitsPerItem, r.FPR, r.ExpectedFPR, r.Absent})
		}
		return enc.Encode(out)
	}
	return nil
}

// benchFigure draws two panels: the speed of each filter as bars, and the
// measured rate against bits per key, one labelled point per filter.
func benchFigure(cfg quickbench.Config, results []quickbench.Result, w io.Writer) error {
	speed := svgplot.Chart{
		Title:  fmt.Sprintf("Nanoseconds per operation (%s)", units.Counted(cfg.Items, "key")),
		YLabel: "nanoseconds per operation (lower is better)",
	}
	rate := svgplot.Chart{
		Title:  fmt.Sprintf("Measured false-positive rate (target %s)", units.Percent(cfg.FPR)),
		XLabel: "bits per key", YLabel: "false-positive rate (log scale)", YLog: true,
	}
	add := svgplot.Series{Name: "Add"}
	hit := svgplot.Series{Name: "Contains, present"}
	miss := svgplot.Series{Name: "Contains, absent"}
	fpr := svgplot.Series{Name: "measured rate"}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range results {
		speed.Categories = append(speed.Categories, r.Name)
		add.Points = append(add.Points, svgplot.Point{Y: r.AddNs})
		hit.Points = append(hit.Points, svgplot.Point{Y: r.HitNs})
		miss.Points = append(miss.Points, svgplot.Point{Y: r.MissNs})
		// A rate of 0 (no false positive seen) is drawn at a tenth of
		// the smallest measurable rate, so that it stays on the log axis.
		fpr.Points = append(fpr.Points, svgplot.Point{X: r.BitsPerItem, Y: max(r.FPR, 0.1/float64(r.Absent)), Label: r.Name})
		lo, hi = min(lo, r.BitsPerItem), max(hi, r.BitsPerItem)
	}
	speed.Series = []svgplot.Series{add, hit, miss}
	target := svgplot.Series{Name: "target", Line: true, Dashed: true, Color: "#555555",
		Points: []svgplot.Point{{X: lo, Y: cfg.FPR}, {X: hi, Y: cfg.FPR}}}
	rate.Series = []svgplot.Series{fpr, target}
	return svgplot.Figure(w, 2, speed, rate)
}
