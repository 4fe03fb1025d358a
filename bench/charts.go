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
	p.Add(plotter.NewGrid())
	shapes := map[string]draw.GlyphDrawer{
		"cuckoo": draw.CircleGlyph{}, "bloom": draw.TriangleGlyph{}, "static": draw.SquareGlyph{},
	}
	for _, ours := range []bool{true, false} {
		for _, kind := range []string{"cuckoo", "bloom", "static"} {
			var pts plotter.XYLabels
			for _, name := range rowOrder(r) {
				ri := rowInfoOf(r, name)
				s := sum[cell{name, n, rand16}]
				if ri.Ours != ours || ri.Kind != kind || s == nil || s.Reps == 0 ||
					s.FPR <= 0 || math.IsNaN(s.FPR) || s.HeapBits > maxChartBits {
					continue
				}
				pts.XYs = append(pts.XYs, plotter.XY{X: s.HeapBits, Y: s.FPR})
				pts.Labels = append(pts.Labels, shortName(name))
			}
			if len(pts.XYs) == 0 {
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
			labels, err := plotter.NewLabels(pts)
			if err != nil {
				return err
			}
			for i := range labels.TextStyle {
				labels.TextStyle[i].Font.Size = vg.Points(7)
				labels.TextStyle[i].Color = sc.GlyphStyle.Color
			}
			labels.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(-2)}
			p.Add(sc, labels)
			p.Legend.Add(fmt.Sprintf("%s: %s", who, kind), sc)
		}
	}
	p.Legend.Top = true
	p.Legend.Left = false
	return p.Save(11*vg.Inch, 7*vg.Inch, c.path)
}

// sizeChart draws one time per operation against capacity for the rows
// measured at two sizes or more; it reports false when there are none.
func sizeChart(r *results, sum map[cell]*summary, op string, c chart) (bool, error) {
	p := plot.New()
	p.Title.Text = c.title
	p.X.Label.Text = "capacity n (keys added)"
	p.Y.Label.Text = "ns per operation"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	lines := 0
	for _, name := range rowOrder(r) {
		var pts plotter.XYs
		for _, n := range r.Config.Sizes {
			s := sum[cell{name, n, rand16}]
			if s == nil || s.Reps == 0 {
				continue
			}
			v := opTime(op)(medianTrial(s))
			if v > 0 && !math.IsNaN(v) {
				pts = append(pts, plotter.XY{X: float64(n), Y: v})
			}
		}
		if len(pts) < 2 {
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
	p.Legend.Top = true
	p.Legend.Left = true
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
