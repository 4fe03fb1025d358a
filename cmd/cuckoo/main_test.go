package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/invariants"
	"github.com/dedupkit/cuckoo/internal/testbin"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testparallel"
)

// The end-to-end tests run the command as users do: on files, with
// arguments, reading its output and exit status. The command is this test
// binary, which runs main instead of the tests when started with
// asCommandEnv set (as every process the tests start is): the binary is
// built and linked once, by go test, instead of a second time by go build.
// It is built with the tests' build tags (invariants, race). Under the
// race detector every process start costs about a second, and the tests
// start hundreds: the command is then built without it (and linked once
// per version, in go run's cache), unless CUCKOO_E2E_RACE=1; so it is
// under coverage, whose instrumented binary reports on exit.

// asCommandEnv, set to 1 in a process's environment, makes the test
// binary the command.
const asCommandEnv = "CUCKOO_TEST_BINARY_IS_COMMAND"

var (
	binary   string // the command
	buildErr error
)

func TestMain(m *testing.M) {
	if os.Getenv(asCommandEnv) == "1" {
		main() // exits
	}
	flag.Parse()
	// The tests spend most of their time waiting for the processes they
	// start (the command, redis-server) and for the clocks of windows and
	// timeouts.
	testparallel.Raise(4)
	os.Exit(runWithCommand(m))
}

// runWithCommand sets binary to the command and runs the tests.
func runWithCommand(m *testing.M) int {
	if (!testlong.RaceEnabled || os.Getenv("CUCKOO_E2E_RACE") == "1") && testing.CoverMode() == "" {
		self, err := os.Executable()
		if err == nil {
			binary = self
			os.Setenv(asCommandEnv, "1")
			return m.Run()
		}
	}
	var tags []string
	if invariants.Enabled {
		tags = []string{"-tags", "invariants"}
	}
	binary, buildErr = testbin.Build(".", ".", tags...)
	return m.Run()
}

// result is one run of the command.
type result struct {
	stdout, stderr string
	code           int
}

// run runs the command with args and stdin, in dir (the test's temporary
// directory when empty).
func runIn(t *testing.T, dir string, stdin []byte, args ...string) result {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	return runCmd(t, cmd)
}

// runCmd runs cmd, set up but for its output, and returns its result.
func runCmd(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

// sandbox is a test's working directory, with helpers.
type sandbox struct {
	t   *testing.T
	dir string
}

func newEnv(t *testing.T) *sandbox { return &sandbox{t, t.TempDir()} }

func (e *sandbox) run(stdin string, args ...string) result {
	e.t.Helper()
	return runIn(e.t, e.dir, []byte(stdin), args...)
}

func (e *sandbox) write(name, data string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *sandbox) read(name string) []byte {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, name))
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// files lists the directory, to catch temporary files left behind.
func (e *sandbox) files() []string {
	es, _ := os.ReadDir(e.dir)
	var names []string
	for _, x := range es {
		names = append(names, x.Name())
	}
	return names
}

