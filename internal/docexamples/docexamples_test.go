package docexamples

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/testbin"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testparallel"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// The documents run at once, each in a shell of its own: their
	// examples wait on servers, on pipes and on one another far more than
	// they compute.
	testparallel.Raise(8)
	os.Exit(m.Run())
}

// TestDocExamples runs the shell examples of README.md and docs/*.md as a
// reader would, and fails when one does not do what it shows:
//
//   - each ```sh block runs in bash, in a copy of the repository's files
//     (what a fresh clone holds) with the fixtures below (urls.txt, …),
//     the blocks of one document in turn in one directory, each in a
//     subshell of its own, with the cuckoo command built from this tree
//     (as go run builds it) first on PATH (and as GOBIN, where go install
//     puts it);
//   - a go test line that runs benchmarks (a long line) lists them
//     instead, and must name one (benchmarksListed);
//   - `go run ./cmd/cuckoo` and `go install ./cmd/cuckoo` are taken as
//     done (the command built from this tree is on PATH): they compile
//     the tree anew in the copy, which TestReadmeInstall does, in the
//     long run;
//   - every command must succeed (a non-zero status is a failure, but in
//     an && or || list, as bash's ERR trap sees it);
//   - a redis-cli command's comment that shows its reply (# OK,
//     # (integer) 1, # (false): …) must be the reply;
//   - a console session in a plain block ($ command, then its output) is
//     run, and its output must match the one shown, numbers aside;
//   - a plain block after <!-- file: NAME --> is written to NAME first
//     (the log an example reads);
//   - the examples listen on the ports they name (cuckoo serve's 6379):
//     each document runs in a network namespace of its own (unshare -rn)
//     with a private loopback; a server an example starts in the
//     background is waited for before the next line (as a reader waits
//     for it), and stopped at the end of its block; a block that uses
//     redis://127.0.0.1:6379 without starting a server gets a redis-server
//     there for its run, and one that runs redis-cli against the default
//     port a cuckoo serve (the server the document is about).
//
// The lines left out, and why, are in skips; new blocks run by default.
func TestDocExamples(t *testing.T) {
	// Every document's examples take the quick run's budget several times
	// over (and the command built anew on a fresh clone): the long run
	// runs them, as it does TestReadmeInstall.
	testlong.Skip(t)
	t.Parallel() // beside TestReadmeInstall
	if testing.Short() {
		// -short is for the instrumented builds (-race, -tags invariants,
		// purego), whose code these examples do not exercise: they run
		// the command built here.
		t.Skip("the examples run in the quick run, not with -short")
	}
	for _, tool := range []string{"bash", "unshare", "ip", "redis-server", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (redis-server, redis-cli: apt-get install redis-server redis-tools): %v", tool, err)
		}
	}
	if out, err := exec.Command("unshare", "-rn", "ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Skipf("needs a network namespace of its own (unshare -rn) for the examples' fixed ports: %v %s", err, out)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// The command, linked once per version of the tree (go run's cache),
	// under its name in a directory of its own: GOBIN too.
	built, err := testbin.Build(root, "./cmd/cuckoo")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(built, filepath.Join(bin, "cuckoo")); err != nil {
		t.Fatal(err)
	}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	docs = append([]string{filepath.Join(root, "README.md")}, docs...)
	used := map[string]map[string]bool{}
	for _, doc := range docs {
		rel, _ := filepath.Rel(root, doc)
		rel = filepath.ToSlash(rel)
		t.Run(rel, func(t *testing.T) {
			// Set here, so that a document -run leaves out has no skips
			// checked; runDoc marks them before it pauses (t.Parallel).
			used[rel] = map[string]bool{}
			runDoc(t, root, bin, rel, used[rel])
		})
	}
	for doc, lines := range skips {
		for sub := range lines {
			if used[doc] != nil && !used[doc][sub] {
				t.Errorf("skips: %s has no line with %q; drop it from the list", doc, sub)
			}
		}
	}
}

