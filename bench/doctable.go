package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strings"
)

// The speed table of the root package's documentation (doc.go) is
// rendered from saved results, never edited by hand:
//
//	go run . -report results/full.json -doc ../doc.go
//
// rewrites the lines between docTableStart and docTableEnd.
const (
	docTableStart = "// Nanoseconds per operation with 16-byte random keys"
	docTableEnd   = "//\n// \"add\""
)

// docRows are the rows of the table: the label in the doc, the bench row.
var docRows = [][2]string{
	{"f=8", "cuckoo f=8"},
	{"f=12", "cuckoo f=12"},
	{"f=16 (default)", "cuckoo f=16 (default)"},
	{"f=13 semi-sorted", "cuckoo f=13 semi-sorted"},
	{"f=16, AddHash/ContainsHash", "cuckoo f=16 AddHash/ContainsHash (pre-hashed)"},
	{"f=16, AddBatch/ContainsBatch", "cuckoo f=16 ContainsBatch/AddBatch"},
}

// renderDocTable returns the table's lines (each starting "//\t") for the
// rand16 keys at 10^6 and 10^7.
func renderDocTable(r *results, sum map[cell]*summary) (string, error) {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "%s, hashing included,\n", docTableStart)
	fmt.Fprintf(&b, "// medians of %d runs of the bench module on %d cores (%s),\n", r.Config.Reps, m.Cores, m.CPU)
	fmt.Fprintf(&b, "// %s, commit %.7s (docs/benchmarks.md has every row, the peers and\n", m.GoVersion, m.Commit)
	b.WriteString("// the method; the bench module's -report writes the table here, given\n")
	b.WriteString("// -doc and this file's path):\n//\n")
	b.WriteString("//\tsetting (4-slot buckets)      bits/item  FPR       10^6: add  hit  miss   10^7: add  hit  miss\n")
	for _, row := range docRows {
		s6 := sum[cell{row[1], 1_000_000, rand16}]
		s7 := sum[cell{row[1], 10_000_000, rand16}]
		if s6 == nil || s7 == nil || s6.Reps == 0 || s7.Reps == 0 {
			return "", fmt.Errorf("doc table: no rand16 results for %q at 10^6 and 10^7", row[1])
		}
		fmt.Fprintf(&b, "//\t%-28s  %6.2f      %-8s  %9s %4s %5s  %10s %4s %5s\n", row[0], s6.HeapBits, docRate(s6.FPR),
			docNS(s6.Add), docNS(s6.Hit), docNS(s6.Miss), docNS(s7.Add), docNS(s7.Hit), docNS(s7.Miss))
	}
	return b.String(), nil
}

func docNS(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.0f", v)
}

func docRate(p float64) string {
	switch {
	case p >= 0.01:
		return fmt.Sprintf("%.1f %%", 100*p)
	case p >= 0.001:
		return fmt.Sprintf("%.2f %%", 100*p)
	}
	return fmt.Sprintf("%.3f %%", 100*p)
}

// writeDocTable replaces the speed table in the Go file at path.
func writeDocTable(r *results, path string) error {
	table, err := renderDocTable(r, summarize(r.Trials))
	if err != nil {
		return err
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	start := bytes.Index(src, []byte(docTableStart))
	if start < 0 {
		return fmt.Errorf("%s: no line starting %q", path, docTableStart)
	}
	end := bytes.Index(src[start:], []byte(docTableEnd))
	if end < 0 {
		return fmt.Errorf("%s: the table does not end", path)
	}
	out := append(append(append([]byte(nil), src[:start]...), table...), src[start+end:]...)
	return os.WriteFile(path, out, 0o644)
}