// want checks an exit status and, for a failure, the one-line error
// format "cuckoo <cmd>: <problem>; <remedy>".
func (r result) want(t *testing.T, code int, cmd string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit status %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	if code >= 2 && code != exitInterrupted {
		prefix := "cuckoo " + cmd + ": "
		if cmd == "cuckoo" {
			prefix = "cuckoo: "
		}
		msg := strings.TrimSuffix(r.stderr, "\n")
		if strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, "; ") {
			t.Fatalf("error output %q: want one line %q<problem>; <remedy>", r.stderr, prefix)
		}
		// Prefixed once: the command's name, not a package's after it
		// ("cuckoo store: store: too large").
		if body := strings.TrimPrefix(msg, prefix); withoutPrefixes(body) != body {
			t.Fatalf("error output %q: a package's prefix after the command's", r.stderr)
		}
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.run("", "--help")
	r.want(t, exitOK, "")
	for _, c := range commands() {
		if !strings.Contains(r.stdout, "  "+c.name+" ") {
			t.Errorf("cuckoo --help does not list %s", c.name)
		}
	}
	for _, want := range []string{"Exit status:", "130", "Examples:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("cuckoo --help lacks %q", want)
		}
	}
	for _, c := range commands() {
		for _, args := range [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}} {
			r := e.run("", args...)
			r.want(t, exitOK, c.name)
			if !strings.Contains(r.stdout, "Usage: cuckoo "+c.name) {
				t.Errorf("%v: no usage line:\n%s", args, r.stdout)
			}
			if c.name != "version" && !strings.Contains(r.stdout, "Examples:") {
				t.Errorf("%v: no examples", args)
			}
		}
	}
	// No arguments: the list of commands on standard error, status 2.
	r = e.run("")
	if r.code != exitUsage || !strings.Contains(r.stderr, "Commands:") {
		t.Fatalf("no arguments: status %d, stderr %q", r.code, r.stderr)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var first string
	for _, args := range [][]string{{"version"}, {"--version"}, {"serve", "--version"}} {
		r := e.run("", args...)
		r.want(t, exitOK, args[0])
		if !strings.HasPrefix(r.stdout, "cuckoo ") || !strings.Contains(r.stdout, "go1.") || !strings.Contains(r.stdout, "CKOO") {
			t.Fatalf("%q: version output %q", args, r.stdout)
		}
		if first == "" {
			first = r.stdout
		} else if r.stdout != first {
			t.Fatalf("%q prints %q, cuckoo version %q", args, r.stdout, first)
		}
	}
	if names := e.files(); len(names) != 0 {
		t.Fatalf("serve --version left %v", names)
	}
	e.run("", "version", "extra").want(t, exitUsage, "version")
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("in.txt", "a\n")
	for _, c := range []struct {
		name, cmd string
		args      []string
		contains  string
	}{
		{"unknown-command", "cuckoo", []string{"frobnicate"}, "unknown command"},
		{"unknown-flag", "dedup", []string{"dedup", "--frob", "in.txt"}, "unknown flag --frob"},
		{"fpr-above-one", "dedup", []string{"dedup", "--fpr", "2", "in.txt"}, "--fpr"},
		{"fpr-not-a-number", "build", []string{"build", "-o", "f", "--fpr=abc", "in.txt"}, "--fpr"},
		{"capacity-negative", "dedup", []string{"dedup", "--capacity", "-5", "in.txt"}, "--capacity"},
		{"capacity-zero", "build", []string{"build", "-o", "f", "--capacity", "0", "in.txt"}, "--capacity"},
		{"key-zero", "dedup", []string{"dedup", "--key", "0", "in.txt"}, "--key"},
		{"key-backwards", "dedup", []string{"dedup", "--key", "3-1", "in.txt"}, "--key"},
		{"bucket-size", "build", []string{"build", "-o", "f", "--bucket-size", "300", "in.txt"}, "--bucket-size"},
		{"bloom-kind", "build", []string{"build", "-o", "f", "--bloom=nope", "in.txt"}, "--bloom"},
		{"delimiter-without-key", "dedup", []string{"dedup", "--delimiter", ",", "in.txt"}, "--key"},
		{"duplicates-and-count", "dedup", []string{"dedup", "--duplicates", "--count", "in.txt"}, "--count"},
		{"build-no-output", "build", []string{"build", "in.txt"}, "-o FILE"},
		{"query-no-file", "query", []string{"query"}, "no filter file"},
		{"query-present-absent", "query", []string{"query", "f", "--present", "--absent"}, "exclude"},
		{"plan-no-items", "plan", []string{"plan"}, "--items"},
		{"plan-bad-items", "plan", []string{"plan", "--items", "lots"}, "--items"},
		{"flag-needs-value", "dedup", []string{"dedup", "--fpr"}, "--fpr"},
		{"stdin-twice", "dedup", []string{"dedup", "-", "-"}, "twice"},
		{"fixed-bloom-from-stdin", "build", []string{"build", "-o", "f", "--bloom"}, "--bloom=scalable"},
		{"name-without-redis", "dedup", []string{"dedup", "--name", "seen", "in.txt"}, "--redis"},
		{"cluster-without-redis", "dedup", []string{"dedup", "--cluster", "in.txt"}, "--redis"},
		{"exact-and-redis", "dedup", []string{"dedup", "--exact", "--redis", "localhost:1", "--name", "n", "in.txt"}, "give one"},
		{"exact-dir-and-redis", "dedup", []string{"dedup", "--exact-dir", "d", "--redis", "localhost:1", "--name", "n", "in.txt"}, "give one"},
	} {
		t.Run("case="+c.name, func(t *testing.T) {
			r := e.run("", c.args...)
			r.want(t, exitUsage, c.cmd)
			if !strings.Contains(r.stderr, c.contains) {
				t.Fatalf("stderr %q does not mention %q", r.stderr, c.contains)
			}
		})
	}
	if names := e.files(); len(names) != 1 {
		t.Fatalf("a usage error left files behind: %v", names)
	}
}