// skips lists, by document, the lines not run (a line holding the text
// given) and why. A reason that starts with "run:" runs the console
// command but does not compare its output with the one shown.
var skips = map[string]map[string]string{
	"README.md": {
		"git clone <this repository>":       "a placeholder; the test runs in a copy of the repository",
		"go test ./...":                     "the test suite, which runs this test",
		"bash .ci/run":                      "CI itself",
		"go test -run '^$' -bench . ":       "every benchmark of the root package, minutes; CI runs each once (-benchtime 1x)",
		"go get github.com/dedupkit/cuckoo": "needs the module published; go install ./cmd/cuckoo is run",
	},
	"docs/benchmarks.md": {
		"cd bench && go run":              "the benchmark module's runs take minutes to hours",
		"$PORT":                           "a server the benchmark starts; the port it prints",
		"serverbench":                     "measures the server against redis-server: minutes",
		"git archive ":                    "a build of an old commit, for a comparison",
		"-bench BenchmarkCommandStats":    "a benchmark: minutes",
		"-bench BenchmarkWindowEpochPass": "a benchmark: minutes",
		"kafkabench":                      "measures Kafka dedup at 10^6 and 10^7 records: minutes",
		"redisbench":                      "measures Redis filters: minutes",
	},
	"docs/kafka.md": {
		"export CUCKOO_KAFKA_PASSWORD":         "the setting of a real cluster's password",
		"cuckoo dedup --kafka b1.example:9093": "a real Kafka cluster with TLS and SASL; TestKafkaDedupTLSAndSASL runs these flags against a test broker",
	},
	"docs/cli.md": {
		"go install github.com/dedupkit/cuckoo/cmd/cuckoo@latest":     "needs the module published",
		"cuckoo serve --port 6381 --dir filters --appendfsync always": "serves until stopped",
		"cuckoo serve --config serve.conf":                            "serves until stopped",
		"cuckoo dedup --kafka localhost:9092":                         "needs a Kafka broker; TestKafkaDedup runs these flags against a test broker",
		"cuckoo serve --metrics 127.0.0.1:9121":                       "serves until stopped; docs/server.md's metrics example scrapes a server",
		"CLUSTER=":                                                    "the addresses of a cluster devcluster starts",
		"--redis $CLUSTER":                                            "needs a Redis Cluster (devcluster)",
		"--redis 127.0.0.1:38465 --cluster":                           "needs a Redis Cluster (devcluster)",
		"$ cuckoo dedup --redis redis://10.0.0.5":                     "a Redis that stalls: TestDedupRedisOutage stages it",
		"$ cat /tmp/cuckoo-dedup-unconfirmed":                         "the file a stalled run wrote",
		"$ tail -n +12289 urls.txt":                                   "the rest of a stalled run",
		"$ cuckoo version":                                            "run: the version and revision are the build's",
	},
	"docs/dedup-benchmark.md": {
		"cd bench && go run ./dedupbench": "the benchmark: every mode against awk and sort, minutes",
	},
	"docs/redis.md": {
		"apt-get install": "installs a package",
	},
	"docs/store.md": {
		"cd bench && go run":                    "the store benchmarks take minutes",
		"cuckoo store has|del":                  "a synopsis (has or del), not a command",
		"cuckoo store stats|compact|check|list": "a synopsis, not a command",
	},
	"docs/testing.md": {
		"go test ./...":          "the test suite, which runs this test",
		"go test -count=1 ./...": "the test suite, timed, which runs this test",
	},
	"docs/window.md": {},
}

// block is a fenced block of a document.
type block struct {
	line  int      // the line of its opening fence
	lang  string   // "sh", or "" for a plain block
	file  string   // for a plain block after <!-- file: NAME -->: NAME
	lines []string // its lines
}

// parseBlocks returns the fenced blocks of a Markdown document.
func parseBlocks(md string) []block {
	var blocks []block
	var cur *block
	file := ""
	for i, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "<!-- file:"):
			file = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(trimmed, "<!-- file:"), "-->"))
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &block{line: i + 1, lang: strings.TrimPrefix(trimmed, "```"), file: file}
			file = ""
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		case trimmed != "":
			file = ""
		}
	}
	return blocks
}

// command is one logical line of a shell block: the physical lines it
// spans (a quote left open, a trailing backslash), its text without its
// trailing comment, and that comment.
type command struct {
	line    int // the document's line of its first physical line
	text    string
	comment string
}

// commands splits a block's lines into commands.
func commands(b block) []command {
	var cmds []command
	var cur []string
	start := 0
	for i, l := range b.lines {
		if cur == nil {
			start = b.line + 1 + i
		}
		cur = append(cur, l)
		joined := strings.Join(cur, "\n")
		if open(joined) || strings.HasSuffix(l, "\\") {
			continue
		}
		text, comment := splitComment(joined)
		cmds = append(cmds, command{line: start, text: text, comment: comment})
		cur = nil
	}
	return cmds
}

