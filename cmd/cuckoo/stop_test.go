package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/dedupkit/cuckoo/store"
)

// distinctLines returns n distinct lines, from "line first" on.
func distinctLines(first, n int) []byte { return paddedLines(first, n, 0) }

// paddedLines returns n distinct lines, from "line first" on, each
// followed by pad bytes of padding.
func paddedLines(first, n, pad int) []byte {
	var b bytes.Buffer
	padding := strings.Repeat(".", pad)
	for i := range n {
		fmt.Fprintf(&b, "line %d%s\n", first+i, padding)
	}
	return b.Bytes()
}

// stopMidway starts the command in dir with its output going to the file
// out, feeds it distinct lines, each followed by pad bytes of padding, in
// chunks of about 240 KB (20,000 lines unpadded), until some output has
// come through and at least 5 chunks went in, sends sig, and returns the
// exit status and standard error.
func stopMidway(t *testing.T, dir string, env []string, sig syscall.Signal, pad int, args ...string) (int, string) {
	t.Helper()
	out, err := os.Create(filepath.Join(dir, "out.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = out
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The output is buffered: lines reach the file in large blocks (of a
	// MiB), so the command is well into its loop when the first block is
	// there.
	chunk := 240000 / (12 + pad)
	for i := 0; ; i++ {
		if _, err := stdin.Write(paddedLines(i*chunk, chunk, pad)); err != nil {
			t.Fatalf("the command stopped early: %v; stderr %q", err, stderr.String())
		}
		if st, _ := out.Stat(); st.Size() > 0 && i >= 4 {
			break
		}
	}
	cmd.Process.Signal(sig)
	code := waitExit(t, cmd)
	stdin.Close()
	return code, stderr.String()
}

// outputLines returns the lines of dir/out.txt, checking that none comes
// twice (the input has no repeats).
func outputLines(t *testing.T, dir string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for l := range strings.SplitSeq(strings.TrimSuffix(string(data), "\n"), "\n") {
		if lines[l] {
			t.Fatalf("%q printed twice", l)
		}
		lines[l] = true
	}
	if len(lines) < 1000 {
		t.Fatalf("only %d lines printed before the signal: the test checks little", len(lines))
	}
	return lines
}

// TestExactDirStopKeepsStoreAndOutputInStep interrupts dedup --exact-dir
// (SIGINT and SIGTERM) mid-stream: the store holds exactly the lines
// printed, so a later run prints every line the interrupted one did not.
func TestExactDirStopKeepsStoreAndOutputInStep(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			code, stderr := stopMidway(t, dir, nil, sig, 0, "dedup", "--exact-dir", "seen.d")
			if want := map[syscall.Signal]int{syscall.SIGINT: exitInterrupted, syscall.SIGTERM: 128 + 15}[sig]; code != want {
				t.Fatalf("exit status %d, want %d; stderr %q", code, want, stderr)
			}
			printed := outputLines(t, dir)
			s, err := store.Open(filepath.Join(dir, "seen.d"))
			if err != nil {
				t.Fatalf("the store after the interrupt: %v", err)
			}
			defer s.Close()
			recorded := 0
			s.Range(func(key, _ []byte) bool {
				if key[0] == 0 {
					return true // the key that marks a seen-set
				}
				recorded++
				if line := string(key[1:]); !printed[line] {
					t.Errorf("%q is recorded as seen but was not printed", line)
					return false
				}
				return true
			})
			if recorded != len(printed) {
				t.Fatalf("%d lines printed, %d recorded", len(printed), recorded)
			}
		})
	}
}

// TestExactMissingTempDir: --exact with TMPDIR naming a directory that
// does not exist exits 3 with a message that names the scratch file's
// path and says to set TMPDIR or give --exact-dir (it said "cuckoo
// dedup: : open: no such file or directory" and to check the free
// space), and prints nothing.
func TestExactMissingTempDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-dir")
	cmd := exec.Command(binary, "dedup", "--exact")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+missing)
	cmd.Stdin = strings.NewReader("a\nb\na\n")
	r := runCmd(t, cmd)
	r.want(t, exitData, "dedup")
	if r.stdout != "" || !strings.Contains(r.stderr, "scratch file") || !strings.Contains(r.stderr, missing) || !strings.Contains(r.stderr, "TMPDIR") {
		t.Fatalf("stdout %q, stderr %q: want nothing printed and a message naming %s and TMPDIR", r.stdout, r.stderr, missing)
	}
}

// TestExactTempDirRemoved: dedup --exact leaves no temporary store after
// an interrupt or when its reader goes away (| head), which also exits
// quietly with status 141.
func TestExactTempDirRemoved(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	os.Mkdir(tmp, 0o755)
	env := []string{"TMPDIR=" + tmp}
	left := func() []string {
		names, _ := filepath.Glob(filepath.Join(tmp, "cuckoo-exact-*"))
		return names
	}
	code, stderr := stopMidway(t, dir, env, syscall.SIGINT, 0, "dedup", "--exact")
	if code != exitInterrupted || len(left()) != 0 {
		t.Fatalf("after SIGINT: status %d, left %v; stderr %q", code, left(), stderr)
	}

	for _, args := range [][]string{{"dedup", "--exact"}, {"dedup"}, {"dedup", "--exact-dir", "kept.d"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd := exec.Command(binary, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), env...)
			cmd.Stdin = bytes.NewReader(distinctLines(0, 300000))
			stdout, _ := cmd.StdoutPipe()
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// | head -1
			if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			stdout.Close()
			code := waitExit(t, cmd)
			if code != exitBrokenPipe || stderr.Len() != 0 || len(left()) != 0 {
				t.Fatalf("status %d (want %d), stderr %q, left %v", code, exitBrokenPipe, stderr.String(), left())
			}
		})
	}
}

// TestDedupRedisStopPrintsWhatRedisTook interrupts dedup --redis
// mid-stream: every line the filter in Redis holds was printed, and every
// line printed is in the filter. (Redis takes a few tens of thousands of
// new lines a second: the lines are long, so that a MiB of output, the
// first to reach the file, is about 8,000 of them.)
func TestDedupRedisStopPrintsWhatRedisTook(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	s := redistest.NewServer(t, redistest.Config{})
	dir := t.TempDir()
	code, stderr := stopMidway(t, dir, nil, syscall.SIGINT, 120, "dedup", "--redis", redisURL(s), "--name", "seen",
		"--capacity", "4M", "--fingerprint-bits", "32")
	if code != exitInterrupted {
		t.Fatalf("exit status %d; stderr %q", code, stderr)
	}
	printed := outputLines(t, dir)
	ctx := context.Background()
	rdb := testClient(s)
	defer rdb.Close()
	f, err := redisfilter.Open(ctx, rdb, "seen")
	if err != nil {
		t.Fatal(err)
	}
	n, err := f.Len(ctx)
	if err != nil || n != uint64(len(printed)) {
		t.Fatalf("the filter holds %d keys (%v), %d lines printed", n, err, len(printed))
	}
	var keys [][]byte
	for l := range printed {
		keys = append(keys, []byte(l))
	}
	found := make([]bool, len(keys))
	if err := f.ContainsBatch(ctx, keys, found, make([]error, len(keys))); err != nil {
		t.Fatal(err)
	}
	for i, ok := range found {
		if !ok {
			t.Fatalf("%q printed but not in the filter", keys[i])
		}
	}
}
