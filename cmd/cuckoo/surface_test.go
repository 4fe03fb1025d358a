package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/internal/testlong"
)

// The tests of this file try the command as a newcomer does (issue 30,
// point 8): the first build and add, a bucket size it does not take.

// lines returns n key lines, "key-<from>" onwards.
func lines(from, n int) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, "key-%d\n", i)
	}
	return b.String()
}

// TestBuildLeavesHeadroom checks that a filter sized from its input takes
// 25 % more keys (cuckoo and Bloom), that --headroom changes it, and that
// a full add says how to get more room.
func TestBuildLeavesHeadroom(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("in.txt", lines(0, 4000))
	e.write("more.txt", lines(4000, 900)) // 22.5 % more
	for _, kind := range []string{"", "--bloom", "--bloom=counting"} {
		t.Run("kind="+kind, func(t *testing.T) {
			args := []string{"build", "-o", "f", "--seed", "1", "in.txt"}
			if kind != "" {
				args = append(args, kind)
			}
			e.run("", args...).want(t, exitOK, "build")
			r := e.run("", "info", "f")
			r.want(t, exitOK, "info")
			if !strings.Contains(r.stdout, "capacity                     5,000 ") {
				t.Fatalf("capacity of a build from 4,000 lines: want 5,000 (25 %% headroom)\n%s", r.stdout)
			}
			e.run("", "add", "f", "more.txt").want(t, exitOK, "add")
		})
	}
	e.run("", "build", "-o", "exact", "--bloom", "--headroom", "0", "in.txt").want(t, exitOK, "build")
	r := e.run("", "add", "exact", "more.txt")
	r.want(t, exitFull, "add")
	for _, want := range []string{"exact is unchanged", "--capacity N", "--headroom", "--bloom=scalable"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("full add: %q does not say %q", r.stderr, want)
		}
	}
	e.run("", "build", "-o", "big", "--headroom", "100%", "in.txt").want(t, exitOK, "build")
	if r := e.run("", "info", "big"); !strings.Contains(r.stdout, "capacity                     8,000 ") {
		t.Fatalf("--headroom 100%%: want capacity 8,000\n%s", r.stdout)
	}
	for _, args := range [][]string{
		{"build", "-o", "g", "--headroom", "10", "--capacity", "100", "in.txt"},
		{"build", "-o", "g", "--headroom", "10", "--grow", "in.txt"},
		{"build", "-o", "g", "--headroom", "10", "--bloom=scalable", "in.txt"},
		{"build", "-o", "g", "--headroom", "-5", "in.txt"},
		{"build", "-o", "g", "--headroom", "lots", "in.txt"},
	} {
		e.run("", args...).want(t, exitUsage, "build")
	}
	// Standard input through a pipe: its size is unknown.
	e.run(lines(0, 10), "build", "-o", "g", "--headroom", "10").want(t, exitUsage, "build")
}

// TestBucketSizeMessages checks that a bucket size a filter does not take
// is refused with the sizes it does, in the command's words.
func TestBucketSizeMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("in.txt", lines(0, 100))
	for _, c := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"build", []string{"build", "-o", "f", "--bucket-size", "0", "in.txt"}, "want 1 to 255 slots"},
		{"build", []string{"build", "-o", "f", "--bucket-size", "256", "in.txt"}, "want 1 to 255 slots"},
		{"build", []string{"build", "-o", "f", "--bucket-size", "3", "--semi-sorted", "in.txt"}, "a semi-sorted filter has buckets of 4 slots"},
		{"dedup", []string{"dedup", "--window", "1h", "--bucket-size", "3", "in.txt"}, "a window filter (--window) has buckets of 2, 4 or 8 slots"},
		{"build", []string{"build", "-o", "f", "--fingerprint-bits", "40", "in.txt"}, `bad --fingerprint-bits value "40": want 4 to 32 bits`},
	} {
		r := e.run("", c.args...)
		r.want(t, exitUsage, c.cmd)
		if !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, "invalid parameter") {
			t.Errorf("%v: %q, want it to say %q in the command's words", c.args, r.stderr, c.want)
		}
	}
}

