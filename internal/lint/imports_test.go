// Package lint holds checks on the repository itself, run by go test.
package lint

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/dedupkit/cuckoo"

// allowed lists, for each layer of DESIGN.md, the module packages it may
// import (by prefix, relative to the module root; "" is the root package).
// Imports point down the layer list and never up:
//
//	cmd → server → store, guard → redisfilter → cuckoo (root), bloom → internal
//
// cmd/cuckoo/internal holds the command's own packages, which may use the
// filters; internal/ is shared by everyone and imports nothing above it.
func allowed(pkg, imp string) bool {
	under := func(p, prefix string) bool {
		return p == prefix || strings.HasPrefix(p, prefix+"/")
	}
	switch {
	case under(pkg, "cmd"):
		return true
	case under(imp, "cmd"):
		return false // nothing outside cmd imports a command
	case under(pkg, "server"):
		return !under(imp, "cmd")
	case under(imp, "server"):
		return false
	case under(pkg, "store"):
		return imp == "" || under(imp, "bloom") || under(imp, "internal") || under(imp, "store")
	case under(imp, "store"):
		return false
	case under(pkg, "guard"):
		return imp == "" || under(imp, "bloom") || under(imp, "internal") || under(imp, "redisfilter") || under(imp, "guard")
	case under(imp, "guard"):
		return false
	case under(pkg, "redisfilter"):
		return imp == "" || under(imp, "bloom") || under(imp, "internal") || under(imp, "redisfilter")
	case under(imp, "redisfilter"):
		return false
	case pkg == "" || under(pkg, "bloom"):
		return under(imp, "internal")
	case under(pkg, "internal"), under(pkg, "examples"):
		return under(imp, "internal") || under(pkg, "examples") && (imp == "" || under(imp, "bloom"))
	}
	return false
}

// TestImportDirection fails when a package imports one above its layer.
func TestImportDirection(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
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
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			rimp := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			checked++
			if rimp != pkg && !allowed(pkg, rimp) {
				t.Errorf("%s imports %s, which points up the layering of DESIGN.md", rel, imp)
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
		{"server", "store", true},
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
	} {
		if got := allowed(tc.pkg, tc.imp); got != tc.ok {
			t.Errorf("allowed(%q, %q) = %v, want %v", tc.pkg, tc.imp, got, tc.ok)
		}
	}
}