// open reports whether s leaves a single or double quote open; a comment
// (a # after a blank, outside quotes, to the end of its line) opens none.
func open(s string) bool {
	var q rune
	prev, comment := ' ', false
	for _, r := range s {
		switch {
		case comment:
			comment = r != '\n'
		case q == 0 && r == '#' && (prev == ' ' || prev == '\t' || prev == '\n'):
			comment = true
		case q == 0 && (r == '\'' || r == '"'):
			q = r
		case r == q:
			q = 0
		}
		prev = r
	}
	return q != 0
}

// splitComment splits a command at its trailing comment: a # after a
// blank, outside quotes.
func splitComment(s string) (text, comment string) {
	var q rune
	prev := ' '
	for i, r := range s {
		switch {
		case q == 0 && (r == '\'' || r == '"'):
			q = r
		case r == q:
			q = 0
		case q == 0 && r == '#' && (prev == ' ' || prev == '\t' || prev == '\n'):
			return strings.TrimRight(s[:i], " \t"), strings.TrimSpace(s[i+1:])
		}
		prev = r
	}
	return s, ""
}

// shownReply is a redis-cli reply as a comment shows it: "(integer) 1",
// "OK", "0", "(false)", with what follows a ":" left out.
var shownReply = regexp.MustCompile(`^(\(integer\) -?\d+|-?\d+|OK|\(nil\)|\(true\)|\(false\)|"[^"]*")(:.*)?$`)

// benchmarkLine matches a go test command that runs benchmarks.
var benchmarkLine = regexp.MustCompile(`^go test .*-bench `)

// benchmarksListed returns, for a go test command that runs benchmarks,
// one that lists them (go test -list) and fails unless it names one: the
// package builds and the pattern names benchmarks, which is what the line
// needs of this tree; their runs take minutes, for figures no one reads
// here, and CI runs every benchmark once (-bench . -benchtime 1x) in its
// long step. Any other command is returned as it is.
func benchmarksListed(text string) string {
	if !benchmarkLine.MatchString(text) {
		return text
	}
	return strings.Replace(text, " -bench ", " -list ", 1) + " | grep -q '^Benchmark'"
}

// serverPort returns the port a command that starts a server in the
// background listens on, or 0 when it starts none.
func serverPort(text string) int {
	t := strings.TrimSpace(text)
	if !strings.HasSuffix(t, "&") || !(strings.Contains(t, "cuckoo serve") || strings.Contains(t, "redis-server")) {
		return 0
	}
	f := strings.Fields(t)
	for i, a := range f {
		if a == "--port" && i+1 < len(f) {
			if n, err := strconv.Atoi(f[i+1]); err == nil {
				return n
			}
		}
	}
	return 6379
}

// check is what the test compares after a run: a command's output, by
// the document's line.
type check struct {
	want    string
	console bool // a console session's output: numbers aside
}

