package kafkadedup

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupkit/cuckoo/internal/kafkatest"
)

// A child is a Processor in a process of its own: the test binary run
// again with envChild holding its childSpec, so that a test can kill -9
// it, stop it (SIGSTOP) and resume it, or end it with SIGTERM.
const envChild = "KAFKADEDUP_TEST_CHILD"

// childSpec is what a child runs.
type childSpec struct {
	Addr, Group, In, Out, Instance string
	Window                         time.Duration
	Capacity                       uint64
	SnapshotEvery                  int64
	Idle                           time.Duration // exit when idle this long; 0: run until SIGTERM
	SessionTimeout                 time.Duration
	TxnTimeout                     time.Duration
	// InTxn is how long each transaction waits after producing its
	// records, before it ends: long transactions make a kill land inside
	// one. With Announce, the child prints inTxnLine before it waits.
	InTxn    time.Duration
	Announce bool
	// With PauseAtListing, the child's first restore that lists offsets
	// prints listingLine and waits for SIGUSR1 before it asks; and each
	// request the Processor asks again prints askAgainLine.
	PauseAtListing bool
	// RequestRetries, if not 0, is the client's own retries of a request
	// (franz-go's default, 20, rides out a short absence of the broker
	// inside the client).
	RequestRetries int
}

const (
	inTxnLine    = "kafkadedup child: in a transaction"
	startedLine  = "kafkadedup child: started"
	listingLine  = "kafkadedup child: listing offsets"
	askAgainLine = "kafkadedup child: asking again"
)

// options are the Processor's options of a child: those of the quick
// tests (the same seed), and the spec's.
func (s childSpec) options(logf func(string, ...any)) []Option {
	client := append(testClientOpts(), kgo.SeedBrokers(s.Addr))
	if s.SessionTimeout > 0 {
		// A rebalance waits for the members to join again up to the
		// rebalance timeout (Kafka's default, 60 s): a zombie resumed
		// (or a member killed) in the middle of one would hold up the
		// others that long.
		client = append(client, kgo.SessionTimeout(s.SessionTimeout), kgo.RebalanceTimeout(2*s.SessionTimeout))
	}
	if s.TxnTimeout > 0 {
		client = append(client, kgo.TransactionTimeout(s.TxnTimeout))
	}
	if s.RequestRetries > 0 {
		client = append(client, kgo.RequestRetries(s.RequestRetries))
	}
	opts := []Option{WithClient(client...), WithSeed(7), WithLogf(logf),
		WithSnapshotEvery(s.SnapshotEvery, time.Second), WithTimeout(kafkatest.Wait)}
	if s.Window > 0 {
		opts = append(opts, WithWindow(s.Window), WithCapacity(s.Capacity))
	}
	if s.Instance != "" {
		opts = append(opts, WithInstanceID(s.Instance))
	}
	if s.Idle > 0 {
		opts = append(opts, WithExitWhenIdle(s.Idle))
	}
	return opts
}

// childMain runs a child's Processor and exits: 0 when Run returns nil,
// 1 with the error on standard error otherwise.
func childMain() bool {
	var s childSpec
	if err := json.Unmarshal([]byte(os.Getenv(envChild)), &s); err != nil {
		fmt.Fprintln(os.Stderr, "kafkadedup child:", err)
		os.Exit(2)
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "kafkadedup child %s: "+format+"\n", append([]any{s.Instance}, args...)...)
	}
	p, err := New(s.Group, []string{s.In}, s.Out, s.options(logf)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafkadedup child:", err)
		os.Exit(2)
	}
	if s.InTxn > 0 {
		p.cfg.testHookInTxn = func() {
			if s.Announce {
				fmt.Println(inTxnLine)
			}
			time.Sleep(s.InTxn)
		}
	}
	if s.PauseAtListing {
		resume := make(chan os.Signal, 1)
		signal.Notify(resume, syscall.SIGUSR1)
		var paused sync.Once
		p.cfg.testHookListing = func(string) {
			paused.Do(func() {
				fmt.Println(listingLine)
				<-resume
			})
		}
		p.cfg.testHookAskAgain = func(what string, err error) {
			fmt.Printf("%s: %s: %v\n", askAgainLine, what, err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	fmt.Println(startedLine)
	if err := p.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "kafkadedup child:", err)
		os.Exit(1)
	}
	st := p.Stats()
	logf("done: %+v", st)
	os.Exit(0)
	return true
}

// child is a running child process.
type child struct {
	t      testing.TB
	txns   int // transactions announced so far
	cmd    *exec.Cmd
	done   chan error
	lines  chan string   // what it prints on standard output
	stderr *lockedBuffer // what it prints on standard error (logged too)
}

// lockedBuffer is a bytes.Buffer that a child's output may be written to
// while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startChild starts a child running spec; it is killed when the test
// ends, if still running.
func startChild(t testing.TB, s childSpec) *child {
	t.Helper()
	spec, _ := json.Marshal(s)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+string(spec))
	stderr := new(lockedBuffer)
	cmd.Stderr = io.MultiWriter(kafkatest.LogWriter(t, ""), stderr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting a child: %v", err)
	}
	c := &child{t: t, cmd: cmd, done: make(chan error, 1), lines: make(chan string, 1024), stderr: stderr}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case c.lines <- sc.Text():
			default: // nobody listens: drop
			}
		}
	}()
	go func() { c.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-c.done
		c.done <- nil
	})
	return c
}

// waitLine waits for the child to print a line starting with prefix.
func (c *child) waitLine(prefix string) {
	c.t.Helper()
	c.waitLineUnless(prefix, nil)
}

// waitLineUnless waits for the child to print a line starting with
// prefix, and reports whether it did; it returns false if the line has
// not come a second after unless is closed (the input is all written:
// the child may have no transaction left to begin).
func (c *child) waitLineUnless(prefix string, unless chan struct{}) bool {
	c.t.Helper()
	deadline := time.After(kafkatest.Wait)
	var quiet <-chan time.Time
	for {
		select {
		case l := <-c.lines:
			if l == inTxnLine {
				c.txns++
			}
			if strings.HasPrefix(l, prefix) {
				return true
			}
		case <-unless:
			unless, quiet = nil, time.After(time.Second)
		case <-quiet:
			return false
		case err := <-c.done:
			c.done <- err
			c.t.Fatalf("the child exited (%v) before printing %q", err, prefix)
		case <-deadline:
			c.t.Fatalf("the child did not print %q within %v", prefix, kafkatest.Wait)
		}
	}
}

// kill kills the child (SIGKILL) and waits for it.
func (c *child) kill() {
	c.cmd.Process.Kill()
	err := <-c.done
	c.done <- err
}

// signal sends sig to the child.
func (c *child) signal(sig syscall.Signal) {
	c.t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		c.t.Fatalf("signalling the child: %v", err)
	}
}

// wait waits for the child to exit, and returns its error.
func (c *child) wait() error {
	c.t.Helper()
	select {
	case err := <-c.done:
		c.done <- err
		return err
	case <-time.After(kafkatest.Wait):
		c.t.Fatalf("the child did not exit within %v", kafkatest.Wait)
		return nil
	}
}
