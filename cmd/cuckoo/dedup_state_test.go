package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// runUnderFileLimit runs the command with args in the sandbox under a
// file size limit of at most 50 KiB (ulimit -f counts blocks of 512 or
// 1024 bytes), so that writing a larger file fails with EFBIG while a
// smaller one is written.
func runUnderFileLimit(t *testing.T, e *sandbox, args ...string) result {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh for ulimit")
	}
	sh := exec.Command("sh", append([]string{"-c", `ulimit -f 50 && exec "$0" "$@"`, binary}, args...)...)
	sh.Dir = e.dir
	sh.Stdin = strings.NewReader("")
	return runCmd(t, sh)
}

// TestDedupStateThatCannotBeWrittenLeavesOutputUnchanged: a run whose
// --save or --state file cannot be written (here a file size limit, as a
// full disk does) fails with status 3 and leaves its -o file as it was,
// as every failed command leaves the files it was to write. It used to put
// the output in place first, so the output held lines the state did not:
// a line printed that the next run printed again.
func TestDedupStateThatCannotBeWrittenLeavesOutputUnchanged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Many lines, one distinct: the output (4 bytes) fits under the limit,
	// the filter of 100,000 keys (about 300 KiB) does not.
	e.write("in.txt", strings.Repeat("abc\n", 50_000))
	e.write("more.txt", "abc\nnew\n")
	// A state file the second case loads, too large to be written again.
	e.run("", "dedup", "--capacity", "100000", "--seed", "1", "--save", "big.ckoo", "in.txt").want(t, exitOK, "dedup")
	for _, c := range []struct {
		name  string
		state []string // the flags naming the state
		file  string   // the state file
	}{
		{"save", []string{"--save", "new.ckoo", "--capacity", "100000"}, "new.ckoo"},
		{"state", []string{"--state", "big.ckoo"}, "big.ckoo"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.write("out.txt", "previous output\n")
			var stateBefore []byte
			if c.file == "big.ckoo" {
				stateBefore = e.read(c.file)
			}
			r := runUnderFileLimit(t, e, append(append([]string{"dedup", "-o", "out.txt"}, c.state...), "more.txt")...)
			r.want(t, exitData, "dedup")
			if got := string(e.read("out.txt")); got != "previous output\n" {
				t.Fatalf("the output of a run that failed to write %s: %q, want it unchanged", c.file, got)
			}
			if stateBefore != nil && !bytes.Equal(e.read(c.file), stateBefore) {
				t.Fatalf("%s changed by a run that failed", c.file)
			}
			for _, name := range e.files() {
				if strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, ".lock") {
					t.Fatalf("left behind: %s (files %v)", name, e.files())
				}
			}
		})
	}
}

// TestDedupStateTakesOneCommandLineEveryRun: a --state file of a window or
// a fixed filter, which never grows, needs its --capacity on the run that
// makes it; the runs that load it take the same --capacity and --seed, so
// that one command line runs every hour (they were refused, status 2, and
// without --capacity the window took the first input's lines as its
// capacity and was full by the second hour's). Other values are refused,
// as are the flags the file cannot be checked against.
func TestDedupStateTakesOneCommandLineEveryRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("hour1.txt", string(distinctLines(0, 1000)))
	e.write("hour2.txt", string(distinctLines(1000, 1000)))
	for _, c := range []struct {
		name  string
		flags []string
	}{
		{"window", []string{"--window", "7d", "--capacity", "3000", "--seed", "1", "--state", "week.ckoo"}},
		{"fixed", []string{"--capacity", "3000", "--seed", "0x2", "--state", "fixed.ckoo"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for i, in := range []string{"hour1.txt", "hour2.txt", "hour1.txt"} {
				r := e.run("", append(append([]string{"dedup"}, c.flags...), in)...)
				r.want(t, exitOK, "dedup")
				if want := map[bool]string{true: "", false: string(e.read(in))}[i == 2]; r.stdout != want {
					t.Fatalf("run %d on %s: %d bytes out, want %d", i+1, in, len(r.stdout), len(want))
				}
			}
			state := c.flags[len(c.flags)-1]
			for _, other := range [][]string{{"--capacity", "5000"}, {"--seed", "3"}, {"--fpr", "0.01"}} {
				r := e.run("", append([]string{"dedup", "--state", state, "hour1.txt"}, other...)...)
				r.want(t, exitUsage, "dedup")
				if !strings.Contains(r.stderr, "describe a new filter") {
					t.Errorf("%v with %s: %q", other, state, r.stderr)
				}
			}
		})
	}
}

// TestDedupOutputOverLoadedFileRefused: -o naming the --load file is
// refused, as -o naming the --save or --state file is: it replaced the
// seen-set with the lines printed, status 0, and the next run loading it
// found no filter.
func TestDedupOutputOverLoadedFileRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("in.txt", "a\nb\n")
	e.run("", "dedup", "--save", "seen.ckoo", "in.txt").want(t, exitOK, "dedup")
	before := e.read("seen.ckoo")
	r := e.run("", "dedup", "--load", "seen.ckoo", "-o", "./seen.ckoo", "in.txt")
	r.want(t, exitUsage, "dedup")
	if !strings.Contains(r.stderr, "name the same file") {
		t.Errorf("stderr %q", r.stderr)
	}
	if !bytes.Equal(e.read("seen.ckoo"), before) {
		t.Fatal("the loaded file was replaced by the output")
	}
}