// TestDedupInputs runs dedup on the awkward inputs the issue names.
//
// The tests that expect exact output from a filter give --seed. A file of
// a few lines gets a table of a few buckets, where a new line meets each
// line already in with probability about 2/buckets·2^-17 (17-bit
// fingerprints at the default --fpr): about 1e-5 per new line, so with
// random seeds this test and its neighbours would fail together about one
// run in 4,000. With the seeds given their output is fixed.
func TestDedupInputs(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("0123456789", 600_000) // 6 MB, one line
	for _, c := range []struct {
		name, in, want string
		args           []string
	}{
		{"empty", "", "", nil},
		{"one-line", "a\n", "a\n", nil},
		{"repeats", "a\nb\na\nc\nb\n", "a\nb\nc\n", nil},
		{"no-final-newline", "a\nb\na", "a\nb\n", nil},
		{"no-final-newline-new", "a\nb", "a\nb\n", nil},
		{"crlf", "a\r\nb\r\na\r\nb\n", "a\r\nb\r\n", nil},
		{"empty-lines", "\n\na\n\n", "\na\n", nil},
		{"binary", "\x00\xff\n\x00\n\x00\xff\n\x80", "\x00\xff\n\x00\n\x80\n", nil},
		{"huge-line", "x\n" + huge + "\ny\n" + huge + "\n", "x\n" + huge + "\ny\n", nil},
		{"duplicates", "a\nb\na\nc\nb\na\n", "a\nb\na\n", []string{"--duplicates"}},
		{"count", "a\nb\na\nc\nb\na\n", "3\n", []string{"--count"}},
		{"key", "1,alice\n2,bob\n3,alice\n", "1,alice\n2,bob\n", []string{"--key", "2", "--delimiter", ","}},
		{"key-blanks", "x  alice 1\ny bob 2\nz alice\t3\n", "x  alice 1\ny bob 2\n", []string{"--key=2"}},
		{"key-csv", "1,\"a,b\"\n2,\"a,b\"\n3,a\n", "1,\"a,b\"\n3,a\n", []string{"--key", "2", "--csv"}},
		{"key-tab-multi", "a\tb\tc\na\tx\tc\na\tb\tz\n", "a\tb\tc\na\tx\tc\n", []string{"--field", "1-2", "--delimiter", `\t`}},
	} {
		t.Run("case="+c.name, func(t *testing.T) {
			e := newEnv(t)
			e.write("in.txt", c.in)
			// From a file, and from standard input (a growing filter).
			for _, from := range []string{"file", "stdin"} {
				args := append([]string{"dedup", "--seed", "1"}, c.args...)
				stdin := ""
				if from == "file" {
					args = append(args, "in.txt")
				} else {
					stdin = c.in
				}
				r := e.run(stdin, args...)
				r.want(t, exitOK, "dedup")
				if r.stdout != c.want {
					t.Fatalf("from %s: output %q, want %q", from, trunc(r.stdout), trunc(c.want))
				}
				if r.stderr != "" {
					t.Fatalf("from %s: unexpected stderr %q", from, r.stderr)
				}
			}
		})
	}
}

