package main

import (
	le "encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filestore"
	"github.com/dedupkit/cuckoo/internal/codec"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/store"
)

func TestStoreCommands(t *testing.T) {
	t.Parallel()
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
	// After the compaction the record is in a sealed log file (the active
	// one is empty), so the damage is not a torn tail.
	logFiles, _ := filepath.Glob(filepath.Join(e.dir, "db", "*.log"))
	for _, logFile := range logFiles {
		if b, _ := os.ReadFile(logFile); len(b) > 45 {
			b[45] ^= 1
			os.WriteFile(logFile, b, 0o644)
		}
	}
	r := e.run("", "store", "check", "db")
	r.want(t, exitData, "store")
	if !strings.Contains(r.stderr, "damaged") || !strings.Contains(r.stderr, "offset 40") {
		t.Fatalf("check of a damaged store: %s", r.stderr)
	}
}

func TestStoreImportExport(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestStoreReadsExactSeenSet: the store of dedup --exact-dir is read by
// 'cuckoo store' as the seen lines: has, get, del (forget a line), put
// (add one), stats. A seen-set an older version kept without its mark is
// marked; a store of other keys is refused by dedup.
func TestStoreReadsExactSeenSet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run("x\n", "dedup", "--exact-dir", "D").want(t, exitOK, "dedup")
	if r := e.run("", "store", "has", "D", "x"); r.code != exitOK || r.stdout != "present\n" {
		t.Fatalf("store has D x after dedup of x: %+v", r)
	}
	if r := e.run("", "store", "has", "D", "y"); r.code != exitAbsent || r.stdout != "absent\n" {
		t.Fatalf("store has D y: %+v", r)
	}
	if r := e.run("", "store", "get", "D", "x"); r.code != exitOK || r.stdout != "" {
		t.Fatalf("store get D x: %+v", r)
	}
	if r := e.run("", "store", "stats", "D"); !strings.Contains(r.stdout, "seen-set") {
		t.Fatalf("stats of a seen-set: %+v", r)
	}
	e.run("", "store", "del", "D", "x").want(t, exitOK, "store")
	e.run("", "store", "put", "D", "z", "").want(t, exitOK, "store")
	if r := e.run("x\ny\nz\n", "dedup", "--exact-dir", "D"); r.stdout != "x\ny\n" {
		t.Fatalf("dedup after del x and put z: %q", r.stdout)
	}

	// A seen-set of an older version: lines behind byte 1, no mark.
	e.run("", "store", "put", "old", "\x01a", "").want(t, exitOK, "store")
	if r := e.run("a\nb\n", "dedup", "--exact-dir", "old"); r.stdout != "b\n" {
		t.Fatalf("dedup on an unmarked seen-set: %q", r.stdout)
	}
	if r := e.run("", "store", "has", "old", "b"); r.stdout != "present\n" {
		t.Fatalf("store has on a seen-set marked by dedup: %+v", r)
	}
	// A store of other keys is not a seen-set.
	e.run("", "store", "put", "kv", "k", "v").want(t, exitOK, "store")
	r := e.run("k\n", "dedup", "--exact-dir", "kv")
	r.want(t, exitData, "dedup")
	if !strings.Contains(r.stderr, "other keys") || r.stdout != "" {
		t.Fatalf("dedup --exact-dir on a store of other keys: %+v", r)
	}
	if r := e.run("", "store", "get", "kv", "k"); r.stdout != "v" {
		t.Fatalf("the refused store changed: %+v", r)
	}
}

// TestExactIgnoresTrailingCR: --exact compares lines as dedup without it does
// (a trailing CR is not part of a line), and its help says so rather than
// "the same as awk".
func TestExactIgnoresTrailingCR(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := "a\r\nb\na\nb\r\nc"
	plain := e.run(in, "dedup")
	exact := e.run(in, "dedup", "--exact")
	if exact.stdout != "a\r\nb\nc\n" || plain.stdout != exact.stdout {
		t.Fatalf("dedup printed %q, dedup --exact %q", plain.stdout, exact.stdout)
	}
	help := e.run("", "dedup", "--help")
	if strings.Contains(help.stdout+help.stderr, "same as awk") || !strings.Contains(help.stdout+help.stderr, "trailing CR") {
		t.Fatalf("dedup --help on --exact and CR:\n%s%s", help.stdout, help.stderr)
	}
}

