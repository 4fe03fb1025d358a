package server

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo"
)

func args(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

// mostDefault is the largest capacity of a cuckoo filter of the default
// shape.
var mostDefault = func() uint64 {
	fs := DefaultFilterSettings()
	p := defaultCFParams(&fs, 0)
	return cfMostCapacity(&p)
}()

// TestParseIntAsRedis: integer arguments are read as Redis reads them
// (string2ll, which RedisBloom's arguments go through): "0100", "-0",
// "+1" and " 1" are not integers, though strconv takes the first three.
func TestParseIntAsRedis(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		in string
		n  int64
		ok bool
	}{
		{"0", 0, true}, {"7", 7, true}, {"-7", -7, true}, {"100", 100, true},
		{"9223372036854775807", math.MaxInt64, true}, {"-9223372036854775808", math.MinInt64, true},
		{"", 0, false}, {"-", 0, false}, {"0100", 0, false}, {"00", 0, false}, {"-0", 0, false},
		{"-01", 0, false}, {"+1", 0, false}, {" 1", 0, false}, {"1 ", 0, false}, {"1e3", 0, false},
		{"0x10", 0, false},
	} {
		n, ok := parseInt([]byte(tc.in))
		if ok != tc.ok || ok && n != tc.n {
			t.Errorf("parseInt(%q) = %d, %v; want %d, %v", tc.in, n, ok, tc.n, tc.ok)
		}
		if u, ok := parseUint([]byte(tc.in)); ok != (tc.ok && tc.n >= 0) || ok && int64(u) != tc.n {
			t.Errorf("parseUint(%q) = %d, %v", tc.in, u, ok)
		}
	}
	if _, ok := parseInt([]byte("9223372036854775808")); ok {
		t.Error("parseInt takes 2^63")
	}
	if u, ok := parseUint([]byte("18446744073709551615")); !ok || u != math.MaxUint64 {
		t.Errorf("parseUint(2^64-1) = %d, %v", u, ok)
	}
	if _, ok := parseUint([]byte("18446744073709551616")); ok {
		t.Error("parseUint takes 2^64")
	}
}

func TestParseCFReserve(t *testing.T) {
	parallel(t)
	fs := DefaultFilterSettings()
	def := defaultCFParams(&fs, 0)
	with := func(f func(p *cfParams)) cfParams { p := def; f(&p); return p }
	for _, tc := range []struct {
		in   string
		want cfParams
		err  error
	}{
		{"CF.RESERVE k 100", with(func(p *cfParams) { p.capacity = 100 }), nil},
		{"cf.reserve k 100 bucketsize 2 maxiterations 20 expansion 0", with(func(p *cfParams) {
			p.capacity, p.bucketSize, p.maxIter, p.expansion = 100, 2, 20, 0
		}), nil},
		{"CF.RESERVE k 100 FPR 0.001 SEED 42", with(func(p *cfParams) { p.capacity, p.fpr, p.seed, p.seeded = 100, 0.001, 42, true }), nil},
		{"CF.RESERVE k 100 FINGERPRINT 12", with(func(p *cfParams) { p.capacity, p.fingerprint = 100, 12 }), nil},
		{"CF.RESERVE k 100 EXPANSION 32768", with(func(p *cfParams) { p.capacity, p.expansion = 100, 32768 }), nil},
		{"CF.RESERVE k", cfParams{}, errArity},
		{"CF.RESERVE k 100 EXPANSION", cfParams{}, errArity},
		{"CF.RESERVE k 1e3", cfParams{}, errCFBadCapacity},
		{"CF.RESERVE k 0100", cfParams{}, errCFBadCapacity},
		{"CF.RESERVE k 100 BUCKETSIZE 02", cfParams{}, errCFParseBucket},
		{"CF.RESERVE k 7", cfParams{}, cfCapacityRange(mostDefault)},
		{"CF.RESERVE k 4 BUCKETSIZE 2", with(func(p *cfParams) { p.capacity, p.bucketSize = 4, 2 }), nil},
		{"CF.RESERVE k 100 BUCKETSIZE 16", with(func(p *cfParams) { p.capacity, p.bucketSize = 100, 16 }), nil},
		{"CF.RESERVE k 100 BUCKETSIZE 1", with(func(p *cfParams) { p.capacity, p.bucketSize = 100, 1 }), nil},
		{"CF.RESERVE k 510 BUCKETSIZE 255", with(func(p *cfParams) { p.capacity, p.bucketSize = 510, 255 }), nil},
		{"CF.RESERVE k 100 BUCKETSIZE 0", cfParams{}, errCFBucketRange},
		{"CF.RESERVE k 100 BUCKETSIZE 256", cfParams{}, errCFBucketRange},
		{"CF.RESERVE k 100 MAXITERATIONS 0", cfParams{}, errCFMaxIterRange},
		{"CF.RESERVE k 100 EXPANSION 32769", cfParams{}, errCFExpansionRange},
		// RedisBloom's order of checks, whatever the order of the options;
		// the first of a repeated option counts.
		{"CF.RESERVE k 100 EXPANSION x MAXITERATIONS 0", cfParams{}, errCFMaxIterRange},
		{"CF.RESERVE k 1 BUCKETSIZE x", cfParams{}, errCFParseBucket},
		{"CF.RESERVE k 100 MAXITERATIONS 7 MAXITERATIONS 0", with(func(p *cfParams) { p.capacity, p.maxIter = 100, 7 }), nil},
		{"CF.RESERVE k 3 COLOR blue", cfParams{}, cfCapacityRange(mostDefault)},
		{"CF.RESERVE k 20000000000", cfParams{}, cfCapacityRange(mostDefault)},
		{"CF.RESERVE k 100 FPR 0", cfParams{}, errCFFPRRange},
		{"CF.RESERVE k 100 FPR nan", cfParams{}, errCFParseFPR},
		{"CF.RESERVE k 100 FINGERPRINT 12 FPR 0.1", cfParams{}, errCFFPRAndFP},
		{"CF.RESERVE k 100 SEED 18446744073709551616", cfParams{}, errCFParseSeed},
		{"CF.RESERVE k 100 EXTRA 1", cfParams{}, errUnknownArgument},
	} {
		r, err := parseCFReserve(args(tc.in), &fs)
		if err != tc.err {
			t.Errorf("%q: error %v, want %v", tc.in, err, tc.err)
			continue
		}
		if err == nil && (!reflect.DeepEqual(r.p, tc.want) || string(r.key) != "k") {
			t.Errorf("%q: %+v, want %+v", tc.in, r.p, tc.want)
		}
	}
}

