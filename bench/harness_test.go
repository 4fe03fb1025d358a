package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The suite's own tests: keys are what they claim, every adapter keeps its
// keys at capacity, the over-fill check sees data loss where there is some
// and none where there is none, and a report renders. They run in seconds
// at small sizes; timing is never asserted.

func TestKeys(t *testing.T) {
	for _, kind := range []keyKind{rand16, url} {
		t.Run("kind="+string(kind), func(t *testing.T) {
			const n = 3*chunkKeys/2 + 7 // spans a chunk boundary
			held := newKeySet(kind, present, 1, n, 1<<40)
			regen := newKeySet(kind, present, 1, n, 0)
			if !held.materialized() || regen.materialized() {
				t.Fatalf("materialized: %v %v, want true false", held.materialized(), regen.materialized())
			}
			seen := make(map[string]struct{}, n)
			i := 0
			regen.walk(0, n, func(keys [][]byte) {
				for _, k := range keys {
					if !bytes.Equal(k, held.keys[i]) {
						t.Fatalf("key %d regenerated as %q, held as %q", i, k, held.keys[i])
					}
					if len(k) > maxKeyBytes {
						t.Fatalf("key %d is %d bytes, above maxKeyBytes", i, len(k))
					}
					seen[string(k)] = struct{}{}
					i++
				}
			})
			if i != n || len(seen) != n {
				t.Fatalf("walked %d keys, %d distinct; want %d", i, len(seen), n)
			}
			abs := newKeySet(kind, absent, 1, 200_000, 1<<40)
			for _, k := range abs.keys {
				if _, ok := seen[string(k)]; ok {
					t.Fatalf("absent key %q is also a present key", k)
				}
			}
			if kind == rand16 && len(held.keys[0]) != 16 {
				t.Errorf("rand16 key has %d bytes", len(held.keys[0]))
			}
			if m := held.meanLen(); kind == url && (m < 50 || m > 70) {
				t.Errorf("url keys average %.1f bytes, want about 60", m)
			}
		})
	}
}

// TestAdapters runs one trial of every row at a small capacity: nothing
// added may go missing, nothing may fail, rates must be plausible.
func TestAdapters(t *testing.T) {
	const n, probes = 20_000, 100_000
	pres := newKeySet(rand16, present, 1, n, 1<<40)
	abs := newKeySet(rand16, absent, 1, probes, 1<<40)
	for _, s := range rows() {
		t.Run("row="+s.name, func(t *testing.T) {
			tr := runTrial(s, n, 0, 1, pres, abs, probes)
			if tr.Err != "" {
				t.Fatal(tr.Err)
			}
			if tr.FailedAdds != 0 || tr.FalseNeg != 0 || tr.FailedDeletes != 0 {
				t.Errorf("failed adds %d, false negatives %d, failed deletes %d; want 0",
					tr.FailedAdds, tr.FalseNeg, tr.FailedDeletes)
			}
			if fpr := float64(tr.FalsePos) / probes; fpr > 0.08 {
				t.Errorf("false-positive rate %.3g, want < 0.08 for every row", fpr)
			}
			if s.target > 0 {
				// A Bloom filter at its capacity: within 5σ of twice the
				// target (some peers round their sizes generously, none
				// should be far above).
				want := 2 * s.target
				if fpr, sigma := float64(tr.FalsePos)/probes, math.Sqrt(want/probes); fpr > want+5*sigma {
					t.Errorf("false-positive rate %.3g for target %g", fpr, s.target)
				}
			}
			if tr.AddNs <= 0 || tr.HitNs <= 0 || tr.MissNs <= 0 || (s.deletes != (tr.DelNs > 0)) {
				t.Errorf("times add %v hit %v miss %v del %v", tr.AddNs, tr.HitNs, tr.MissNs, tr.DelNs)
			}
			if tr.HeapBytes <= 0 {
				t.Errorf("heap bytes %d, want > 0", tr.HeapBytes)
			}
			if tr.ReportedBytes > 0 && tr.HeapBytes < tr.ReportedBytes*9/10 {
				t.Errorf("heap %d bytes is less than the %d the library reports", tr.HeapBytes, tr.ReportedBytes)
			}
		})
	}
}

