package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// signalOnRead is standard input that gives data, then, on the next read,
// delivers sig to the run as main's signal goroutine does (env.signalled)
// and ends: the interrupt arrives while the command is at work, and has
// dropped the file it was writing before the command writes to it again.
type signalOnRead struct {
	e    *env
	sig  os.Signal
	data []byte
	done bool
}

func (r *signalOnRead) Read(p []byte) (int, error) {
	if len(r.data) > 0 {
		n := copy(p, r.data)
		r.data = r.data[n:]
		return n, nil
	}
	if !r.done {
		r.done = true
		r.e.signalled(r.sig)
	}
	return 0, io.EOF
}

// signalOnWrite is standard output whose first write delivers sig to the
// run, then fails, as a write does that the interrupt made fail (the
// reader of a pipe stopped by the same Ctrl-C, a file dropped).
type signalOnWrite struct {
	e   *env
	sig os.Signal
}

func (w *signalOnWrite) Write([]byte) (int, error) {
	w.e.signalled(w.sig)
	return 0, syscall.EIO
}

// TestInterruptDuringWriteExitsWithSignalStatus: a run interrupted while it
// writes exits with the signal's status (130 for SIGINT, 143 for SIGTERM),
// as the signal goroutine does, and prints the interrupt's message and
// nothing else, though the interrupt made its write fail: it used to
// report that failure, status 3, when its goroutine got to os.Exit before
// the signal goroutine did. The file it was writing is left as it was,
// with no temporary or lock file. The signal is delivered by the test at
// a chosen point (no sleeps); the exit status is run's, which main passes
// to os.Exit.
func TestInterruptDuringWriteExitsWithSignalStatus(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		sig    os.Signal
		status int
		output bool // -o FILE, rather than standard output
	}{
		{"file", os.Interrupt, exitInterrupted, true},
		{"stdout", os.Interrupt, exitInterrupted, false},
		{"sigterm", syscall.SIGTERM, 128 + int(syscall.SIGTERM), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			out := filepath.Join(dir, "out.txt")
			if err := os.WriteFile(out, []byte("previous output\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			e := &env{stderr: &stderr, cmd: "dedup"}
			// --capacity: no read ahead of standard input, so the output
			// file is being written when the signal comes.
			args := []string{"dedup", "-q", "--capacity", "10000"}
			e.stdout = &stickyWriter{w: &signalOnWrite{e: e, sig: c.sig}}
			if c.output {
				e.stdout = &stickyWriter{w: io.Discard}
				e.stdin = &signalOnRead{e: e, sig: c.sig, data: distinctLines(0, 1000)}
				args = append(args, "-o", out)
			} else {
				e.stdin = bytes.NewReader(distinctLines(0, 1000))
			}
			if code := run(e, args); code != c.status {
				t.Fatalf("exit status %d, want %d; stderr %q", code, c.status, stderr.String())
			}
			want := "cuckoo dedup: interrupted\n"
			if c.output {
				want = "cuckoo dedup: interrupted; " + out + " left unchanged\n"
			}
			if stderr.String() != want {
				t.Fatalf("stderr %q, want %q", stderr.String(), want)
			}
			if b, err := os.ReadFile(out); err != nil || string(b) != "previous output\n" {
				t.Fatalf("out.txt holds %q (%v), want it unchanged", b, err)
			}
			if es, _ := os.ReadDir(dir); len(es) != 1 {
				var names []string
				for _, x := range es {
					names = append(names, x.Name())
				}
				t.Fatalf("files left: %v", names)
			}
		})
	}
}

// TestInterruptStatusWithoutSignal: a run no signal interrupted reports
// its own status, without waiting.
func TestInterruptStatusWithoutSignal(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	e := &env{stdout: io.Discard, stderr: &stderr, cmd: "dedup"}
	if code := report(e, "dedup", dataErr("r", "m")); code != exitData || stderr.String() != "cuckoo dedup: m; r\n" {
		t.Fatalf("status %d, stderr %q", code, stderr.String())
	}
	if _, ok := e.interruptedStatus(); ok {
		t.Fatal("interrupted without a signal")
	}
}

// brokenPipe is standard output whose reader went away: every write fails
// with EPIPE, as with SIGPIPE ignored (main). With e set, its first write
// delivers sig to the run first, as main's signal goroutine does: the
// interrupt that stopped the reader reaches the run before its write
// fails.
type brokenPipe struct {
	e   *env
	sig os.Signal
}

func (w *brokenPipe) Write([]byte) (int, error) {
	if w.e != nil {
		w.e.signalled(w.sig)
		w.e = nil
	}
	return 0, syscall.EPIPE
}

// TestCtrlCWithItsReaderExitsByWhatCameFirst: Ctrl-C in `cuckoo dedup big
// | head` stops both, and the run exits by what reached it first: the
// interrupt, with 130 and its message; or the broken pipe, with 141,
// quietly, and the interrupt that comes after it (on the signal
// goroutine, which exits too) says nothing and exits with the same 141.
// It used to print "interrupted" and exit 130 or 141, whichever goroutine
// got to os.Exit first. The order is set by the test (no sleeps): the
// signal is delivered by the output's first write, or after run returns.
func TestCtrlCWithItsReaderExitsByWhatCameFirst(t *testing.T) {
	t.Parallel()
	args := []string{"dedup", "-q", "--capacity", "10000"}
	t.Run("interrupt-first", func(t *testing.T) {
		t.Parallel()
		var stderr bytes.Buffer
		e := &env{stdin: bytes.NewReader(distinctLines(0, 1000)), stderr: &stderr, cmd: "dedup"}
		e.stdout = &stickyWriter{w: &brokenPipe{e: e, sig: os.Interrupt}}
		if code := run(e, args); code != exitInterrupted || stderr.String() != "cuckoo dedup: interrupted\n" {
			t.Fatalf("exit status %d, stderr %q; want %d and the interrupt's message", code, stderr.String(), exitInterrupted)
		}
	})
	t.Run("broken-pipe-first", func(t *testing.T) {
		t.Parallel()
		var stderr bytes.Buffer
		e := &env{stdin: bytes.NewReader(distinctLines(0, 1000)), stderr: &stderr, cmd: "dedup"}
		e.stdout = &stickyWriter{w: &brokenPipe{}}
		if code := run(e, args); code != exitBrokenPipe || stderr.Len() != 0 {
			t.Fatalf("exit status %d, stderr %q; want %d, quietly", code, stderr.String(), exitBrokenPipe)
		}
		// The interrupt, after: the signal goroutine's os.Exit status.
		if code := e.signalled(os.Interrupt); code != exitBrokenPipe || stderr.Len() != 0 {
			t.Fatalf("the interrupt after the broken pipe: exit status %d, stderr %q; want %d, quietly", code, stderr.String(), exitBrokenPipe)
		}
	})
}
