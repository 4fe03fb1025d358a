// Package lint holds checks on the repository itself, run by go test.
package lint

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/dedupkit/cuckoo"

// layers is the layering of docs/architecture.md, top to bottom, by the
// first element of a package's path ("" is the root package): a package
// may import packages of a lower layer, and its own subpackages, and
// nothing else. Packages of one layer do not import each other.
//
//	cmd, examples → server, store, guard, kafkadedup → redisfilter → cuckoo (root), bloom → internal
var layers = map[string]int{
	"cmd":         0,
	"examples":    0,
	"server":      1,
	"store":       1,
	"guard":       1,
	"kafkadedup":  1,
	"redisfilter": 2,
	"":            3, // the root package: cuckoo
	"bloom":       3,
	"internal":    4,
}

// only lists the packages that only some units may import, whatever
// their layers, each with the packages below it: internal/vfs, the disk
// layer, is for the packages that write files (the filters do no I/O);
// internal/table and its kinds of table (internal/table/...), the engine,
// are the root package's, whose filters own its tables; internal/replay,
// the way into the root's sizing that no public option offers, is for the
// root and the server that replays its log. A package of a restricted tree
// may import the rest of its tree.
var only = map[string][]string{
	"internal/vfs":    {"cmd", "server", "store"},
	"internal/table":  {""},
	"internal/replay": {"", "server"},
}

// restricted returns the tree of only that holds package imp, if any.
func restricted(imp string) (tree string, users []string, ok bool) {
	for tree, users := range only {
		if imp == tree || strings.HasPrefix(imp, tree+"/") {
			return tree, users, true
		}
	}
	return "", nil, false
}

// within reports whether package pkg is tree or lies below it.
func within(pkg, tree string) bool { return pkg == tree || strings.HasPrefix(pkg, tree+"/") }

// metricsImport is the prefix of the import paths of Prometheus's client
// libraries (github.com/prometheus/client_golang and what it brings).
// The packages of this module that export metrics with them are the
// commands and the adapters beside the libraries whose figures they
// export, each named for its library and "metrics" (server/servermetrics,
// guard/guardmetrics): the libraries themselves stay free of them, so a
// program that embeds a filter, a store or a guard takes no metrics
// library with it.
const metricsImport = "github.com/prometheus/"

// mayImportMetrics reports whether package pkg (relative to the module
// root) may import Prometheus's client libraries.
func mayImportMetrics(pkg string) bool {
	return unit(pkg) == "cmd" || strings.Contains(pkg, "/") && strings.HasSuffix(path.Base(pkg), "metrics")
}

// unit returns the first element of a module-relative package path.
func unit(pkg string) string {
	u, _, _ := strings.Cut(pkg, "/")
	return u
}

// allowed reports whether package pkg may import imp (both relative to
// the module root).
func allowed(pkg, imp string) bool {
	if tree, users, ok := restricted(imp); ok && !slices.Contains(users, unit(pkg)) && !within(pkg, tree) {
		return false
	}
	if unit(pkg) == unit(imp) {
		return true
	}
	lp, okp := layers[unit(pkg)]
	li, oki := layers[unit(imp)]
	return okp && oki && li > lp
}

// TestLayersNamePackages fails when a top-level directory holding Go
// files is not placed in the layering.
func TestLayersNamePackages(t *testing.T) {
	entries, err := os.ReadDir("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || name == "bench" || name == "testdata" || strings.HasPrefix(name, ".") {
			continue // bench/ is a module of its own
		}
		if _, ok := layers[name]; !ok && holdsGo(t, filepath.Join("../..", name)) {
			t.Errorf("directory %s/ holds Go code but is not placed in the layers of docs/architecture.md (internal/lint)", name)
		}
	}
}

