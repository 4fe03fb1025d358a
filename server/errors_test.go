package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestErrorTextsPinned fails when a reply error of errors.go is not
// pinned: every replyError text must appear in an expected output of the
// scripts in testdata/script, or in a test file's expectations.
func TestErrorTextsPinned(t *testing.T) {
	parallel(t)
	var corpus strings.Builder
	for _, pattern := range []string{"testdata/script/*.txt", "*_test.go"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if f == "errors_test.go" {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			corpus.Write(b)
		}
	}
	texts := replyErrorTexts(t)
	if len(texts) < 50 {
		t.Fatalf("found only %d reply errors in errors.go", len(texts))
	}
	for name, text := range texts {
		// Test files hold texts as Go strings; scripts as they are sent.
		if !strings.Contains(corpus.String(), text) && !strings.Contains(corpus.String(), strconv.Quote(text)) {
			t.Errorf("%s (%q) is pinned by no test", name, text)
		}
	}
}

// replyErrorTexts returns the replyError constants of errors.go.
func replyErrorTexts(t *testing.T) map[string]string {
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Values) != 1 {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "replyError" {
			return true
		}
		if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
			s, _ := strconv.Unquote(lit.Value)
			texts[vs.Names[0].Name] = s
		}
		return true
	})
	return texts
}
