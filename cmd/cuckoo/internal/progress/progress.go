// Package progress draws a one-line progress bar on a terminal: bytes and
// lines per second, the share done and the time left when the total is
// known. It is for standard error, and is silent when that is not a
// terminal (a file, a pipe, a CI log), so logs never fill with carriage
// returns.
//
// Counting is cheap enough for the hottest loop's outer level: Add is two
// atomic additions, meant to be called once per buffer fill (not per
// line); a goroutine redraws at most four times a second.
package progress

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
)

// IsTerminal reports whether f is a terminal, the test the bar uses to
// decide whether to draw: golang.org/x/term's, which asks the terminal
// driver (so /dev/null, a character device but no terminal, is not one).
func IsTerminal(f *os.File) bool {
	return f != nil && term.IsTerminal(int(f.Fd()))
}

// Interval is how often the bar is redrawn.
const Interval = 250 * time.Millisecond

// Bar is a progress bar. A nil *Bar is valid and does nothing, so callers
// need not check whether the bar is shown. Add may be called from any
// goroutine.
type Bar struct {
	w     io.Writer
	label string
	total int64 // bytes expected; 0 when unknown
	width int   // columns
	start time.Time

	bytes atomic.Uint64
	lines atomic.Uint64
	text  func(width int) string // NewLine's; nil: Render's bar

	mu      sync.Mutex // serializes drawing with Finish and Clear
	drawn   bool       // a bar is on the screen
	stopped bool
	stop    chan struct{}
	done    chan struct{}
}

// New starts a bar on w labelled label, for total bytes (0: unknown), and
// returns it; it returns nil when enabled is false. The bar redraws itself
// until Finish.
func New(w io.Writer, label string, total int64, enabled bool) *Bar {
	if !enabled {
		return nil
	}
	width := 80
	if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && c >= 40 {
		width = c
	}
	b := &Bar{w: w, label: label, total: total, width: width, start: time.Now(),
		stop: make(chan struct{}), done: make(chan struct{})}
	go b.loop()
	return b
}

// NewLine starts a status line on w, redrawn from text (given the
// terminal's width) until Finish, for a command whose progress is not
// bytes read (a stream that has no end); it returns nil when enabled is
// false.
func NewLine(w io.Writer, text func(width int) string, enabled bool) *Bar {
	b := New(w, "", 0, enabled)
	if b != nil {
		b.mu.Lock()
		b.text = text
		b.mu.Unlock()
	}
	return b
}

// Note prints line on a line of its own above the bar, which the next
// redraw puts back.
func (b *Bar) Note(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drawn {
		fmt.Fprint(b.w, "\r\x1b[K")
		b.drawn = false
	}
	fmt.Fprintln(b.w, line)
}

func (b *Bar) loop() {
	defer close(b.done)
	t := time.NewTicker(Interval)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.draw()
		}
	}
}

// Add records n more bytes read, holding lines more line breaks.
func (b *Bar) Add(n int, lines int) {
	if b == nil {
		return
	}
	b.bytes.Add(uint64(n))
	b.lines.Add(uint64(lines))
}

// AddChunk records a chunk just read, counting its line breaks.
func (b *Bar) AddChunk(p []byte) {
	if b == nil {
		return
	}
	b.Add(len(p), bytes.Count(p, []byte{'\n'}))
}

func (b *Bar) draw() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return
	}
	text := ""
	if b.text != nil {
		text = fit(b.text(b.width), b.width)
	} else {
		s := State{Label: b.label, Bytes: b.bytes.Load(), Lines: b.lines.Load(), Total: b.total, Elapsed: time.Since(b.start)}
		text = Render(s, b.width)
	}
	fmt.Fprint(b.w, "\r"+text+"\x1b[K")
	b.drawn = true
}

// Finish stops the bar and erases it, leaving the cursor at the start of
// an empty line for whatever is printed next. It is idempotent.
func (b *Bar) Finish() {
	if b == nil {
		return
	}
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	b.stopped = true
	close(b.stop)
	if b.drawn {
		fmt.Fprint(b.w, "\r\x1b[K")
	}
	b.mu.Unlock()
	<-b.done
}

// State is what one frame of the bar shows.
type State struct {
	Label   string
	Bytes   uint64 // read so far
	Lines   uint64 // read so far
	Total   int64  // bytes expected; 0 when unknown
	Elapsed time.Duration
}

// Render returns the bar's text for s, at most width columns:
//
//	dedup  45.2 MiB / 154 MiB  29% [#####...........]  41.3 MiB/s  812k lines/s  ETA 3s
//
// Without a total it shows no share, bar or ETA.
func Render(s State, width int) string {
	secs := s.Elapsed.Seconds()
	var rate, lrate float64
	if secs > 0 {
		rate = float64(s.Bytes) / secs
		lrate = float64(s.Lines) / secs
	}
	speed := fmt.Sprintf("%s/s  %s lines/s", units.Bytes(uint64(rate)), units.SI(lrate))
	if s.Total <= 0 {
		return fit(fmt.Sprintf("%s  %s  %s lines  %s", s.Label, units.Bytes(s.Bytes), units.SI(float64(s.Lines)), speed), width)
	}
	frac := min(float64(s.Bytes)/float64(s.Total), 1)
	eta := "?"
	if rate > 0 {
		eta = units.Duration(time.Duration(float64(uint64(s.Total)-min(s.Bytes, uint64(s.Total))) / rate * float64(time.Second)))
	}
	head := fmt.Sprintf("%s  %s / %s  %3d%% ", s.Label, units.Bytes(s.Bytes), units.Bytes(uint64(s.Total)), int(frac*100))
	tail := fmt.Sprintf("  %s  ETA %s", speed, eta)
	barWidth := width - 1 - len(head) - len(tail) - 2
	if barWidth < 5 {
		return fit(head+tail, width)
	}
	filled := int(frac * float64(barWidth))
	return head + "[" + strings.Repeat("#", filled) + strings.Repeat(".", barWidth-filled) + "]" + tail
}

// fit cuts s to width-1 columns (the last column is left free so the
// terminal never wraps).
func fit(s string, width int) string {
	if len(s) > width-1 {
		return s[:max(width-1, 0)]
	}
	return s
}
