package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// issueRef is a reference to an issue of the tracker: "issue 12",
// "Issue #12", "issues 12 and 14", "#12", and "Issue12" in a name
// (TestIssue12Capacity). A doc comment states a contract, which an issue
// number does not help a reader of the code to learn (the history is in
// git and in bench/notes.md).
var issueRef = regexp.MustCompile(`(?i:\bissues?\s*#?\d+)|Issues?\d+|(?:^|[^\w&#])#\d+\b`)

// docComments returns the doc comments of a file: the package's, and
// those of every declaration, its specs, and the fields and methods of
// its struct and interface types, with the line comments beside them.
func docComments(f *ast.File) []*ast.CommentGroup {
	groups := []*ast.CommentGroup{f.Doc}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			groups = append(groups, n.Doc)
			return false // comments in bodies are not docs
		case *ast.GenDecl:
			groups = append(groups, n.Doc)
		case *ast.TypeSpec:
			groups = append(groups, n.Doc, n.Comment)
		case *ast.ValueSpec:
			groups = append(groups, n.Doc, n.Comment)
		case *ast.Field:
			groups = append(groups, n.Doc, n.Comment)
		case *ast.FuncLit:
			return false
		}
		return true
	})
	return groups
}

// TestNoIssueInDocComments fails when a doc comment of a non-test Go file
// of the module (declarations exported or not, package docs) cites an
// issue.
func TestNoIssueInDocComments(t *testing.T) {
	root := repoRoot(t)
	pkgs := goPackages(t, root)
	var dirs []string
	for p := range pkgs {
		dirs = append(dirs, p)
	}
	sort.Strings(dirs)
	fset := token.NewFileSet()
	for _, dir := range dirs {
		for _, name := range pkgs[dir].files {
			rel := path.Join(dir, name)
			f, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(rel)), nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range docComments(f) {
				if g == nil {
					continue
				}
				for _, c := range g.List {
					for _, m := range issueRef.FindAllString(c.Text, -1) {
						t.Errorf("%s:%d: doc comment cites %q: say the contract, and leave the history to git and bench/notes.md",
							rel, fset.Position(c.Pos()).Line, strings.TrimSpace(m))
					}
				}
			}
		}
	}
}

// TestIssueRef pins what counts as citing an issue.
func TestIssueRef(t *testing.T) {
	for text, cites := range map[string]bool{
		"// as issue 12 asked":                 true,
		"// (Issue #7)":                        true,
		"// issues 3 and 4":                    true,
		"// Issue12 fixed":                     true,
		"// (TestIssue16CapacityHolds)":        true,
		"// TISSUE12":                          false,
		"// see #12.":                          true,
		"// #12":                               true,
		"// an issue of 12 bytes":              false,
		"// the issue: 12 bytes":               false,
		"// slot #x, C#, &#12; entity":         false,
		"// https://example.com/a#L12":         false,
		"// tissue 12":                         false,
		"// words 0..#n":                       false,
		"// the 2nd issue":                     false,
		"//go:build linux":                     false,
		"// a URL fragment #section is no ref": false,
	} {
		if got := issueRef.MatchString(text); got != cites {
			t.Errorf("%q: cites an issue = %v, want %v", text, got, cites)
		}
	}
}
