package progress

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/ptytest"
)

func TestRender(t *testing.T) {
	for _, c := range []struct {
		name string
		s    State
		want string
	}{
		{"known-total", State{Label: "dedup", Bytes: 40 << 20, Lines: 800_000, Total: 160 << 20, Elapsed: time.Second},
			"dedup  40.0 MiB / 160 MiB   25% [############.......................................]  40.0 MiB/s  800k lines/s  ETA 3s"},
		{"unknown-total", State{Label: "build", Bytes: 3 << 30, Lines: 2_500_000, Elapsed: 2 * time.Second},
			"build  3.00 GiB  2.50M lines  1.50 GiB/s  1.25M lines/s"},
		{"zero-elapsed", State{Label: "x", Bytes: 0, Total: 100, Elapsed: 0},
			"x  0 B / 100 B    0% [.......................................................................]  0 B/s  0 lines/s  ETA ?"},
		{"past-total", State{Label: "x", Bytes: 200, Total: 100, Elapsed: time.Second},
			"x  200 B / 100 B  100% [##################################################################]  200 B/s  0 lines/s  ETA 0s"},
	} {
		t.Run("case="+c.name, func(t *testing.T) {
			got := Render(c.s, 120)
			if got != c.want {
				t.Fatalf("Render =\n%q\nwant\n%q", got, c.want)
			}
			if strings.Contains(got, "[") && len(got) != 119 {
				t.Fatalf("%d columns, want the bar to fill 119", len(got))
			}
		})
	}
}

func TestRenderNarrow(t *testing.T) {
	s := State{Label: "dedup", Bytes: 40 << 20, Lines: 800_000, Total: 160 << 20, Elapsed: time.Second}
	for _, w := range []int{10, 40, 60, 80} {
		if got := Render(s, w); len(got) > w-1 {
			t.Errorf("width %d: %d columns: %q", w, len(got), got)
		}
	}
}

func TestNilBar(t *testing.T) {
	b := New(os.Stderr, "x", 0, false)
	if b != nil {
		t.Fatal("New with enabled=false returned a bar")
	}
	b.Add(1, 1) // must not panic
	b.AddChunk([]byte("a\n"))
	b.Finish()
}

// syncBuffer is a bytes.Buffer safe for the bar's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBarErasesItself checks the bar's contract with the screen, not its
// timing: whatever it drew, Finish leaves an erased line, and nothing is
// written after Finish.
func TestBarErasesItself(t *testing.T) {
	var out syncBuffer
	b := New(&out, "test", 1000, true)
	b.AddChunk([]byte("a\nb\n"))
	b.draw() // one frame, as the ticker would draw it
	b.Finish()
	b.Finish()
	got := out.String()
	if !strings.Contains(got, "test") || !strings.HasSuffix(got, "\r\x1b[K") {
		t.Fatalf("bar output %q: want a frame, then an erase", got)
	}
	b.draw()
	if out.String() != got {
		t.Fatal("the bar drew after Finish")
	}
	if b.lines.Load() != 2 || b.bytes.Load() != 4 {
		t.Fatalf("counted %d bytes, %d lines; want 4, 2", b.bytes.Load(), b.lines.Load())
	}
}

// TestIsTerminal: /dev/null, a character device, is no terminal (the bar
// used to count it as one, and stayed silent on a terminal when the
// output went to /dev/null); a pseudo-terminal is.
func TestIsTerminal(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if IsTerminal(null) {
		t.Error("IsTerminal(/dev/null) = true")
	}
	if IsTerminal(nil) {
		t.Error("IsTerminal(nil) = true")
	}
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("a regular file is a terminal")
	}
	_, slave := ptytest.OpenOrSkip(t)
	if !IsTerminal(slave) {
		t.Error("IsTerminal(a pseudo-terminal) = false")
	}
}
