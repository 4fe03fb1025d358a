package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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

// TestDedupStateTakesTheGrowAndFprItWasMadeWith: the runs that load a
// --state file take every flag of a new filter that describes the filter
// in it, so that the command line that made the file runs again, every
// hour: --capacity and --seed (a window or a fixed filter, which never
// grows, needs its --capacity on the run that makes the file; without it,
// the window took the first input's lines and was full by the second
// hour's), and --grow and --fpr, which were refused (status 2), as was the
// --capacity of a growing filter that had grown. A rate describes a
// growing or Bloom filter when it is the bound the file keeps, a fixed
// filter or a window when it gives the fingerprints the file has. Another
// value is refused, status 2, naming the flag, its value and the file's,
// and the file is left as it was; --load refuses them all.
func TestDedupStateTakesTheGrowAndFprItWasMadeWith(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hours := []string{"hour1.txt", "hour2.txt", "hour1.txt"}
	e.write(hours[0], string(distinctLines(0, 1500)))
	e.write(hours[1], string(distinctLines(1500, 1500)))
	// refused is a run given another value of a flag, and what its
	// message must hold: the flag as given, the file's value.
	type refused struct{ flags, want []string }
	for _, c := range []struct {
		name    string
		flags   []string
		exact   bool // a rate low enough that no new line is dropped
		refused []refused
	}{
		{"window", []string{"--window", "7d", "--capacity", "3000", "--seed", "1", "--state", "week.ckoo"}, true, []refused{
			{[]string{"--capacity", "5000"}, []string{"--capacity 5000", "3000 keys a window"}},
			{[]string{"--seed", "3"}, []string{"--seed 0x0000000000000003", "0x0000000000000001"}},
			{[]string{"--fpr", "0.01"}, []string{"--fpr 0.01", "-bit fingerprints"}},
		}},
		{"fixed", []string{"--capacity", "3000", "--seed", "0x2", "--state", "fixed.ckoo"}, true, []refused{
			{[]string{"--capacity", "5000"}, []string{"--capacity 5000", "capacity is 3000"}},
			{[]string{"--seed", "3"}, []string{"--seed 0x0000000000000003", "0x0000000000000002"}},
			{[]string{"--fpr", "0.01"}, []string{"--fpr 0.01", "-bit fingerprints"}},
			{[]string{"--grow"}, []string{"--grow", "fixed size"}},
		}},
		{"grow", []string{"--capacity", "1000", "--grow", "--fpr", "1e-6", "--seed", "1", "--state", "grow.ckoo"}, true, []refused{
			{[]string{"--fpr", "1e-5"}, []string{"--fpr 1e-5", "--fpr 1e-06"}},
			{[]string{"--capacity", "2000"}, []string{"--capacity 2000", "initial capacity is 1000"}},
		}},
		{"grows by default", []string{"--fpr", "0.1%", "--seed", "7", "--state", "default.ckoo"}, false, []refused{
			{[]string{"--fpr", "0.01"}, []string{"--fpr 0.01", "--fpr 0.001"}},
		}},
		{"fixed rate", []string{"--capacity", "5000", "--fpr", "1e-3", "--bucket-size", "8", "--seed", "1", "--state", "rate.ckoo"}, false, []refused{
			{[]string{"--fpr", "0.1"}, []string{"--fpr 0.1", "-bit fingerprints", "gives"}},
		}},
		{"window rate", []string{"--window", "7d", "--capacity", "5000", "--fpr", "0.003", "--seed", "1", "--state", "rate-week.ckoo"}, false, []refused{
			{[]string{"--fpr", "0.3"}, []string{"--fpr 0.3", "-bit fingerprints"}},
		}},
		{"shape", []string{"--capacity", "5000", "--semi-sorted", "--fingerprint-bits", "12", "--seed", "1", "--state", "shape.ckoo"}, false, []refused{
			{[]string{"--fingerprint-bits", "13"}, []string{"--fingerprint-bits 13", "12 bits"}},
		}},
		{"growing bloom", []string{"--bloom=scalable", "--capacity", "1000", "--seed", "1", "--state", "bloom-grows.ckoo"}, false, []refused{
			{[]string{"--capacity", "1001"}, []string{"--capacity 1001", "layers hold"}},
		}},
		{"bloom", []string{"--bloom=classic", "--capacity", "5000", "--fpr", "0.003", "--seed", "1", "--state", "bloom.ckoo"}, false, []refused{
			{[]string{"--bloom"}, []string{"--bloom=blocked", "bloom-classic"}},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for i, in := range hours {
				r := e.run("", append(append([]string{"dedup", "-q"}, c.flags...), in)...)
				r.want(t, exitOK, "dedup")
				// At a higher rate, a few new lines may be dropped (the
				// seeds make the runs the same every time).
				want := map[bool]string{true: "", false: string(e.read(in))}[i == 2]
				if n := strings.Count(r.stdout, "\n"); r.stdout != want && (c.exact || i == 2 || n < 1450) {
					t.Fatalf("run %d on %s: %d lines out, want %d", i+1, in, n, strings.Count(want, "\n"))
				}
			}
			state := c.flags[len(c.flags)-1]
			before := e.read(state)
			for _, x := range c.refused {
				r := e.run("", append(append([]string{"dedup", "--state", state}, x.flags...), hours[1])...)
				r.wantIn(t, exitUsage, "dedup", append(x.want, "does not describe the filter in "+state)...)
				if r.stdout != "" || !bytes.Equal(e.read(state), before) {
					t.Fatalf("a refused run wrote: stdout %q, %s changed: %v", r.stdout, state, !bytes.Equal(e.read(state), before))
				}
			}
			e.run("", "dedup", "--load", state, "--seed", "9", hours[1]).wantIn(t, exitUsage, "dedup", "describe a new filter")
		})
	}
}

