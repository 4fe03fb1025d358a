package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// chart is an SVG the report links.
type chart struct{ title, path string }

// maxChartBits keeps rows that use far more memory (BoomFilters, the
// scalable peer) off the false-positive chart, whose x axis they would
// squash; the tables still list them.
const maxChartBits = 40

var (
	colorOurs = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colorPeer = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	// palette for line charts, one colour per row.
	palette = []color.Color{
		color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff},
		color.RGBA{0x8c, 0x56, 0x4b, 0xff}, color.RGBA{0xe3, 0x77, 0xc2, 0xff},
		color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
		color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x7f, 0x7f, 0x7f, 0xff},
		color.RGBA{0x17, 0xbe, 0xcf, 0xff}, color.RGBA{0xbc, 0xbd, 0x22, 0xff},
	}
)

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
	p := plot.New()
	p.Title.Text = c.title
	p.X.Label.Text = "bits per item (measured heap)"
	p.Y.Label.Text = "measured false-positive rate"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Tick.Marker = stepTicks(2)
	p.Add(plotter.NewGrid())

	// Reference curves: the space lower bound for a filter, log2(1/ε)
	// bits per item, and a classic Bloom filter with optimal k,
	// 1.44·log2(1/ε).
	for _, ref := range []struct {
		name   string
		factor float64
		dashes []vg.Length
	}{
		{"lower bound log2(1/ε)", 1, []vg.Length{vg.Points(2), vg.Points(2)}},
		{"optimal classic Bloom 1.44·log2(1/ε)", 1 / math.Ln2, []vg.Length{vg.Points(6), vg.Points(3)}},
	} {
		var pts plotter.XYs
		for e := -1.0; e >= -5.5; e -= 0.05 {
			x := ref.factor * -e * math.Log2(10)
			if x <= maxChartBits {
				pts = append(pts, plotter.XY{X: x, Y: math.Pow(10, e)})
			}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = color.Gray{Y: 0x90}
		l.Dashes = ref.dashes
		p.Add(l)
		p.Legend.Add(ref.name, l)
	}

	shapes := map[string]draw.GlyphDrawer{
		"cuckoo": draw.CircleGlyph{}, "bloom": draw.TriangleGlyph{}, "static": draw.SquareGlyph{},
	}
	var placed []plotter.XY // points already labelled, to stack labels of close ones
	for _, ours := range []bool{true, false} {
		for _, kind := range []string{"cuckoo", "bloom", "static"} {
			var pts plotter.XYs
			var names []string
			for _, name := range rowOrder(r) {
				ri := rowInfoOf(r, name)
				s := sum[cell{name, n, rand16}]
				if ri.Ours != ours || ri.Kind != kind || ri.Variant || s == nil || s.Reps == 0 ||
					s.FPR <= 0 || math.IsNaN(s.FPR) || s.HeapBits > maxChartBits {
					continue
				}
				pts = append(pts, plotter.XY{X: s.HeapBits, Y: s.FPR})
				names = append(names, shortName(name))
			}
			if len(pts) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return err
			}
			sc.GlyphStyle.Shape = shapes[kind]
			sc.GlyphStyle.Radius = vg.Points(3.5)
			sc.GlyphStyle.Color = colorPeer
			who := "other libraries"
			if ours {
				sc.GlyphStyle.Color = colorOurs
				who = "this module"
			}
			p.Add(sc)
			p.Legend.Add(fmt.Sprintf("%s: %s", who, kind), sc)
			for i, pt := range pts {
				// Stack the label below those of earlier points close by.
				k := 0
				for _, q := range placed {
					if math.Abs(q.X-pt.X) < 2.5 && math.Abs(math.Log10(q.Y/pt.Y)) < 0.15 {
						k++
					}
				}
				placed = append(placed, pt)
				lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{pt}, Labels: []string{names[i]}})
				if err != nil {
					return err
				}
				lb.TextStyle[0].Font.Size = vg.Points(8)
				lb.TextStyle[0].Color = sc.GlyphStyle.Color
				lb.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(-3 - 10*float64(k))}
				p.Add(lb)
			}
		}
	}
	p.X.Max += 3 // room for the labels of the rightmost points
	p.Legend.Top = false
	p.Legend.Left = true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(10), vg.Points(10)
	return p.Save(11*vg.Inch, 7*vg.Inch, c.path)
}

// logTicks125 labels 1, 2 and 5 times each power of ten, with unlabelled
// ticks between.
type logTicks125 struct{}

func (logTicks125) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		for m := 1; m < 10; m++ {
			v := float64(m) * math.Pow(10, e)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = fmt.Sprintf("%g", v)
			}
			out = append(out, t)
		}
	}
	return out
}

// sizeTicks labels the measured capacities.
type sizeTicks []uint64

func (t sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, n := range t {
		if v := float64(n); v >= lo && v <= hi {
			out = append(out, plot.Tick{Value: v, Label: human(n)})
		}
	}
	return out
}

// stepTicks labels every step units.
type stepTicks float64

func (t stepTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for v := math.Ceil(lo/float64(t)) * float64(t); v <= hi; v += float64(t) {
		out = append(out, plot.Tick{Value: v, Label: fmt.Sprintf("%g", v)})
	}
	return out
}

// sizeChart draws one time per operation against capacity for the rows
// measured at two sizes or more; it reports false when there are none.
func sizeChart(r *results, sum map[cell]*summary, op string, c chart) (bool, error) {
	p := plot.New()
	p.Title.Text = c.title
	p.X.Label.Text = "capacity n (keys added)"
	p.Y.Label.Text = "ns per operation"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = sizeTicks(r.Config.Sizes)
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks125{}
	p.Add(plotter.NewGrid())
	// Only the rows measured at every size that any row reached: at 10^8
	// the full mode runs a chosen few, and twenty lines would be unreadable.
	series := map[string]plotter.XYs{}
	most := 0
	for _, name := range rowOrder(r) {
		var pts plotter.XYs
		for _, n := range r.Config.Sizes {
			s := sum[cell{name, n, rand16}]
			if s == nil || s.Reps == 0 {
				continue
			}
			if v := opTime(op)(medianTrial(s)); v > 0 && !math.IsNaN(v) {
				pts = append(pts, plotter.XY{X: float64(n), Y: v})
			}
		}
		series[name] = pts
		most = max(most, len(pts))
	}
	lines := 0
	for _, name := range rowOrder(r) {
		pts := series[name]
		if len(pts) < 2 || len(pts) < most {
			continue
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return false, err
		}
		col := palette[lines%len(palette)]
		l.Color, sc.Color = col, col
		if !rowInfoOf(r, name).Ours {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(l, sc)
		p.Legend.Add(shortName(name), l, sc)
		lines++
	}
	if lines == 0 {
		return false, nil
	}
	// Leave the top third free for the legend.
	p.Y.Min /= 1.2
	p.Y.Max *= math.Pow(p.Y.Max/p.Y.Min, 0.6)
	p.X.Min /= 1.3
	p.X.Max *= 1.3
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Legend.XOffs = vg.Points(10)
	return true, p.Save(10*vg.Inch, 7*vg.Inch, c.path)
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
