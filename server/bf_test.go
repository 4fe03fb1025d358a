package server

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestParseBFCommands(t *testing.T) {
	parallel(t)
	fs := DefaultFilterSettings()
	def := defaultBFParams(&fs)
	with := func(f func(p *bfParams)) bfParams { p := def; f(&p); return p }
	for _, tc := range []struct {
		in   string
		want any
		err  error
	}{
		{"BF.RESERVE k 0.01 100", bfReserve{[]byte("k"), with(func(p *bfParams) {})}, nil},
		{"bf.reserve k 0.001 5000 expansion 4 seed 3", bfReserve{[]byte("k"), with(func(p *bfParams) {
			p.errorRate, p.capacity, p.expansion, p.seed, p.seeded = 0.001, 5000, 4, 3, true
		})}, nil},
		{"BF.RESERVE k 0.01 100 NONSCALING", bfReserve{[]byte("k"), with(func(p *bfParams) { p.nonScaling, p.expansion = true, 0 })}, nil},
		{"BF.RESERVE k 0.01", nil, errArity},
		{"BF.RESERVE k x 100", nil, errBFBadErrorRate},
		{"BF.RESERVE k 1.5 100", nil, errBFErrorRateRange},
		{"BF.RESERVE k 0.5 100", bfReserve{[]byte("k"), with(func(p *bfParams) { p.errorRate = 0.25 })}, nil},
		{"BF.RESERVE k 0.01 -3", nil, bfCapacityRange(1 << 40)},
		{"BF.RESERVE k 0.01 1099511627777", nil, bfCapacityRange(1 << 40)},
		{"BF.RESERVE k 0.01 100 EXPANSION 0", bfReserve{[]byte("k"), with(func(p *bfParams) { p.nonScaling, p.expansion = true, 0 })}, nil},
		{"BF.RESERVE k 0.01 100 EXPANSION x", nil, errBFBadExpansion},
		{"BF.RESERVE k 0.01 100 EXPANSION -1", nil, errBFExpansionRange},
		{"BF.RESERVE k 0.01 100 EXPANSION 32769", nil, errBFExpansionRange},
		{"BF.RESERVE k 0.01 100 NONSCALING EXPANSION 2", nil, errBFNonScalingExpand},
		{"BF.RESERVE k 0.01 100 EXPANSION 2 COLOR", nil, errUnknownArgument},
		{"BF.ADD k x", bfAdd{keyItems{key: []byte("k"), items: args("x")}}, nil},
		{"BF.MADD k x y", bfAdd{keyItems{key: []byte("k"), items: args("x y"), multi: true}}, nil},
		{"BF.ADD k x y", nil, errArity},
		{"BF.INSERT k CAPACITY 10 ERROR 0.1 EXPANSION 3 NOCREATE ITEMS a", bfInsert{key: []byte("k"), noCreate: true, items: args("a"),
			p: with(func(p *bfParams) { p.capacity, p.errorRate, p.expansion = 10, 0.1, 3 })}, nil},
		{"BF.INSERT k NONSCALING ITEMS a b", bfInsert{key: []byte("k"), items: args("a b"),
			p: with(func(p *bfParams) { p.nonScaling, p.expansion = true, 0 })}, nil},
		{"BF.INSERT k EXPANSION 0 ITEMS a", bfInsert{key: []byte("k"), items: args("a"),
			p: with(func(p *bfParams) { p.nonScaling, p.expansion = true, 0 })}, nil},
		{"BF.INSERT k EXPANSION -1 ITEMS a", nil, errBFInsertExpansion},
		{"BF.INSERT k ERROR 1 ITEMS a", nil, errBFInsertErrorRate},
		{"BF.INSERT k CAPACITY 0 ITEMS a", nil, errBFInsertCapacity},
		{"BF.INSERT k ERROR 1e-20 ITEMS a", nil, errBFErrorRateMin},
		{"BF.INFO k", bfInfo{key: []byte("k")}, nil},
		{"BF.INFO k items", bfInfo{key: []byte("k"), field: "ITEMS"}, nil},
		{"BF.INFO k nope", nil, errBFInfoField},
		{"BF.LOADCHUNK k x d", nil, errBFLoadChunkIter},
		{"BF.SCANDUMP k x", nil, errBFScanDumpIter},
	} {
		a := args(tc.in)
		var got any
		var err error
		switch strings.ToUpper(string(a[0])) {
		case "BF.RESERVE":
			got, err = parseBFReserve(a, &fs)
		case "BF.ADD", "BF.MADD":
			got, err = parseBFAdd(a)
		case "BF.INSERT":
			got, err = parseBFInsert(a, &fs)
		case "BF.INFO":
			got, err = parseBFInfo(a)
		case "BF.LOADCHUNK":
			got, err = parseLoadChunk(kindBF)(a)
		case "BF.SCANDUMP":
			got, err = parseScanDump(kindBF)(a)
		}
		if err != tc.err {
			t.Errorf("%q: error %v, want %v", tc.in, err, tc.err)
			continue
		}
		if err == nil && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// TestBFInfoReply pins BF.INFO's exact bytes: a flat array of 5 pairs in
// RESP2 and a map in RESP3, a single field an array of its value in RESP2
// and a map of one pair in RESP3, the expansion a null for a NONSCALING
// filter.
func TestBFInfoReply(t *testing.T) {
	parallel(t)
	s, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	c.do("BF.RESERVE", "fixed", "0.01", "500", "NONSCALING")
	c.do("BF.MADD", "fixed", "a", "b")
	o, _ := s.ks.readLock([]byte("fixed"), kindBF)
	size := o.bf.sizeInBytes()
	o.mu.RUnlock()
	for _, proto := range []string{"2", "3"} {
		c.do("HELLO", proto)
		null := map[string]string{"2": "$-1", "3": "_"}[proto]
		head := map[string]string{"2": "*10", "3": "%5"}[proto]
		want := fmt.Sprintf("%s\r\n+Capacity\r\n:500\r\n+Size\r\n:%d\r\n+Number of filters\r\n:1\r\n"+
			"+Number of items inserted\r\n:2\r\n+Expansion rate\r\n%s\r\n", head, size, null)
		if got := c.do("BF.INFO", "fixed"); got != want {
			t.Fatalf("RESP%s: %q\nwant %q", proto, got, want)
		}
		one := map[string]string{"2": "*1\r\n", "3": "%1\r\n+Expansion rate\r\n"}[proto]
		if got := c.do("BF.INFO", "fixed", "EXPANSION"); got != one+null+"\r\n" {
			t.Fatalf("RESP%s: BF.INFO EXPANSION %q", proto, got)
		}
		one = map[string]string{"2": "*1\r\n", "3": "%1\r\n+Number of items inserted\r\n"}[proto]
		if got := c.do("BF.INFO", "fixed", "items"); got != one+":2\r\n" {
			t.Fatalf("RESP%s: BF.INFO items %q", proto, got)
		}
	}
}

// TestBloomRate: a Bloom filter filled to its capacity keeps the rate it
// was made for, measured over 100,000 absent items (bound: the rate plus
// 5σ of the binomial count).
func TestBloomRate(t *testing.T) {
	parallel(t)
	_, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	const n, probes, rate = 20_000, 100_000, 0.01
	c.do("BF.RESERVE", "b", fmt.Sprint(rate), fmt.Sprint(n))
	var req []byte
	for i := range n {
		req = append(req, encode("BF.ADD", "b", fmt.Sprint("in", i))...)
	}
	c.send(req)
	for range n {
		c.reply()
	}
	fp := 0
	for i := 0; i < probes; i += 1000 {
		a := []string{"BF.MEXISTS", "b"}
		for j := range 1000 {
			a = append(a, fmt.Sprint("out", i+j))
		}
		fp += strings.Count(c.do(a...), ":1\r\n")
	}
	bound := rate*probes + 5*math.Sqrt(rate*(1-rate)*probes)
	t.Logf("%d false positives in %d probes (bound %.0f)", fp, probes, bound)
	if float64(fp) > bound {
		t.Fatalf("%d false positives in %d probes, more than %.0f", fp, probes, bound)
	}
}