// wantIn is want, and checks that standard error holds each of msgs.
func (r result) wantIn(t *testing.T, code int, cmd string, msgs ...string) {
	t.Helper()
	r.want(t, code, cmd)
	for _, m := range msgs {
		if !strings.Contains(r.stderr, m) {
			t.Errorf("stderr %q, want %q in it", r.stderr, m)
		}
	}
}

// TestDedupHelpStateExamplesRunTwice: every example of the help (cuckoo
// --help, cuckoo dedup --help, the others') that keeps a --state file of
// dedup runs twice, as
// it is meant to: the second run loads the file the first made, and
// prints no line of the same input again.
func TestDedupHelpStateExamplesRunTwice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := 0
	helps := []string{mainHelp}
	for _, c := range commands() {
		helps = append(helps, c.help)
	}
	for _, help := range helps {
		for _, line := range strings.Split(help, "\n") {
			line, _, _ = strings.Cut(strings.TrimSpace(line), "#")
			line, _, _ = strings.Cut(line, ">")
			args := strings.Fields(line)
			if len(args) < 2 || args[0] != "cuckoo" || args[1] != "dedup" || !slices.Contains(args, "--state") {
				continue
			}
			n++
			args = append(args[1:], "-q")
			for _, a := range args {
				if strings.HasSuffix(a, ".txt") || strings.HasSuffix(a, ".log") {
					e.write(a, string(distinctLines(0, 2000)))
				}
				if strings.HasSuffix(a, ".ckoo") {
					os.Remove(filepath.Join(e.dir, a))
				}
			}
			for run := 1; run <= 2; run++ {
				r := e.run("", args...)
				r.want(t, exitOK, "dedup")
				if lines := strings.Count(r.stdout, "\n"); run == 1 && lines < 1990 || run == 2 && lines != 0 {
					t.Fatalf("%s, run %d: %d lines out", line, run, lines)
				}
			}
		}
	}
	if n < 4 {
		t.Fatalf("%d examples with --state in the help, want at least 4", n)
	}
}

// TestStateSymlinkLoopIsAnError: a file to write whose name is a loop of
// symbolic links (ln -s a b; ln -s b a) is an error, status 3, naming it,
// before anything is read or written; --state took it for a missing file,
// and the run replaced the link with a regular file, status 0.
func TestStateSymlinkLoopIsAnError(t *testing.T) {
	t.Parallel()
	e := newUnixEnv(t, "symbolic links")
	e.write("in.txt", "a\nb\n")
	if err := os.Symlink("a", filepath.Join(e.dir, "b")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b", filepath.Join(e.dir, "a")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"dedup", "--state", "b", "in.txt"},
		{"dedup", "--save", "b", "in.txt"},
		{"dedup", "-o", "b", "in.txt"},
		{"dedup", "--window", "1h", "--state", "b", "in.txt"},
		{"build", "-o", "b", "in.txt"},
		{"add", "b", "in.txt"},
	} {
		r := e.run("", args...)
		r.wantIn(t, exitData, args[0], "b: too many levels of symbolic links")
		if r.stdout != "" {
			t.Errorf("%v printed %q", args, r.stdout)
		}
		for _, name := range []string{"a", "b"} {
			if fi, err := os.Lstat(filepath.Join(e.dir, name)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("%v: %s is no longer a symbolic link (%v)", args, name, err)
			}
		}
		if files := e.files(); len(files) != 3 {
			t.Fatalf("%v left %v", args, files)
		}
	}
}

// newUnixEnv is newEnv for a test of what only Unix systems have (symbolic
// links, sh's <&-), which it skips elsewhere, saying why.
func newUnixEnv(t *testing.T, why string) *sandbox {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip(why)
	}
	return newEnv(t)
}
