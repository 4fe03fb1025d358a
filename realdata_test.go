package cuckoo_test

import (
	"bytes"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/testlong"
)

// Tests on keys no one tuned for: decimal numbers, and the short lines of
// Go's own source tree with every near miss of them. Random keys hide
// structured collisions; these are the keys that exposed one (issue 16).

// goSourceLines returns the distinct lines of at most maxLen bytes in
// every fileStep-th .go file under $GOROOT/src (every one for a fileStep
// of 1), in the order first seen (the tree is walked in lexical order, so
// the result is the same on every run). It skips the test when the tree
// is not there.
func goSourceLines(t *testing.T, maxLen, fileStep int) []string {
	t.Helper()
	root := filepath.Join(runtime.GOROOT(), "src")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("Go's source tree is not at %s: %v", root, err)
	}
	seen := make(map[string]bool)
	var lines []string
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		if files++; (files-1)%fileStep != 0 {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, b := range bytes.Split(data, []byte("\n")) {
			if l := string(b); len(l) <= maxLen && !seen[l] {
				seen[l] = true
				lines = append(lines, l)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// nearMisses calls fn with every key one edit away from line that is not
// itself a line: each single-byte insertion (of a byte of the line, or of
// '0', ' ' and '\t'), deletion, duplication and flip of the low bit.
func nearMisses(line string, lines map[string]bool, fn func(string)) {
	try := func(k string) {
		if !lines[k] {
			fn(k)
		}
	}
	for i := 0; i <= len(line); i++ {
		for _, c := range []byte{'0', ' ', '\t'} {
			try(line[:i] + string(c) + line[i:])
		}
		if i < len(line) {
			try(line[:i] + line[i+1:])                     // deletion
			try(line[:i+1] + line[i:])                     // duplication
			try(line[:i] + string(line[i]^1) + line[i+1:]) // low-bit flip
		}
	}
}

// TestNearMissesOfGoSourceLinesDoNotCollide fills a filter of 32-bit fingerprints with the
// short lines of Go's source tree and probes every near miss of every line.
// By chance, each probe is a false positive with probability about
// 2·b·load/2^32 (the filter's own estimate), so the expected count over all
// probes is far below 1; a hash that lets related keys of different
// lengths collide (as the first hash did for "1000" and "10000", whatever
// the seed) gives many. Allowed: the Poisson count that chance exceeds with
// probability below 10^-9 for each seed. Each seed takes every third line
// of the tree (about 100,000 lines, 10 million near misses) in the long
// checks (CUCKOO_LONG=1); otherwise every 12th line of every fourth file
// (about 7,000 lines), which spares reading the whole tree. A near miss
// that is a line in the filter is not probed; other lines of the tree are
// keys like any other absent one. The race detector finds nothing in one
// goroutine's hashing: the test does not run under it.
func TestNearMissesOfGoSourceLinesDoNotCollide(t *testing.T) {
	t.Parallel()
	testlong.SkipUnderRace(t)
	fileStep, step := 4, 12
	if longRun() {
		fileStep, step = 1, 3
	}
	all := goSourceLines(t, 24, fileStep)
	for s, seed := range []uint64{1, 2, 0x9e3779b97f4a7c15} {
		var lines []string
		set := make(map[string]bool)
		for i := s; i < len(all); i += step {
			lines = append(lines, all[i])
			set[all[i]] = true
		}
		f, err := cuckoo.New(uint64(len(lines)), cuckoo.WithFingerprintBits(32), cuckoo.WithSeed(seed))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			if err := f.AddString(l); err != nil {
				t.Fatal(err)
			}
		}
		var probes, fps int
		for _, l := range lines {
			nearMisses(l, set, func(k string) {
				probes++
				if f.ContainsString(k) {
					fps++
					t.Logf("seed %#x: near miss %q of %q reported present", seed, k, l)
				}
			})
		}
		mean := float64(probes) * f.FalsePositiveRate()
		limit := poissonQuantile(mean, 1e-9)
		t.Logf("seed %#x: %d lines, %d near misses, %d false positives (chance: %.3g expected, at most %d allowed)",
			seed, len(lines), probes, fps, mean, limit)
		if fps > limit {
			t.Errorf("seed %#x: %d false positives among %d near misses; chance allows %d", seed, fps, probes, limit)
		}
	}
}

// poissonQuantile returns the least k with P(X > k) < p for X Poisson of
// the given mean.
func poissonQuantile(mean, p float64) int {
	term := math.Exp(-mean)
	cdf := term
	k := 0
	for 1-cdf >= p {
		k++
		term *= mean / float64(k)
		cdf += term
	}
	return k
}

// TestDecimalKeysStayApart: with the keys "0" to "999999" in a filter sized
// for them at 10^-4, absent decimal numbers are false positives at the
// filter's own estimate (within 5σ), and deleting a number never deletes
// another number (the first hash made DeleteString("10000") remove "1000").
// The keys are "0" to "99999" outside the long checks (CUCKOO_LONG=1).
func TestDecimalKeysStayApart(t *testing.T) {
	t.Parallel()
	n := sized(1_000_000, 100_000, 100_000, 20_000)
	f, err := cuckoo.New(uint64(n), cuckoo.WithFalsePositiveRate(1e-4), cuckoo.WithSeed(16))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := f.AddString(strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	fps := 0
	for i := n; i < 11*n; i++ {
		if f.ContainsString(strconv.Itoa(i)) {
			fps++
		}
	}
	probes := float64(10 * n)
	mean := probes * f.FalsePositiveRate()
	if sigma := math.Sqrt(mean); math.Abs(float64(fps)-mean) > 5*sigma+1 {
		t.Errorf("%d false positives among %.0f absent numbers; the filter expects %.0f ± %.0f (5σ)", fps, probes, mean, 5*sigma)
	}
	for _, k := range []struct{ del, keep string }{{"10000", "1000"}, {"1000", "100"}, {"100000", "10000"}, {"20", "2"}} {
		g, _ := cuckoo.New(10, cuckoo.WithSeed(1))
		g.AddString(k.keep)
		if g.DeleteString(k.del) {
			t.Errorf("DeleteString(%q) deleted %q", k.del, k.keep)
		}
		if !g.ContainsString(k.keep) {
			t.Errorf("%q lost after deleting %q", k.keep, k.del)
		}
	}
}