// holdsGo reports whether the tree at dir holds a .go file.
func holdsGo(t *testing.T, dir string) bool {
	found := false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// TestImportDirection fails when a package imports one above its layer.
func TestImportDirection(t *testing.T) {
	root := repoRoot(t)
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			// bench and examples/guard are modules of their own; testdata
			// holds no packages.
			if rel == "bench" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		if pkg == "." {
			pkg = ""
		}
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			if strings.HasPrefix(imp, metricsImport) && !mayImportMetrics(pkg) {
				t.Errorf("%s imports %s: only the commands and the metrics adapters (…/<library>metrics) may (internal/lint, docs/architecture.md)", rel, imp)
			}
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			rimp := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			checked++
			if rimp != pkg && !allowed(pkg, rimp) {
				t.Errorf("%s imports %s, which the layering of docs/architecture.md does not allow", rel, imp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no module imports found: is the walk rooted at the repository?")
	}
}

func TestAllowed(t *testing.T) {
	for _, tc := range []struct {
		pkg, imp string
		ok       bool
	}{
		{"", "internal/hash", true},
		{"", "bloom", false},
		{"bloom", "", false},
		{"bloom", "internal/codec", true},
		{"internal/codec", "", false},
		{"internal/dedup", "bloom", false},
		{"cmd/cuckoo", "bloom", true},
		{"cmd/cuckoo/internal/dedup", "", true},
		{"store", "", true},
		{"store", "server", false},
		{"server", "store", false},
		{"", "store", false},
		{"", "cmd/cuckoo/internal/dedup", false},
		{"examples/dedup", "", true},
		{"redisfilter", "", true},
		{"redisfilter", "internal/addr", true},
		{"redisfilter", "store", false},
		{"", "redisfilter", false},
		{"cmd/cuckoo", "redisfilter", true},
		{"guard", "redisfilter", true},
		{"guard", "", true},
		{"guard", "store", false},
		{"redisfilter", "guard", false},
		{"", "guard", false},
		{"cmd/cuckoo", "guard", true},
		{"store", "internal/vfs", true},
		{"server", "internal/vfs", true},
		{"cmd/cuckoo/internal/filterfile", "internal/vfs", true},
		{"", "internal/vfs", false},
		{"bloom", "internal/vfs", false},
		{"redisfilter", "internal/vfs", false},
		{"guard", "internal/vfs", false},
		{"internal/codec", "internal/vfs", false},
		{"kafkadedup", "", true},
		{"kafkadedup", "internal/fields", true},
		{"kafkadedup", "store", false},
		{"", "kafkadedup", false},
		{"cmd/cuckoo", "kafkadedup", true},
		{"", "internal/table", true},
		{"internal/table", "internal/addr", true},
		{"internal/table", "", false},
		{"bloom", "internal/table", false},
		{"store", "internal/table", false},
		{"redisfilter", "internal/table", false},
		{"cmd/cuckoo", "internal/table", false},
		{"", "internal/table/concurrent", true},
		{"internal/table/concurrent", "internal/table", true},
		{"internal/table", "internal/table/concurrent", true},
		{"internal/table/chain", "internal/table/stamped", true},
		{"server", "internal/table/stamped", false},
		{"bloom", "internal/table/chain", false},
		{"internal/hash", "internal/table/chain", false},
		{"internal/vfs/x", "internal/vfs", true},
	} {
		if got := allowed(tc.pkg, tc.imp); got != tc.ok {
			t.Errorf("allowed(%q, %q) = %v, want %v", tc.pkg, tc.imp, got, tc.ok)
		}
	}
}

func TestMayImportMetrics(t *testing.T) {
	for pkg, ok := range map[string]bool{
		"cmd/cuckoo":                  true,
		"server/servermetrics":        true,
		"guard/guardmetrics":          true,
		"kafkadedup/kafkametrics":     true,
		"server":                      false,
		"guard":                       false,
		"":                            false,
		"bloom":                       false,
		"store":                       false,
		"redisfilter":                 false,
		"kafkadedup":                  false,
		"metrics":                     false,
		"internal/hash":               false,
		"server/internal/serverbench": false,
	} {
		if got := mayImportMetrics(pkg); got != ok {
			t.Errorf("mayImportMetrics(%q) = %v, want %v", pkg, got, ok)
		}
	}
}
