// Package svgplot writes small, clean scatter and line charts as SVG, by
// hand: linear or logarithmic axes with readable ticks, several series
// with a legend, optional point labels, and several charts side by side
// in one figure. It is what `cuckoo plan --svg` and `cuckoo bench --svg`
// draw with, so the main module needs no plotting dependency. It lives in
// internal/ rather than under cmd/cuckoo so that the bench/ module, whose
// import path lies below this module's, may draw its charts with it too.
//
// The output is deterministic (same input, same bytes) and self-contained:
// no scripts, no external fonts or styles, so it renders the same in a
// browser, on GitHub and in an image viewer.
package svgplot

import (
	"bufio"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// Point is one data point; Label, if set, is written beside it.
type Point struct {
	X, Y  float64
	Label string
}

// Series is a named set of points drawn in one colour.
type Series struct {
	Name   string
	Points []Point
	Line   bool // join the points (in the given order)
	Dashed bool // a dashed line
	Marker bool // draw a marker at each point
	Color  string
}

// Chart is one plot: a scatter or line chart, or, when Categories is set,
// a grouped bar chart.
type Chart struct {
	Title          string
	XLabel, YLabel string
	XLog, YLog     bool // logarithmic axes (XLog does not apply to bars)
	XReverse       bool // values decrease to the right (e.g. a rate getting better)
	Series         []Series
	Width, Height  int // pixels; 0 means 640×420
	// Categories makes a bar chart: one group of bars per category, one
	// bar per series, the bar of series s in group j of height
	// Series[s].Points[j].Y (X is ignored).
	Categories []string
}

// Palette is the default series colours: distinct in hue and lightness, and
// readable on white.
var Palette = []string{
	"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22",
}

// ErrNoData is returned for a chart without a finite point (or, on a
// logarithmic axis, without a positive one).
var ErrNoData = errors.New("svgplot: no data to plot")

// Write writes c as a standalone SVG document.
func (c *Chart) Write(w io.Writer) error { return Figure(w, 1, *c) }

// Figure writes charts side by side, cols per row, as one SVG document.
func Figure(w io.Writer, cols int, charts ...Chart) error {
	if len(charts) == 0 {
		return ErrNoData
	}
	cols = max(1, min(cols, len(charts)))
	cellW, cellH := 0, 0
	for i := range charts {
		charts[i].defaults()
		cellW = max(cellW, charts[i].Width)
		cellH = max(cellH, charts[i].Height)
	}
	rows := (len(charts) + cols - 1) / cols
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		cols*cellW, rows*cellH, cols*cellW, rows*cellH)
	fmt.Fprintf(bw, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for i := range charts {
		x, y := (i%cols)*cellW, (i/cols)*cellH
		fmt.Fprintf(bw, `<g transform="translate(%d,%d)">`+"\n", x, y)
		if err := charts[i].body(bw); err != nil {
			return err
		}
		fmt.Fprintln(bw, "</g>")
	}
	fmt.Fprintln(bw, "</svg>")
	return bw.Flush()
}

func (c *Chart) defaults() {
	if c.Width == 0 {
		c.Width = 640
	}
	if c.Height == 0 {
		c.Height = 420
	}
}

// axis maps data values to pixels along one direction.
type axis struct {
	log        bool
	lo, hi     float64 // data range (in log10 for a log axis)
	p0, p1     float64 // pixel range
	ticks      []float64
	tickLabels []string
}

func (a *axis) value(v float64) float64 {
	if a.log {
		return math.Log10(v)
	}
	return v
}

func (a *axis) pixel(v float64) float64 {
	t := (a.value(v) - a.lo) / (a.hi - a.lo)
	return a.p0 + t*(a.p1-a.p0)
}

func (a *axis) ok(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && (!a.log || v > 0)
}

// newAxis fits an axis to the values, with ticks.
func newAxis(vals []float64, log bool) (*axis, error) {
	a := &axis{log: log, lo: math.Inf(1), hi: math.Inf(-1)}
	for _, v := range vals {
		if a.ok(v) {
			x := a.value(v)
			a.lo, a.hi = min(a.lo, x), max(a.hi, x)
		}
	}
	if math.IsInf(a.lo, 0) {
		return nil, ErrNoData
	}
	if log {
		// A little room around the data, then whole decades.
		a.lo, a.hi = math.Floor(a.lo-0.1), math.Ceil(a.hi+0.1)
		if a.hi == a.lo {
			a.hi++
		}
		step := math.Ceil((a.hi - a.lo) / 10) // at most ~10 decade labels
		for e := math.Ceil(a.lo/step) * step; e <= a.hi+1e-9; e += step {
			a.ticks = append(a.ticks, math.Pow(10, e))
			a.tickLabels = append(a.tickLabels, decade(e))
		}
		return a, nil
	}
	if a.hi == a.lo {
		a.lo, a.hi = a.lo-1, a.hi+1
	}
	pad := (a.hi - a.lo) * 0.02
	if a.lo < 0 || a.lo-pad >= 0 {
		a.lo -= pad // never below a zero the data does not cross
	}
	a.hi += pad
	step := niceStep((a.hi - a.lo) / 6)
	a.lo = math.Floor(a.lo/step) * step
	a.hi = math.Ceil(a.hi/step) * step
	for v := a.lo; v <= a.hi+step/1e6; v += step {
		a.ticks = append(a.ticks, v)
		a.tickLabels = append(a.tickLabels, strconv.FormatFloat(round(v, step), 'f', -1, 64))
	}
	return a, nil
}

// niceStep rounds a raw tick step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// round removes the float noise of v, a multiple of step.
func round(v, step float64) float64 {
	digits := max(0, -int(math.Floor(math.Log10(step))))
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// decade labels 10^e compactly: 1, 10, 100, 1k … or 0.1, 0.01, 1e-3 ….
func decade(e float64) string {
	switch n := int(e); {
	case n >= 0 && n <= 2:
		return strconv.Itoa(int(math.Pow(10, e)))
	case n == 3:
		return "1k"
	case n == 6:
		return "1M"
	case n == 9:
		return "1G"
	case n == -1:
		return "0.1"
	case n == -2:
		return "0.01"
	default:
		return "1e" + strconv.Itoa(n)
	}
}

// body writes the chart's elements.
func (c *Chart) body(w *bufio.Writer) error {
	const left, right, top = 64, 16, 36
	bottom := 48
	bar := len(c.Categories) > 0
	if bar {
		bottom = 96 // room for the slanted category names
	}
	var xs, ys []float64
	for _, s := range c.Series {
		for _, p := range s.Points {
			xs = append(xs, p.X)
			ys = append(ys, p.Y)
		}
	}
	if bar {
		xs = []float64{0, 1} // no x axis: the categories are the x axis
	}
	xa, err := newAxis(xs, c.XLog && !bar)
	if err != nil {
		return err
	}
	ya, err := newAxis(ys, c.YLog)
	if err != nil {
		return err
	}
	x0, x1 := float64(left), float64(c.Width-right)
	if c.XReverse {
		x0, x1 = x1, x0
	}
	xa.p0, xa.p1 = x0, x1
	ya.p0, ya.p1 = float64(c.Height-bottom), float64(top)

	esc := html.EscapeString
	fmt.Fprintf(w, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", left, esc(c.Title))
	// Grid and ticks.
	if bar {
		xa.ticks = nil
	}
	fmt.Fprintln(w, `<g stroke="#e5e5e5" stroke-width="1">`)
	for _, t := range xa.ticks {
		x := xa.pixel(t)
		fmt.Fprintf(w, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`+"\n", x, top, x, c.Height-bottom)
	}
	for _, t := range ya.ticks {
		y := ya.pixel(t)
		fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`+"\n", left, y, c.Width-right, y)
	}
	fmt.Fprintln(w, `</g>`)
	fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n",
		left, top, c.Width-left-right, c.Height-top-bottom)
	for i, t := range xa.ticks {
		fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle" fill="#333">%s</text>`+"\n", xa.pixel(t), c.Height-bottom+16, esc(xa.tickLabels[i]))
	}
	for i, t := range ya.ticks {
		fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end" fill="#333">%s</text>`+"\n", left-6, ya.pixel(t)+4, esc(ya.tickLabels[i]))
	}
	if !bar {
		fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="middle" fill="#333">%s</text>`+"\n", (left+c.Width-right)/2, c.Height-10, esc(c.XLabel))
	}
	fmt.Fprintf(w, `<text transform="translate(16,%d) rotate(-90)" text-anchor="middle" fill="#333">%s</text>`+"\n", (top+c.Height-bottom)/2, esc(c.YLabel))

	if bar {
		c.bars(w, ya, left, right, top, bottom)
		c.legend(w, xa, ya, left, right, top)
		return nil
	}
	// Series. Labels that would overlap one already placed move down.
	var placed [][4]float64
	place := func(x, y float64, text string) (float64, float64) {
		wd, ht := 5.5*float64(len(text)), 11.0
		if x+wd > float64(c.Width-right) {
			x -= 10 + wd // keep it inside: write it to the left of the point
		}
		for try := 0; try < 8; try++ {
			clash := false
			for _, r := range placed {
				if x < r[0]+r[2] && r[0] < x+wd && y-ht < r[1] && r[1]-r[3] < y {
					clash = true
					break
				}
			}
			if !clash {
				break
			}
			y += ht
		}
		placed = append(placed, [4]float64{x, y, wd, ht})
		return x, y
	}
	for i, s := range c.Series {
		color := s.Color
		if color == "" {
			color = Palette[i%len(Palette)]
		}
		var pts []string
		for _, p := range s.Points {
			if xa.ok(p.X) && ya.ok(p.Y) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xa.pixel(p.X), ya.pixel(p.Y)))
			}
		}
		if s.Line && len(pts) > 1 {
			dash := ""
			if s.Dashed {
				dash = ` stroke-dasharray="5,4"`
			}
			fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", color, dash, strings.Join(pts, " "))
		}
		for _, p := range s.Points {
			if !xa.ok(p.X) || !ya.ok(p.Y) {
				continue
			}
			px, py := xa.pixel(p.X), ya.pixel(p.Y)
			if s.Marker || !s.Line {
				fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", px, py, color)
			}
			if p.Label != "" {
				lx, ly := place(px+5, py-5, p.Label)
				fmt.Fprintf(w, `<text x="%.1f" y="%.1f" font-size="10" fill="%s">%s</text>`+"\n", lx, ly, color, esc(p.Label))
			}
		}
	}
	c.legend(w, xa, ya, left, right, top)
	return nil
}

// legend draws the legend in the upper corner with fewer points under it.
func (c *Chart) legend(w *bufio.Writer, xa, ya *axis, left, right, top int) {
	esc := html.EscapeString
	var longest int
	for _, s := range c.Series {
		longest = max(longest, len(s.Name))
	}
	boxW := 28 + 7*longest
	boxH := 16*len(c.Series) + 6
	under := func(x0, x1 float64) int {
		n := 0
		for _, s := range c.Series {
			for _, p := range s.Points {
				if xa.ok(p.X) && ya.ok(p.Y) {
					px, py := xa.pixel(p.X), ya.pixel(p.Y)
					if px >= x0 && px <= x1 && py <= float64(top+boxH+8) {
						n++
					}
				}
			}
		}
		return n
	}
	lx, ly := c.Width-right-8, top+14
	if under(float64(left), float64(left+boxW+8)) < under(float64(lx-boxW), float64(lx)) {
		lx = left + 8 + boxW
	}
	fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d" fill="white" fill-opacity="0.85" stroke="#ccc"/>`+"\n",
		lx-boxW, ly-12, boxW, boxH)
	for i, s := range c.Series {
		color := s.Color
		if color == "" {
			color = Palette[i%len(Palette)]
		}
		y := ly + 16*i
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="5,4"`
		}
		fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", lx-boxW+6, y-4, lx-boxW+20, y-4, color, dash)
		fmt.Fprintf(w, `<text x="%d" y="%d" fill="#333">%s</text>`+"\n", lx-boxW+24, y, esc(s.Name))
	}
}

// bars draws a grouped bar chart, with the category names below.
func (c *Chart) bars(w *bufio.Writer, ya *axis, left, right, top, bottom int) {
	esc := html.EscapeString
	n := len(c.Categories)
	group := float64(c.Width-left-right) / float64(n)
	barW := group * 0.8 / float64(max(len(c.Series), 1))
	base := ya.p0
	if !ya.log && ya.lo <= 0 && ya.hi >= 0 {
		base = ya.pixel(0)
	}
	for j, name := range c.Categories {
		gx := float64(left) + group*float64(j) + group*0.1
		for i, s := range c.Series {
			if j >= len(s.Points) || !ya.ok(s.Points[j].Y) {
				continue
			}
			color := s.Color
			if color == "" {
				color = Palette[i%len(Palette)]
			}
			y := ya.pixel(s.Points[j].Y)
			top, h := min(y, base), math.Abs(base-y)
			fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", gx+barW*float64(i), top, barW*0.92, h, color)
			if lbl := s.Points[j].Label; lbl != "" {
				fmt.Fprintf(w, `<text x="%.1f" y="%.1f" font-size="9" text-anchor="middle" fill="#333">%s</text>`+"\n", gx+barW*(float64(i)+0.46), top-3, esc(lbl))
			}
		}
		cx := float64(left) + group*(float64(j)+0.5)
		fmt.Fprintf(w, `<text transform="translate(%.1f,%d) rotate(-25)" text-anchor="end" font-size="11" fill="#333">%s</text>`+"\n", cx, c.Height-bottom+14, esc(name))
	}
}
