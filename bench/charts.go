package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/dedupkit/cuckoo/internal/svgplot"
)

// chart is an SVG the report links.
type chart struct{ title, path string }

// maxChartBits keeps rows that use far more memory (BoomFilters, the
// scalable peer) off the false-positive chart, whose x axis they would
// squash; the tables still list them.
const maxChartBits = 40

// The false-positive chart's colours: this module's filters in warm
// tones, the other libraries' in cool ones, one shade per kind.
var kindColors = map[bool]map[string]string{
	true:  {"cuckoo": "#d62728", "bloom": "#ff7f0e", "static": "#8c564b"},
	false: {"cuckoo": "#1f77b4", "bloom": "#17becf", "static": "#2ca02c"},
}

// writeCharts draws the charts into dir and returns them.
func writeCharts(r *results, sum map[cell]*summary, dir string) ([]chart, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []chart
	// The false-positive chart at the largest size every main row ran.
	n := uint64(0)
	for _, s := range r.Config.Sizes {
		if s < r.Config.BigN && sum[cell{rowOurs16, s, rand16}] != nil {
			n = s
		}
	}
	if n > 0 {
		c := chart{
			title: fmt.Sprintf("False-positive rate against memory, n = %s, 16-byte keys (lower left is better)", human(n)),
			path:  filepath.Join(dir, "bench-fpr-vs-bits.svg"),
		}
		if err := fprChart(r, sum, n, c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(r.Config.Sizes) > 1 {
		for _, op := range []struct{ file, what string }{
			{"bench-ns-vs-size.svg", "hit"},
			{"bench-miss-vs-size.svg", "miss"},
			{"bench-add-vs-size.svg", "add"},
		} {
			c := chart{
				title: fmt.Sprintf("ns per %s against capacity, 16-byte keys (medians)", opLong(op.what)),
				path:  filepath.Join(dir, op.file),
			}
			drawn, err := sizeChart(r, sum, op.what, c)
			if err != nil {
				return nil, err
			}
			if drawn {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

func opLong(op string) string {
	switch op {
	case "hit":
		return "Contains of a present key"
	case "miss":
		return "Contains of an absent key"
	}
	return "Add (filling to capacity)"
}

func fprChart(r *results, sum map[cell]*summary, n uint64, c chart) error {
	ch := svgplot.Chart{
		Title:  c.title,
		XLabel: "bits per item (measured heap)",
		YLabel: "measured false-positive rate",
		YLog:   true,
		Width:  1056, Height: 672,
	}
	// Reference curves: the space lower bound for a filter, log2(1/ε)
	// bits per item, and a classic Bloom filter with optimal k,
	// 1.44·log2(1/ε).
	for _, ref := range []struct {
		name   string
		factor float64
	}{
		{"lower bound log2(1/ε)", 1},
		{"optimal classic Bloom 1.44·log2(1/ε)", 1 / math.Ln2},
	} {
		var pts []svgplot.Point
		for e := -1.0; e >= -5.5; e -= 0.05 {
			x := ref.factor * -e * math.Log2(10)
			if x <= maxChartBits {
				pts = append(pts, svgplot.Point{X: x, Y: math.Pow(10, e)})
			}
		}
		ch.Series = append(ch.Series, svgplot.Series{Name: ref.name, Points: pts, Line: true, Dashed: true, Color: "#909090"})
	}
	for _, ours := range []bool{true, false} {
		for _, kind := range []string{"cuckoo", "bloom", "static"} {
			var pts []svgplot.Point
			for _, name := range rowOrder(r) {
				ri := rowInfoOf(r, name)
				s := sum[cell{name, n, rand16}]
				if ri.Ours != ours || ri.Kind != kind || ri.Variant || s == nil || s.Reps == 0 ||
					s.FPR <= 0 || math.IsNaN(s.FPR) || s.HeapBits > maxChartBits {
					continue
				}
				pts = append(pts, svgplot.Point{X: s.HeapBits, Y: s.FPR, Label: shortName(name)})
			}
			if len(pts) == 0 {
				continue
			}
			who := "other libraries"
			if ours {
				who = "this module"
			}
			ch.Series = append(ch.Series, svgplot.Series{
				Name: fmt.Sprintf("%s: %s", who, kind), Points: pts, Marker: true, Color: kindColors[ours][kind],
			})
		}
	}
	return writeChart(&ch, c.path)
}

// sizeChart draws one time per operation against capacity for the rows
// measured at two sizes or more; it reports false when there are none.
func sizeChart(r *results, sum map[cell]*summary, op string, c chart) (bool, error) {
	ch := svgplot.Chart{
		Title:  c.title,
		XLabel: "capacity n (keys added)",
		YLabel: "ns per operation",
		XLog:   true, YLog: true,
		Width: 960, Height: 672,
	}
	// Only the rows measured at every size that any row reached: at 10^8
	// the full mode runs a chosen few, and twenty lines would be unreadable.
	series := map[string][]svgplot.Point{}
	most := 0
	for _, name := range rowOrder(r) {
		var pts []svgplot.Point
		for _, n := range r.Config.Sizes {
			s := sum[cell{name, n, rand16}]
			if s == nil || s.Reps == 0 {
				continue
			}
			if v := opTime(op)(medianTrial(s)); v > 0 && !math.IsNaN(v) {
				pts = append(pts, svgplot.Point{X: float64(n), Y: v})
			}
		}
		series[name] = pts
		most = max(most, len(pts))
	}
	for _, name := range rowOrder(r) {
		pts := series[name]
		if len(pts) < 2 || len(pts) < most {
			continue
		}
		ch.Series = append(ch.Series, svgplot.Series{
			Name: shortName(name), Points: pts, Line: true, Marker: true,
			Dashed: !rowInfoOf(r, name).Ours,
			Color:  svgplot.Palette[len(ch.Series)%len(svgplot.Palette)],
		})
	}
	if len(ch.Series) == 0 {
		return false, nil
	}
	return true, writeChart(&ch, c.path)
}

// writeChart writes ch as an SVG file at path.
func writeChart(ch *svgplot.Chart, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := ch.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// shortName trims a row name for chart labels.
func shortName(name string) string {
	r := strings.NewReplacer(
		"/cuckoofilter", "", "/bloomfilter", "", "/bloom ", " ", "AndreasBriese/", "",
		" ContainsBatch/AddBatch", " batch", " AddHash/ContainsHash (pre-hashed)", " pre-hashed",
		"xorfilter ", "", " (static)", "", " (default)", "",
	)
	return r.Replace(name)
}