func trunc(s string) string {
	if len(s) > 80 {
		return s[:80] + fmt.Sprintf("…(%d bytes)", len(s))
	}
	return s
}

// TestDedupSeveralFiles checks that the files share one seen-set, in
// order, and that "-" is standard input among them.
func TestDedupSeveralFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "1\n2\n")
	e.write("b.txt", "2\n3")
	r := e.run("3\n4\n1\n", "dedup", "--seed", "1", "a.txt", "b.txt", "-")
	r.want(t, exitOK, "dedup")
	if r.stdout != "1\n2\n3\n4\n" {
		t.Fatalf("output %q", r.stdout)
	}
}

func TestDedupStats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("in.txt", "a\nb\na\n")
	r := e.run("", "dedup", "--stats", "--seed", "1", "in.txt")
	r.want(t, exitOK, "dedup")
	for _, want := range []string{"3 lines in", "2 out", "1 dropped", "bits per key", "expected false positives"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("--stats lacks %q:\n%s", want, r.stderr)
		}
	}
}

func TestDedupOutputInPlace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("urls.txt", "a\nb\na\nc\n")
	e.run("", "dedup", "--seed", "1", "-o", "urls.txt", "urls.txt").want(t, exitOK, "dedup")
	if got := string(e.read("urls.txt")); got != "a\nb\nc\n" {
		t.Fatalf("in-place result %q", got)
	}
	if names := e.files(); len(names) != 1 {
		t.Fatalf("files left: %v", names)
	}
}

func TestMissingAndBadFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("keys.txt", "a\n")
	e.write("junk.bin", "this is not a filter file at all")
	e.write("newer.ckoo", "CKOO\x07\x00\x01\x00 and a payload of a format to come")
	os.Mkdir(filepath.Join(e.dir, "adir"), 0o755)
	for _, c := range []struct {
		name, cmd string
		args      []string
		contains  string
	}{
		{"dedup-missing", "dedup", []string{"dedup", "keys.txt", "missing.txt"}, "missing.txt: no such file"},
		{"dedup-directory", "dedup", []string{"dedup", "adir"}, "is a directory"},
		{"query-missing", "query", []string{"query", "missing.ckoo", "--key", "a"}, "no such file"},
		{"query-junk", "query", []string{"query", "junk.bin", "--key", "a"}, "not a filter file"},
		{"info-junk", "info", []string{"info", "junk.bin"}, "not a filter file"},
		{"info-newer-format", "info", []string{"info", "newer.ckoo"}, "upgrade"},
		{"add-missing", "add", []string{"add", "missing.ckoo", "keys.txt"}, "no such file"},
		{"load-missing", "dedup", []string{"dedup", "--load", "missing.ckoo", "keys.txt"}, "no such file"},
		{"build-into-missing-dir", "build", []string{"build", "-o", "no/such/dir/f.ckoo", "keys.txt"}, "no/such/dir/f.ckoo"},
	} {
		t.Run("case="+c.name, func(t *testing.T) {
			r := e.run("", c.args...)
			r.want(t, exitData, c.cmd)
			if !strings.Contains(r.stderr, c.contains) {
				t.Fatalf("stderr %q does not mention %q", r.stderr, c.contains)
			}
			if c.name == "dedup-missing" && r.stdout != "" {
				t.Fatalf("output before the missing file was found: %q", r.stdout)
			}
		})
	}
}

