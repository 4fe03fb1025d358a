package main

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/store"
)

// The help text and the manual (docs/cli.md) are part of the interface:
// these tests check that they list every exit status the code returns,
// name the commands behind the statuses only some commands return, and
// document every command and flag.

// exitStatusUsers lists, for each exit status that only some commands
// return, the functions that return it and the words its line in the
// help text and in the manual's table must hold for each. A function that
// starts returning one of these statuses fails TestExitStatusesDocumented
// until it is named here and in both texts.
var exitStatusUsers = map[string]map[string][]string{
	"exitAbsent": {
		"runQuery": {"query --key"},
		"runEdit":  {"delete"},
		"storeSub": {"store get", "store has", "store del"},
	},
	"exitFull": {
		"fullError": {"fixed-capacity filter"},
		"redisErr":  {"dedup --redis"},
		"stopErr":   {"dedup --redis"},
		"kafkaErr":  {"dedup --kafka"},
	},
}

// exitConsts returns the exit statuses declared in exit.go, by name.
func exitConsts(t *testing.T, file *ast.File) map[string]int {
	t.Helper()
	consts := map[string]int{}
	for _, d := range file.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "exit") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.INT {
					continue // exitStatusHelp
				}
				n, err := strconv.Atoi(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				consts[name.Name] = n
			}
		}
	}
	if len(consts) < 5 {
		t.Fatalf("found only %v in exit.go", consts)
	}
	return consts
}

// parsePackage parses the command's source files (not its tests).
func parsePackage(t *testing.T) map[string]*ast.File {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	return files
}

// helpStatusLines parses "  N    text" lines (with indented continuation
// lines) of the help's exit-status block.
func helpStatusLines(t *testing.T, help string) map[int]string {
	t.Helper()
	lines := map[int]string{}
	head := regexp.MustCompile(`^  (\d+)\s+(.*)$`)
	last := -1
	for _, l := range strings.Split(help, "\n") {
		if m := head.FindStringSubmatch(l); m != nil {
			last, _ = strconv.Atoi(m[1])
			lines[last] = m[2]
		} else if last >= 0 && strings.HasPrefix(l, "       ") {
			lines[last] += " " + strings.TrimSpace(l)
		}
	}
	return lines
}

// manualStatusLines parses the table under "### Exit status" in the
// manual.
func manualStatusLines(t *testing.T, manual string) map[int]string {
	t.Helper()
	_, rest, ok := strings.Cut(manual, "\n### Exit status\n")
	if !ok {
		t.Fatal("docs/cli.md has no '### Exit status' section")
	}
	row := regexp.MustCompile(`^\| *(\d+) *\| *(.*?) *\|$`)
	lines := map[int]string{}
	for _, l := range strings.Split(rest, "\n") {
		if strings.HasPrefix(l, "#") {
			break
		}
		if m := row.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			lines[n] = strings.ReplaceAll(m[2], "`", "")
		}
	}
	return lines
}

func readManual(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExitStatusesDocumented: every exit status declared in exit.go has a
// line in the help text and a row in the manual's table, and the two list
// the same statuses; the statuses only some commands return name those
// commands; exit statuses are set only through the declared constants.
func TestExitStatusesDocumented(t *testing.T) {
	files := parsePackage(t)
	consts := exitConsts(t, files["exit.go"])
	help := helpStatusLines(t, exitStatusHelp)
	manual := manualStatusLines(t, readManual(t))
	for name, n := range consts {
		if _, ok := help[n]; !ok {
			t.Errorf("the help text (exitStatusHelp) does not list status %d (%s)", n, name)
		}
		if _, ok := manual[n]; !ok {
			t.Errorf("docs/cli.md's exit-status table does not list status %d (%s)", n, name)
		}
	}
	for n := range help {
		if _, ok := manual[n]; !ok {
			t.Errorf("the help text lists status %d, docs/cli.md does not", n)
		}
	}
	for n := range manual {
		if _, ok := help[n]; !ok {
			t.Errorf("docs/cli.md lists status %d, the help text does not", n)
		}
	}
	// SIGTERM's status is computed in main, not declared.
	sigterm := 128 + 15
	if !strings.Contains(help[consts["exitInterrupted"]], strconv.Itoa(sigterm)) ||
		!strings.Contains(manual[consts["exitInterrupted"]], strconv.Itoa(sigterm)) {
		t.Errorf("the help text and docs/cli.md must give %d (SIGTERM) beside %d", sigterm, consts["exitInterrupted"])
	}

	// Which functions use each status that only some commands return, and
	// whether any status is set by a bare number.
	used := map[string]map[string]bool{}
	for fname, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.Ident:
					if _, ok := exitStatusUsers[x.Name]; ok {
						if used[x.Name] == nil {
							used[x.Name] = map[string]bool{}
						}
						used[x.Name][fd.Name.Name] = true
					}
				case *ast.CallExpr:
					if id, ok := x.Fun.(*ast.Ident); ok && id.Name == "exitCode" && len(x.Args) == 1 {
						if _, ok := x.Args[0].(*ast.BasicLit); ok {
							t.Errorf("%s: %s: exitCode with a number; use an exit constant", fname, fd.Name.Name)
						}
					}
				case *ast.KeyValueExpr:
					if k, ok := x.Key.(*ast.Ident); ok && k.Name == "code" {
						if _, ok := x.Value.(*ast.BasicLit); ok {
							t.Errorf("%s: %s: an exit status set by a number; use an exit constant", fname, fd.Name.Name)
						}
					}
				}
				return true
			})
		}
	}
	for status, users := range exitStatusUsers {
		n := consts[status]
		for fn := range used[status] {
			if _, ok := users[fn]; !ok {
				t.Errorf("%s returns %s (%d): name its command in that status's line of the help text and docs/cli.md, and add it to exitStatusUsers", fn, status, n)
			}
		}
		for fn, words := range users {
			if !used[status][fn] {
				t.Errorf("exitStatusUsers: %s no longer uses %s; update the help text, docs/cli.md and this table", fn, status)
			}
			for _, w := range words {
				if !strings.Contains(help[n], w) {
					t.Errorf("the help text's line for status %d (%q) does not name %q", n, help[n], w)
				}
				if !strings.Contains(manual[n], w) {
					t.Errorf("docs/cli.md's row for status %d (%q) does not name %q", n, manual[n], w)
				}
			}
		}
	}
}