// TestServeBadValues checks that every serve flag's value out of range is
// a usage error (status 2) that names the flag, found before anything is
// opened: no data directory is made.
func TestServeBadValues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("bad.conf", "port 70000\n")
	for _, args := range [][]string{
		{"--port", "99999"},
		{"--port", "-1"},
		{"--port", "x"},
		{"--bind", "a b"},
		{"--bind", "1.2.3.4.5", "--protected-mode", "no"},
		{"--save-interval", "-5s"},
		{"--timeout", "-1s"},
		{"--max-filter-size", "0"},
		{"--client-output-buffer-limit", "0"},
		{"--proto-max-bulk-len", "0"},
		{"--proto-max-bulk-len", "2gb"},
		{"--maxmemory", "-1"},
		{"--maxclients", "0"},
		{"--threads", "-1"},
		{"--appendonly", "maybe"},
		{"--appendfsync", "sometimes"},
		{"--cf-bucket-size", "0"},
		{"--bf-error-rate", "2"},
		{"--config", "bad.conf"},
	} {
		r := e.run("", append([]string{"serve", "--dir", "data"}, args...)...)
		r.want(t, exitUsage, "serve")
		name := strings.TrimPrefix(args[0], "--")
		if args[0] == "--config" {
			name = "port"
		}
		if !strings.Contains(r.stderr, name) {
			t.Errorf("serve %v: %q does not name %s", args, r.stderr, name)
		}
	}
	if names := e.files(); len(names) != 1 {
		t.Fatalf("a refused serve left files: %v", names)
	}
}

// TestClusterNodeWithoutFlag gives push, pull and dedup one node of a real
// cluster without --cluster: they say to add it (status 2), both when the
// node tells it is one (INFO) and when only its MOVED replies do (a user
// whose ACL denies INFO), and work with --cluster.
func TestClusterNodeWithoutFlag(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	c := redistest.NewCluster(t, 3, 0, redistest.Config{})
	for _, addr := range c.Addrs() {
		if _, err := c.Server(addr).Do("ACL", "SETUSER", "noinfo", "on", "nopass", "~*", "&*", "+@all", "-info"); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t)
	e.write("keys.txt", lines(0, 1000))
	e.run("", "build", "--segments", "16", "--capacity", "2000", "-o", "f.ckoo", "keys.txt").want(t, exitOK, "build")
	node := c.Addrs()[0]
	d := redistest.ClientTimeout.String()
	limited := "redis://noinfo:x@" + node + "?dial_timeout=" + d + "&read_timeout=" + d + "&write_timeout=" + d
	for _, url := range []string{node, limited} {
		for _, c := range []struct {
			cmd  string
			args []string
		}{
			{"push", []string{"push", "f.ckoo", "--redis", url, "--name", "seen"}},
			{"pull", []string{"pull", "--redis", url, "--name", "seen", "-o", "back.ckoo"}},
			{"dedup", []string{"dedup", "--redis", url, "--name", "seen", "--capacity", "2000", "keys.txt"}},
		} {
			r := e.run("", c.args...)
			r.want(t, exitUsage, c.cmd)
			if !strings.Contains(r.stderr, "is a node of a Redis Cluster; add --cluster") {
				t.Errorf("%v: %q", c.args, r.stderr)
			}
		}
	}
	e.run("", "push", "f.ckoo", "--redis", node, "--cluster", "--name", "seen").want(t, exitOK, "push")
	e.run("", "pull", "--redis", limited, "--cluster", "--name", "seen", "-o", "back.ckoo").want(t, exitOK, "pull")
}

