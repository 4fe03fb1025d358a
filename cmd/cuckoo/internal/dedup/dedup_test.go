package dedup

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
	"github.com/dedupkit/cuckoo/internal/testseed"
	"github.com/dedupkit/cuckoo/internal/urlgen"
)

func testRand(t testing.TB) (*rand.Rand, uint64) {
	s := testseed.Seed(t)
	return testseed.New(s), s
}

func newSeen(t testing.TB, capacity uint64, fpr float64, seed uint64) *filterfile.Filter {
	t.Helper()
	f, err := filterfile.New(filterfile.Spec{Kind: filterfile.Cuckoo, Capacity: capacity, FPR: fpr, Seed: seed, SeedSet: true})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// modelDedup is the reference: awk '!seen[key]++', with every output line
// ending in "\n".
func modelDedup(lines []string, dups bool) string {
	seen := map[string]bool{}
	var b strings.Builder
	for _, l := range lines {
		k := string(Content([]byte(l)))
		if seen[k] == dups {
			b.WriteString(strings.TrimSuffix(l, "\n") + "\n")
		}
		seen[k] = true
	}
	return b.String()
}

// TestModel dedups random lines (repeats, CRLF, empty lines, a missing
// final newline, binary bytes) with a rate low enough that no false
// positive is expected, and compares with a Go map, in both modes.
//
// The seed is fixed unless -seed is given: the 20 rounds look up about
// 15,000 new keys at a rate of up to 1e-8 each, so a random seed would
// drop a line about one run in 10^4 to 10^5; with this one none is.
func TestModel(t *testing.T) {
	seed, ok := testseed.Given()
	if !ok {
		seed = 1
	}
	t.Logf("seed %d", seed)
	r := testseed.New(seed)
	for round := range 20 {
		n := 1 + r.IntN(3000)
		var lines []string
		for i := range n {
			v := r.IntN(n/2 + 1)
			l := fmt.Sprintf("line-%d", v)
			switch r.IntN(10) {
			case 0:
				l = ""
			case 1:
				l += "\x00\xff"
			}
			end := "\n"
			if r.IntN(4) == 0 {
				end = "\r\n"
			}
			if i == n-1 && r.IntN(2) == 0 && l != "" {
				end = "" // a last line without newline (an empty one is no line)
			}
			lines = append(lines, l+end)
		}
		input := strings.Join(lines, "")
		for _, dups := range []bool{false, true} {
			var out bytes.Buffer
			d := New(newSeen(t, uint64(n), 1e-8, seed+uint64(round)), &out, Config{Duplicates: dups, BufferSize: 1 + r.IntN(200)})
			if err := d.Run(strings.NewReader(input)); err != nil {
				t.Fatal(err)
			}
			d.Flush()
			if want := modelDedup(lines, dups); out.String() != want {
				t.Fatalf("round %d dups=%v: output differs from the model\ngot  %q\nwant %q", round, dups, out.String(), want)
			}
			st := d.Stats()
			if st.LinesIn != uint64(n) || st.BytesIn != uint64(len(input)) || st.Added+st.Dropped != st.LinesIn {
				t.Fatalf("stats %+v for %d lines, %d bytes", st, n, len(input))
			}
			if got := uint64(strings.Count(out.String(), "\n")); got != st.LinesOut {
				t.Fatalf("LinesOut %d, %d lines written", st.LinesOut, got)
			}
		}
	}
}

// exactSet is a SeenSet without false positives: a Go map, as an exact
// seen-set (a store, say) would be.
type exactSet map[string]bool

func (s exactSet) AddUniqueBatch(keys [][]byte, added []bool) (int, error) {
	for i, k := range keys {
		added[i] = !s[string(k)]
		s[string(k)] = true
	}
	return len(keys), nil
}

func (exactSet) FalsePositiveRate() float64 { return 0 }
func (exactSet) RateIsCheap() bool          { return true }

// TestExactSet: with a SeenSet that has no false positives, the output is the
// model's exactly, at any rate of repeats, and the expected false
// positives are 0. It is how a seen-set other than a filter plugs in.
func TestExactSet(t *testing.T) {
	r, _ := testRand(t)
	var lines []string
	for range 50_000 {
		lines = append(lines, fmt.Sprintf("%d\n", r.IntN(20_000)))
	}
	var out bytes.Buffer
	d := New(exactSet{}, &out, Config{TrackFalsePositives: true})
	if err := d.Run(strings.NewReader(strings.Join(lines, ""))); err != nil {
		t.Fatal(err)
	}
	d.Flush()
	if out.String() != modelDedup(lines, false) {
		t.Fatal("output differs from the model")
	}
	if st := d.Stats(); st.ExpectedFalsePositives != 0 || st.LinesOut != st.Added {
		t.Fatalf("stats %+v", st)
	}
}

// TestFalsePositivesExplained runs at a high rate, so that some new lines
// are dropped, and checks the promise: the output is the input's first
// occurrences in order, less lines that a filter holding exactly the
// lines kept before them reports present. It replays the run on a filter
// with the same seed; the table after each step depends only on the
// table before it and the key, so the replay sees what the run saw.
func TestFalsePositivesExplained(t *testing.T) {
	_, seed := testRand(t)
	var in bytes.Buffer
	g := urlgen.New(seed, 0.3)
	line := []byte{}
	for range 50_000 {
		line, _ = g.Append(line[:0])
		in.Write(line)
	}
	const capacity, fpr = 50_000, 0.01
	var out bytes.Buffer
	d := New(newSeen(t, capacity, fpr, seed), &out, Config{TrackFalsePositives: true})
	if err := d.Run(bytes.NewReader(in.Bytes())); err != nil {
		t.Fatal(err)
	}
	d.Flush()
	replay := newSeen(t, capacity, fpr, seed)
	outLines := strings.SplitAfter(out.String(), "\n")
	k := 0
	seen := map[string]bool{}
	var fps int
	for _, l := range strings.SplitAfter(in.String(), "\n") {
		if l == "" || seen[l] {
			continue
		}
		seen[l] = true
		if k < len(outLines) && outLines[k] == l {
			k++
			replay.Add(Content([]byte(l)))
			continue
		}
		// A first occurrence missing from the output: it must be a false
		// positive of the filter as it was then.
		if !replay.Contains(Content([]byte(l))) {
			t.Fatalf("line %q is missing from the output, but the filter did not report it", l)
		}
		fps++
	}
	if k != len(outLines)-1 {
		t.Fatalf("the output is not a subsequence of the first occurrences (%d of %d matched)", k, len(outLines)-1)
	}
	st := d.Stats()
	// The count of false positives is a sum of independent Bernoulli
	// trials with mean st.ExpectedFalsePositives: allow 5σ either way.
	mean := st.ExpectedFalsePositives
	if sd := math.Sqrt(mean); math.Abs(float64(fps)-mean) > 5*sd+1 {
		t.Fatalf("%d false positives, expected %.1f ± %.1f (5σ)", fps, mean, 5*sd)
	}
	t.Logf("%d false positives among %d distinct lines, expected %.1f", fps, len(seen), mean)
	if fps == 0 {
		t.Fatal("no false positive at a 1 % rate: the test tests nothing")
	}
}

func TestCountOnly(t *testing.T) {
	var out bytes.Buffer
	d := New(newSeen(t, 100, 1e-6, 1), &out, Config{CountOnly: true})
	d.Run(strings.NewReader("a\nb\na\na\nc"))
	d.Flush()
	if out.Len() != 0 {
		t.Fatalf("CountOnly wrote %q", out.String())
	}
	if st := d.Stats(); st.Dropped != 2 || st.LinesIn != 5 {
		t.Fatalf("stats %+v, want 2 dropped of 5", st)
	}
}

func TestSeveralInputsShareTheFilter(t *testing.T) {
	var out bytes.Buffer
	d := New(newSeen(t, 100, 1e-6, 1), &out, Config{})
	d.Run(strings.NewReader("a\nb"))
	d.Run(strings.NewReader("b\nc\n"))
	d.Flush()
	if out.String() != "a\nb\nc\n" {
		t.Fatalf("output %q", out.String())
	}
}

func TestKeyedDedup(t *testing.T) {
	spec, _ := ParseFieldSpec("2")
	var out bytes.Buffer
	d := New(newSeen(t, 100, 1e-6, 1), &out, Config{Key: NewKeyExtractor(spec, ",", false)})
	d.Run(strings.NewReader("1,alice\n2,bob\n3,alice\n4,carol\n5,bob\n"))
	d.Flush()
	if out.String() != "1,alice\n2,bob\n4,carol\n" {
		t.Fatalf("output %q", out.String())
	}
}

// TestFullFilter fills a tiny fixed filter: Run must stop with a
// LineError wrapping filterfile.ErrFull at the right line, having written
// exactly the lines before it.
func TestFullFilter(t *testing.T) {
	var in strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&in, "distinct-%d\n", i)
	}
	var out bytes.Buffer
	seen := newSeen(t, 64, 0.001, 1)
	d := New(seen, &out, Config{})
	err := d.Run(strings.NewReader(in.String()))
	var le *LineError
	if !errors.As(err, &le) || !errors.Is(err, filterfile.ErrFull) {
		t.Fatalf("Run: %v, want a LineError wrapping ErrFull", err)
	}
	d.Flush()
	wrote := strings.Count(out.String(), "\n")
	if uint64(wrote) != le.Line-1 {
		t.Fatalf("full at line %d, but %d lines written", le.Line, wrote)
	}
	if st := d.Stats(); st.LinesIn != le.Line-1 {
		t.Fatalf("LinesIn %d, full at line %d", st.LinesIn, le.Line)
	}
	if !strings.HasPrefix(in.String(), out.String()) {
		t.Fatal("the lines written are not the input's first lines")
	}
}