// TestOnlyPutAndImportCreateStore: only put and import create a store; the other
// subcommands name what the path is instead and leave it as it was.
func TestOnlyPutAndImportCreateStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("notes.txt", "mine")
	os.Mkdir(filepath.Join(e.dir, "empty"), 0o755)
	os.Mkdir(filepath.Join(e.dir, "photos"), 0o755)
	e.write("photos/cat.jpg", "jpeg")
	for _, c := range []struct{ dir, says string }{
		{"notes.txt", "not a store: notes.txt is a file, not a directory"},
		{"empty", "not a store: empty is an empty directory"},
		{"missing", "not a store: missing does not exist"},
		{"photos", "not a store: photos holds other files (cat.jpg) and no store"},
	} {
		for _, sub := range [][]string{{"get", "k"}, {"has", "k"}, {"del", "k"}, {"stats"}, {"compact"}, {"check"}, {"list"}, {"export", "f"}} {
			r := e.run("", append([]string{"store", sub[0], c.dir}, sub[1:]...)...)
			r.want(t, exitData, "store")
			if !strings.Contains(r.stderr, c.says) || strings.Contains(r.stderr, "free space") {
				t.Fatalf("store %s %s: %s", sub[0], c.dir, r.stderr)
			}
		}
	}
	if got := e.files(); strings.Join(got, " ") != "empty notes.txt photos" {
		t.Fatalf("files after the commands: %q", got)
	}
	if es, _ := os.ReadDir(filepath.Join(e.dir, "empty")); len(es) != 0 {
		t.Fatalf("the empty directory now holds %d files", len(es))
	}
	// put and import name a file plainly too, and create nothing there.
	for _, args := range [][]string{{"put", "notes.txt", "k", "v"}, {"import", "notes.txt", "photos"}} {
		r := e.run("", append([]string{"store"}, args...)...)
		r.want(t, exitData, "store")
		if !strings.Contains(r.stderr, "not a store: notes.txt is a file, not a directory") {
			t.Fatalf("store %s: %s", args[0], r.stderr)
		}
	}
	if string(e.read("notes.txt")) != "mine" {
		t.Fatal("notes.txt changed")
	}
	// put into an empty directory makes a store there.
	e.run("", "store", "put", "empty", "k", "v").want(t, exitOK, "store")
	if r := e.run("", "store", "get", "empty", "k"); r.stdout != "v" {
		t.Fatalf("get after put into an empty directory: %+v", r)
	}
}

// TestStorePutClosedStdin: put without VALUE and with standard input
// closed fails, as cat does, and creates nothing; from /dev/null it stores
// the empty value.
func TestStorePutClosedStdin(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("needs sh")
	}
	e := newEnv(t)
	if r := e.sh(`exec "$0" store put D k <&-`); r.code != exitData || !strings.Contains(r.stderr, "standard input: it is closed") {
		t.Fatalf("put with standard input closed: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "D")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("put with standard input closed created the store: %v", err)
	}
	e.sh(`exec "$0" store put D k </dev/null`).want(t, exitOK, "store")
	if r := e.run("", "store", "has", "D", "k"); r.stdout != "present\n" {
		t.Fatalf("after a put from /dev/null: %+v", r)
	}
}