// script writes the bash script of a document's blocks, returning the
// document line of each script line and the checks by document line.
func script(t *testing.T, doc string, blocks []block, used map[string]bool) (string, []int, map[int]check) {
	var sb strings.Builder
	var lineOf []int
	emit := func(docLine int, s string) {
		sb.WriteString(s)
		sb.WriteByte('\n')
		for range strings.Count(s, "\n") + 1 {
			lineOf = append(lineOf, docLine)
		}
	}
	checks := map[int]check{}
	emit(0, `__report() { printf '%s\n' "$*" >&3; }
__expect() { local at=$1; shift; local got; got=$("$@" 2>&1); local s=$?; printf 'expect %s %s\n' "$at" "$(printf '%s' "$got" | base64 -w0)" >&3; return $s; }
__wait_port() { local i; for i in $(seq 1200); do (exec 9<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; __report nostart $2 $1; return 1; }`)
	skipOf := func(text string) (string, bool) {
		for sub, why := range skips[doc] {
			if strings.Contains(text, sub) {
				used[sub] = true
				return why, true
			}
		}
		return "", false
	}
	for _, b := range blocks {
		switch {
		case b.lang == "" && b.file != "":
			continue // written as a fixture
		case b.lang == "" && len(b.lines) > 0 && strings.HasPrefix(b.lines[0], "$ "):
			// A console session: each command and the output after it.
			emit(b.line, "( :")
			for i := 0; i < len(b.lines); i++ {
				cmd := strings.TrimPrefix(b.lines[i], "$ ")
				at := b.line + 1 + i
				var out []string
				for i+1 < len(b.lines) && !strings.HasPrefix(b.lines[i+1], "$ ") {
					i++
					out = append(out, b.lines[i])
				}
				if why, ok := skipOf("$ " + cmd); ok && strings.HasPrefix(why, "run:") {
					emit(at, "trap '__report fail $LINENO $?' ERR; "+cmd)
					continue
				} else if ok {
					continue
				}
				checks[at] = check{want: strings.Join(out, "\n"), console: true}
				emit(at, "trap '__report fail $LINENO $?' ERR; __expect "+strconv.Itoa(at)+" "+cmd)
			}
			emit(b.line, ")")
		case b.lang == "sh":
			// A server the block needs but does not start runs beside
			// its subshell, so that the block's own "wait" does not wait
			// for it.
			body := strings.Join(b.lines, "\n")
			startsServer := strings.Contains(body, "redis-server") || strings.Contains(body, "cuckoo serve")
			server := ""
			switch {
			case startsServer:
			case strings.Contains(body, "redis://127.0.0.1:6379"):
				server = "redis-server --port 6379 --save '' --appendonly no >/dev/null 2>&1 &"
			case regexp.MustCompile(`(?m)^redis-cli [^-]`).MatchString(body):
				// Commands for the server the document is about.
				server = `cuckoo serve --dir "$(mktemp -d)" >/dev/null 2>&1 &`
			}
			if server != "" {
				emit(b.line, server+" __server=$!")
				emit(b.line, "__wait_port 6379 "+strconv.Itoa(b.line))
			}
			emit(b.line, "(")
			emit(b.line, "trap '__report fail $LINENO $?' ERR")
			for _, c := range commands(b) {
				if strings.TrimSpace(c.text) == "" {
					continue
				}
				if _, ok := skipOf(c.text); ok {
					emit(c.line, ": skipped")
					continue
				}
				text := c.text
				// The command built from this tree is what these build;
				// TestReadmeInstall runs them (they compile the tree anew
				// in the copy, which takes long).
				text = strings.ReplaceAll(text, "go run ./cmd/cuckoo", "cuckoo")
				if strings.TrimSpace(text) == "go install ./cmd/cuckoo" {
					text = ": built"
				}
				text = benchmarksListed(text)
				if fields := strings.Fields(text); len(fields) > 0 && fields[0] == "redis-cli" {
					if m := shownReply.FindStringSubmatch(c.comment); m != nil {
						checks[c.line] = check{want: m[1]}
						text = "__expect " + strconv.Itoa(c.line) + " " + text
					}
				}
				emit(c.line, text)
				if p := serverPort(c.text); p != 0 {
					emit(c.line, fmt.Sprintf("__wait_port %d %d", p, c.line))
				}
			}
			// The servers a block started stop with it.
			emit(b.line, `trap - ERR; kill $(jobs -p) 2>/dev/null; wait`)
			emit(b.line, ")")
			if server != "" {
				emit(b.line, `kill $__server; wait $__server`)
			}
		}
	}
	return sb.String(), lineOf, checks
}

