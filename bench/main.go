// Command bench compares this module's filters with the Go libraries users
// would otherwise pick, in one process and one run, and writes the results
// as a markdown report and SVG charts.
//
//	cd bench && go run . -mode quick   # 10^6 keys, under two minutes
//	cd bench && go run . -mode full    # 10^6, 10^7, 10^8 keys; about an hour or more
//
// See README.md for what is measured and how.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
)

// config is everything that shapes a run; it is saved with the results.
type config struct {
	Mode    string    `json:"mode"`
	Sizes   []uint64  `json:"sizes"`
	Keys    []keyKind `json:"keys"`
	Reps    int       `json:"reps"`
	Probes  uint64    `json:"probes"`   // absent keys looked up per trial
	Rows    string    `json:"rows"`     // regexp: rows to run
	BigN    uint64    `json:"big_n"`    // from this size on, only BigRows run
	BigRows string    `json:"big_rows"` // regexp
	BigReps int       `json:"big_reps"` // repetitions at sizes ≥ BigN
	BigKeys []keyKind `json:"big_keys"` // key kinds at sizes ≥ BigN
	// The over-fill check: capacities, the rows it covers (a regexp), and
	// the refusals after which it stops offering keys.
	OverfillSizes []uint64 `json:"overfill_sizes"`
	OverfillRows  string   `json:"overfill_rows"`
	MaxRefusals   uint64   `json:"max_refusals"`
	Seed          uint64   `json:"seed"`
	MemBudget     uint64   `json:"mem_budget"` // bytes of keys held in memory per key set
	Command       string   `json:"command"`
	SkipTrials    bool     `json:"skip_trials,omitempty"`
	SkipOverfill  bool     `json:"skip_overfill,omitempty"`
}