// TestStoreImportDiskFull: an import that runs out of room (the file
// size limit of 'ulimit -f', which makes the kernel refuse the writes as
// a full disk does) prints no summary and says which files are stored
// for certain; each file the store lists exports intact, and the same
// import run again completes the store.
func TestStoreImportDiskFull(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("needs sh")
	}
	e := newEnv(t)
	rng := rand.New(rand.NewPCG(1, 2))
	src := filepath.Join(e.dir, "src")
	os.Mkdir(src, 0o755)
	want := map[string][]byte{}
	for i := range 40 {
		b := make([]byte, 20<<10+rng.IntN(40<<10))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		name := filepath.Join(src, fmt.Sprintf("f%02d.bin", i))
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
		want[name] = b
	}
	// 800 blocks: 400 KiB or 800 KiB, as the shell counts them; the files
	// take 1.6 MiB.
	r := e.sh(`ulimit -f 800 && exec "$0" store import D "$1"`, src)
	r.want(t, exitData, "store")
	if r.stdout != "" {
		t.Fatalf("a failed import printed a summary: %q", r.stdout)
	}
	if !strings.Contains(r.stderr, "stored for certain") && !strings.Contains(r.stderr, "files are stored, up to") {
		t.Fatalf("a failed import does not say what was kept: %s", r.stderr)
	}
	t.Logf("the failure says: %s", r.stderr)
	exportAll := func() int {
		list := e.run("", "store", "list", "D")
		list.want(t, exitOK, "store")
		n := 0
		for _, line := range strings.Split(strings.TrimSpace(list.stdout), "\n") {
			if line == "" {
				continue
			}
			_, name, _ := strings.Cut(line, "\t")
			if r := e.run("", "store", "export", "D", name); r.code != exitOK || r.stdout != string(want[name]) {
				t.Fatalf("export %s after the failure: %d bytes, want %d: %s", name, len(r.stdout), len(want[name]), r.stderr)
			}
			n++
		}
		return n
	}
	t.Logf("%d of %d files stored before the failure", exportAll(), len(want))
	r = e.run("", "store", "import", "D", src)
	r.want(t, exitOK, "store")
	if !strings.Contains(r.stdout, "imported 40 files") {
		t.Fatalf("import again: %s", r.stdout)
	}
	if n := exportAll(); n != len(want) {
		t.Fatalf("%d files listed after the second import, want %d", n, len(want))
	}
}

// sh runs script with sh -c in the test's directory, with the command as
// $0 and args as $1...: for what a shell sets up (a closed descriptor, a
// limit) before it execs the command.
func (e *sandbox) sh(script string, args ...string) result {
	e.t.Helper()
	if buildErr != nil {
		e.t.Fatal(buildErr)
	}
	cmd := exec.Command("sh", append([]string{"-c", script, binary}, args...)...)
	cmd.Dir = e.dir
	return runCmd(e.t, cmd)
}

// TestStoreNamesNormalised imports files by several spellings of their
// paths and exports them by others: "./", a trailing "/", "//" and ".."
// name the same file at import and at export; a store whose names an
// older version kept as given ("./old/a.txt") exports by any spelling too.
func TestStoreNamesNormalised(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	os.MkdirAll(filepath.Join(e.dir, "tree/sub"), 0o755)
	e.write("tree/sub/x", "x\n")
	e.write("tree/a.txt", "a\n")
	e.run("", "store", "import", "-q", "rel.d", "tree").want(t, exitOK, "store")
	e.run("", "store", "import", "-q", "rel.d", "./tree/a.txt").want(t, exitOK, "store")
	if r := e.run("", "store", "list", "rel.d"); r.stdout != "2\ttree/a.txt\n2\ttree/sub/x\n" {
		t.Fatalf("list after importing ./tree/a.txt again: %q", r.stdout)
	}
	for _, name := range []string{"./tree/sub/x", "tree//sub/x", "tree/../tree/sub/x", "tree/sub/./x"} {
		if r := e.run("", "store", "export", "rel.d", name); r.code != exitOK || r.stdout != "x\n" {
			t.Errorf("export %s: status %d, %q %q", name, r.code, r.stdout, r.stderr)
		}
	}
	for i, name := range []string{"./tree/sub/", "tree/sub", "./tree", "tree/", "."} {
		out := fmt.Sprintf("out%d", i)
		e.run("", "store", "export", "-q", "rel.d", "--to", out, name).want(t, exitOK, "store")
		if b, err := os.ReadFile(filepath.Join(e.dir, out, "tree/sub/x")); err != nil || string(b) != "x\n" {
			t.Errorf("export --to %s: %q, %v", name, b, err)
		}
	}

	// A name kept as given, as older versions did.
	s, err := store.Open(filepath.Join(e.dir, "old.d"))
	if err != nil {
		t.Fatal(err)
	}
	fst, err := filestore.New(s)
	if err == nil {
		_, err = fst.Import("./old/a.txt", strings.NewReader("old\n"))
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"old/a.txt", "./old/a.txt", "old//a.txt"} {
		if r := e.run("", "store", "export", "old.d", name); r.code != exitOK || r.stdout != "old\n" {
			t.Errorf("export %s from an older store: status %d, %q %q", name, r.code, r.stdout, r.stderr)
		}
	}
	e.run("", "store", "export", "-q", "old.d", "--to", "oldout", "old").want(t, exitOK, "store")
	if b, err := os.ReadFile(filepath.Join(e.dir, "oldout/old/a.txt")); err != nil || string(b) != "old\n" {
		t.Errorf("export --to of an older store's name: %q, %v", b, err)
	}
}