// runDoc runs the examples of one document in a copy of the repository.
func runDoc(t *testing.T, root, bin, doc string, used map[string]bool) {
	md, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
	if err != nil {
		t.Fatal(err)
	}
	blocks := parseBlocks(string(md))
	src, lineOf, checks := script(t, doc, blocks, used)
	if !strings.Contains(src, "(\n") {
		return // no example
	}
	t.Parallel()
	dir := t.TempDir()
	copyRepo(t, root, dir)
	writeFixtures(t, dir)
	for _, b := range blocks {
		if b.file != "" {
			if err := os.WriteFile(filepath.Join(dir, b.file), []byte(strings.Join(b.lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	scriptPath := filepath.Join(t.TempDir(), "examples.sh")
	if err := os.WriteFile(scriptPath, []byte("ip link set lo up || exit 97\n"+src), 0o644); err != nil {
		t.Fatal(err)
	}
	lineOf = append([]int{0}, lineOf...) // the line before the script's

	const deadline = 20 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "-rn", "bash", scriptPath)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GOBIN="+bin, "CUCKOO_LONG=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	results, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{w}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var records []string
	sc := bufio.NewScanner(results)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		records = append(records, sc.Text())
	}
	runErr := cmd.Wait()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // anything left behind
	if ctx.Err() != nil {
		t.Fatalf("the examples ran past %v\n%s", deadline, tail(out.String()))
	}
	if runErr != nil {
		if ee, ok := runErr.(*exec.ExitError); ok && ee.ExitCode() == 97 {
			t.Skipf("no loopback in the namespace: %s", out.String())
		}
		// Killed, the shell reports nothing of the lines it did not run.
		if ee, ok := runErr.(*exec.ExitError); ok {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				t.Fatalf("the examples' shell was killed (%v)\n%s", ws.Signal(), tail(out.String()))
			}
		}
	}
	failed := false
	seen := map[int]bool{}
	for _, r := range records {
		f := strings.Fields(r)
		switch {
		case len(f) == 3 && f[0] == "fail":
			n, _ := strconv.Atoi(f[1])
			if n >= 1 && n <= len(lineOf) { // $LINENO counts from 1
				t.Errorf("%s:%d: exit status %s", doc, lineOf[n-1], f[2])
				failed = true
			}
		case len(f) == 3 && f[0] == "nostart":
			t.Errorf("%s:%s: nothing listened on port %s", doc, f[1], f[2])
			failed = true
		case len(f) >= 2 && f[0] == "expect":
			at, _ := strconv.Atoi(f[1])
			var got []byte
			if len(f) == 3 {
				got, _ = base64.StdEncoding.DecodeString(f[2])
			}
			seen[at] = true
			c := checks[at]
			if !matches(c, string(got)) {
				t.Errorf("%s:%d: shows\n%s\nbut prints\n%s", doc, at, c.want, got)
				failed = true
			}
		}
	}
	var missing []int
	for at := range checks {
		if !seen[at] {
			missing = append(missing, at)
		}
	}
	sort.Ints(missing)
	for _, at := range missing {
		t.Errorf("%s:%d: the command whose output is shown did not run", doc, at)
		failed = true
	}
	if failed {
		t.Logf("the examples' output:\n%s", tail(out.String()))
	}
}

// matches reports whether got is the output c shows: a redis-cli reply
// as redis-cli prints it to a terminal ("(integer) 1") or to a pipe
// ("1"); a console session's, with every number (and run of blanks)
// taken as equal to any other.
func matches(c check, got string) bool {
	if !c.console {
		return strings.TrimPrefix(strings.TrimSpace(got), "(integer) ") == strings.TrimPrefix(c.want, "(integer) ")
	}
	return shape(got) == shape(c.want)
}

var (
	number = regexp.MustCompile(`[0-9][0-9.,]*`)
	blanks = regexp.MustCompile(`[ \t]+`)
)

// shape is output with its numbers and runs of blanks made alike.
func shape(s string) string {
	s = number.ReplaceAllString(strings.TrimSpace(s), "#")
	return blanks.ReplaceAllString(s, " ")
}

// tail returns the end of a long output.
func tail(s string) string {
	if len(s) > 8000 {
		return "…" + s[len(s)-8000:]
	}
	return s
}

// copyRepo copies the files git tracks under root (or, outside a git
// checkout, every file but .git's) into dir: what a fresh clone holds.
func copyRepo(t *testing.T, root, dir string) {
	t.Helper()
	var names []string
	if out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output(); err == nil && len(out) > 0 {
		names = strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	} else {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() {
				rel, _ := filepath.Rel(root, p)
				names = append(names, rel)
			}
			return nil
		})
	}
	for _, n := range names {
		src := filepath.Join(root, filepath.FromSlash(n))
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, or a link
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// writeFixtures writes the input files the examples name: URL lists,
// CSV files, logs.
func writeFixtures(t *testing.T, dir string) {
	t.Helper()
	var urls []string
	for i := range 3000 {
		urls = append(urls, fmt.Sprintf("https://host%d.example.com/page/%d", i%97, i%2100))
	}
	urls = append(urls, "https://a.com/", "https://example.com/", "https://a.com/")
	join := func(lines []string) string { return strings.Join(lines, "\n") + "\n" }
	files := map[string]string{
		"urls.txt":         join(urls),
		"monday.txt":       join(urls[:1500]),
		"tuesday.txt":      join(urls[1000:2500]),
		"today.txt":        join(urls[2000:]),
		"new.txt":          join(urls[2900:]),
		"new-urls.txt":     join(urls[2500:2600]),
		"expired-urls.txt": join(urls[2500:2550]),
		"part-1.txt":       join(urls[:1000]),
		"part-2.txt":       join(urls[1000:]),
		"keys.txt":         join(strings.Fields(strings.Repeat("k ", 0) + "1 2 3 4 5 6 7 8 9 10")),
		"users.csv":        "id,name,email\n1,Ann,ann@example.com\n2,Bob,bob@example.com\n3,Ann,ann@example.com\n",
		"data.csv":         "a;\"b;c\";x\na;\"b;d\";x\na;\"b;c\";y\na;\"b;c\";x\n",
		"events.tsv":       "2026-03-01\tid-17\tlogin\n2026-03-01\tid-42\tlogin\n",
		"access.log":       join(urls[:100]),
		"new.log":          "09:00 id-17 login\n09:05 id-42 login\n09:10 id-17 logout\n",
		"app.log":          "2026-03-01 09:00:00 id-17 login\n2026-03-01 09:30:00 id-17 login\n2026-03-01 11:00:00 id-17 login\n",
		"serve.conf":       "bind 0.0.0.0\nrequirepass \"long-random-secret\"\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(files["urls.txt"]))
	zw.Close()
	if err := os.WriteFile(filepath.Join(dir, "urls.gz"), gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCommands pins how blocks split into commands and comments.
func TestCommands(t *testing.T) {
	b := block{line: 10, lang: "sh", lines: []string{
		"cuckoo dedup a.txt   # first",
		"awk '{ x = 1",
		"       # not a comment",
		"}' f   # the awk",
		"redis-cli CF.ADD k 'a # b'   # (integer) 1: new",
		"echo a#b   # the reader's comment",
	}}
	got := commands(b)
	want := []command{
		{11, "cuckoo dedup a.txt", "first"},
		{12, "awk '{ x = 1\n       # not a comment\n}' f", "the awk"},
		{15, "redis-cli CF.ADD k 'a # b'", "(integer) 1: new"},
		{16, "echo a#b", "the reader's comment"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("commands:\n%v\nwant\n%v", got, want)
	}
	if m := shownReply.FindStringSubmatch("(integer) 1: new"); m == nil || m[1] != "(integer) 1" {
		t.Errorf("shownReply: %v", m)
	}
	for _, c := range []string{"cuckoo serve takes a snapshot and exits 0", "first seen 2026-11-23"} {
		if shownReply.MatchString(c) {
			t.Errorf("%q taken for a reply", c)
		}
	}
	for in, want := range map[string]string{
		"go test -run '^$' -bench 'A|B' -benchtime 40x":    "go test -run '^$' -list 'A|B' -benchtime 40x | grep -q '^Benchmark'",
		"go test -run '^$' -bench Dedup -benchmem ./cmd/x": "go test -run '^$' -list Dedup -benchmem ./cmd/x | grep -q '^Benchmark'",
		"go test -count=1 ./...":                           "go test -count=1 ./...",
		"cuckoo dedup --count 3":                           "cuckoo dedup --count 3",
	} {
		if got := benchmarksListed(in); got != want {
			t.Errorf("benchmarksListed(%q) = %q, want %q", in, got, want)
		}
	}
	if !matches(check{want: "(integer) 1"}, "1\n") || !matches(check{want: "OK"}, "OK\n") || matches(check{want: "0"}, "1\n") {
		t.Error("matches: redis-cli replies")
	}
	if !matches(check{want: "keys:  32,564\nlog: 118 MiB", console: true}, "keys:  40,001\nlog: 9.5 MiB") {
		t.Error("matches: numbers aside")
	}
}

// TestReadmeInstall follows the README's set-up on a fresh clone with Go
// alone: go install ./cmd/cuckoo puts the command in GOBIN (the README's
// $(go env GOPATH)/bin when unset), and the main job runs from the PATH;
// go run ./cmd/cuckoo runs it too.
func TestReadmeInstall(t *testing.T) {
	testlong.Skip(t)
	t.Parallel() // beside TestDocExamples
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	clone := filepath.Join(dir, "cuckoo")
	if out, err := exec.Command("git", "clone", "-q", root, clone).CombinedOutput(); err != nil {
		t.Skipf("git clone: %v %s", err, out)
	}
	bin := filepath.Join(dir, "bin")
	run := func(stdin string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = clone
		cmd.Env = append(os.Environ(), "GOBIN="+bin, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	run("", "go", "install", "./cmd/cuckoo")
	// Through a shell, which finds cuckoo on the PATH given.
	if got := run("a\nb\na\nc\nb\n", "bash", "-c", "cuckoo dedup"); got != "a\nb\nc\n" {
		t.Errorf("cuckoo dedup after go install: %q", got)
	}
	if got := run("a\nb\na\n", "go", "run", "./cmd/cuckoo", "dedup"); got != "a\nb\n" {
		t.Errorf("go run ./cmd/cuckoo dedup: %q", got)
	}
}