// results is what a run produces; the report is rendered from it alone, so
// `-report results.json` redraws tables and charts without measuring.
type results struct {
	Config    config              `json:"config"`
	Machine   machine             `json:"machine"`
	KeyLens   map[keyKind]float64 `json:"key_lens"`
	Trials    []trial             `json:"trials"`
	Overfills []overfill          `json:"overfills"`
	Rows      []rowInfo           `json:"rows"` // the rows run, in table order
	Skipped   []string            `json:"skipped"`
	Extra     []extraRun          `json:"-"` // merged runs (see merge)
	Started   time.Time           `json:"started"`
	Finished  time.Time           `json:"finished"`
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("bench: ")
	var (
		mode     = flag.String("mode", "quick", "quick (10^6 keys, under two minutes) or full (10^6, 10^7, 10^8)")
		sizes    = flag.String("sizes", "", "comma-separated capacities, e.g. 1e6,1e7 (default: the mode's)")
		keys     = flag.String("keys", "rand16,url", "key kinds: rand16 (16 random bytes), url (~60-byte URLs)")
		bigKeys  = flag.String("big-keys", "", "key kinds at 10^8 (default: the mode's; full: rand16)")
		reps     = flag.Int("reps", 0, "repetitions per row (default: the mode's)")
		probes   = flag.Float64("probes", 0, "absent keys looked up per trial (default: the mode's)")
		rowsRe   = flag.String("rows", "", "regexp: run only rows whose name matches")
		phases   = flag.String("phases", "trials,overfill", "what to run: trials (the timed measurements), overfill (the data-loss check), or both")
		ofRows   = flag.String("overfill-rows", "", "regexp: rows of the over-fill check (default: the mode's)")
		ofSizes  = flag.String("overfill-sizes", "", "capacities of the over-fill check (default: the mode's)")
		md       = flag.String("out", "", "markdown report path (default: the mode's)")
		jsonOut  = flag.String("json", "", "raw results path (default: the mode's)")
		svgDir   = flag.String("svg", "", "directory for the SVG charts (default: the mode's)")
		notes    = flag.String("notes", "notes.md", "markdown included in the report after the targets, if the file exists")
		docFile  = flag.String("doc", "", "with -report: rewrite the speed table of this Go file (the root package's doc.go) from the results")
		report   = flag.String("report", "", "render the report from these results files (comma-separated: trials of the first run, plus the over-fill checks of all) and exit; measure nothing")
		seed     = flag.Uint64("seed", 1, "seed of the keys and of the filters that take one")
		budget   = flag.Float64("mem", 6, "GiB of keys one key set may hold in memory; larger sets are regenerated chunk by chunk")
		list     = flag.Bool("list", false, "list the rows and exit")
		gomaxpro = flag.Int("gomaxprocs", 0, "set GOMAXPROCS (default: leave it)")
	)
	flag.Parse()
	if *gomaxpro > 0 {
		runtime.GOMAXPROCS(*gomaxpro)
	}
	if *list {
		for _, s := range rows() {
			fmt.Printf("%-8s %s\n", s.kind, s.name)
		}
		return
	}

	cfg, paths, err := modeConfig(*mode)
	if err != nil {
		log.Fatal(err)
	}
	if *md != "" {
		paths.md = *md
	}
	if *jsonOut != "" {
		paths.json = *jsonOut
	}
	if *svgDir != "" {
		paths.svg = *svgDir
	}
	paths.notes = *notes

	if *report != "" {
		var r *results
		for _, path := range strings.Split(*report, ",") {
			more, err := loadResults(path)
			if err != nil {
				log.Fatal(err)
			}
			if r == nil {
				r = more
				continue
			}
			r.merge(more)
		}
		if *docFile != "" {
			if err := writeDocTable(r, *docFile); err != nil {
				log.Fatal(err)
			}
			return
		}
		if err := writeOutputs(r, paths); err != nil {
			log.Fatal(err)
		}
		return
	}

	if *sizes != "" {
		if cfg.Sizes, err = parseSizes(*sizes); err != nil {
			log.Fatal(err)
		}
	}
	if cfg.Keys, err = parseKeyKinds(*keys); err != nil {
		log.Fatal(err)
	}
	if *bigKeys != "" {
		if cfg.BigKeys, err = parseKeyKinds(*bigKeys); err != nil {
			log.Fatal(err)
		}
	}
	if *reps > 0 {
		cfg.Reps, cfg.BigReps = *reps, *reps
	}
	if *probes > 0 {
		cfg.Probes = uint64(*probes)
	}
	if *rowsRe != "" {
		cfg.Rows = *rowsRe
	}
	if *ofRows != "" {
		cfg.OverfillRows = *ofRows
	}
	if *ofSizes != "" {
		if cfg.OverfillSizes, err = parseSizes(*ofSizes); err != nil {
			log.Fatal(err)
		}
	}
	cfg.SkipTrials = !strings.Contains(*phases, "trials")
	cfg.SkipOverfill = !strings.Contains(*phases, "overfill")
	cfg.Seed = *seed
	cfg.MemBudget = uint64(*budget * (1 << 30))
	cfg.Command = "go run ."
	for _, a := range os.Args[1:] {
		cfg.Command += " " + shellQuote(a)
	}

	r := &results{Config: cfg, Machine: describeMachine(), KeyLens: map[keyKind]float64{}, Started: time.Now()}
	if err := measure(r, paths); err != nil {
		log.Fatal(err)
	}
	r.Finished = time.Now()
	r.Machine.LoadAfter = loadAverage()
	if err := saveJSON(r, paths.json); err != nil {
		log.Fatal(err)
	}
	if err := writeOutputs(r, paths); err != nil {
		log.Fatal(err)
	}
	log.Printf("done in %v: %s, %s, charts in %s", time.Since(r.Started).Round(time.Second), paths.md, paths.json, paths.svg)
}

// outputs says where a run writes.
type outputs struct{ md, json, svg, notes string }

// modeConfig returns the defaults of a mode.
func modeConfig(mode string) (config, outputs, error) {
	switch mode {
	case "quick":
		return config{
				Mode: "quick", Sizes: []uint64{1e6}, Reps: 3, Probes: 1e6,
				// The slowest peers (over a microsecond per operation)
				// are left to the full mode.
				Rows: `^[^t]|^tylertreat[^/]`, BigN: 1e8, BigRows: ".", BigReps: 3,
				OverfillSizes: []uint64{1e5}, MaxRefusals: 1e5,
				OverfillRows: `^cuckoo f=(8|16)( \(default\))?$|^seiflotfy/cuckoofilter \(|^bloom\.New \(blocked\) @1%`,
			}, outputs{
				md: "results/tmp/quick.md", json: "results/tmp/quick.json", svg: "results/tmp",
			}, nil
	case "full":
		return config{
				Mode: "full", Sizes: []uint64{1e6, 1e7, 1e8}, Reps: 3, Probes: 1e7,
				Rows: ".", BigN: 1e8, BigReps: 3, BigKeys: []keyKind{rand16},
				// At 10^8 a pass over the keys takes 10-100 s per row:
				// run our plain and batch filters, the pre-hashed row,
				// and the peer of each kind that users pick most.
				BigRows:       `^cuckoo f=(8|16)|^seiflotfy/cuckoofilter \(|^bits-and-blooms/bloom @1%|^bloom\.New \(blocked\) @1%|BinaryFuse8`,
				OverfillSizes: []uint64{1e6, 1e7, 1e8}, MaxRefusals: 1e5, OverfillRows: ".",
			}, outputs{
				md: "../docs/benchmarks.md", json: "results/full.json", svg: "../docs",
			}, nil
	}
	return config{}, outputs{}, fmt.Errorf("unknown -mode %q (want quick or full)", mode)
}

