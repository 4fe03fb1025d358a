package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dedupkit/cuckoo/internal/redistest"
)

// failAfter is an output that takes its first n bytes and fails every
// write after them, as a disk that fills up does.
type failAfter struct {
	mu  sync.Mutex
	n   int
	got bytes.Buffer
}

var errOutputFull = errors.New("no space left on device (test)")

func (w *failAfter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := w.n - w.got.Len()
	if len(p) <= room {
		return w.got.Write(p)
	}
	w.got.Write(p[:room])
	return room, errOutputFull
}

// runInProcess runs the command in the test's process, with stdin as its
// standard input and stdout as its output, and returns its status and
// standard error. Lines dedup --redis saves go to the process's
// temporary directory: the test removes the files its message names.
func runInProcess(t *testing.T, stdin io.Reader, stdout io.Writer, args ...string) (int, string) {
	t.Helper()
	var stderr bytes.Buffer
	code := run(&env{stdin: stdin, stdout: &stickyWriter{w: stdout}, stderr: &stderr, cmd: commandName(args)}, args)
	msg := stderr.String()
	for _, m := range regexp.MustCompile(`in (\S*cuckoo-dedup-[a-z-]+-\d+\.txt)`).FindAllStringSubmatch(msg, -1) {
		t.Cleanup(func() { os.Remove(m[1]) })
	}
	return code, msg
}

// TestDedupRedisOutputFailureNamesLines: standard output fails (after
// 500 kB, in the second batch) while dedup --redis prints new lines; dedup exits 3 and its message names a range of lines that holds
// every line recorded in Redis and not printed. Every line before the
// range is printed; no line after it is recorded. Before each batch
// flushed its lines, the 1 MiB output buffer held several batches, the
// failure showed in a later batch, and the message named only that one:
// the lines of the batches before it, recorded and never printed, were
// named nowhere.
func TestDedupRedisOutputFailureNamesLines(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t, redistest.Config{})
	// 48 bytes a line: a batch (about 8,000 lines) prints about 390 kB,
	// and 1 MiB holds more than two batches: the old buffer wrote nothing
	// before the third.
	const n = 24000
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("line-%06d-%s", i+1, strings.Repeat("x", 35))
	}
	out := &failAfter{n: 500_000}
	// 32-bit fingerprints and a fixed seed: none of the lines is a false
	// positive of another.
	code, msg := runInProcess(t, strings.NewReader(strings.Join(lines, "\n")+"\n"), out,
		"dedup", "--redis", redisURL(s), "--name", "outfail", "--capacity", "1M", "--fingerprint-bits", "32", "--seed", "0x5eed")
	t.Log(msg)
	if code != exitData {
		t.Fatalf("status %d, want 3; stderr %q", code, msg)
	}
	m := regexp.MustCompile(`^cuckoo dedup: writing the output: .*; lines (\d+) to (\d+) may be recorded in Redis but not written; `).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("the message does not name the lines: %q", msg)
	}
	first, _ := strconv.Atoi(m[1])
	last, _ := strconv.Atoi(m[2])
	// The complete lines printed.
	got := out.got.String()
	printed := strings.Split(got[:strings.LastIndexByte(got, '\n')+1], "\n")
	printed = printed[:len(printed)-1]
	if !slices.Equal(printed, lines[:len(printed)]) {
		t.Fatal("the output is not the start of the input")
	}
	f := openFilter(t, s, "outfail")
	keys := make([][]byte, n)
	for i, l := range lines {
		keys[i] = []byte(l)
	}
	found := make([]bool, n)
	if err := f.ContainsBatch(context.Background(), keys, found, make([]error, n)); err != nil {
		t.Fatal(err)
	}
	recorded := 0
	for i, ok := range found {
		num := i + 1
		switch {
		case ok:
			recorded++
		case num <= len(printed):
			t.Fatalf("line %d is printed and not recorded in Redis", num)
		}
		if ok && num > len(printed) && (num < first || num > last) {
			t.Fatalf("line %d is recorded in Redis, not printed, and not among lines %d to %d that the message names (%d lines printed)", num, first, last, len(printed))
		}
	}
	if first < 1 || first > len(printed)+1 || last < first || last > n {
		t.Fatalf("%d lines printed; the message names lines %d to %d", len(printed), first, last)
	}
	t.Logf("%d lines printed, %d recorded in Redis; the message names lines %d to %d", len(printed), recorded, first, last)
}
