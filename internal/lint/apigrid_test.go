package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// docs/api.md's "Key forms" grid is held to the exported method sets by
// TestAPIGrid: a cell that names a form the type lacks, or a type with a
// form its cell does not name, fails. The method sets are read from the
// source (this package sits below the filters and may not import them),
// with the methods promoted from embedded types of the same package.

// gridPackages maps the package qualifier of the grid's type names to the
// package's directory, relative to the module root.
var gridPackages = map[string]string{"cuckoo": "", "bloom": "bloom", "redisfilter": "redisfilter"}

// keyForms are the suffixes of an operation's key forms.
var keyForms = []string{"", "String", "Uint64", "Hash"}

// batchMethod matches the name of a batch call.
var batchMethod = regexp.MustCompile(`Batch`)

// methodSets returns, for each named type declared in dir's non-test
// files, its exported methods (on the value or the pointer), promoted ones
// included.
func methodSets(t *testing.T, dir string) map[string]map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]map[string]bool{}
	embeds := map[string][]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if buildIgnored(f.Comments, f.Package) {
			continue
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil || !d.Name.IsExported() {
					continue
				}
				recv := receiverName(d.Recv.List[0].Type)
				if own[recv] == nil {
					own[recv] = map[string]bool{}
				}
				own[recv][d.Name.Name] = true
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, field := range st.Fields.List {
						if len(field.Names) == 0 {
							embeds[ts.Name.Name] = append(embeds[ts.Name.Name], receiverName(field.Type))
						}
					}
				}
			}
		}
	}
	sets := map[string]map[string]bool{}
	var collect func(typ string, into map[string]bool, seen map[string]bool)
	collect = func(typ string, into, seen map[string]bool) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		for m := range own[typ] {
			into[m] = true
		}
		for _, e := range embeds[typ] {
			collect(e, into, seen)
		}
	}
	for typ := range own {
		sets[typ] = map[string]bool{}
		collect(typ, sets[typ], map[string]bool{})
	}
	return sets
}

// receiverName returns the type name of a receiver or embedded field:
// T, *T, T[P] or pkg.T (the last gives "", another package's type).
func receiverName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverName(e.X)
	case *ast.Ident:
		return e.Name
	case *ast.IndexExpr:
		return receiverName(e.X)
	case *ast.IndexListExpr:
		return receiverName(e.X)
	}
	return ""
}

// gridRow is one row of the grid: the types it names and, per column,
// the methods its cell promises.
type gridRow struct {
	line  int
	types []string // qualified: "cuckoo.Filter"
	cells []string
}

// parseGrid returns the rows of the table under "## Key forms" and its
// header's column names.
func parseGrid(t *testing.T, doc string) (header []string, rows []gridRow) {
	t.Helper()
	in := false
	for i, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == "## Key forms"
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if header == nil {
			header = cells
			continue
		}
		if strings.HasPrefix(cells[0], "---") {
			continue
		}
		pkg := ""
		var types []string
		for _, span := range spans(cells[0]) {
			if q, name, ok := strings.Cut(span, "."); ok {
				pkg, span = q, name
			}
			types = append(types, pkg+"."+span)
		}
		rows = append(rows, gridRow{line: i + 1, types: types, cells: cells[1:]})
	}
	if header == nil {
		t.Fatal(`docs/api.md has no table under "## Key forms"`)
	}
	return header, rows
}

// cellMethods returns the methods a cell of column op promises and
// whether the cell is about the batch calls.
//
//	"4 forms"                 Add, AddString, AddUint64, AddHash
//	"`[]byte`, `string`"      Add, AddString
//	"`[]byte` (6)"            Add
//	"— (1)"                   none
//	"`[]byte`, plus `ContainsChecked`"  Contains, ContainsChecked
//	batches: "all eight" (the four batches and their hash twins), "`[]byte`"
//	(the four []byte batches), "— (4)", and any method named in code spans
//	("plus `TouchBatch`", "`AddBatch`, `ContainsBatch`").
func cellMethods(op, cell string) []string {
	var ms []string
	if op == "batches" {
		byteBatches := []string{"AddBatch", "AddUniqueBatch", "ContainsBatch", "DeleteBatch"}
		switch {
		case strings.HasPrefix(cell, "all eight"):
			ms = append(ms, byteBatches...)
			ms = append(ms, "AddHashBatch", "AddUniqueHashBatch", "ContainsHashBatch", "DeleteHashBatch")
		case strings.HasPrefix(cell, "`[]byte`"):
			ms = append(ms, byteBatches...)
		}
		for _, s := range spans(cell) {
			if batchMethod.MatchString(s) {
				ms = append(ms, s)
			}
		}
		return ms
	}
	if strings.HasPrefix(cell, "4 forms") {
		for _, f := range keyForms {
			ms = append(ms, op+f)
		}
		return ms
	}
	for _, s := range spans(cell) {
		switch s {
		case "[]byte":
			ms = append(ms, op)
		case "string":
			ms = append(ms, op+"String")
		case "uint64":
			ms = append(ms, op+"Uint64")
		default:
			if strings.HasPrefix(s, op) {
				ms = append(ms, s) // "plus `ContainsChecked`"
			}
		}
	}
	return ms
}