// TestStoreExportSyncPolicies exports a tree with the default policy
// (every file synced once, at the end) and with --sync always (each before
// its rename): the same files, with the summary line; and export leaves no
// temporary or lock file behind.
func TestStoreExportSyncPolicies(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	e := newEnv(t)
	for i := range 50 {
		os.MkdirAll(filepath.Join(e.dir, fmt.Sprintf("tree/d%d", i%7)), 0o755)
		e.write(fmt.Sprintf("tree/d%d/f%d", i%7, i), strings.Repeat(fmt.Sprintf("line %d\n", i), i))
	}
	e.run("", "store", "import", "-q", "t.d", "tree").want(t, exitOK, "store")
	for _, policy := range []string{"everysec", "always", "never"} {
		out := "out-" + policy
		r := e.run("", "store", "export", "--sync", policy, "t.d", "--to", out)
		r.want(t, exitOK, "store")
		if !strings.HasPrefix(r.stdout, "exported 50 files, ") {
			t.Errorf("--sync %s: %q", policy, r.stdout)
		}
		err := filepath.WalkDir(filepath.Join(e.dir, "tree"), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(e.dir, p)
			want, _ := os.ReadFile(p)
			got, err := os.ReadFile(filepath.Join(e.dir, out, rel))
			if err != nil || string(got) != string(want) {
				t.Errorf("--sync %s: %s: %d bytes, want %d (%v)", policy, rel, len(got), len(want), err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		filepath.WalkDir(filepath.Join(e.dir, out), func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.HasPrefix(d.Name(), ".") {
				t.Errorf("--sync %s: %s left behind", policy, p)
			}
			return nil
		})
	}
}

// dirFiles returns the files of dir with their bytes.
func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = string(b)
	}
	return m
}