// TestStoreExportMany imports a tree with modes, a symbolic link and a
// FIFO, and exports it again in one process: the skipped entries are
// named, the files come back with their bytes and permission bits, and a
// NAME that matches nothing writes nothing.
func TestStoreExportMany(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	e := newEnv(t)
	files := map[string]os.FileMode{"tree/a.txt": 0o644, "tree/run.sh": 0o755, "tree/sub/private": 0o600, "tree/sub/deep/d.txt": 0o640}
	for name, mode := range files {
		os.MkdirAll(filepath.Join(e.dir, filepath.Dir(name)), 0o755)
		p := e.write(name, "contents of "+name+"\n")
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a.txt", filepath.Join(e.dir, "tree/link")); err != nil {
		t.Fatal(err)
	}
	if err := mkfifo(filepath.Join(e.dir, "tree/sub/fifo")); err != nil {
		t.Skipf("no FIFO: %v", err)
	}
	r := e.run("", "store", "import", "s.d", "tree")
	r.want(t, exitOK, "store")
	for _, want := range []string{"skipped 2 entries", "skipped tree/link (symbolic link)\n", "skipped tree/sub/fifo (FIFO)\n"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("import: %q does not say %q", r.stderr, want)
		}
	}
	check := func(dir string, names ...string) {
		t.Helper()
		for _, name := range names {
			p := filepath.Join(e.dir, dir, name)
			b, err := os.ReadFile(p)
			if err != nil || string(b) != "contents of "+name+"\n" {
				t.Fatalf("%s: %q, %v", p, b, err)
			}
			if fi, _ := os.Stat(p); fi.Mode().Perm() != files[name] {
				t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), files[name])
			}
		}
	}
	r = e.run("", "store", "export", "s.d", "--to", "all")
	r.want(t, exitOK, "store")
	if r.stdout != "exported 4 files, 108 B, to all\n" {
		t.Errorf("export --to: %q", r.stdout)
	}
	check("all", "tree/a.txt", "tree/run.sh", "tree/sub/private", "tree/sub/deep/d.txt")
	e.run("", "store", "export", "s.d", "--to", "some", "tree/sub", "tree/run.sh").want(t, exitOK, "store")
	check("some", "tree/run.sh", "tree/sub/private", "tree/sub/deep/d.txt")
	if _, err := os.Stat(filepath.Join(e.dir, "some/tree/a.txt")); err == nil {
		t.Error("export of tree/sub and tree/run.sh wrote tree/a.txt")
	}
	e.run("", "store", "export", "s.d", "tree/run.sh", "-o", "run.sh").want(t, exitOK, "store")
	if fi, _ := os.Stat(filepath.Join(e.dir, "run.sh")); fi.Mode().Perm() != 0o755 {
		t.Errorf("export -o: mode %v", fi.Mode().Perm())
	}
	e.run("", "store", "export", "s.d", "--to", "none", "tree/sub", "tree/nope").want(t, exitData, "store")
	if _, err := os.Stat(filepath.Join(e.dir, "none")); err == nil {
		t.Error("an export with a NAME that matches nothing wrote files")
	}
	e.run("", "store", "export", "s.d", "tree/a.txt", "tree/run.sh").want(t, exitUsage, "store")

	// Names as given to import: a symbolic link named itself is followed;
	// a name with ".." or a leading "/" is written inside --to.
	abs := filepath.Join(e.dir, "tree/run.sh")
	e.run("", "store", "import", "s2.d", "tree/link", "tree/../tree/a.txt", abs).want(t, exitOK, "store")
	e.run("", "store", "export", "s2.d", "--to", "out", "tree/link", "tree/../tree/a.txt", abs).want(t, exitOK, "store")
	for _, p := range []string{"out/tree/link", "out/tree/a.txt", filepath.Join("out", abs)} {
		if b, err := os.ReadFile(filepath.Join(e.dir, p)); err != nil || !strings.HasPrefix(string(b), "contents of tree/") {
			t.Errorf("%s: %q, %v", p, b, err)
		}
	}
	// A relative name that climbs to the root lands where the absolute
	// name does.
	climb := strings.Repeat("../", strings.Count(filepath.ToSlash(e.dir), "/")) + strings.TrimPrefix(filepath.ToSlash(abs), "/")
	e.run("", "store", "import", "s2.d", climb).want(t, exitOK, "store")
	r = e.run("", "store", "export", "s2.d", "--to", "clash")
	r.want(t, exitUsage, "store")
	if !strings.Contains(r.stderr, "would both be written to") {
		t.Errorf("two names, one path: %q", r.stderr)
	}
	e.run("", "store", "export", "s.d", "--to", "x", "-o", "y", "tree/a.txt").want(t, exitUsage, "store")
}