// TestDamagedFilterFile flips bytes of a filter file: every command that
// reads it reports it damaged (status 3), and add leaves it as it was.
func TestDamagedFilterFile(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"cuckoo", "bloom"} {
		t.Run("kind="+kind, func(t *testing.T) {
			e := newEnv(t)
			e.write("keys.txt", "a\nb\nc\n")
			args := []string{"build", "-o", "f.ckoo", "keys.txt"}
			if kind == "bloom" {
				args = append(args, "--bloom")
			}
			e.run("", args...).want(t, exitOK, "build")
			good := e.read("f.ckoo")
			for _, damage := range []string{"flip", "truncate", "append"} {
				bad := bytes.Clone(good)
				switch damage {
				case "flip":
					bad[len(bad)/2] ^= 0x40
				case "truncate":
					bad = bad[:len(bad)-7]
				case "append":
					bad = append(bad, "extra"...)
				}
				e.write("f.ckoo", string(bad))
				for _, cmd := range [][]string{{"info", "f.ckoo"}, {"query", "f.ckoo", "--key", "a"}, {"add", "f.ckoo", "--key", "z"}, {"dedup", "--load", "f.ckoo", "keys.txt"}} {
					r := e.run("", cmd...)
					r.want(t, exitData, cmd[0])
					if !strings.Contains(r.stderr, "damaged") {
						t.Fatalf("%s %v: stderr %q does not say damaged", damage, cmd, r.stderr)
					}
				}
				if !bytes.Equal(e.read("f.ckoo"), bad) {
					t.Fatalf("%s: a command changed the damaged file", damage)
				}
			}
		})
	}
}

// TestBuildQueryAddDelete walks a filter file through its life.
func TestBuildQueryAddDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("keys.txt", "apple\nbanana\ncherry\n")
	e.write("probe.txt", "apple\ndurian\ncherry\n")
	e.run("", "build", "-o", "f.ckoo", "--fpr", "1e-6", "--seed", "1", "keys.txt").want(t, exitOK, "build")

	r := e.run("", "query", "f.ckoo", "probe.txt")
	r.want(t, exitOK, "query")
	if r.stdout != "apple\tpresent\ndurian\tabsent\ncherry\tpresent\n" {
		t.Fatalf("query output %q", r.stdout)
	}
	if r := e.run("", "query", "f.ckoo", "--absent", "probe.txt"); r.stdout != "durian\n" {
		t.Fatalf("--absent output %q", r.stdout)
	}
	if r := e.run("apple\ndurian\n", "query", "--present", "f.ckoo"); r.stdout != "apple\n" {
		t.Fatalf("--present from stdin: %q", r.stdout)
	}
	if r := e.run("", "query", "f.ckoo", "--present", "--count", "probe.txt"); r.stdout != "2\n" {
		t.Fatalf("--present --count: %q", r.stdout)
	}
	// --key: the exit status is the answer.
	r = e.run("", "query", "f.ckoo", "--key", "banana")
	r.want(t, exitOK, "query")
	if r.stdout != "banana\tpresent\n" {
		t.Fatalf("--key output %q", r.stdout)
	}
	r = e.run("", "query", "f.ckoo", "--key", "durian")
	r.want(t, exitAbsent, "query")
	if r.stdout != "durian\tabsent\n" || r.stderr != "" {
		t.Fatalf("--key absent: stdout %q stderr %q", r.stdout, r.stderr)
	}
	if r := e.run("", "query", "-q", "f.ckoo", "--key", "apple", "--key", "durian"); r.code != exitAbsent || r.stdout != "" {
		t.Fatalf("-q with an absent key: status %d, stdout %q", r.code, r.stdout)
	}

	e.run("", "add", "f.ckoo", "--key", "durian").want(t, exitOK, "add")
	e.run("", "query", "f.ckoo", "--key", "durian").want(t, exitOK, "query")
	e.run("elderberry\nfig\n", "add", "f.ckoo").want(t, exitOK, "add")
	e.run("", "query", "f.ckoo", "--key", "fig").want(t, exitOK, "query")

	e.run("", "delete", "f.ckoo", "--key", "apple").want(t, exitOK, "delete")
	e.run("", "query", "f.ckoo", "--key", "apple").want(t, exitAbsent, "query")
	// A key that is absent is the answer 1, as for store del; the file is
	// written all the same, without the keys that were there.
	r = e.run("", "delete", "f.ckoo", "--key", "never-added", "--key", "fig")
	if r.code != exitAbsent || r.stderr != "cuckoo delete: 1 of 2 keys was not in the filter; it changed nothing\n" {
		t.Fatalf("delete of a missing key: status %d, stderr %q", r.code, r.stderr)
	}
	e.run("", "query", "f.ckoo", "--key", "fig").want(t, exitAbsent, "query")
	e.run("fig\n", "add", "f.ckoo").want(t, exitOK, "add")
	if r := e.run("", "delete", "-q", "f.ckoo", "--key", "never-added"); r.code != exitAbsent || r.stderr != "" {
		t.Fatalf("delete -q of a missing key: status %d, stderr %q", r.code, r.stderr)
	}

	r = e.run("", "info", "f.ckoo")
	r.want(t, exitOK, "info")
	for _, want := range []string{"cuckoo filter", "items", "capacity", "load", "fingerprint", "false positives now", "seed", "0x0000000000000001", "format version", "CKOO version 1", "file size"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("info lacks %q:\n%s", want, r.stdout)
		}
	}
	r = e.run("", "info", "--json", "f.ckoo")
	if !strings.HasPrefix(r.stdout, `{"file":"f.ckoo","kind":"cuckoo"`) || !strings.Contains(r.stdout, `"items":5`) {
		t.Fatalf("info --json: %s", r.stdout)
	}
	if names := e.files(); len(names) != 3 {
		t.Fatalf("files left: %v", names)
	}
}