// TestStoreRepair: 'store repair' leaves a sound store as it is (status
// 0); the damage open refuses in the last record, which every other
// subcommand reports naming 'cuckoo store repair DIR' (status 3), it
// reports with --dry-run, changing nothing (status 3), and cuts (status
// 0), keeping the bytes cut in DIR/<log file>.cut-<offset>; the store
// then has every other record and takes writes. Damage in a sealed log
// file is refused (status 3), changing nothing; so are a store another
// process has open and a path that holds no store.
func TestStoreRepair(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	db := filepath.Join(e.dir, "db")
	e.run("", "store", "put", "db", "k1", "v1").want(t, exitOK, "store")
	e.run("", "store", "put", "db", "k2", "v2").want(t, exitOK, "store")
	sound := dirFiles(t, db)
	for _, args := range [][]string{{"store", "repair", "db"}, {"store", "repair", "--dry-run", "db"}} {
		r := e.run("", args...)
		r.want(t, exitOK, "store")
		if r.stdout != "db: nothing to repair: the store opens, and every record verifies\n" {
			t.Fatalf("%v on a sound store: %q", args, r.stdout)
		}
		if !maps.Equal(dirFiles(t, db), sound) {
			t.Fatalf("%v changed a sound store", args)
		}
	}

	// The last record's last byte, one bit flipped, with no checkpoint
	// covering it (as after a crash).
	os.Remove(filepath.Join(db, "INDEX"))
	logFiles, _ := filepath.Glob(filepath.Join(db, "*.log"))
	if len(logFiles) != 1 {
		t.Fatalf("log files %v", logFiles)
	}
	logFile := logFiles[0]
	full, _ := os.ReadFile(logFile)
	full[len(full)-1] ^= 1
	os.WriteFile(logFile, full, 0o644)
	damaged := dirFiles(t, db)
	r := e.run("", "store", "get", "db", "k1")
	r.want(t, exitData, "store")
	if !strings.Contains(r.stderr, "db is damaged") || !strings.Contains(r.stderr, "run 'cuckoo store repair db'") {
		t.Fatalf("get of a store with a damaged last record: %s", r.stderr)
	}
	// The offset the error names: the second record's, which is as long
	// as the first, after the log file's header of 40 bytes.
	m := regexp.MustCompile(`at offset (\d+):`).FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no offset in %q", r.stderr)
	}
	start, _ := strconv.ParseInt(m[1], 10, 64)
	if start-40 != int64(len(full))-start {
		t.Fatalf("the error names offset %d in a log file of %d bytes, not the second of two records", start, len(full))
	}
	copyName := fmt.Sprintf("%s.cut-%d", filepath.Base(logFile), start)
	r = e.run("", "store", "repair", "db", "--dry-run")
	r.want(t, exitData, "store")
	if !strings.Contains(r.stderr, fmt.Sprintf("at offset %d", start)) || !strings.Contains(r.stderr, "repair would cut") ||
		!strings.Contains(r.stderr, copyName) || !strings.Contains(r.stderr, "nothing was changed") || r.stdout != "" {
		t.Fatalf("repair --dry-run: %+v", r)
	}
	if !maps.Equal(dirFiles(t, db), damaged) {
		t.Fatal("repair --dry-run changed the store")
	}
	r = e.run("", "store", "repair", "db")
	r.want(t, exitOK, "store")
	wantLine := fmt.Sprintf("db: repaired: cut %s at offset %d, losing %d bytes, 1 record (the damaged one), kept in %s\n",
		filepath.Join("db", filepath.Base(logFile)), start, int64(len(full))-start, filepath.Join("db", copyName))
	if !strings.HasPrefix(r.stdout, wantLine) || !strings.Contains(r.stdout, "the store opens") {
		t.Fatalf("repair: %q, want it to start %q", r.stdout, wantLine)
	}
	after := dirFiles(t, db)
	if after[copyName] != string(full[start:]) || after[filepath.Base(logFile)] != string(full[:start]) {
		t.Fatalf("after repair: the copy holds %q, the log file %d bytes; want %q and %d", after[copyName], len(after[filepath.Base(logFile)]), full[start:], start)
	}
	if r := e.run("", "store", "get", "db", "k1"); r.code != exitOK || r.stdout != "v1" {
		t.Fatalf("get k1 after the repair: %+v", r)
	}
	e.run("", "store", "get", "db", "k2").want(t, exitAbsent, "store")
	e.run("", "store", "put", "db", "k3", "v3").want(t, exitOK, "store")
	if r := e.run("", "store", "repair", "db"); r.code != exitOK || !strings.Contains(r.stdout, "nothing to repair") {
		t.Fatalf("repair after the repair: %+v", r)
	}

	// A sealed log file: after a compaction the records are in one.
	e.run("", "store", "put", "sealed", "k", "v").want(t, exitOK, "store")
	e.run("", "store", "compact", "sealed").want(t, exitOK, "store")
	logFiles, _ = filepath.Glob(filepath.Join(e.dir, "sealed", "*.log"))
	for _, f := range logFiles {
		if b, _ := os.ReadFile(f); len(b) > 45 {
			b[45] ^= 1
			os.WriteFile(f, b, 0o644)
		}
	}
	before := dirFiles(t, filepath.Join(e.dir, "sealed"))
	for _, args := range [][]string{{"store", "repair", "sealed"}, {"store", "repair", "sealed", "--dry-run"}} {
		r = e.run("", args...)
		r.want(t, exitData, "store")
		if !strings.Contains(r.stderr, "sealed is damaged") || !strings.Contains(r.stderr, "repair cannot cut it away") ||
			!strings.Contains(r.stderr, "sealed log file") || !strings.Contains(r.stderr, "restore the store from a backup") {
			t.Fatalf("%v: %s", args, r.stderr)
		}
		if !maps.Equal(dirFiles(t, filepath.Join(e.dir, "sealed")), before) {
			t.Fatalf("%v changed the store", args)
		}
	}

	// Another process has the store open.
	s, err := store.Open(filepath.Join(e.dir, "held"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r = e.run("", "store", "repair", "held")
	r.want(t, exitData, "store")
	if !strings.Contains(r.stderr, "open in another process") {
		t.Fatalf("repair of a store open elsewhere: %s", r.stderr)
	}

	r = e.run("", "store", "repair", "missing")
	r.want(t, exitData, "store")
	if !strings.Contains(r.stderr, "not a store: missing does not exist") {
		t.Fatalf("repair of a missing store: %s", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("repair of a missing store created it: %v", err)
	}
	e.run("", "store", "repair", "db", "extra").want(t, exitUsage, "store")
	e.run("", "store", "get", "db", "k1", "--dry-run").want(t, exitUsage, "store")
}

// TestStoreCheckFindsStaleIndexEntry: an index checkpoint whose checksum
// passes but whose entry of a key points at an overwritten record of it
// (as a bug might write it): 'check' says the index is wrong, not the
// log, and 'repair' removes INDEX, after which the key reads its latest
// value and 'check' finds the index agreeing with the log.
func TestStoreCheckFindsStaleIndexEntry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	db := filepath.Join(e.dir, "db")
	e.run("", "store", "put", "db", "a", "1").want(t, exitOK, "store")
	e.run("", "store", "put", "db", "a", "2").want(t, exitOK, "store")
	e.run("", "store", "put", "db", "b", "3").want(t, exitOK, "store")
	// Records of 13 bytes after the log file's header of 40: a's at 40
	// and 53. The index's slots (location << 24 | tag) follow the
	// checkpoint's 104 bytes of header (one log file); its last 4 bytes
	// are the CRC-32C of all before.
	idx := filepath.Join(db, "INDEX")
	b, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for p := 104; p+8 <= len(b)-4; p += 8 {
		if v := le.LittleEndian.Uint64(b[p:]); v>>24 == 53 {
			le.LittleEndian.PutUint64(b[p:], 40<<24|v&(1<<24-1))
			moved++
		}
	}
	if moved != 1 {
		t.Fatalf("%d entries at offset 53", moved)
	}
	le.LittleEndian.PutUint32(b[len(b)-4:], codec.Checksum(b[:len(b)-4]))
	os.WriteFile(idx, b, 0o644)

	r := e.run("", "store", "check", "db")
	r.want(t, exitData, "store")
	if !strings.Contains(r.stderr, "the index is wrong, not the log") || !strings.Contains(r.stderr, "not at its latest") {
		t.Fatalf("check of a store whose index points at an overwritten record: %s", r.stderr)
	}
	r = e.run("", "store", "repair", "--dry-run", "db")
	r.want(t, exitData, "store")
	if !strings.Contains(r.stderr, "repair would remove "+filepath.Join("db", "INDEX")) || !strings.Contains(r.stderr, "nothing was changed") {
		t.Fatalf("repair --dry-run: %s", r.stderr)
	}
	r = e.run("", "store", "repair", "db")
	r.want(t, exitOK, "store")
	if !strings.HasPrefix(r.stdout, "db: repaired: removed "+filepath.Join("db", "INDEX")+", an index checkpoint that disagreed with the log") {
		t.Fatalf("repair: %q", r.stdout)
	}
	if r := e.run("", "store", "get", "db", "a"); r.code != exitOK || r.stdout != "2" {
		t.Fatalf("get a after the repair: %+v", r)
	}
	if r := e.run("", "store", "check", "db"); r.code != exitOK || !strings.Contains(r.stdout, "the index agrees with the log") {
		t.Fatalf("check after the repair: %+v", r)
	}
}

// TestStoreRepairDryRunReadOnly: 'store repair --dry-run' of a damaged
// store made read-only, with no lock file (a copy made without it),
// reports the cut (status 3) and creates or changes no file; the previous
// version created the lock file (and, run by a user other than root,
// failed to open the files for writing).
func TestStoreRepairDryRunReadOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	db := filepath.Join(e.dir, "db")
	e.run("", "store", "put", "db", "k1", "v1").want(t, exitOK, "store")
	e.run("", "store", "put", "db", "k2", "v2").want(t, exitOK, "store")
	os.Remove(filepath.Join(db, "INDEX"))
	os.Remove(filepath.Join(db, "LOCK"))
	logFile := filepath.Join(db, "0000000000000000.log")
	full, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	full[len(full)-1] ^= 1
	os.WriteFile(logFile, full, 0o644)
	before := dirFiles(t, db)
	writable := e.run("", "store", "repair", "db", "--dry-run")
	writable.want(t, exitData, "store")
	if !maps.Equal(dirFiles(t, db), before) {
		t.Fatalf("repair --dry-run changed the store: %v", slices.Sorted(maps.Keys(dirFiles(t, db))))
	}
	es, _ := os.ReadDir(db)
	for _, f := range es {
		p := filepath.Join(db, f.Name())
		os.Chmod(p, 0o444)
		t.Cleanup(func() { os.Chmod(p, 0o644) })
	}
	os.Chmod(db, 0o555)
	t.Cleanup(func() { os.Chmod(db, 0o755) })
	r := e.run("", "store", "repair", "db", "--dry-run")
	r.want(t, exitData, "store")
	if r.stderr != writable.stderr || !strings.Contains(r.stderr, "repair would cut") || !strings.Contains(r.stderr, "nothing was changed") {
		t.Fatalf("repair --dry-run of the store read-only: %s; writable: %s", r.stderr, writable.stderr)
	}
	if !maps.Equal(dirFiles(t, db), before) {
		t.Fatalf("repair --dry-run of the store read-only changed it: %v", slices.Sorted(maps.Keys(dirFiles(t, db))))
	}
}

