package lint

import (
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// docs/architecture.md is held to the code by TestArchitectureDoc, by
// these rules (a package is named by its path relative to the module root,
// and the root package as `cuckoo`; a file is a `backticked` name ending
// in .go, .s or .lua):
//
//   - Packages. The table whose header's first cell is "package" names
//     every directory of the repository that holds Go files (testdata
//     directories and the bench/ module left out), in code spans in the
//     first cell of a row; a span without a slash after the first one of a
//     cell is a sibling of the first (`internal/testlong`, `testseed`). A
//     span there that is not such a directory fails too.
//   - Files that exist. Every file named anywhere in the document exists:
//     a name with a slash is relative to the repository's root; a bare
//     name is a file of the package of the table row it is in (the row's
//     first package), or of the section it is in; a bare name outside both
//     fails, as it names no file in particular.
//   - Sections and their files. A heading whose first code span is a
//     package opens that package's section, up to the next heading (a
//     heading without a package closes it). A section's tables whose
//     header's last cell is "file" list every non-test Go file of the
//     package, build-ignored generators included (a file ending in
//     _test.go is a test file; any other .go file is not); any other code
//     span with a slash in such a cell must name a package.
//   - Stated imports, in prose (outside code blocks, a paragraph's lines
//     joined) and in table cells, in three forms, with a list being
//     "`a`", "`a` and `b`" or "`a`, `b` and `c`" ("or" too):
//     "LIST imports LIST" (or "import"): each imports each, directly;
//     "LIST does not import LIST" (or "do not"): neither directly nor
//     through other packages of the module;
//     "only LIST import(s) `p`": the module's packages that import p
//     directly, p's own subpackages left out, are exactly those listed.
//     A name that is not a package of the module is an import path
//     (`hash/crc32`, `github.com/tidwall/redcon`), which matches its
//     subpackages too, unless its first element is that of a package of
//     the module (`internal/gone`): then it is a package gone or misspelt. What a package imports is what its non-test files
//     import, whatever their build constraints, build-ignored files left
//     out.
//
// The failures say what to add to the document or remove from it.

// goPackage is a directory holding Go files.
type goPackage struct {
	files   []string        // the non-test .go files' names, sorted
	imports map[string]bool // the import paths of its non-test, not build-ignored files
}

// goPackages returns the directories of the repository under root that
// hold Go files, by module-relative path ("" is the root), leaving out
// testdata, hidden directories and the bench/ module.
func goPackages(t *testing.T, root string) map[string]*goPackage {
	t.Helper()
	pkgs := map[string]*goPackage{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (rel == "bench" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		dir := path.Dir(rel)
		if dir == "." {
			dir = ""
		}
		pkg := pkgs[dir]
		if pkg == nil {
			pkg = &goPackage{imports: map[string]bool{}}
			pkgs[dir] = pkg
		}
		if strings.HasSuffix(p, "_test.go") {
			return nil
		}
		pkg.files = append(pkg.files, d.Name())
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if buildIgnored(f.Comments, f.Package) {
			return nil
		}
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			if imp == module || strings.HasPrefix(imp, module+"/") {
				imp = strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			}
			pkg.imports[imp] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range pkgs {
		sort.Strings(pkg.files)
	}
	return pkgs
}

// buildIgnored reports whether a file's build constraint, among the
// comments before its package clause, is the tag "ignore" (a generator
// run by go run, not part of the package).
func buildIgnored(comments []*ast.CommentGroup, pkgPos token.Pos) bool {
	for _, g := range comments {
		if g.Pos() >= pkgPos {
			break
		}
		for _, c := range g.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			x, err := constraint.Parse(c.Text)
			if err == nil && x.String() == "ignore" {
				return true
			}
		}
	}
	return false
}

// docName is how the document names a package: the root is `cuckoo`.
func docName(pkg string) string {
	if pkg == "" {
		return "cuckoo"
	}
	return pkg
}

var (
	// codeSpan is a code span on one line.
	codeSpan = regexp.MustCompile("`([^`]+)`")
	// fileName is a file the document names.
	fileName = regexp.MustCompile(`^[\w./-]*\w\.(?:go|s|lua)$`)
	// spanList is a list of code spans: `a`, `a` and `b`, `a`, `b` or `c`.
	spanList = "`[^`]+`(?:(?:,\\s*|,?\\s+(?:and|or)\\s+)`[^`]+`)*"
	// importsClaim, doesNotImport and onlyImport are the three forms of a
	// stated import.
	importsClaim  = regexp.MustCompile("(" + spanList + ")\\s+imports?\\s+(" + spanList + ")")
	doesNotImport = regexp.MustCompile("(" + spanList + ")\\s+(?:does|do)\\s+not\\s+import\\s+(" + spanList + ")")
	onlyImport    = regexp.MustCompile("\\b[Oo]nly\\s+(" + spanList + ")\\s+imports?\\s+`([^`]+)`")
)

// spans returns the code spans of s.
func spans(s string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// archDoc is what docs/architecture.md says, as the rules above read it.
type archDoc struct {
	packages []namedAt // the package table's packages
	files    []namedAt // every file named, resolved to a repository path
	// listed maps each package with a section holding a file table to
	// the files of its directory those tables list (base names).
	listed   map[string]map[string]bool
	claims   []importClaim
	problems []string // what cannot be read as the rules say
}

// namedAt is a name the document gives and the line it gives it on.
type namedAt struct {
	name string
	line int
}

// importClaim is one stated import.
type importClaim struct {
	kind     string // "imports", "does not import", "only"
	from, to []string
	line     int
	text     string
}

// resolvePackage turns the document's name of a package into a
// module-relative path ("" for the root).
func resolvePackage(name string) string {
	if name == "cuckoo" {
		return ""
	}
	return strings.TrimSuffix(name, "/")
}

// parseArchDoc reads the document. isPackage says whether a
// module-relative directory is a package of the repository.
func parseArchDoc(doc string, isPackage func(string) bool) *archDoc {
	a := &archDoc{listed: map[string]map[string]bool{}}
	section, inSection := "", false
	inFence := false
	var header []string // the current table's header cells; nil outside a table
	var para []string   // the current paragraph's lines
	paraLine := 0
	flush := func() {
		if len(para) > 0 {
			a.readClaims(strings.Join(para, " "), paraLine)
		}
		para = nil
	}
	addFile := func(name, pkg string, havePkg bool, line int) string {
		if strings.Contains(name, "/") {
			a.files = append(a.files, namedAt{name, line})
			return name
		}
		if !havePkg {
			a.problems = append(a.problems, fmt.Sprintf("line %d: `%s` is in no package's row or section: name it with its path", line, name))
			return ""
		}
		p := path.Join(pkg, name)
		a.files = append(a.files, namedAt{p, line})
		return p
	}
	for i, line := range strings.Split(doc, "\n") {
		n := i + 1
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			flush()
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if strings.HasPrefix(line, "#") {
			flush()
			header = nil
			inSection = false
			if s := spans(line); len(s) > 0 && isPackage(resolvePackage(s[0])) {
				section, inSection = resolvePackage(s[0]), true
			}
			for _, s := range spans(line) {
				if fileName.MatchString(s) {
					addFile(s, section, inSection, n)
				}
			}
			continue
		}
		if !strings.HasPrefix(trimmed, "|") {
			header = nil
			if trimmed == "" {
				flush()
			} else {
				if len(para) == 0 {
					paraLine = n
				}
				para = append(para, trimmed)
				for _, s := range spans(line) {
					if fileName.MatchString(s) {
						addFile(s, section, inSection, n)
					}
				}
			}
			continue
		}
		flush()
		cells := strings.Split(strings.Trim(trimmed, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if header == nil {
			header = cells
			continue
		}
		if strings.Trim(strings.Join(cells, ""), "-: ") == "" {
			continue // the separator row
		}
		for _, c := range cells {
			a.readClaims(c, n)
		}
		switch {
		case header[0] == "package":
			var row []string
			for _, s := range spans(cells[0]) {
				p := resolvePackage(s)
				if len(row) > 0 && !strings.Contains(s, "/") {
					p = path.Join(path.Dir(row[0]), s)
				}
				row = append(row, p)
				a.packages = append(a.packages, namedAt{p, n})
			}
			for _, c := range cells[1:] {
				for _, s := range spans(c) {
					if fileName.MatchString(s) && len(row) > 0 {
						addFile(s, row[0], true, n)
					}
				}
			}
		case header[len(header)-1] == "file":
			for j, c := range cells {
				for _, s := range spans(c) {
					switch {
					case fileName.MatchString(s):
						p := addFile(s, section, inSection, n)
						if j == len(cells)-1 && inSection && path.Dir(p) == path.Clean("./"+section) {
							if a.listed[section] == nil {
								a.listed[section] = map[string]bool{}
							}
							a.listed[section][path.Base(p)] = true
						}
					case j == len(cells)-1 && strings.Contains(s, "/") && !isPackage(resolvePackage(s)):
						a.problems = append(a.problems, fmt.Sprintf("line %d: `%s` is not a package of the repository: remove it", n, s))
					}
				}
			}
			if inSection && a.listed[section] == nil {
				a.listed[section] = map[string]bool{}
			}
		default:
			for _, c := range cells {
				for _, s := range spans(c) {
					if fileName.MatchString(s) {
						addFile(s, section, inSection, n)
					}
				}
			}
		}
	}
	flush()
	return a
}

// readClaims adds the stated imports of a paragraph.
func (a *archDoc) readClaims(text string, line int) {
	for _, m := range onlyImport.FindAllStringSubmatch(text, -1) {
		a.claims = append(a.claims, importClaim{"only", spans(m[1]), []string{m[2]}, line, m[0]})
	}
	for _, m := range doesNotImport.FindAllStringSubmatch(text, -1) {
		a.claims = append(a.claims, importClaim{"does not import", spans(m[1]), spans(m[2]), line, m[0]})
	}
	for _, m := range importsClaim.FindAllStringSubmatchIndex(text, -1) {
		if only := strings.LastIndex(strings.ToLower(text[:m[0]]), "only"); only >= 0 && strings.TrimSpace(text[only+len("only"):m[0]]) == "" {
			continue // read as "only LIST imports"
		}
		a.claims = append(a.claims, importClaim{"imports", spans(text[m[2]:m[3]]), spans(text[m[4]:m[5]]), line, text[m[0]:m[1]]})
	}
}

// importsPath reports whether a package of pkgs with these imports
// imports p: the package p of the module, or an import path p or one
// under it.
func importsPath(pkgs map[string]*goPackage, imports map[string]bool, p string) bool {
	if _, ok := pkgs[p]; ok {
		return imports[p]
	}
	for imp := range imports {
		if imp == p || strings.HasPrefix(imp, p+"/") {
			return true
		}
	}
	return false
}

// dependsOn reports whether module package from imports p directly or
// through other packages of the module.
func dependsOn(pkgs map[string]*goPackage, from, p string) bool {
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(q string) bool {
		if seen[q] {
			return false
		}
		seen[q] = true
		pkg := pkgs[q]
		if pkg == nil {
			return false
		}
		if importsPath(pkgs, pkg.imports, p) {
			return true
		}
		for imp := range pkg.imports {
			if _, ok := pkgs[imp]; ok && walk(imp) {
				return true
			}
		}
		return false
	}
	return walk(from)
}

// checkArchDoc returns every way the document disagrees with the
// repository's packages.
func checkArchDoc(doc string, pkgs map[string]*goPackage, exists func(string) bool) []string {
	isPackage := func(p string) bool { _, ok := pkgs[p]; return ok }
	a := parseArchDoc(doc, isPackage)
	problems := slices.Clone(a.problems)
	named := map[string]bool{}
	for _, p := range a.packages {
		named[p.name] = true
		if !isPackage(p.name) {
			problems = append(problems, fmt.Sprintf("line %d: `%s` is not a directory holding Go files: remove it from the package table", p.line, docName(p.name)))
		}
	}
	var all []string
	for p := range pkgs {
		all = append(all, p)
	}
	sort.Strings(all)
	for _, p := range all {
		if !named[p] {
			problems = append(problems, fmt.Sprintf("package `%s` is missing: add a row for it to the package table", docName(p)))
		}
	}
	for _, f := range a.files {
		if !exists(f.name) {
			problems = append(problems, fmt.Sprintf("line %d: file %s does not exist: remove it, or name the file that holds what it says", f.line, f.name))
		}
	}
	var sections []string
	for p := range a.listed {
		sections = append(sections, p)
	}
	sort.Strings(sections)
	for _, p := range sections {
		for _, f := range pkgs[p].files {
			if !a.listed[p][f] {
				problems = append(problems, fmt.Sprintf("file %s is missing: add it to the file table of `%s`'s section", path.Join(p, f), docName(p)))
			}
		}
	}
	for _, c := range a.claims {
		problems = append(problems, checkClaim(c, pkgs)...)
	}
	return problems
}

// checkClaim returns what is untrue in one stated import.
func checkClaim(c importClaim, pkgs map[string]*goPackage) []string {
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf("line %d: %q: ", c.line, c.text)+fmt.Sprintf(format, args...))
	}
	for _, f := range c.from {
		if _, ok := pkgs[resolvePackage(f)]; !ok {
			bad("`%s` is not a package of the repository", f)
		}
	}
	units := map[string]bool{}
	for p := range pkgs {
		if p != "" {
			units[unit(p)] = true
		}
	}
	for _, to := range c.to {
		p := resolvePackage(to)
		if _, ok := pkgs[p]; !ok && units[unit(p)] {
			bad("`%s` is not a package of the repository", to)
		}
	}
	if len(problems) > 0 {
		return problems
	}
	switch c.kind {
	case "imports":
		for _, f := range c.from {
			for _, to := range c.to {
				if !importsPath(pkgs, pkgs[resolvePackage(f)].imports, resolvePackage(to)) {
					bad("`%s` does not import `%s`: remove the claim", f, to)
				}
			}
		}
	case "does not import":
		for _, f := range c.from {
			for _, to := range c.to {
				if dependsOn(pkgs, resolvePackage(f), resolvePackage(to)) {
					bad("`%s` imports `%s` (directly or through the module's packages): remove the claim", f, to)
				}
			}
		}
	case "only":
		to := resolvePackage(c.to[0])
		var importers []string
		for p, pkg := range pkgs {
			if importsPath(pkgs, pkg.imports, to) && p != to && !strings.HasPrefix(p, to+"/") {
				importers = append(importers, p)
			}
		}
		sort.Strings(importers)
		listed := map[string]bool{}
		for _, f := range c.from {
			listed[resolvePackage(f)] = true
			if !slices.Contains(importers, resolvePackage(f)) {
				bad("`%s` does not import `%s`: remove it from the list", f, c.to[0])
			}
		}
		for _, p := range importers {
			if !listed[p] {
				bad("`%s` imports `%s` too: add it to the list", docName(p), c.to[0])
			}
		}
	}
	return problems
}

// TestArchitectureDoc fails when docs/architecture.md misses a package or
// a file of a package section, names a package or file that does not
// exist, or states an import that is not so (the rules above).
func TestArchitectureDoc(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	pkgs := goPackages(t, root)
	if _, ok := pkgs["internal/lint"]; !ok {
		t.Fatal("internal/lint not found: is the walk rooted at the repository?")
	}
	for _, p := range checkArchDoc(string(doc), pkgs, func(p string) bool { return exists(root, p) }) {
		t.Error("docs/architecture.md: " + p)
	}
}

// TestArchDocRules pins how the document is read: each case is a
// document and the problems it must have, on a small made-up module.
func TestArchDocRules(t *testing.T) {
	pkgs := map[string]*goPackage{
		"":              {files: []string{"a.go", "b.go"}, imports: map[string]bool{"x/y": true, "fmt": true}},
		"x/y":           {files: []string{"y.go"}, imports: map[string]bool{"x/z": true}},
		"x/z":           {files: []string{"z.go"}, imports: map[string]bool{"github.com/p/q/r": true}},
		"x/w":           {files: []string{"w.go"}, imports: map[string]bool{"x/z": true}},
		"cmd/tool":      {files: []string{"main.go"}, imports: map[string]bool{"": true}},
		"cmd/tool/sub":  {},
		"examples/demo": {},
	}
	files := map[string]bool{}
	for p, pkg := range pkgs {
		for _, f := range pkg.files {
			files[path.Join(p, f)] = true
		}
	}
	exists := func(p string) bool { return files[p] }
	table := "| package | what |\n|---|---|\n| `cuckoo` | root (`a.go`) |\n| `x/y`, `z`, `w` | parts |\n| `cmd/tool`, `cmd/tool/sub` | the command |\n| `examples/demo` | demo |\n\n"
	for _, c := range []struct {
		name, doc string
		want      []string // one substring of each problem
	}{
		{"complete", table, nil},
		{"missing package", strings.Replace(table, ", `w`", "", 1), []string{"package `x/w` is missing"}},
		{"extra package", table + "| package | what |\n|---|---|\n| `x/v` | none |\n", []string{"`x/v` is not a directory"}},
		{"row file missing", strings.Replace(table, "`a.go`", "`c.go`", 1), []string{"file c.go does not exist"}},
		{"bare file outside", table + "Prose names `a.go`.\n", []string{"`a.go` is in no package's row or section"}},
		{"path file", table + "Prose names `x/y/y.go` and `x/y/q.go`.\n", []string{"file x/y/q.go does not exist"}},
		{"section complete", table + "## `cuckoo`, the root\n\n| concept | file |\n|---|---|\n| A | `a.go` |\n| B | `b.go`; `x/y` |\n", nil},
		{"section misses a file", table + "## `cuckoo`, the root\n\nIt is in `b.go`.\n\n| concept | file |\n|---|---|\n| A | `a.go` |\n", []string{"file b.go is missing: add it to the file table of `cuckoo`'s section"}},
		{"section names no package", table + "## `x/y`\n\n| concept | file |\n|---|---|\n| Y | `y.go`, `x/q` |\n", []string{"`x/q` is not a package"}},
		{"section closed by a heading", table + "## `x/y`\n\n## Other\n\nIn `y.go`.\n", []string{"`y.go` is in no package's row"}},
		{"imports true", table + "`cuckoo` imports `x/y` and `fmt`; `x/y` and `x/w` import `x/z`.\n", nil},
		{"imports false", table + "`x/y` imports\n`x/w`.\n", []string{"`x/y` does not import `x/w`: remove the claim"}},
		{"imports external prefix", table + "`x/z` imports `github.com/p/q`.\n", nil},
		{"does not import true", table + "`x/w` does not import `x/y` or `fmt`.\n", nil},
		{"does not import, through the module", table + "`cuckoo` does not import `github.com/p/q`.\n", []string{"`cuckoo` imports `github.com/p/q` (directly or through"}},
		{"only true", table + "Only `x/y` and `x/w` import `x/z`.\n", nil},
		{"only misses one", table + "Only `x/y` imports `x/z`.\n", []string{"`x/w` imports `x/z` too: add it"}},
		{"only lists one too many", table + "only `x/y`, `x/w` and `cmd/tool` import `x/z`.\n", []string{"`cmd/tool` does not import `x/z`: remove it"}},
		{"claim from no package", table + "`x/q` imports `x/z`.\n", []string{"`x/q` is not a package"}},
		{"claim of no package", table + "`x/y` does not import `x/q`.\n", []string{"`x/q` is not a package"}},
		{"file in a heading", table + "## `x/y` and `q.go`\n", []string{"file x/y/q.go does not exist"}},
		{"claims in tables", table + "| concept | file |\n|---|---|\n| only `cuckoo` imports `x/y` | |\n| `x/y` imports `fmt` | |\n", []string{"`x/y` does not import `fmt`"}},
		{"code blocks are not read", table + "```\n`x/y` imports `x/w`\n| package |\n```\n", nil},
	} {
		got := checkArchDoc(c.doc, pkgs, exists)
		if len(got) != len(c.want) {
			t.Errorf("%s: got %d problems %q, want %d %q", c.name, len(got), got, len(c.want), c.want)
			continue
		}
		for _, w := range c.want {
			if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, w) }) {
				t.Errorf("%s: problems %q, want one to say %q", c.name, got, w)
			}
		}
	}
}