// TestMessagesCountInWords checks the messages that count things: one
// of a thing is in the singular ("1 file", not "1 files"), and a library's
// error reads once prefixed ("cuckoo store: too large: …", not "cuckoo
// store: store: too large: …").
func TestMessagesCountInWords(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	e := newEnv(t)
	e.write("one.txt", "a\n")
	for _, c := range []struct {
		stdin string
		args  []string
		out   string // in standard output and standard error
		not   string // with a space before it: "101 lines/s" is no mistake
	}{
		{"", []string{"store", "import", "s.d", "one.txt"}, "imported 1 file, ", " 1 files"},
		{"", []string{"store", "put", "k.d", "k", "v"}, "", ""},
		{"", []string{"store", "check", "k.d"}, "; 1 key, ", " 1 keys"},
		{"", []string{"dedup", "--exact", "--stats", "one.txt"}, "cuckoo dedup: 1 line in ", " 1 lines"},
		{"", []string{"build", "--stats", "-o", "one.ckoo", "one.txt"}, "1 item from 1 line", " 1 items"},
	} {
		r := e.run(c.stdin, c.args...)
		r.want(t, exitOK, c.args[0])
		all := r.stdout + r.stderr
		if !strings.Contains(all, c.out) || c.not != "" && strings.Contains(all, c.not) {
			t.Errorf("%v: %q, want %q", c.args, all, c.out)
		}
	}
	// A value past the store's limit: once prefixed (want checks it).
	big := strings.Repeat("v", 64<<20+1)
	r := e.run(big, "store", "put", "k.d", "big")
	r.want(t, exitData, "store")
	if !strings.HasPrefix(r.stderr, "cuckoo store: too large: value of ") {
		t.Errorf("too large: %q", r.stderr)
	}
}

// TestFullFilterSuggestsTheInputsLines checks that a full filter's remedy
// suggests a --capacity that holds the input (its lines) when the input
// is a file, and twice the keys the filter holds when it is a pipe (a
// small filter holds more than its capacity: following the advice must
// give a larger filter).
func TestFullFilterSuggestsTheInputsLines(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("in.txt", lines(0, 5000))
	for _, c := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"dedup", "--capacity", "100", "in.txt"}, "--capacity (5000: the input's 5,000 lines)"},
		{lines(0, 5000), []string{"dedup", "--capacity", "100"}, "--capacity (N: twice what it holds)"},
		{lines(0, 5000), []string{"dedup", "--capacity", "1"}, "--capacity (N: twice what it holds)"},
		{lines(0, 5000), []string{"build", "--capacity", "2", "-o", "f.ckoo"}, "--capacity (N: twice what it holds)"},
		{"", []string{"dedup", "--bloom", "--capacity", "100", "in.txt"}, "--capacity (5000: the input's 5,000 lines)"},
		{"", []string{"dedup", "--window", "1h", "--capacity", "100", "in.txt"}, "(5000: the input's 5,000 lines)"},
		{"", []string{"build", "--capacity", "100", "-o", "f.ckoo", "in.txt"}, "--capacity (5000: the input's 5,000 lines)"},
	} {
		r := e.run(c.stdin, c.args...)
		r.want(t, exitFull, c.args[0])
		if !strings.Contains(r.stderr, c.want) && !suggestsTwiceWhatItHolds(r.stderr, c.want) {
			t.Errorf("%v: %q, want %q", c.args, r.stderr, c.want)
		}
	}
	e.write("ten.txt", lines(0, 10))
	e.run("", "build", "--capacity", "10", "--headroom", "0", "-o", "small.ckoo", "ten.txt").want(t, exitUsage, "build")
	e.run("", "build", "--capacity", "10", "-o", "small.ckoo", "ten.txt").want(t, exitOK, "build")
	r := e.run("", "add", "small.ckoo", "in.txt")
	r.want(t, exitFull, "add")
	if !strings.Contains(r.stderr, "N at least 5,010 (the 10 items it holds and the 5,000 keys to add)") {
		t.Errorf("add: %q", r.stderr)
	}
}

