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
// 500 kB, in the second batch) while dedup --redis prints new lines;
// dedup exits 3 and its message names a range of lines that holds
// every line recorded in Redis and not printed. Every line before the
// range is printed; no line after it is recorded. The failure comes
// after the first batch, so that a message naming the failing batch
// alone would leave lines of an earlier one recorded and unnamed.
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

// TestDedupRedisStopAndStall: the run stops reading at a line (one whose
// --time-field is not a time, or an input that fails) while Redis stalls
// past --redis-wait on the batch of the lines before it. dedup exits 3,
// and its message names both: the lines Redis did not confirm (saved to
// a file) and, as a stop for Redis alone would, that no line from the
// line the run stopped at on was sent, with the error at that line:
// following the message loses no line, the one that stopped the run and
// those after it included.
func TestDedupRedisStopAndStall(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
		// stop feeds what stops the run, after the first 50 lines.
		stop func(w *io.PipeWriter)
		want string // the stop's error, in the message
		// sentNone: the batch's lines were not sent either. A window in
		// event time reads its segments' times before its first write,
		// and that read stalls: so the message says no line from line 1
		// on was sent, and names the stop.
		sentNone bool
	}{
		{
			name: "time",
			args: []string{"--window", "1h", "--capacity", "1000", "--time-field", "1", "--key", "2"},
			stop: func(w *io.PipeWriter) {
				var b strings.Builder
				b.WriteString("notatime id-x\n")
				for i := 51; i <= 60; i++ {
					fmt.Fprintf(&b, "1772366500 id-%d\n", i)
				}
				io.WriteString(w, b.String())
				w.Close()
			},
			want:     "; line 51 (counted over all inputs): ",
			sentNone: true,
		},
		{
			name: "read",
			args: []string{"--capacity", "1000"},
			stop: func(w *io.PipeWriter) { w.CloseWithError(errors.New("the disk went away")) },
			want: "; reading -: the disk went away; ",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := redistest.NewServer(t, redistest.Config{})
			paused := false
			t.Cleanup(func() {
				if paused {
					s.Resume()
				}
			})
			var first []string
			for i := 1; i <= 50; i++ {
				first = append(first, fmt.Sprintf("177236640%d id-%d", i%10, i))
			}
			r, w := io.Pipe()
			// A read timeout of 200 ms: go-redis's own retries give up
			// within the pause too.
			args := append([]string{"dedup", "--redis", "redis://" + s.Addr + "?read_timeout=200ms", "--name", "stop-" + c.name, "--redis-wait", "300ms"}, c.args...)
			type done struct {
				code int
				msg  string
			}
			var out bytes.Buffer
			exited := make(chan done, 1)
			go func() {
				code, msg := runInProcess(t, r, &out, args...)
				r.CloseWithError(io.ErrClosedPipe)
				exited <- done{code, msg}
			}()
			// The command reads them once its filter is open in Redis,
			// and sends none of them: a batch is 8,192 lines.
			if _, err := io.WriteString(w, strings.Join(first, "\n")+"\n"); err != nil {
				d := <-exited
				t.Fatalf("dedup stopped early: %d, %s", d.code, d.msg)
			}
			if err := s.Pause(); err != nil {
				t.Fatal(err)
			}
			paused = true
			c.stop(w)
			d := <-exited
			if err := s.Resume(); err != nil {
				t.Fatal(err)
			}
			paused = false
			t.Log(d.msg)
			if d.code != exitData {
				t.Fatalf("status %d, want 3: %s", d.code, d.msg)
			}
			if out.Len() != 0 {
				t.Fatalf("printed %q; Redis answered for no line", out.String())
			}
			if c.sentNone {
				want := "cuckoo dedup: no line from line 1 on (counted over all inputs) was sent; "
				if !strings.HasPrefix(d.msg, want) || !strings.Contains(d.msg, c.want) ||
					!strings.HasSuffix(strings.TrimSpace(d.msg), "run dedup again on the lines from line 1 on") {
					t.Fatalf("the message does not say that no line was sent, and name the stop (%q): %s", c.want, d.msg)
				}
				return
			}
			m := regexp.MustCompile(`^cuckoo dedup: lines 1-50 \(50 lines\) were (?:sent and not printed, and may or may not be recorded in Redis as seen|not recorded in Redis, nor printed): [^;]*; they are in (\S+); no line from line 51 on \(counted over all inputs\) was sent; `).FindStringSubmatch(d.msg)
			if m == nil {
				t.Fatalf("the message does not name lines 1-50 and the lines from line 51 on: %s", d.msg)
			}
			if !strings.Contains(d.msg, c.want) {
				t.Fatalf("the message does not name the stop (%q): %s", c.want, d.msg)
			}
			if !strings.HasSuffix(strings.TrimSpace(d.msg), "run dedup again on the lines from line 51 on") {
				t.Fatalf("the message does not end saying to run dedup again from line 51: %s", d.msg)
			}
			saved, err := os.ReadFile(m[1])
			if err != nil {
				t.Fatal(err)
			}
			if string(saved) != strings.Join(first, "\n")+"\n" {
				t.Fatalf("%s holds %q, not lines 1-50", m[1], saved)
			}
		})
	}
}