// TestFullFilterAmongRepeats: a filter that fills in the middle of a
// block whose lines repeat each other (which the Deduper answers itself,
// handing the filter each hash of a block once) stops Run at the line
// where one key at a time finds it full, with the same lines written
// before it, on every core and on one, with blocks of a few lines and of
// many.
func TestFullFilterAmongRepeats(t *testing.T) {
	var in strings.Builder
	for i := range 2_000 {
		fmt.Fprintf(&in, "key-%d\nkey-%d\n", i, i/3)
	}
	input := in.String()
	ref := newSeen(t, 64, 0.001, 1)
	var want strings.Builder
	fullAt := 0
	for n, line := range strings.SplitAfter(input, "\n") {
		added, err := ref.AddUnique([]byte(strings.TrimSuffix(line, "\n")))
		if err != nil {
			fullAt = n + 1
			break
		}
		if added {
			want.WriteString(line)
		}
	}
	if fullAt == 0 {
		t.Fatal("the reference filter never filled")
	}
	for _, cfg := range []Config{{Sequential: true}, {}, {Workers: 2, BufferSize: 256}} {
		var out bytes.Buffer
		d := New(newSeen(t, 64, 0.001, 1), &out, cfg)
		err := d.Run(strings.NewReader(input))
		var le *LineError
		if !errors.As(err, &le) || !errors.Is(err, filterfile.ErrFull) || le.Line != uint64(fullAt) {
			t.Fatalf("%+v: Run = %v, want a LineError wrapping ErrFull at line %d", cfg, err, fullAt)
		}
		d.Flush()
		if out.String() != want.String() {
			t.Fatalf("%+v: wrote %q, one key at a time %q", cfg, out.String(), want.String())
		}
		if st := d.Stats(); st.LinesIn != uint64(fullAt-1) || st.Added != ref.Len() {
			t.Fatalf("%+v: LinesIn %d, Added %d; want %d and %d", cfg, st.LinesIn, st.Added, fullAt-1, ref.Len())
		}
	}
}