// TestStoreLostManifestSaysRestore: a store directory whose log files
// hold records but whose MANIFEST is lost gets one message from every
// subcommand, put and repair included, with exit status 3: the store is
// damaged, repair cannot cut it away, restore it from a backup; and no
// file changes. The previous version had put say "run 'cuckoo store
// repair'", and repair (and get) say "not a store" and to make one with
// put: each sent the user to the other.
func TestStoreLostManifestSaysRestore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, kv := range []string{"k1=v1", "k2=v2"} {
		k, v, _ := strings.Cut(kv, "=")
		e.run("", "store", "put", "db", k, v).want(t, exitOK, "store")
	}
	db := filepath.Join(e.dir, "db")
	if err := os.Remove(filepath.Join(db, "MANIFEST")); err != nil {
		t.Fatal(err)
	}
	before := dirFiles(t, db)
	var first string
	for _, args := range [][]string{
		{"put", "db", "k3", "v3"}, {"get", "db", "k1"}, {"has", "db", "k1"}, {"check", "db"}, {"stats", "db"},
		{"import", "db", "db"}, {"repair", "db"}, {"repair", "--dry-run", "db"},
	} {
		r := e.run("", append([]string{"store"}, args...)...)
		r.want(t, exitData, "store")
		msg := r.stderr
		if r.stdout != "" || !strings.Contains(msg, "db is damaged: "+filepath.Join("db", "MANIFEST")) ||
			!strings.Contains(msg, "0000000000000000.log holds records") || !strings.Contains(msg, "repair cannot cut it away") ||
			!strings.Contains(msg, "restore the store from a backup") ||
			strings.Contains(msg, "not a store") || strings.Contains(msg, "run 'cuckoo store repair") {
			t.Fatalf("store %v on a store whose manifest is lost: %+v", args, r)
		}
		if first == "" {
			first = msg
		} else if msg != first {
			t.Fatalf("store %v says %q; put said %q", args, msg, first)
		}
		if !maps.Equal(dirFiles(t, db), before) {
			t.Fatalf("store %v changed the files of a store whose manifest is lost", args)
		}
	}
	t.Logf("every subcommand says: %s", first)
}