func TestParseCFCommands(t *testing.T) {
	parallel(t)
	fs := DefaultFilterSettings()
	for _, tc := range []struct {
		in   string
		want any
		err  error
	}{
		{"CF.ADD k x", cfAdd{key: []byte("k"), item: []byte("x")}, nil},
		{"cf.addnx k x", cfAdd{key: []byte("k"), item: []byte("x"), nx: true}, nil},
		{"CF.ADD k", nil, errArity},
		{"CF.INSERT k ITEMS a b", cfInsert{key: []byte("k"), items: args("a b")}, nil},
		{"CF.INSERT k CAPACITY 7 ITEMS a", nil, cfInsertCapacityRange(mostDefault)},
		{"CF.INSERTNX k CAP 50 NOCREATE ITEMS a", cfInsert{key: []byte("k"), capacity: 50, noCreate: true, nx: true, items: args("a")}, nil},
		{"CF.INSERT k ITEMS", nil, errArity},
		{"CF.INSERT k CAPACITY 50", nil, errArity},
		{"CF.INSERT k X ITEMS a", nil, errUnknownArgument},
		{"CF.EXISTS k a", cfExists{keyItems: keyItems{key: []byte("k"), items: args("a")}}, nil},
		{"CF.MEXISTS k a b", cfExists{keyItems: keyItems{key: []byte("k"), items: args("a b"), multi: true}}, nil},
		{"CF.COUNT k a", cfExists{keyItems: keyItems{key: []byte("k"), items: args("a")}, count: true}, nil},
		{"CF.MEXISTS k", nil, errArity},
		{"CF.SCANDUMP k 0", scanDumpReq{[]byte("k"), 0, kindCF}, nil},
		{"CF.SCANDUMP k -1", nil, errCFInvalidPosition},
		{"CF.LOADCHUNK k 0 d", nil, errCFInvalidPosition},
		{"CF.LOADCHUNK k 5 d", loadChunkReq{[]byte("k"), 5, []byte("d"), kindCF}, nil},
	} {
		a := args(tc.in)
		var got any
		var err error
		switch cmd := strings.ToUpper(string(a[0])); cmd {
		case "CF.ADD", "CF.ADDNX":
			got, err = parseCFAdd(a)
		case "CF.INSERT", "CF.INSERTNX":
			got, err = parseCFInsert(a, &fs)
		case "CF.EXISTS", "CF.MEXISTS", "CF.COUNT":
			got, err = parseCFExists(a)
		case "CF.SCANDUMP":
			got, err = parseScanDump(kindCF)(a)
		case "CF.LOADCHUNK":
			got, err = parseLoadChunk(kindCF)(a)
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

// TestCFReserveLogged: the log records a creation with every parameter
// and the seed, so that a replay builds the same filter.
func TestCFReserveLogged(t *testing.T) {
	parallel(t)
	p := cfParams{capacity: 100, bucketSize: 2, maxIter: 20, expansion: 0, fpr: 0.001, seed: 9, seeded: true}
	got := string(joinArgs(p.reserveArgs([]byte("k"))))
	want := "CF.RESERVE k 100 BUCKETSIZE 2 MAXITERATIONS 20 EXPANSION 0 FPR 0.001 SEED 9"
	if got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	fs := DefaultFilterSettings()
	r, err := parseCFReserve(args(got), &fs)
	if err != nil || !reflect.DeepEqual(r.p, p) {
		t.Fatalf("the logged command parses to %+v, %v", r.p, err)
	}
}

func joinArgs(a [][]byte) []byte {
	var b []byte
	for i, x := range a {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, x...)
	}
	return b
}

// TestCFInfoReply pins CF.INFO's exact bytes: RedisBloom 8's 8 fields, a
// flat array in RESP2 and a map in RESP3, with this filter's own figures
// (Size: the bytes of its encoding).
func TestCFInfoReply(t *testing.T) {
	parallel(t)
	_, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	c.do("CF.RESERVE", "k", "1000", "EXPANSION", "0", "MAXITERATIONS", "300", "SEED", "5")
	c.do("CF.ADD", "k", "a")
	c.do("CF.ADD", "k", "b")
	c.do("CF.DEL", "k", "a")
	f, _ := cuckoo.New(1000, cuckoo.WithMaxKicks(300), cuckoo.WithSeed(5))
	f.Add([]byte("b"))
	fields := fmt.Sprintf("+Size\r\n:%d\r\n+Number of buckets\r\n:%d\r\n+Number of filters\r\n:1\r\n"+
		"+Number of items inserted\r\n:1\r\n+Number of items deleted\r\n:1\r\n+Bucket size\r\n:4\r\n"+
		"+Expansion rate\r\n:0\r\n+Max iterations\r\n:300\r\n", f.EncodedSize(), f.NumBuckets())
	if got := c.do("CF.INFO", "k"); got != "*16\r\n"+fields {
		t.Fatalf("RESP2: %q\nwant %q", got, "*16\r\n"+fields)
	}
	c.do("HELLO", "3")
	if got := c.do("CF.INFO", "k"); got != "%8\r\n"+fields {
		t.Fatalf("RESP3: %q\nwant %q", got, "%8\r\n"+fields)
	}
}

// TestDuplicatesUnlimited: 10,000 copies of one item are all counted and
// all deletable, in a fixed and in a growing filter (RedisBloom stops at
// 125 in a filter of capacity 1000).
func TestDuplicatesUnlimited(t *testing.T) {
	parallel(t)
	_, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	c.do("CF.RESERVE", "fixed", "1000", "EXPANSION", "0")
	c.do("CF.RESERVE", "growing", "1000")
	const n = 10_000
	repeat := func(args ...string) [][]string {
		cmds := make([][]string, n)
		for i := range cmds {
			cmds[i] = args
		}
		return cmds
	}
	for _, k := range []string{"fixed", "growing"} {
		for i, got := range c.pipeline(repeat("CF.ADD", k, "hot")) {
			if got != ":1\r\n" {
				t.Fatalf("%s: add %d: %q", k, i, got)
			}
		}
		if got := c.do("CF.COUNT", k, "hot"); got != fmt.Sprintf(":%d\r\n", n) {
			t.Fatalf("%s: CF.COUNT %q", k, got)
		}
		for i, got := range c.pipeline(repeat("CF.DEL", k, "hot")) {
			if got != ":1\r\n" {
				t.Fatalf("%s: delete %d: %q", k, i, got)
			}
		}
		if got := c.do("CF.EXISTS", k, "hot"); got != ":0\r\n" {
			t.Fatalf("%s: after deleting every copy: %q", k, got)
		}
	}
}

// TestCuckooRate: a cuckoo filter filled to its capacity keeps the rate
// asked with FPR, measured over 200,000 absent items (bound: the rate plus
// 5σ of the binomial count).
func TestCuckooRate(t *testing.T) {
	parallel(t)
	_, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	const n, probes, rate = 50_000, 200_000, 0.001
	c.do("CF.RESERVE", "k", fmt.Sprint(n), "FPR", fmt.Sprint(rate), "EXPANSION", "0")
	for i := 0; i < n; i += 1000 {
		a := []string{"CF.INSERT", "k", "ITEMS"}
		for j := range 1000 {
			a = append(a, fmt.Sprint("in", i+j))
		}
		if got := c.do(a...); strings.Contains(got, ":-1") {
			t.Fatal("the filter refused an item below its capacity")
		}
	}
	fp := 0
	for i := 0; i < probes; i += 1000 {
		a := []string{"CF.MEXISTS", "k"}
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