func TestEstimateLines(t *testing.T) {
	r, _ := testRand(t)
	big := 40 << 20
	if testing.Short() {
		big = 12 << 20 // still sampled, not counted
	}
	for _, size := range []int{0, 10, 1 << 20, big} {
		var b bytes.Buffer
		lines := 0
		for b.Len() < size {
			b.WriteString(strings.Repeat("x", 20+r.IntN(70)))
			b.WriteByte('\n')
			lines++
		}
		data := b.Bytes()
		est, err := EstimateLines(bytes.NewReader(data), int64(len(data)), 0)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case len(data) <= DefaultEstimateBudget && est != uint64(lines):
			t.Errorf("size %d: estimate %d, exactly %d lines", len(data), est, lines)
		case len(data) > DefaultEstimateBudget && (est < uint64(lines) || float64(est) > 1.2*float64(lines)+1000):
			t.Errorf("size %d: estimate %d for %d lines: want [n, 1.2n+1000]", len(data), est, lines)
		}
	}
	if n, _ := EstimateLines(strings.NewReader("no newline"), 10, 0); n != 1 {
		t.Errorf("a file without a newline holds 1 line, estimate %d", n)
	}
	// Counted exactly a chunk at a time, around the chunks' edges, with and
	// without a last line end, and a file shorter than its size said.
	for _, size := range []int{sampleSize - 1, sampleSize, sampleSize + 1, 3*sampleSize + 7} {
		data := bytes.Repeat([]byte("ab\n"), size/3+1)[:size]
		want := uint64(bytes.Count(data, []byte{'\n'}))
		if data[size-1] != '\n' {
			want++
		}
		if n, err := EstimateLines(bytes.NewReader(data), int64(size), 0); n != want || err != nil {
			t.Errorf("%d bytes: %d lines, %v; want %d", size, n, err, want)
		}
		if n, err := EstimateLines(bytes.NewReader(data), int64(size)+5000, 0); n != want || err != nil {
			t.Errorf("%d bytes, 5000 fewer than said: %d lines, %v; want %d", size, n, err, want)
		}
	}
	// A file within the budget is not read into memory whole.
	data := bytes.Repeat([]byte("0123456789\n"), 400_000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if n, _ := EstimateLines(bytes.NewReader(data), int64(len(data)), 0); n != 400_000 {
		t.Fatalf("%d lines, want 400,000", n)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 2*sampleSize {
		t.Errorf("counting %d bytes allocated %d bytes", len(data), got)
	}
	// A tiny budget samples one chunk, still from above.
	data = bytes.Repeat([]byte("0123456789\n"), 100_000)
	if n, _ := EstimateLines(bytes.NewReader(data), int64(len(data)), 1); n < 100_000 || n > 111_000 {
		t.Errorf("one-chunk estimate %d for 100,000 lines", n)
	}
}

// TestDedupAllocs: a Run allocates nothing per line. On one goroutine it
// allocates nothing at all once its blocks exist; on several, a few
// things per Run (the goroutines and their channels), as many for 1,000
// lines as for 100,000.
func TestDedupAllocs(t *testing.T) {
	perRun := func(sequential bool, lines int) float64 {
		data := bytes.Repeat([]byte("https://example.com/a\nhttps://example.com/b\n"), lines/2)
		seen := newSeen(t, 1000, 1e-4, 1)
		var out bytes.Buffer
		out.Grow(1 << 16)
		d := New(seen, &out, Config{Sequential: sequential})
		r := bytes.NewReader(data)
		d.Run(r)
		return testing.AllocsPerRun(10, func() {
			r.Reset(data)
			out.Reset()
			if err := d.Run(r); err != nil {
				t.Fatal(err)
			}
		})
	}
	if allocs := perRun(true, 1000); allocs != 0 {
		t.Errorf("sequential: %v allocations per run of 1000 lines, want 0", allocs)
	}
	small, large := perRun(false, 1000), perRun(false, 100_000)
	if large > small+1 || small > 40 {
		t.Errorf("concurrent: %v allocations per run of 1,000 lines, %v of 100,000: want a few, the same", small, large)
	}
}