// TestInfoSaysHowItemsCount checks that info says whether a filter's
// items count a key added twice: cuckoo and counting Bloom filters count
// each copy, the other Bloom filters cannot.
func TestInfoSaysHowItemsCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("twice.txt", lines(0, 10)+lines(0, 10))
	for _, c := range []struct {
		kind string
		want string
	}{
		{"", "20 (each copy of a key counts)"},
		{"--grow", "20 (each copy of a key counts)"},
		{"--bloom=counting", "20 added (each copy of a key counts)"},
		{"--bloom", "10 added (a key added again sets no bit and is not counted again)"},
		{"--bloom=classic", "10 added (a key added again sets no bit and is not counted again)"},
		{"--bloom=scalable", "10 added (a key added again sets no bit and is not counted again)"},
	} {
		args := []string{"build", "--seed", "1", "-o", "f.ckoo", "twice.txt"}
		if c.kind != "" {
			args = append(args, c.kind)
		}
		e.run("", args...).want(t, exitOK, "build")
		r := e.run("", "info", "f.ckoo")
		r.want(t, exitOK, "info")
		if !strings.Contains(r.stdout, "items                        "+c.want+"\n") && !strings.Contains(r.stdout, " "+c.want+"\n") {
			t.Errorf("%s: info says\n%s\nwant items %q", c.kind, r.stdout, c.want)
		}
	}
}

// holdsAndSuggests reads a full filter's message: the keys it holds and
// the --capacity it suggests.
var holdsAndSuggests = regexp.MustCompile(`it holds (\d+) \w+, .*--capacity \((\d+): twice what it holds\)`)

// suggestsTwiceWhatItHolds reports whether msg suggests twice the keys the
// filter holds, when want asks for that ("N: twice what it holds").
func suggestsTwiceWhatItHolds(msg, want string) bool {
	m := holdsAndSuggests.FindStringSubmatch(msg)
	if !strings.Contains(want, "N: twice what it holds") || m == nil {
		return false
	}
	held, _ := strconv.Atoi(m[1])
	suggested, _ := strconv.Atoi(m[2])
	return suggested == 2*held
}

// TestMessagesOfANewcomersSlips: a directory where a file is named, and
// a store subcommand without its directory, get a message that says what
// to give; a directory to write is refused before a line is read.
func TestMessagesOfANewcomersSlips(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("k.txt", lines(0, 10))
	e.run("", "build", "-o", "f.ckoo", "k.txt").want(t, exitOK, "build")
	if err := os.Mkdir(filepath.Join(e.dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	named := "d is a directory; name a file, such as " + filepath.Join("d", "NAME")
	e.run("", "build", "-o", "d", "k.txt").wantIn(t, exitData, "build", named)
	e.run("", "dedup", "-o", "d", "k.txt").wantIn(t, exitData, "dedup", named)
	e.run("", "dedup", "--save", "d", "k.txt").wantIn(t, exitData, "dedup", named)
	// Refused before a line is read, not after the output was written.
	if r := e.run("x\n", "dedup", "--save", "d"); r.stdout != "" || !strings.Contains(r.stderr, named) {
		t.Errorf("dedup --save DIR: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	e.run("", "query", "d", "--key", "a").wantIn(t, exitData, "query", "d is a directory; give a filter file")
	e.run("", "store", "put").wantIn(t, exitUsage, "store", `give the store directory after "put"`)
	e.run("", "store").wantIn(t, exitUsage, "store", "give a subcommand and a store directory")
}
