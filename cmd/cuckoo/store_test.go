package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestStoreCommands(t *testing.T) {
	e := newEnv(t)
	e.run("", "store", "put", "db", "k", "v1").want(t, exitOK, "store")
	e.run("from stdin", "store", "put", "db", "k2").want(t, exitOK, "store")
	if r := e.run("", "store", "get", "db", "k"); r.code != exitOK || r.stdout != "v1" {
		t.Fatalf("get: %+v", r)
	}
	if r := e.run("", "store", "get", "db", "k2"); r.stdout != "from stdin" {
		t.Fatalf("get k2: %+v", r)
	}
	if r := e.run("", "store", "get", "db", "nope"); r.code != exitAbsent || r.stdout != "" {
		t.Fatalf("get of an absent key: %+v", r)
	}
	if r := e.run("", "store", "has", "db", "k"); r.code != exitOK || r.stdout != "present\n" {
		t.Fatalf("has: %+v", r)
	}
	e.run("", "store", "del", "db", "k").want(t, exitOK, "store")
	if r := e.run("", "store", "has", "db", "k"); r.code != exitAbsent || r.stdout != "absent\n" {
		t.Fatalf("has after del: %+v", r)
	}
	if r := e.run("", "store", "del", "db", "k"); r.code != exitAbsent {
		t.Fatalf("del of an absent key: %+v", r)
	}
	e.run("", "store", "compact", "db").want(t, exitOK, "store")
	if r := e.run("", "store", "check", "db"); r.code != exitOK || !strings.Contains(r.stdout, "ok") {
		t.Fatalf("check: %+v", r)
	}
	if r := e.run("", "store", "stats", "db"); !strings.Contains(r.stdout, "keys:       1\n") {
		t.Fatalf("stats: %+v", r)
	}
	e.run("", "store", "frob", "db").want(t, exitUsage, "store")
	e.run("", "store", "get", "db").want(t, exitUsage, "store")
	e.run("", "store", "get", "missing.d", "k").want(t, exitData, "store")

	// Damage: a flipped byte mid-log is named with its file and offset.
	// After the compaction the record is in a sealed segment (the active
	// one is empty), so the damage is not a torn tail.
	segs, _ := filepath.Glob(filepath.Join(e.dir, "db", "*.log"))
	for _, seg := range segs {
		if b, _ := os.ReadFile(seg); len(b) > 45 {
			b[45] ^= 1
			os.WriteFile(seg, b, 0o644)
		}
	}
	r := e.run("", "store", "check", "db")
	r.want(t, exitData, "store")
	if !strings.Contains(r.stderr, "damaged") || !strings.Contains(r.stderr, "offset 40") {
		t.Fatalf("check of a damaged store: %s", r.stderr)
	}
}

func TestStoreImportExport(t *testing.T) {
	e := newEnv(t)
	src := filepath.Join(runtime.GOROOT(), "src", "strings")
	if _, err := os.Stat(src); err != nil {
		t.Skip("no Go source tree")
	}
	r := e.run("", "store", "import", "files", src)
	r.want(t, exitOK, "store")
	r2 := e.run("", "store", "import", "files", src)
	if !strings.Contains(r2.stdout, "the store grew by 0 B") {
		t.Fatalf("second import: %s", r2.stdout)
	}
	list := e.run("", "store", "list", "files")
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(list.stdout), "\n") {
		_, name, _ := strings.Cut(line, "\t")
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if out := e.run("", "store", "export", "files", name); out.code != exitOK || out.stdout != string(want) {
			t.Fatalf("export %s: %d bytes, want %d (%s)", name, len(out.stdout), len(want), out.stderr)
		}
		n++
	}
	if n < 10 {
		t.Fatalf("listed %d files", n)
	}
	if st := e.run("", "store", "stats", "files"); !strings.Contains(st.stdout, "dedup:") {
		t.Fatalf("stats: %s", st.stdout)
	}
	e.run("", "store", "export", "files", "no/such/file").want(t, exitData, "store")
}

// TestDedupExactMatchesAwk: dedup --exact prints what awk '!seen[$0]++'
// prints, with the CR rule.
func TestDedupExactMatchesAwk(t *testing.T) {
	awk, err := exec.LookPath("awk")
	if err != nil {
		t.Skip("awk not installed (apt-get install -y mawk)")
	}
	e := newEnv(t)
	lines := urls(e, "urls.txt", 100_000, testSeed(t))
	_ = lines
	e.write("crlf.txt", "a\r\nb\na\nc\r\nc\n\r\nlast")
	for _, in := range []string{"urls.txt", "crlf.txt"} {
		cmd := exec.Command(awk, `{ k = $0; sub(/\r$/, "", k) } !seen[k]++`, filepath.Join(e.dir, in))
		want, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		r := e.run("", "dedup", "--exact", in)
		r.want(t, exitOK, "dedup")
		if r.stdout != string(want) {
			t.Fatalf("%s: dedup --exact printed %d bytes, awk %d", in, len(r.stdout), len(want))
		}
	}
	e.run("", "dedup", "--exact", "--fpr", "0.01", "urls.txt").want(t, exitUsage, "dedup")
	// --exact-dir keeps the seen lines.
	e.write("a.txt", "x\ny\n")
	e.write("b.txt", "y\nz\n")
	e.run("", "dedup", "--exact-dir", "seen.d", "a.txt").want(t, exitOK, "dedup")
	if r := e.run("", "dedup", "--exact-dir", "seen.d", "b.txt"); r.stdout != "z\n" {
		t.Fatalf("second run with --exact-dir: %q", r.stdout)
	}
}