// manualSections splits the manual at its "## " headings: the text of
// each, by heading.
func manualSections(manual string) map[string]string {
	sections := map[string]string{}
	var head string
	var body strings.Builder
	for _, l := range strings.Split(manual, "\n") {
		if strings.HasPrefix(l, "## ") {
			if head != "" {
				sections[head] = body.String()
			}
			head = strings.TrimPrefix(l, "## ")
			body.Reset()
			continue
		}
		body.WriteString(l + "\n")
	}
	if head != "" {
		sections[head] = body.String()
	}
	return sections
}

// TestManualDocumentsEveryCommand: docs/cli.md lists every command in its
// table, gives each a section (a "## " heading naming it), and names each
// of the command's flags in that section; README.md's layout lists every
// command.
func TestManualDocumentsEveryCommand(t *testing.T) {
	manual := readManual(t)
	intro, _, _ := strings.Cut(manual, "\n## ")
	sections := manualSections(manual)
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var layout string
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(l, "| `cmd/cuckoo` |") {
			if layout != "" {
				t.Errorf("README.md's layout has two rows for cmd/cuckoo")
			}
			layout = l
		}
	}
	for _, c := range commands() {
		if !strings.Contains(intro, "`"+c.name+"`") {
			t.Errorf("docs/cli.md's command table does not list %s", c.name)
		}
		if !regexp.MustCompile(`\b` + c.name + `\b`).MatchString(layout) {
			t.Errorf("README.md's layout row for cmd/cuckoo does not list %s: %q", c.name, layout)
		}
		var section string
		for head, body := range sections {
			for _, w := range strings.Fields(head) {
				if strings.Trim(w, "`") == c.name {
					section = body
				}
			}
		}
		if section == "" {
			t.Errorf("docs/cli.md has no section for %s", c.name)
			continue
		}
		var missing []string
		c.flags().VisitAll(func(f *flag.Flag) {
			name := flagName(f.Name)
			if !regexp.MustCompile(regexp.QuoteMeta(name) + `([^\w-]|$)`).MatchString(section) {
				missing = append(missing, name)
			}
		})
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("docs/cli.md's section for %s does not name %s", c.name, strings.Join(missing, ", "))
		}
	}
}

// TestExitStatusCases runs the cases of the exit-status table that the
// tests of each command do not: a full filter in Redis (4), a store
// another process has open (3), an --exact-dir that is not a store (3).
func TestExitStatusCases(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Several times the capacity (100) of the filter in Redis below, and
	// no more: each key sent once it is full costs Redis a search for room
	// that fails.
	e.write("keys.txt", numbered(400))
	e.write("abc.txt", "a\nb\na\n")

	held := filepath.Join(e.dir, "held.d")
	s, err := store.Open(held)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := e.run("", "store", "get", "held.d", "k")
	r.want(t, exitData, "store")
	if !strings.Contains(r.stderr, "open in another process") {
		t.Fatalf("store held by another process: %q", r.stderr)
	}
	e.run("", "dedup", "--exact-dir", "held.d", "abc.txt").want(t, exitData, "dedup")

	if err := os.Mkdir(filepath.Join(e.dir, "other"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.write("other/notes.txt", "not a store\n")
	r = e.run("", "dedup", "--exact-dir", "other", "abc.txt")
	r.want(t, exitData, "dedup")
	if !strings.Contains(r.stderr, "no store") {
		t.Fatalf("--exact-dir of a directory with other files: %q", r.stderr)
	}

	srv := redistest.NewServer(t, redistest.Config{})
	// In the directory, the file of the lines the full filter did not
	// record.
	r = runDedupIn(t, e.dir, nil, "dedup", "--redis", redisURL(srv), "--name", "small", "--capacity", "100", "keys.txt")
	r.want(t, exitFull, "dedup")
	if !strings.Contains(r.stderr, "in Redis is full") {
		t.Fatalf("a full filter in Redis: %q", r.stderr)
	}
}