// TestBuildGrow builds a growing filter with room for 10 keys and adds
// thousands: it grows instead of filling up, and keeps every key.
func TestBuildGrow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("few.txt", "a\nb\n")
	e.run("", "build", "-o", "g.ckoo", "--grow", "--capacity", "10", "few.txt").want(t, exitOK, "build")
	var many strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&many, "key-%d\n", i)
	}
	e.write("many.txt", many.String())
	e.run("", "add", "g.ckoo", "many.txt").want(t, exitOK, "add")
	r := e.run("", "query", "g.ckoo", "--absent", "many.txt", "few.txt")
	r.want(t, exitOK, "query")
	if r.stdout != "" {
		t.Fatalf("keys lost by a growing filter: %q", trunc(r.stdout))
	}
	r = e.run("", "info", "g.ckoo")
	if !strings.Contains(r.stdout, "scalable cuckoo filter") || !strings.Contains(r.stdout, "tables") {
		t.Fatalf("info: %s", r.stdout)
	}
	// From a pipe, build grows too.
	e.run(many.String(), "build", "-o", "p.ckoo").want(t, exitOK, "build")
	if r := e.run("", "info", "--json", "p.ckoo"); !strings.Contains(r.stdout, `"kind":"cuckoo-scalable"`) {
		t.Fatalf("build from a pipe: %s", r.stdout)
	}
}

func TestBloomFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("keys.txt", "a\nb\nc\n")
	for _, kind := range []string{"blocked", "classic", "counting", "scalable"} {
		file := kind + ".bloom"
		// A fixed seed: a filter sized for 3 keys reports "zzz" (or the
		// deleted "a") present at up to the default rate, 1e-4.
		e.run("", "build", "-o", file, "--bloom="+kind, "--seed", "1", "keys.txt").want(t, exitOK, "build")
		r := e.run("", "info", file)
		if !strings.Contains(r.stdout, "bloom") && !strings.Contains(r.stdout, "Bloom") {
			t.Fatalf("info of %s: %s", file, r.stdout)
		}
		e.run("", "query", file, "--key", "b").want(t, exitOK, "query")
		e.run("", "query", file, "--key", "zzz").want(t, exitAbsent, "query")
		r = e.run("", "delete", file, "--key", "a")
		if kind == "counting" {
			r.want(t, exitOK, "delete")
			e.run("", "query", file, "--key", "a").want(t, exitAbsent, "query")
		} else {
			r.want(t, exitUsage, "delete")
		}
	}
	if r := e.run("", "build", "-o", "x", "--bloom", "--bucket-size", "4", "keys.txt"); r.code != exitUsage {
		t.Fatalf("--bloom with --bucket-size: status %d", r.code)
	}
}

