package svgplot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

func sample() Chart {
	return Chart{
		Title: "bits per item <vs> rate", XLabel: "false-positive rate", YLabel: "bits per item",
		XLog: true, XReverse: true,
		Series: []Series{
			{Name: "cuckoo b=4", Line: true, Marker: true, Points: []Point{{0.03, 8.5, "f=8"}, {0.0019, 12.6, ""}, {0.00012, 16.8, "f=16"}}},
			{Name: "bloom", Line: true, Dashed: true, Points: []Point{{0.03, 7.4, ""}, {0.001, 15.6, ""}, {0.0001, 22, ""}}},
			{Name: "point", Points: []Point{{0.001, 14, "you"}, {math.NaN(), 3, ""}, {-1, 3, ""}}},
		},
	}
}

// checkXML parses the document, so a broken tag or escape fails the test.
func checkXML(t *testing.T, doc []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, doc)
		}
	}
}

func TestChartWellFormed(t *testing.T) {
	c := sample()
	var b bytes.Buffer
	if err := c.Write(&b); err != nil {
		t.Fatal(err)
	}
	doc := b.Bytes()
	checkXML(t, doc)
	s := string(doc)
	for _, want := range []string{"<svg", "bits per item &lt;vs&gt; rate", "cuckoo b=4", "f=16", "stroke-dasharray", "0.01", "1e-3", "you"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
		t.Error("a non-finite point reached the output")
	}
	// Deterministic.
	var b2 bytes.Buffer
	c2 := sample()
	c2.Write(&b2)
	if !bytes.Equal(doc, b2.Bytes()) {
		t.Error("same chart, different bytes")
	}
}

func TestReverseAxis(t *testing.T) {
	c := sample()
	var b bytes.Buffer
	c.Write(&b)
	// With XReverse the larger rate (0.03) is drawn left of the smaller.
	a, _ := newAxis([]float64{0.03, 0.0001}, true)
	a.p0, a.p1 = 600, 64
	if a.pixel(0.03) >= a.pixel(0.0001) {
		t.Fatalf("reversed axis puts 0.03 at %v, 1e-4 at %v", a.pixel(0.03), a.pixel(0.0001))
	}
}

func TestFigure(t *testing.T) {
	var b bytes.Buffer
	if err := Figure(&b, 2, sample(), Chart{Title: "linear", Series: []Series{{Name: "s", Points: []Point{{1, 2, ""}, {3, 5, ""}}}}}); err != nil {
		t.Fatal(err)
	}
	checkXML(t, b.Bytes())
	if n := strings.Count(b.String(), "<g transform="); n != 2 {
		t.Fatalf("%d panels, want 2", n)
	}
	if !strings.Contains(b.String(), `width="1280"`) {
		t.Fatal("two 640-pixel panels side by side should make 1280 pixels")
	}
}

func TestNoData(t *testing.T) {
	for _, c := range []Chart{
		{},
		{Series: []Series{{Points: []Point{{math.NaN(), 1, ""}}}}},
		{XLog: true, Series: []Series{{Points: []Point{{0, 1, ""}, {-3, 2, ""}}}}},
	} {
		if err := c.Write(io.Discard); !errors.Is(err, ErrNoData) {
			t.Errorf("chart %+v: error %v, want ErrNoData", c, err)
		}
	}
	if err := Figure(io.Discard, 1); !errors.Is(err, ErrNoData) {
		t.Errorf("empty figure: %v", err)
	}
}

func TestTicks(t *testing.T) {
	for _, c := range []struct {
		vals []float64
		log  bool
		want string
	}{
		{[]float64{0.3, 9.7}, false, "0 2 4 6 8 10"}, {[]float64{0, 100}, false, "0 20 40 60 80 100 120"},
		{[]float64{12, 37}, false, "10 15 20 25 30 35 40"},
		{[]float64{5, 5}, false, "3.5 4 4.5 5 5.5 6 6.5"},
		{[]float64{0.002, 0.5}, true, "1e-3 0.01 0.1 1"},
		{[]float64{1e-12, 0.1}, true, "1e-12 1e-10 1e-8 1e-6 1e-4 0.01 1"},
	} {
		a, err := newAxis(c.vals, c.log)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(a.tickLabels, " "); got != c.want {
			t.Errorf("ticks for %v (log=%v) = %q, want %q", c.vals, c.log, got, c.want)
		}
	}
}

func TestBars(t *testing.T) {
	c := Chart{Title: "speed", YLabel: "ns", Categories: []string{"cuckoo", "bloom <blocked>"},
		Series: []Series{{Name: "add", Points: []Point{{Y: 60}, {Y: 120, Label: "120"}}}, {Name: "hit", Points: []Point{{Y: 27}}}}}
	var b bytes.Buffer
	if err := c.Write(&b); err != nil {
		t.Fatal(err)
	}
	checkXML(t, b.Bytes())
	if n := strings.Count(b.String(), "<rect x="); n != 3+2 { // 3 bars, the frame, the legend box
		t.Fatalf("%d rects, want 5:\n%s", n, b.String())
	}
	if !strings.Contains(b.String(), "bloom &lt;blocked&gt;") {
		t.Fatal("category name missing or not escaped")
	}
}
