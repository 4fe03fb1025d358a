package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocTable renders the doc table from the committed results into a
// copy of doc.go: every row is there, and the text around the table is
// unchanged.
func TestDocTable(t *testing.T) {
	r, err := loadResults(filepath.Join("results", "full.json"))
	if err != nil {
		t.Skip("no saved results:", err)
	}
	src, err := os.ReadFile(filepath.Join("..", "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "doc.go")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeDocTable(r, path); err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(path)
	for _, row := range docRows {
		if !strings.Contains(string(out), "//\t"+row[0]+" ") {
			t.Errorf("row %q missing", row[0])
		}
	}
	before := string(src[:strings.Index(string(src), docTableStart)])
	if !strings.HasPrefix(string(out), before) || !strings.Contains(string(out), "// # Duplicates and deletes") {
		t.Error("the text around the table changed")
	}
	if err := writeDocTable(&results{}, path); err == nil {
		t.Error("rendering without results succeeded")
	}
}