func specNamed(t *testing.T, name string) spec {
	for _, s := range registry {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("no row %q", name)
	return spec{}
}

// TestOverfill checks that the over-fill check finds the loss in a library
// known to drop a stored fingerprint when an insert fails, and none in
// ours (whose failed inserts leave the filter unchanged).
func TestOverfill(t *testing.T) {
	const n = 4096
	pres := newKeySet(rand16, present, 1, 2*n, 1<<40)
	theirs := runOverfill(specNamed(t, rowSeiflotfy), n, 1, pres, n)
	if theirs.Err != "" || theirs.Refused == 0 || theirs.Missing == 0 {
		t.Errorf("seiflotfy over-filled: %+v; want refusals and lost keys", theirs)
	}
	for _, name := range []string{rowOurs8, rowOurs16} {
		o := runOverfill(specNamed(t, name), n, 1, pres, 500)
		if o.Err != "" || o.Missing != 0 || o.Refused != 500 || o.Acked < n || o.Attempted != o.Acked+o.Refused {
			t.Errorf("%s over-filled: %+v; want ≥ %d acknowledged, 500 refused, 0 lost", name, o, n)
		}
	}
	bl := runOverfill(specNamed(t, rowBlocked1), n, 1, pres, 10)
	if bl.Acked != 2*n || bl.Missing != 0 || bl.FirstFail != 2*n {
		t.Errorf("Bloom filter over-filled: %+v; want all %d acknowledged, none lost", bl, 2*n)
	}
}

func TestMedianSpread(t *testing.T) {
	for _, c := range []struct {
		xs             []float64
		median, spread float64
	}{
		{[]float64{3}, 3, 0},
		{[]float64{4, 1, 2}, 2, 1.5},
		{[]float64{1, 2, 3, 10}, 2.5, 3.6},
	} {
		if m, s := median(c.xs), spread(c.xs); m != c.median || math.Abs(s-c.spread) > 1e-12 {
			t.Errorf("median, spread of %v = %v, %v; want %v, %v", c.xs, m, s, c.median, c.spread)
		}
	}
	if !math.IsNaN(median(nil)) {
		t.Error("median of nothing is not NaN")
	}
}

func TestPairedRatio(t *testing.T) {
	a, b := cell{"a", 1, rand16}, cell{"b", 1, rand16}
	var ts []trial
	for rep, v := range [][2]float64{{10, 20}, {30, 30}, {5, 20}} {
		ts = append(ts, trial{Row: "a", N: 1, Keys: rand16, Rep: rep, HitNs: v[0]},
			trial{Row: "b", N: 1, Keys: rand16, Rep: rep, HitNs: v[1]})
	}
	ts = append(ts, trial{Row: "a", N: 1, Keys: rand16, Rep: 9, HitNs: 1}) // unpaired: ignored
	if r, pairs := pairedRatio(ts, a, b, opTime("hit")); r != 0.5 || pairs != 3 {
		t.Errorf("paired ratio %v over %d pairs, want 0.5 over 3", r, pairs)
	}
}

// TestReport measures a few rows at two tiny sizes and renders the report
// and charts.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	paths := outputs{md: filepath.Join(dir, "out.md"), json: filepath.Join(dir, "out.json"), svg: dir}
	r := &results{
		Config: config{
			Mode: "test", Sizes: []uint64{2000, 4000}, Keys: []keyKind{rand16, url}, Reps: 2, Probes: 10_000,
			Rows: `^cuckoo f=(8|16)|seiflotfy/cuckoofilter \(|^bloom.New \(blocked\) @1%|^bits-and-blooms/bloom @1%|BinaryFuse8`,
			BigN: 1e9, BigRows: ".", BigReps: 1, OverfillSizes: []uint64{1000}, OverfillRows: ".", MaxRefusals: 100,
			Seed: 1, MemBudget: 1 << 30, Command: "go run . -test",
		},
		Machine: describeMachine(), KeyLens: map[keyKind]float64{},
	}
	if err := measure(r, paths); err != nil {
		t.Fatal(err)
	}
	if err := writeOutputs(r, paths); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(paths.md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Targets", "## Machine", "## n = 2k, keys = rand16", "## n = 4k, keys = url",
		"| **cuckoo f=16 (default)** |", "## Over-filling to 2× capacity", "bench-fpr-vs-bits.svg", "bench-ns-vs-size.svg",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, f := range []string{"bench-fpr-vs-bits.svg", "bench-ns-vs-size.svg", "bench-add-vs-size.svg"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || !bytes.Contains(data, []byte("<svg")) {
			t.Errorf("chart %s: %v, %d bytes", f, err, len(data))
		}
	}
	// The saved JSON alone redraws the same report.
	back, err := loadResults(paths.json)
	if err != nil {
		t.Fatal(err)
	}
	again := outputs{md: filepath.Join(dir, "again.md"), svg: filepath.Join(dir, "again")}
	if err := writeOutputs(back, again); err != nil {
		t.Fatal(err)
	}
	md2, err := os.ReadFile(again.md)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.ReplaceAll(string(md2), "again/", ""); got != string(md) {
		t.Errorf("report redrawn from JSON differs:\n%s\n---\n%s", got, md)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"-mode": "-mode", "1e6,1e7": "1e6,1e7", "a b": "'a b'", `^x \(y\)|z`: `'^x \(y\)|z'`, "it's": `'it'\''s'`, "": "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