// checkGrid returns the differences between the grid and the method sets.
func checkGrid(header []string, rows []gridRow, sets map[string]map[string]map[string]bool) []string {
	var problems []string
	for _, r := range rows {
		for _, typ := range r.types {
			pkg, name, _ := strings.Cut(typ, ".")
			pkgSets, ok := sets[pkg]
			if !ok {
				problems = append(problems, "docs/api.md:"+strconv.Itoa(r.line)+": "+typ+": unknown package "+pkg)
				continue
			}
			have, ok := pkgSets[name]
			if !ok {
				problems = append(problems, "docs/api.md:"+strconv.Itoa(r.line)+": "+typ+": no such type with methods")
				continue
			}
			for col, cell := range r.cells {
				if col+1 >= len(header) {
					break
				}
				op := header[col+1]
				want := cellMethods(op, cell)
				var candidates []string
				if op == "batches" {
					for m := range have {
						if batchMethod.MatchString(m) {
							candidates = append(candidates, m)
						}
					}
				} else {
					for _, f := range keyForms {
						candidates = append(candidates, op+f)
					}
					candidates = append(candidates, op+"Checked")
				}
				for _, m := range candidates {
					if have[m] && !slices.Contains(want, m) {
						problems = append(problems, "docs/api.md:"+strconv.Itoa(r.line)+": "+typ+" has "+m+", which its "+op+" cell ("+cell+") does not name")
					}
				}
				for _, m := range want {
					if !have[m] {
						problems = append(problems, "docs/api.md:"+strconv.Itoa(r.line)+": "+typ+" has no "+m+", which its "+op+" cell ("+cell+") names")
					}
				}
			}
		}
	}
	sort.Strings(problems)
	return problems
}

func TestAPIGrid(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	sets := map[string]map[string]map[string]bool{}
	for q, dir := range gridPackages {
		sets[q] = methodSets(t, filepath.Join(root, dir))
	}
	header, rows := parseGrid(t, string(doc))
	if len(rows) == 0 {
		t.Fatal("the Key forms grid of docs/api.md has no rows")
	}
	for _, p := range checkGrid(header, rows, sets) {
		t.Error(p)
	}
	// Every exported type with a Contains method is a filter, and has a row.
	inGrid := map[string]bool{}
	for _, r := range rows {
		for _, typ := range r.types {
			inGrid[typ] = true
		}
	}
	for q, types := range sets {
		for name, methods := range types {
			if ast.IsExported(name) && methods["Contains"] && !inGrid[q+"."+name] {
				t.Errorf("%s.%s has Contains but no row in docs/api.md's Key forms grid", q, name)
			}
		}
	}
}

func TestAPIGridFindsDrift(t *testing.T) {
	header := []string{"type", "Add", "Contains", "batches"}
	rows := []gridRow{{line: 7, types: []string{"cuckoo.T"}, cells: []string{"4 forms", "`[]byte`", "`AddBatch`"}}}
	sets := map[string]map[string]map[string]bool{"cuckoo": {"T": {
		"Add": true, "AddString": true, "AddUint64": true, // no AddHash
		"Contains": true, "ContainsChecked": true, // one the cell does not name
		"AddBatch": true, "ContainsBatch": true, // one the cell does not name
	}}}
	got := checkGrid(header, rows, sets)
	want := []string{
		"docs/api.md:7: cuckoo.T has ContainsBatch, which its batches cell (`AddBatch`) does not name",
		"docs/api.md:7: cuckoo.T has ContainsChecked, which its Contains cell (`[]byte`) does not name",
		"docs/api.md:7: cuckoo.T has no AddHash, which its Add cell (4 forms) names",
	}
	if !slices.Equal(got, want) {
		t.Errorf("checkGrid found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
