package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/redisfilter"
)

// heapWatcher is an input of distinct long lines, made as they are read
// (it holds none), that notes, before each Read, the heap the run holds:
// the live heap after a collection, the most of which the test bounds (a
// count of bytes, not of the process's pages, which depend on the
// collector's pace).
type heapWatcher struct {
	lines, size int    // lines left to start, and the bytes of each
	left        int    // bytes of the current line left to give
	letter      byte   // its bytes, but for its tail
	tail        []byte // its end: its number and '\n'
	maxLive     uint64
}

func (w *heapWatcher) Read(p []byte) (int, error) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	w.maxLive = max(w.maxLive, m.HeapAlloc)
	if w.left == 0 {
		if w.lines == 0 {
			return 0, io.EOF
		}
		w.lines--
		w.left, w.letter = w.size, byte('a'+w.lines%26)
		w.tail = fmt.Appendf(w.tail[:0], "%10d\n", w.lines)
	}
	n := 0
	for n < len(p) && w.left > 0 {
		if body := w.left - len(w.tail); body > 0 {
			k := min(len(p)-n, body)
			for i := range k {
				p[n+i] = w.letter
			}
			n, w.left = n+k, w.left-k
			continue
		}
		k := copy(p[n:], w.tail[len(w.tail)-w.left:])
		n, w.left = n+k, w.left-k
	}
	if w.left == 0 && w.lines == 0 {
		return n, io.EOF
	}
	return n, nil
}

// countingWriter counts what is written to it.
type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// TestDedupRedisLongLinesHoldABoundedBatch: dedup --redis holds a batch
// of lines until Redis answers, and a batch ends after redisDedupBudget
// bytes as well as after its lines: 12 lines of 1 MiB are held a few at
// a time, each once (a key that is the whole line is a slice of it, and
// a long line is taken from the reader, not copied). The whole batch of
// 8,192 lines was held, each with a copy of its key: 300 lines of 1 MiB
// peaked at 2 GB. A line longer than the budget is a batch of its own,
// gone before the next is read: 3 lines of 8 MiB are held one at a time.
// Not parallel, so that the heap is this run's.
func TestDedupRedisLongLinesHoldABoundedBatch(t *testing.T) {
	testlong.SkipQuickRun(t)
	s := redistest.NewServer(t, redistest.Config{})
	for _, c := range []struct {
		lines, size int
		limit       int // the most the run may hold
	}{
		// The batch (4 MiB and a line), and the line being read: its
		// pieces and the line joined.
		{12, 1 << 20, redisDedupBudget + 4<<20 + 2<<20},
		// The line being read, and a little.
		{3, 8 << 20, 8<<20 + 4<<20},
	} {
		t.Run(fmt.Sprintf("%dx%dMiB", c.lines, c.size>>20), func(t *testing.T) {
			in := &heapWatcher{lines: c.lines, size: c.size}
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			out := &countingWriter{}
			code, msg := runInProcess(t, in, out, "dedup", "--redis", redisURL(s), "--name", t.Name(), "--capacity", "1000")
			if code != exitOK {
				t.Fatalf("exit status %d: %s", code, msg)
			}
			if out.n != c.lines*c.size {
				t.Fatalf("printed %d bytes, want the %d lines' %d", out.n, c.lines, c.lines*c.size)
			}
			held := in.maxLive - min(in.maxLive, before.HeapAlloc)
			t.Logf("held at most %.1f MiB", float64(held)/(1<<20))
			if held > uint64(c.limit) {
				t.Errorf("the run held %.1f MiB while reading %d lines of %d MiB, want at most %.1f",
					float64(held)/(1<<20), c.lines, c.size>>20, float64(c.limit)/(1<<20))
			}
		})
	}
}

// TestSaveLinesDoesNotCopyThem: the lines a failed batch saves go to
// their file as they are, not joined into one buffer first (a copy of
// the batch, a long line's size again, as the run stops), and the file
// holds each, ended by a newline.
func TestSaveLinesDoesNotCopyThem(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	const size = 8 << 20
	lines := [][]byte{[]byte("a\n"), bytes.Repeat([]byte("x"), size), []byte("b")}
	var stderr bytes.Buffer
	e := &env{stderr: &stderr}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	where := saveLines(e, "test", "the test's lines", lines)
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > size/8 {
		t.Errorf("saving a line of %d MiB allocated %.1f MiB", size>>20, float64(got)/(1<<20))
	}
	name, ok := strings.CutPrefix(where, "in ")
	if !ok {
		t.Fatalf("saved %s (%s)", where, stderr.String())
	}
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\n" + string(lines[1]) + "\nb\n"; string(got) != want {
		t.Fatalf("the file holds %d bytes, want the lines' %d", len(got), len(want))
	}
}

// TestUnsettledHoldsNoCopyOfTheKeys: a failed batch's keys are told
// apart without a copy of each (a long line's key was copied as the
// run stopped), and a key's lines still share its fate: its first line
// unconfirmed, a repeat of it not filed again, another key settled.
func TestUnsettledHoldsNoCopyOfTheKeys(t *testing.T) {
	const size = 8 << 20
	long := bytes.Repeat([]byte("x"), size)
	unconfirmed := fmt.Errorf("no reply: %w", redisfilter.ErrUnconfirmed)
	var u unsettled
	u.track()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	u.note(long, long, 1, false, unconfirmed)
	u.note([]byte("b"), []byte("b\n"), 2, true, nil)
	u.note(bytes.Clone(long[:size-1]), long[:size-1], 3, false, nil)
	u.note(long, long, 4, false, nil)
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc - (size - 1); got > size/8 {
		t.Errorf("noting a key of %d MiB allocated %.1f MiB", size>>20, float64(got)/(1<<20))
	}
	u.sort()
	if !slices.Equal(u.unconfirmed.nums, []uint64{1}) || len(u.notRecorded.nums) != 0 {
		t.Fatalf("unconfirmed lines %v, not recorded %v; want line 1 unconfirmed", u.unconfirmed.nums, u.notRecorded.nums)
	}
}