// parseSizes parses "1e6,10000000".
func parseSizes(s string) ([]uint64, error) {
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v < 1 || v > 1e10 || v != float64(uint64(v)) {
			return nil, fmt.Errorf("bad size %q in -sizes", f)
		}
		out = append(out, uint64(v))
	}
	return out, nil
}

// measure runs every trial and over-fill check of the configuration,
// saving the results after each so that an interrupted run keeps what it
// measured.
func measure(r *results, paths outputs) error {
	cfg := r.Config
	rowsRe, err := regexp.Compile(cfg.Rows)
	if err != nil {
		return fmt.Errorf("bad -rows: %v", err)
	}
	bigRe, err := regexp.Compile(cfg.BigRows)
	if err != nil {
		return fmt.Errorf("bad big rows regexp: %v", err)
	}
	for _, n := range cfg.Sizes {
		if cfg.SkipTrials {
			break
		}
		var specs []spec
		for _, s := range rows() {
			switch {
			case !rowsRe.MatchString(s.name):
			case n >= cfg.BigN && !bigRe.MatchString(s.name):
			case s.maxN != 0 && n > s.maxN:
				r.Skipped = appendOnce(r.Skipped, fmt.Sprintf("%s at n=%s: too slow or too big at this size (runs up to n=%s)", s.name, human(n), human(s.maxN)))
			case s.bytesAt != nil && s.bytesAt(n) > 12<<30:
				r.Skipped = appendOnce(r.Skipped, fmt.Sprintf("%s at n=%s: needs about %.0f GiB", s.name, human(n), float64(s.bytesAt(n))/(1<<30)))
			default:
				specs = append(specs, s)
			}
		}
		if len(specs) == 0 {
			continue
		}
		for _, s := range specs {
			if !slices.ContainsFunc(r.Rows, func(ri rowInfo) bool { return ri.Name == s.name }) {
				r.Rows = append(r.Rows, infoOf(s))
			}
		}
		reps := cfg.Reps
		if n >= cfg.BigN {
			reps = cfg.BigReps
		}
		for _, kind := range cfg.Keys {
			if n >= cfg.BigN && len(cfg.BigKeys) > 0 && !slices.Contains(cfg.BigKeys, kind) {
				continue
			}
			t0 := time.Now()
			pres := newKeySet(kind, present, cfg.Seed, n, cfg.MemBudget)
			abs := newKeySet(kind, absent, cfg.Seed, cfg.Probes, cfg.MemBudget)
			if _, ok := r.KeyLens[kind]; !ok {
				r.KeyLens[kind] = pres.meanLen()
			}
			log.Printf("n=%s keys=%s: %d rows × %d reps; keys ready in %v (materialized: %v)", human(n), kind, len(specs), reps, time.Since(t0).Round(time.Millisecond), pres.materialized())
			for rep := 0; rep < reps; rep++ {
				// Interleave: every row once per repetition, starting at a
				// different row each time, so drift in the machine's load
				// spreads over all rows.
				for j := range specs {
					s := specs[(j+rep)%len(specs)]
					t := runTrial(s, n, rep, cfg.Seed+uint64(rep), pres, abs, cfg.Probes)
					r.Trials = append(r.Trials, t)
					logTrial(t)
					if err := saveJSON(r, paths.json); err != nil {
						return err
					}
				}
			}
			pres, abs = nil, nil
			freeMemory()
		}
	}
	if cfg.SkipOverfill {
		return nil
	}
	return measureOverfill(r, paths, rowsRe)
}

