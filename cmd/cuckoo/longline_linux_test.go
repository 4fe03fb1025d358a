package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/internal/testlong"
)

// peakEnv names the file to which the test binary, started with it set,
// writes the peak resident memory (bytes) of the command its arguments
// name, which it runs, and exits: a small process between the test and
// the command. (Linux counts a process's resident memory before its exec
// into its peak, and a process a test starts directly is a fork of the
// test, whose memory, under -race or beside parallel tests, can be far
// larger than the command's.)
const peakEnv = "CUCKOO_TEST_PEAK_FILE"

func init() {
	path := os.Getenv(peakEnv)
	if path == "" {
		return
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, peakEnv+"=") })
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	peak := int64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) << 10 // KiB on Linux
	if werr := os.WriteFile(path, []byte(strconv.FormatInt(peak, 10)), 0o644); werr != nil {
		fmt.Fprintln(os.Stderr, werr)
		os.Exit(2)
	}
	os.Exit(cmd.ProcessState.ExitCode())
}

// longLineInput is a line of n bytes, a short line, and the long line
// again: what a pipe gives dedup, made as it is read.
func longLineInput(n int) io.Reader {
	long := func() io.Reader {
		return io.MultiReader(io.LimitReader(repeatByte('x'), int64(n)), strings.NewReader("\n"))
	}
	return io.MultiReader(long(), strings.NewReader("short\n"), long())
}

type repeatByte byte

func (b repeatByte) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// TestDedupLongLineMemory: a line of 100 MiB costs dedup about its size
// in memory when only its hash is needed (by default: at most 1.5 times
// it), and about twice when its key must be one slice (fields of it,
// --exact: at most 2.5 times), a key built of several fields (--key 1,2,
// --key 1-1048576, --csv) too, plus 64 MiB for the filter, the buffers
// and the runtime: the peak resident memory of the process, as the
// system counts it. (A key of several fields peaked at 3.2 times the
// line, 4.5 with --key 1-1048576: its buffer grew by appending, and the
// pieces the line was read in, garbage once joined, were still resident
// when the key was built.) The output is the long line once and the short one.
// A long check: 300 MiB through three processes and sha256 (the quick
// run's pipeline tests cut long lines into pieces at every block size).
func TestDedupLongLineMemory(t *testing.T) {
	testlong.Skip(t)
	t.Parallel()
	const n = 100 << 20
	want := sha256.New()
	io.Copy(want, io.MultiReader(io.LimitReader(repeatByte('x'), n), strings.NewReader("\nshort\n")))
	// The arguments: the factor.
	modes := map[string]float64{"dedup": 1.5, "dedup --exact": 2.5, "dedup --key 1": 2.5,
		"dedup --key 1,2": 2.5, "dedup --key 1-1048576": 2.5, "dedup --csv --key 1,2": 2.5, "dedup --exact --key 1,2": 2.5}
	for line, factor := range modes {
		args := strings.Fields(line)
		t.Run(line, func(t *testing.T) { checkLongLinePeak(t, args, n, factor, want.Sum(nil)) })
	}
}

// TestDedupRedisLongLineMemory: with --redis too, a line of 100 MiB costs
// about twice its size, its key of several fields included (it peaked at
// 3.2 times the line: the pieces it was read in, garbage once joined,
// were still resident when the key was built).
func TestDedupRedisLongLineMemory(t *testing.T) {
	testlong.Skip(t)
	s := redistest.NewServer(t, redistest.Config{})
	const n = 100 << 20
	want := sha256.New()
	io.Copy(want, io.MultiReader(io.LimitReader(repeatByte('x'), n), strings.NewReader("\nshort\n")))
	for _, key := range []string{"1", "1,2"} {
		t.Run("key="+key, func(t *testing.T) {
			args := []string{"dedup", "--redis", redisURL(s), "--name", t.Name(), "--capacity", "1000", "--key", key}
			checkLongLinePeak(t, args, n, 2.5, want.Sum(nil))
		})
	}
}

// checkLongLinePeak runs the command with args and -q on longLineInput(n),
// checks that its output is the long line and the short one (want: their
// sha256), and that its peak resident memory is at most factor times the
// line, plus 64 MiB.
func checkLongLinePeak(t *testing.T, args []string, n int, factor float64, want []byte) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	peakFile := filepath.Join(t.TempDir(), "peak")
	cmd := exec.Command(self, append([]string{binary}, append(args, "-q")...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(cmd.Environ(), "TMPDIR="+cmd.Dir, peakEnv+"="+peakFile)
	cmd.Stdin = longLineInput(n)
	got := sha256.New()
	cmd.Stdout = got
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v; stderr %q", args, err, stderr.String())
	}
	if !bytes.Equal(got.Sum(nil), want) {
		t.Fatal("the output is not the long line and the short one")
	}
	data, err := os.ReadFile(peakFile)
	if err != nil {
		t.Fatal(err)
	}
	peak, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	limit := int64(factor*float64(n)) + 64<<20
	t.Logf("%v: peak %.1f MiB for a line of %d MiB (limit %.1f MiB)", args, float64(peak)/(1<<20), n>>20, float64(limit)/(1<<20))
	if peak > limit {
		t.Fatalf("peak %d bytes, over the limit %d", peak, limit)
	}
}
