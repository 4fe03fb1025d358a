package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/progress"
	"github.com/dedupkit/cuckoo/internal/vfs"
)

// env is what a command talks to: its streams, whether they are
// terminals, and the files it is writing. Tests substitute buffers.
type env struct {
	stdin     io.Reader
	stdout    io.Writer // a *stickyWriter in main: run reports its error
	stderr    io.Writer
	stdinFile *os.File // nil when stdin is not a file
	stdoutTTY bool
	stderrTTY bool
	cmd       string // the command running, for messages

	// mu guards what an interrupt, on the signal goroutine, reads and
	// changes: the files being written, those written, the locks held and
	// the progress bar.
	mu      sync.Mutex
	pending map[*vfs.Replacement]string // writes in progress, with the path as given
	written []string                    // files replaced by this run, as given
	locks   map[string]*vfs.WriterLock  // held from before a read until the write, by canonical path
	bar     *progress.Bar
	stops   map[*func() string]bool // what atInterrupt registered

	// interrupting is set when interrupt starts: the process is about to
	// exit with the signal's status, and a command that finds its work
	// stopped under it waits for that (see halt).
	interrupting atomic.Bool
	// signal is the exit status of the signal that interrupted the run
	// (130, 143), set by signalled before it cleans up; or
	// exitBrokenPipe, set by report when the run stopped on a broken
	// pipe before any signal came; 0 for neither. The first one set is
	// the status both goroutines exit with. interrupted is closed once
	// signalled has printed its message.
	signal      atomic.Int32
	interrupted chan struct{}
}

// stickyWriter passes writes on and remembers the first error, so that a
// command whose output fails (a full disk, /dev/full) exits non-zero even
// where it does not check each write.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	if err != nil {
		s.err = err
	}
	return n, err
}

// checkOutput returns err, unless a write to standard output failed and
// err is nil, that failure passed on (by an encoder), or a bare exit
// status (a key absent): then it returns the failure, explained, so that
// a lost answer exits 3 and never looks like an answer.
func (e *env) checkOutput(err error) error {
	s, ok := e.stdout.(*stickyWriter)
	if !ok || s.err == nil {
		return err
	}
	var ce *cliError
	if err == nil || errors.Is(err, s.err) || errors.As(err, &ce) && ce.msg == "" {
		return outputErr(s.err)
	}
	return err
}

// startBar starts a progress bar for reading total bytes, when standard
// error is a terminal, quiet is off, and (if the command writes lines to
// standard output) standard output is not a terminal too.
func (e *env) startBar(label string, total int64, quiet, writesStdout bool) *progress.Bar {
	on := e.stderrTTY && !quiet && !(writesStdout && e.stdoutTTY)
	b := progress.New(e.stderr, label, total, on)
	e.mu.Lock()
	e.bar = b
	e.mu.Unlock()
	return b
}

func (e *env) stopBar() {
	e.mu.Lock()
	b := e.bar
	e.bar = nil
	e.mu.Unlock()
	b.Finish()
}

// atInterrupt registers stop, to be run by interrupt before the process
// exits, until the returned function is called. stop runs on the signal
// goroutine while the command goes on: it takes the command's own lock,
// leaves what the command keeps (a store, the output already decided)
// consistent, and returns what to add to the message ("" for nothing).
func (e *env) atInterrupt(stop func() string) (remove func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stops == nil {
		e.stops = map[*func() string]bool{}
	}
	e.stops[&stop] = true
	return func() {
		e.mu.Lock()
		delete(e.stops, &stop)
		e.mu.Unlock()
	}
}

// halt blocks for good if an interrupt is under way, so that the signal
// goroutine, not a command whose work an atInterrupt function stopped,
// chooses the exit status; otherwise it returns at once.
func (e *env) halt() {
	if e.interrupting.Load() {
		select {}
	}
}

// signalled handles the signal s that interrupts the run, on the signal
// goroutine, and returns the status to exit with. It marks the run
// interrupted before anything else, so that an error the clean-up causes
// the command (a write to the temporary file it drops fails) is not
// reported as the command's: report waits for the message printed here
// and returns the same status (interruptedStatus). Whichever goroutine
// exits first, the status is the signal's; unless the run had already
// stopped on a broken pipe (Ctrl-C in `cuckoo dedup big | head` also
// stops head, and the write may fail before the signal reaches the
// run): then the status is the broken pipe's, and signalled says
// nothing, as the run does.
func (e *env) signalled(s os.Signal) int {
	status := signalStatus(s)
	if !e.signal.CompareAndSwap(0, int32(status)) {
		return int(e.signal.Load())
	}
	fmt.Fprintf(e.stderr, "cuckoo %s: %s\n", e.cmd, e.interrupt())
	close(e.interruptedChan())
	return status
}

// interruptedStatus returns the status of the signal that interrupted
// the run, once signalled has printed its message, or false when no
// signal came.
func (e *env) interruptedStatus() (int, bool) {
	status := int(e.signal.Load())
	if status == 0 || status == exitBrokenPipe {
		return 0, false
	}
	<-e.interruptedChan()
	return status, true
}

func (e *env) interruptedChan() chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.interrupted == nil {
		e.interrupted = make(chan struct{})
	}
	return e.interrupted
}

// interrupt is called on Ctrl-C, from the signal goroutine: it runs what
// atInterrupt registered, erases the bar, drops every write in progress
// (their targets stay as they were), releases the locks, and returns the
// message to print, which names the files this run replaced and those it
// leaves unchanged.
func (e *env) interrupt() string {
	e.interrupting.Store(true)
	e.mu.Lock()
	var stops []func() string
	for stop := range e.stops {
		stops = append(stops, *stop)
	}
	e.mu.Unlock()
	var notes []string
	for _, stop := range stops {
		if note := stop(); note != "" {
			notes = append(notes, note)
		}
	}
	e.stopBar()
	e.mu.Lock()
	defer e.mu.Unlock()
	written := append([]string(nil), e.written...)
	var unchanged, notWritten []string
	for f, path := range e.pending {
		switch {
		case errors.Is(f.Abort(), vfs.ErrCommitted):
			written = append(written, path)
		case f.Existed():
			unchanged = append(unchanged, path)
		default:
			notWritten = append(notWritten, path)
		}
	}
	e.pending = nil
	e.unlockAllLocked()
	msg := "interrupted"
	if len(written) > 0 {
		sort.Strings(written)
		msg += "; " + strings.Join(written, ", ") + " written"
	}
	if len(unchanged) > 0 {
		sort.Strings(unchanged)
		msg += "; " + strings.Join(unchanged, ", ") + " left unchanged"
	}
	if len(notWritten) > 0 {
		sort.Strings(notWritten)
		msg += "; " + strings.Join(notWritten, ", ") + " not written"
	}
	for _, note := range notes {
		msg += "; " + note
	}
	return msg
}
