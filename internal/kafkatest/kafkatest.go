// Package kafkatest starts Kafka brokers for tests: franz-go's kfake, an
// implementation of the Kafka protocol (transactions and consumer groups
// included), either in the test's process or in a process of its own that
// a test can stop, restart from its data directory, or kill.
//
// A broker in its own process is the test binary run again: the test
// package's TestMain calls Main, which becomes the broker when the
// environment asks for one.
package kafkatest

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupkit/cuckoo/internal/testparallel"
)

// Wait is how long a test waits for a broker, a record or a group: far
// beyond need, so that a busy machine never fails a test (docs/testing.md).
const Wait = 2 * time.Minute

// MinSessionTimeout is the shortest group session timeout the brokers of
// this package accept (Kafka's default is 6 s), so that tests may move a
// silent member's partitions quickly.
const MinSessionTimeout = 500 * time.Millisecond

// Start starts a broker (one node) in this process on a loopback port,
// closed when the test ends, and returns its address.
func Start(t testing.TB, opts ...kfake.Opt) string {
	t.Helper()
	return StartCluster(t, opts...).ListenAddrs()[0]
}

// StartCluster is Start, returning the broker, for tests that inject
// failures into its answers (kfake's Control).
func StartCluster(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	opts = append([]kfake.Opt{kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(MinSessionTimeout)}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kafkatest: starting a broker: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// Client returns a client of the broker at addr, closed when the test
// ends.
func Client(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// CreateTopic creates a topic of partitions partitions, with configs
// (name, value) pairs.
func CreateTopic(t testing.TB, addr, topic string, partitions int32, configs ...string) {
	t.Helper()
	cfg := map[string]*string{}
	for i := 0; i+1 < len(configs); i += 2 {
		cfg[configs[i]] = &configs[i+1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	adm := kadm.NewClient(Client(t, addr))
	if _, err := adm.CreateTopic(ctx, partitions, -1, cfg, topic); err != nil {
		t.Fatalf("kafkatest: creating %s: %v", topic, err)
	}
}

// CreateTopicWith creates a topic of partitions partitions through a
// client of opts (TLS, SASL).
func CreateTopicWith(t testing.TB, addr, topic string, partitions int32, opts ...kgo.Opt) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	adm := kadm.NewClient(Client(t, addr, opts...))
	if _, err := adm.CreateTopic(ctx, partitions, -1, nil, topic); err != nil {
		t.Fatalf("kafkatest: creating %s: %v", topic, err)
	}
}

// Produce writes records and waits for them.
func Produce(t testing.TB, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("kafkatest: producing: %v", err)
	}
}

// ReadCommitted returns every committed record of topic, partition by
// partition in offset order, read up to each partition's last stable
// offset as it is when called.
func ReadCommitted(t testing.TB, addr, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	adm := kadm.NewClient(Client(t, addr))
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("kafkatest: listing %s's offsets: %v", topic, err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("kafkatest: listing %s's offsets: %v", topic, err)
	}
	want := map[int32]int64{} // the partitions to read, to their end
	ends.Each(func(o kadm.ListedOffset) {
		if s, ok := starts.Lookup(o.Topic, o.Partition); ok && s.Offset < o.Offset {
			want[o.Partition] = o.Offset
		}
	})
	if len(want) == 0 {
		return nil
	}
	consume := map[int32]kgo.Offset{}
	for p := range want {
		consume[p] = kgo.NewOffset().AtStart()
	}
	cl := Client(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: consume}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	got := map[int32][]*kgo.Record{}
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("kafkatest: reading %s: still waiting for partitions %v after %v", topic, want, Wait)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("kafkatest: reading %s: %v", topic, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := want[r.Partition]
			if !ok || r.Offset >= end {
				return
			}
			if !r.Attrs.IsControl() {
				got[r.Partition] = append(got[r.Partition], r)
			}
			if r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	var ps []int32
	for p := range got {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	var all []*kgo.Record
	for _, p := range ps {
		all = append(all, got[p]...)
	}
	return all
}

// Eventually polls cond every 20 ms until it is true, failing the test
// with what after Wait.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("kafkatest: still waiting after %v for %s", Wait, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// LogWriter returns a writer that logs each line written to it with
// t.Log, after prefix: a child process's standard error, shown only when
// the test fails or runs with -v. The process must be waited for before
// the test ends (exec.Cmd.Wait returns once the writes are done).
func LogWriter(t testing.TB, prefix string) io.Writer {
	return &logWriter{t: t, prefix: prefix}
}

type logWriter struct {
	t      testing.TB
	prefix string
	mu     sync.Mutex
	line   []byte // the unfinished last line
}

func (w *logWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.line = append(w.line, b...)
	for {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			break
		}
		w.t.Log(w.prefix + string(w.line[:i]))
		w.line = w.line[i+1:]
	}
	if len(w.line) > 64<<10 { // a line without end
		w.t.Log(w.prefix + string(w.line))
		w.line = w.line[:0]
	}
	return len(b), nil
}

// The environment of a broker process: its data directory, and the
// ports to listen on (when it restarts).
const (
	envDir   = "KAFKATEST_BROKER_DIR"
	envPorts = "KAFKATEST_BROKER_PORTS"
	addrLine = "kafkatest broker listening on "
)

// Main runs the tests (m.Run) and exits, or, in a process Process
// started, runs a broker until SIGTERM. A test package that starts broker
// processes calls it from its TestMain.
//
// The tests run more parallel tests at once than go test's default
// (GOMAXPROCS), unless -parallel is given: tests on brokers wait (on a
// group's rebalance, a session's timeout, a process's start) far more
// than they compute.
func Main(m *testing.M) {
	dir := os.Getenv(envDir)
	if dir == "" {
		flag.Parse()
		testparallel.Raise(3)
		os.Exit(m.Run())
	}
	os.Exit(runBroker(dir, os.Getenv(envPorts)))
}

// runBroker is the broker process: a broker (one node) that keeps its data
// in dir, on the given port (or a random one); it prints its address, and
// on SIGTERM or SIGINT saves its data and exits 0.
func runBroker(dir, ports string) int {
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.DataDir(dir), kfake.SyncWrites(),
		kfake.GroupMinSessionTimeout(MinSessionTimeout)}
	if ports != "" {
		port, err := strconv.Atoi(ports)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kafkatest:", err)
			return 2
		}
		opts = append(opts, kfake.Ports(port))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafkatest: starting a broker:", err)
		return 1
	}
	fmt.Println(addrLine + c.ListenAddrs()[0])
	waitSignal()
	c.Close()
	return 0
}

// Process is a broker in a process of its own.
type Process struct {
	t    testing.TB
	dir  string
	Addr string
	cmd  *exec.Cmd
	done chan error
}

// StartProcess starts a broker in a process of its own, keeping its data
// in a temporary directory; it is killed when the test ends. The test
// binary must call Main from its TestMain.
func StartProcess(t testing.TB) *Process {
	t.Helper()
	p := &Process{t: t, dir: t.TempDir()}
	p.start("")
	t.Cleanup(func() { p.Kill() })
	return p
}

func (p *Process) start(port string) {
	p.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envDir+"="+filepath.Join(p.dir, "data"), envPorts+"="+port)
	cmd.Stderr = LogWriter(p.t, "broker: ")
	out, err := cmd.StdoutPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("kafkatest: starting a broker process: %v", err)
	}
	lines := bufio.NewScanner(out)
	addr := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if a, ok := strings.CutPrefix(lines.Text(), addrLine); ok {
				addr <- a
			}
		}
	}()
	p.done = make(chan error, 1)
	go func() { p.done <- cmd.Wait() }()
	select {
	case a := <-addr:
		if p.Addr != "" && a != p.Addr {
			p.t.Fatalf("kafkatest: the broker came back on %s, not %s", a, p.Addr)
		}
		p.Addr, p.cmd = a, cmd
	case err := <-p.done:
		p.t.Fatalf("kafkatest: the broker process ended before listening: %v", err)
	case <-time.After(Wait):
		cmd.Process.Kill()
		p.t.Fatalf("kafkatest: the broker process did not listen within %v", Wait)
	}
}

// Restart stops the broker gracefully (SIGTERM: it saves its data) and
// starts it again from its data, on the same port.
func (p *Process) Restart() {
	p.t.Helper()
	p.Stop()
	p.StartAgain()
}

// StartAgain starts a broker that Stop stopped, from its data, on the
// same port: a test may act between the two while the broker is away.
func (p *Process) StartAgain() {
	p.t.Helper()
	_, port, _ := strings.Cut(p.Addr, ":")
	p.start(port)
}

// Stop stops the broker gracefully and waits for it to exit.
func (p *Process) Stop() {
	p.t.Helper()
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			p.t.Fatalf("kafkatest: the broker exited with %v", err)
		}
	case <-time.After(Wait):
		p.t.Fatalf("kafkatest: the broker did not stop within %v of SIGTERM", Wait)
	}
	p.cmd = nil
}

// Kill kills the broker (SIGKILL) and waits for it.
func (p *Process) Kill() {
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Kill()
	<-p.done
	p.cmd = nil
}

// waitSignal waits for SIGTERM or SIGINT.
func waitSignal() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
}