// measureOverfill runs the over-fill check (see overfill) on every
// dynamic row the configuration selects. From BigN on it checks cuckoo
// rows with 16-byte keys only: Bloom filters cannot refuse a key, and the
// outcome does not depend on the key kind.
func measureOverfill(r *results, paths outputs, rowsRe *regexp.Regexp) error {
	cfg := r.Config
	ofRe, err := regexp.Compile(cfg.OverfillRows)
	if err != nil {
		return fmt.Errorf("bad over-fill rows regexp: %v", err)
	}
	for _, n := range cfg.OverfillSizes {
		for _, kind := range cfg.Keys {
			if n >= cfg.BigN && kind != rand16 {
				continue
			}
			var pres *keySet
			for _, s := range rows() {
				if s.kind == kindStatic || !rowsRe.MatchString(s.name) || !ofRe.MatchString(s.name) ||
					(s.maxN != 0 && n > s.maxN) || (n >= cfg.BigN && s.kind != kindCuckoo) {
					continue
				}
				if n >= cfg.BigN && !regexp.MustCompile(cfg.BigRows).MatchString(s.name) {
					continue
				}
				if pres == nil {
					pres = newKeySet(kind, present, cfg.Seed, 2*n, cfg.MemBudget)
				}
				t0 := time.Now()
				o := runOverfill(s, n, cfg.Seed, pres, cfg.MaxRefusals)
				r.Overfills = append(r.Overfills, o)
				if !slices.ContainsFunc(r.Rows, func(ri rowInfo) bool { return ri.Name == s.name }) {
					r.Rows = append(r.Rows, infoOf(s))
				}
				log.Printf("  overfill n=%s keys=%s %-44s acked %d of %d offered, first refusal at %d, lost %d (%v)",
					human(n), kind, s.name, o.Acked, o.Attempted, o.FirstFail, o.Missing, time.Since(t0).Round(time.Millisecond))
				if err := saveJSON(r, paths.json); err != nil {
					return err
				}
			}
			pres = nil
			freeMemory()
		}
	}
	return nil
}

func freeMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

func logTrial(t trial) {
	if t.Err != "" {
		log.Printf("  %-48s rep %d: error: %s", t.Row, t.Rep, t.Err)
		return
	}
	log.Printf("  %-48s rep %d: add %6.1f hit %6.1f miss %6.1f del %6.1f ns  %6.2f bits/item  fpr %.3g  fail %d fn %d",
		t.Row, t.Rep, t.AddNs, t.HitNs, t.MissNs, t.DelNs, float64(t.HeapBytes)*8/float64(t.N),
		float64(t.FalsePos)/float64(max(t.Probes, 1)), t.FailedAdds, t.FalseNeg)
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// merge adds the over-fill checks (and rows) of another run to r, and
// records that run in r.Extra.
func (r *results) merge(o *results) {
	r.Overfills = append(r.Overfills, o.Overfills...)
	for _, ri := range o.Rows {
		if !slices.ContainsFunc(r.Rows, func(x rowInfo) bool { return x.Name == ri.Name }) {
			r.Rows = append(r.Rows, ri)
		}
	}
	r.Extra = append(r.Extra, extraRun{Command: o.Config.Command, Started: o.Started, Finished: o.Finished, Commit: o.Machine.Commit, LoadBefore: o.Machine.LoadBefore, LoadAfter: o.Machine.LoadAfter})
}

// extraRun is a run whose over-fill checks a report includes.
type extraRun struct {
	Command           string
	Started, Finished time.Time
	Commit            string
	LoadBefore        string
	LoadAfter         string
}

// shellQuote quotes a for a POSIX shell when it needs it.
func shellQuote(a string) string {
	if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`|&;()<>*?[]{}!#~") {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

func loadResults(path string) (*results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r results
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("reading %s: %v", path, err)
	}
	// Results saved before a row's chart flags existed get them from the
	// adapters.
	for i, ri := range r.Rows {
		for _, s := range registry {
			if s.name == ri.Name {
				r.Rows[i].Variant = s.variant
			}
		}
	}
	return &r, nil
}

func saveJSON(r *results, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// human formats a size: 1000000 → "1M".
func human(n uint64) string {
	switch {
	case n >= 1e9 && n%1e9 == 0:
		return fmt.Sprintf("%dG", n/1e9)
	case n >= 1e6 && n%1e6 == 0:
		return fmt.Sprintf("%dM", n/1e6)
	case n >= 1e3 && n%1e3 == 0:
		return fmt.Sprintf("%dk", n/1e3)
	}
	return fmt.Sprint(n)
}