// TestSaveLoad carries the seen-set across runs: yesterday's lines stay
// seen today.
func TestSaveLoad(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("day1.txt", "a\nb\na\n")
	e.write("day2.txt", "b\nc\na\nd\n")
	// Fixed seeds (see TestDedupInputs); a loaded filter keeps its own.
	e.run("", "dedup", "--seed", "1", "--save", "seen.ckoo", "day1.txt").want(t, exitOK, "dedup")
	r := e.run("", "dedup", "--load", "seen.ckoo", "day2.txt")
	r.want(t, exitOK, "dedup")
	if r.stdout != "c\nd\n" {
		t.Fatalf("day 2 with day 1 loaded: %q", r.stdout)
	}
	// --state: created on the first run, read and updated after.
	for i, want := range []string{"a\nb\n", "c\nd\n", ""} {
		args := []string{"dedup", "--state", "state.ckoo"}
		if i == 0 {
			args = append(args, "--seed", "2") // the run that creates it
		}
		r := e.run("", append(args, []string{"day1.txt", "day2.txt", "day2.txt"}[i])...)
		r.want(t, exitOK, "dedup")
		if r.stdout != want {
			t.Fatalf("--state run %d: %q, want %q", i+1, r.stdout, want)
		}
	}
	if r := e.run("", "dedup", "--load", "seen.ckoo", "--fpr", "0.01", "day2.txt"); r.code != exitUsage {
		t.Fatalf("--load with --fpr: status %d", r.code)
	}
	if r := e.run("", "dedup", "--state", "s", "--save", "t", "day2.txt"); r.code != exitUsage {
		t.Fatalf("--state with --save: status %d", r.code)
	}
}

// TestFullFixedFilter fills a filter sized too small with --capacity:
// status 4, one line naming the remedy, and no file written or changed.
func TestFullFixedFilter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var in strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&in, "key-%d\n", i)
	}
	e.write("many.txt", in.String())
	e.write("seen.ckoo", "previous contents")
	// A fixed seed: with a random one, a false positive among the first
	// lines (about 1 run in 300) would drop a line from the prefix below.
	r := e.run("", "dedup", "--capacity", "100", "--seed", "1", "--save", "seen.ckoo", "many.txt")
	r.want(t, exitFull, "dedup")
	if !strings.Contains(r.stderr, "--capacity") || !strings.Contains(r.stderr, "full") {
		t.Fatalf("stderr %q", r.stderr)
	}
	if string(e.read("seen.ckoo")) != "previous contents" {
		t.Fatal("a failed dedup changed the --save file")
	}
	if !strings.HasPrefix(in.String(), r.stdout) || r.stdout == "" {
		t.Fatalf("the lines written before the filter filled are not the input's first lines")
	}
	e.write("f.ckoo", "old")
	r = e.run("", "build", "-o", "f.ckoo", "--capacity", "100", "many.txt")
	r.want(t, exitFull, "build")
	if string(e.read("f.ckoo")) != "old" {
		t.Fatal("a failed build changed its output file")
	}
	// A full filter file: add fails and changes nothing.
	e.run("", "build", "-o", "small.ckoo", "--capacity", "50", "--seed", "2").want(t, exitOK, "build")
	before := e.read("small.ckoo")
	e.run("", "add", "small.ckoo", "many.txt").want(t, exitFull, "add")
	if !bytes.Equal(e.read("small.ckoo"), before) {
		t.Fatal("a failed add changed the filter file")
	}
	if names := e.files(); len(names) != 4 {
		t.Fatalf("files left: %v", names)
	}
}

func TestPlan(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.run("", "plan", "--items", "10M", "--fpr", "0.0001", "--svg", "plan.svg")
	r.want(t, exitOK, "plan")
	for _, want := range []string{"10,000,000 keys", "cuckoo b=4 f=17", "bloom blocked", "bloom classic", "bloom counting", "semi-sorted", "> Recommended: cuckoo b=4 f=17", "cuckoo build -o FILE"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	svg := string(e.read("plan.svg"))
	if !strings.HasPrefix(svg, "<svg") || !strings.Contains(svg, "cuckoo b=8") || !strings.HasSuffix(svg, "</svg>\n") {
		t.Fatalf("plan.svg is not the chart: %.200s", svg)
	}
	r = e.run("", "plan", "--items", "1e6", "--fpr", "5%", "--json")
	r.want(t, exitOK, "plan")
	if !strings.Contains(r.stdout, `"recommended": "bloom blocked"`) {
		t.Fatalf("plan --json at 5 %%: %s", r.stdout)
	}
}

func TestBench(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.run("", "bench", "--items", "2000", "--svg", "bench.svg")
	r.want(t, exitOK, "bench")
	for _, want := range []string{"cuckoo b=4", "bloom blocked", "add ns", "measured rate"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("bench lacks %q:\n%s", want, r.stdout)
		}
	}
	if svg := string(e.read("bench.svg")); !strings.Contains(svg, "<svg") || !strings.Contains(svg, "Contains, absent") {
		t.Fatalf("bench.svg: %.200s", svg)
	}
	r = e.run("", "bench", "--items", "1000", "--json")
	if !strings.Contains(r.stdout, `"measured_fpr"`) {
		t.Fatalf("bench --json: %s", r.stdout)
	}
}

// waitExit waits for cmd with a deadline.
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	return waitExitWithin(t, cmd, 20*time.Second)
}

// waitExitWithin waits for cmd for up to d, and returns its exit status.
func waitExitWithin(t *testing.T, cmd *exec.Cmd, d time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(d):
		cmd.Process.Kill()
		t.Fatal("the command did not exit after the interrupt")
		return -1
	}
}

// TestBuildWarnsOfCostlySegments: many segments of few keys each cost far
// more than one table, and build says so on standard error (the file is
// still written); a reasonable split is silent, and info shows the count.
func TestBuildWarnsOfCostlySegments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("keys.txt", "a\nb\nc\n")
	r := e.run("", "build", "--segments", "1000", "--capacity", "1000", "-o", "many.ckoo", "keys.txt")
	r.want(t, exitOK, "build")
	if !strings.Contains(r.stderr, "warning: 1000 segments of about 1 key each take") {
		t.Fatalf("no warning: stderr %q", r.stderr)
	}
	r = e.run("", "build", "--segments", "16", "--capacity", "1M", "-o", "few.ckoo", "keys.txt")
	r.want(t, exitOK, "build")
	if r.stderr != "" {
		t.Fatalf("stderr %q", r.stderr)
	}
	r = e.run("", "info", "few.ckoo")
	r.want(t, exitOK, "info")
	if !regexp.MustCompile(`(?m)^segments +16$`).MatchString(r.stdout) {
		t.Fatalf("info does not give the segments:\n%s", r.stdout)
	}
}

// TestUnwrapTrimsTheTextsSpaces: Redis ends some error texts with a
// space, which "problem; remedy" would show before its semicolon.
func TestUnwrapTrimsTheTextsSpaces(t *testing.T) {
	err := fmt.Errorf("redisfilter: %w", errors.New("ERR unknown command 'get', with args beginning with: 'ckf:m:seen' "))
	if got, want := unwrap(err).Error(), "ERR unknown command 'get', with args beginning with: 'ckf:m:seen'"; got != want {
		t.Errorf("unwrap = %q, want %q", got, want)
	}
}
