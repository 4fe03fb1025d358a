// Command kafkabench measures `cuckoo dedup --kafka` on a kfake broker in
// one run and prints the table of docs/benchmarks.md ("Kafka dedup"):
//
//   - throughput: the time from start to caught up (the group's committed
//     offsets at the end of every input partition), the CPU time, and the
//     time spent ready to run but waiting for a CPU (it, and the broker),
//     of
//     `cuckoo dedup --kafka` and of a transactional pass-through copy of
//     the same topic (franz-go's GroupTransactSession, one transaction per
//     poll, the client's defaults but for the fetch settings, which are the
//     processor's), in interleaved rounds; and the output's check against
//     the exact rule (duplicates let through, records dropped wrongly);
//   - memory: the resident size of `cuckoo dedup --kafka` at its peak
//     (VmHWM) over a run that ends caught up with 10⁷ distinct keys in its
//     window, and once caught up, against its filters' size; and the heap
//     live after each collection (GODEBUG=gctrace=1);
//   - restart: the same processor killed (SIGKILL) with that state, then
//     started again with new records waiting: the time to its first output
//     record, and the restores' time its --stats gives.
//
// Run it from the repository root (it builds cmd/cuckoo):
//
//	go run ./kafkadedup/internal/kafkabench
//
// Not under nice(1) when wall times are measured: a niced process gets a
// small share of the cores whenever anything else runs, and the run-queue
// waits it prints show how much of the wall time that was.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/kafkadedup"
)

var (
	records    = flag.Int("records", 1_000_000, "records of the throughput runs (0: skip them)")
	repeats    = flag.Float64("repeats", 0.3, "share of the throughput records that repeat an earlier key")
	rounds     = flag.Int("rounds", 3, "interleaved rounds of the throughput runs")
	memKeys    = flag.Int("keys", 10_000_000, "distinct keys of the memory and restart runs (0: skip them)")
	partitions = flag.Int("partitions", 4, "partitions of every topic")
	valueSize  = flag.Int("value", 100, "bytes of each record's value")
	fetchBytes = flag.Int("fetch", kafkadedup.DefaultFetchBytes, "the processor's --fetch-bytes, whose fetch sizes the pass-through takes too")
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "passthrough" {
		fetch, err := strconv.Atoi(os.Args[6])
		check(err)
		share, err := strconv.Atoi(os.Args[7])
		check(err)
		passThrough(os.Args[2], os.Args[3], os.Args[4], os.Args[5], int32(fetch), int32(share))
		return
	}
	flag.Parse()
	dir, err := os.MkdirTemp("", "kafkabench-")
	check(err)
	defer os.RemoveAll(dir)
	cuckoo := filepath.Join(dir, "cuckoo")
	out, err := exec.Command("go", "build", "-o", cuckoo, "./cmd/cuckoo").CombinedOutput()
	if err != nil {
		fail("go build ./cmd/cuckoo (run from the repository root): %v\n%s", err, out)
	}
	self, err := os.Executable()
	check(err)
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	check(err)
	defer c.Close()
	addr := c.ListenAddrs()[0]
	fmt.Printf("kafkabench: %s, %d partitions, kfake broker in this process at %s; load average %s\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), *partitions, addr, loadAverage())

	if *records > 0 {
		throughput(addr, cuckoo, self)
	}
	if *memKeys > 0 {
		memoryAndRestart(addr, cuckoo)
	}
}

// throughput writes the input, runs the pass-through and the dedup in
// interleaved rounds, and checks the dedup's output.
func throughput(addr, cuckoo, self string) {
	createTopic(addr, "in")
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, *records)
	distinct := 0
	for i := range keys {
		if i > 0 && rng.Float64() < *repeats {
			keys[i] = keys[rng.IntN(i)]
			continue
		}
		keys[i] = fmt.Appendf(nil, "event-%012d", distinct)
		distinct++
	}
	produce(addr, "in", keys)
	fmt.Printf("throughput input: %d records, %d distinct keys (%d repeats), %d-byte values\n", len(keys), distinct, len(keys)-distinct, *valueSize)
	var pt, dd []runCost
	for r := range *rounds {
		name := fmt.Sprint(r)
		createTopic(addr, "pt"+name)
		createTopic(addr, "dd"+name)
		// Alternate which runs first.
		runs := []func(){
			func() {
				pt = append(pt, timeToCaughtUp(addr, "pt"+name, exec.Command(self, "passthrough", addr, "pt"+name, "in", "pt"+name,
					fmt.Sprint(*fetchBytes), fmt.Sprint(min(*fetchBytes, max(*fetchBytes / *partitions, 64<<10))))))
			},
			func() {
				dd = append(dd, timeToCaughtUp(addr, "dd"+name, exec.Command(cuckoo, "dedup", "--kafka", addr, "--from", "in", "--to", "dd"+name,
					"--group", "dd"+name, "--window", "24h", "--capacity", fmt.Sprint(2*distinct / *partitions),
					"--fetch-bytes", fmt.Sprint(*fetchBytes), "-q")))
			},
		}
		if r%2 == 1 {
			runs[0], runs[1] = runs[1], runs[0]
		}
		for _, run := range runs {
			run()
		}
		fmt.Printf("round %d: pass-through %.2f s, dedup %.2f s: ratio %.2f\n", r, pt[r].wall.Seconds(), dd[r].wall.Seconds(),
			dd[r].wall.Seconds()/pt[r].wall.Seconds())
	}
	for _, m := range []struct {
		what string
		of   func(runCost) time.Duration
	}{
		{"start to caught up", func(c runCost) time.Duration { return c.wall }},
		{"CPU of the process", func(c runCost) time.Duration { return c.cpu }},
		{"CPU of the broker", func(c runCost) time.Duration { return c.broker }},
		{"waits for a CPU, process and broker", func(c runCost) time.Duration { return c.cpuWait + c.brokerWait }},
	} {
		mpt, mdd := medianOf(pt, m.of), medianOf(dd, m.of)
		ratios := make([]float64, len(pt))
		for i := range pt {
			ratios[i] = m.of(dd[i]).Seconds() / m.of(pt[i]).Seconds()
		}
		slices.Sort(ratios)
		fmt.Printf("%s: pass-through median %.2f s, dedup median %.2f s: ratio of the medians %.2f, median of the rounds' ratios %.2f\n",
			m.what, mpt.Seconds(), mdd.Seconds(), mdd.Seconds()/mpt.Seconds(), ratios[len(ratios)/2])
	}

	// Every key is within the window (24 h) of its first record: the rule
	// keeps each key's first record and nothing else.
	seen := map[string]int{}
	for _, r := range readAll(addr, "dd0") {
		seen[string(r.Key)]++
	}
	twice := 0
	for _, n := range seen {
		if n > 1 {
			twice++
		}
	}
	dropped := distinct - len(seen)
	fmt.Printf("dedup output: %d records; keys let through twice: %d; kept-worthy records dropped: %d of %d (%.2g; rate asked 1e-4)\n",
		len(seen), twice, dropped, distinct, float64(dropped)/float64(distinct))
}

// memoryAndRestart runs the dedup over memKeys distinct keys, reads its
// resident size when caught up, kills it, and times its restart.
func memoryAndRestart(addr, cuckoo string) {
	createTopic(addr, "big")
	createTopic(addr, "big-out")
	keys := make([][]byte, *memKeys)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "user-%012d", i)
	}
	*valueSize = 16
	produce(addr, "big", keys)
	keys = nil
	capacity := fmt.Sprint(*memKeys / *partitions * 21 / 20) // 5 % above a partition's share
	args := []string{"dedup", "--kafka", addr, "--from", "big", "--to", "big-out", "--group", "big", "--window", "24h",
		"--capacity", capacity, "--instance", "bench", "--fetch-bytes", fmt.Sprint(*fetchBytes), "-q"}
	cmd := exec.Command(cuckoo, args...)
	// The collector's trace tells the heap live after each collection.
	cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1")
	stderr, err := cmd.StderrPipe()
	check(err)
	start := time.Now()
	check(cmd.Start())
	live := make(chan gcLive, 1)
	go func() { live <- drainGC(stderr) }()
	// The resident size, sampled while the processor works: the largest,
	// and when.
	var peak uint64
	var peakAt time.Duration
	sampled := make(chan struct{})
	caughtUp := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-caughtUp:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if rss := status(cmd.Process.Pid, "VmRSS"); rss > peak {
				peak, peakAt = rss, time.Since(start)
			}
		}
	}()
	waitCaughtUp(addr, "big", "big")
	elapsed := time.Since(start)
	close(caughtUp)
	<-sampled
	fmt.Printf("memory: the largest resident size sampled (every 0.1 s) was %s, %.1f s into the run\n", mib(peak), peakAt.Seconds())
	rss, hwm := status(cmd.Process.Pid, "VmRSS"), status(cmd.Process.Pid, "VmHWM")
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	gc := <-live
	fmt.Printf("memory: %d collections; the largest heap live after one %s, the largest goal %s\n", gc.collections, mib(gc.maxLive), mib(gc.maxGoal))
	// The filters: as many windows as partitions, of capacity keys each.
	filterBytes := windowBytes(capacity)
	fmt.Printf("memory: %d distinct keys in %.1f s; resident %s (peak %s); filters %s (%.2f bytes a key in the window); resident − filters %s\n",
		*memKeys, elapsed.Seconds(), mib(rss), mib(hwm), mib(filterBytes), float64(filterBytes)/float64(*memKeys), mib(rss-filterBytes))

	// Restart: new records wait; the time to the first of them written.
	fresh := make([][]byte, 1000)
	for i := range fresh {
		fresh[i] = fmt.Appendf(nil, "new-%d", i)
	}
	produce(addr, "big", fresh)
	before := endOffsets(addr, "big-out")
	cmd = exec.Command(cuckoo, append(args, "--stats")...)
	var restartErr strings.Builder
	cmd.Stdout, cmd.Stderr = os.Stderr, &restartErr
	start = time.Now()
	check(cmd.Start())
	for endOffsets(addr, "big-out") == before {
		time.Sleep(10 * time.Millisecond)
		if time.Since(start) > 10*time.Minute {
			fail("the restarted processor wrote nothing in 10 minutes")
		}
	}
	fmt.Printf("restart: killed with %d keys in its window, back to writing in %.2f s (the group's rejoin and the transaction's fencing included)\n",
		*memKeys, time.Since(start).Seconds())
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	// Its --stats: the restores' time and what they replayed.
	for _, line := range strings.Split(restartErr.String(), "\n") {
		if strings.Contains(line, " restored in ") {
			fmt.Printf("restart: %s\n", strings.TrimPrefix(line, "cuckoo dedup: "))
		}
	}
}

// windowBytes is the memory of the processor's filters: one window of
// capacity keys at the default rate per partition, as `cuckoo dedup
// --kafka` makes them (its --stats line says the same of the live ones).
func windowBytes(capacity string) uint64 {
	n, err := strconv.ParseUint(capacity, 10, 64)
	check(err)
	return uint64(*partitions) * windowSize(n)
}

// passThrough is the baseline: a transactional copy of one topic to
// another with a GroupTransactSession, one transaction per poll, with the
// client's defaults but for the fetch settings, which are those `cuckoo
// dedup --kafka` takes when it owns every partition of the input (see
// kafkadedup.WithFetchBytes): fetch bytes in all, share a partition (an
// even share of them, at least 64 KiB), and the fetch's wait
// (kafkadedup.DefaultFetchMaxWait).
func passThrough(addr, group, from, to string, fetch, share int32) {
	s, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(from),
		kgo.TransactionalID("passthrough-"+group), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(kafkadedup.DefaultFetchMaxWait),
		kgo.FetchMaxBytes(fetch), kgo.FetchMaxPartitionBytes(share))
	check(err)
	defer s.Close()
	// Where the time goes, printed on SIGTERM: waiting in PollFetches,
	// copying the records into the transaction, ending it.
	var polling, copying, ending time.Duration
	var txns, copied int
	stopped, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ctx := context.Background()
	for {
		t0 := time.Now()
		fs := s.PollFetches(stopped)
		if stopped.Err() != nil {
			fmt.Fprintf(os.Stderr, "  pass-through: %d records in %d transactions: %.2f s in PollFetches, %.2f s copying, %.2f s ending transactions\n",
				copied, txns, polling.Seconds(), copying.Seconds(), ending.Seconds())
			return
		}
		if err := fs.Err0(); err != nil {
			fail("pass-through: %v", err)
		}
		t1 := time.Now()
		check(s.Begin())
		fs.EachRecord(func(r *kgo.Record) {
			s.Produce(ctx, &kgo.Record{Topic: to, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}, nil)
		})
		t2 := time.Now()
		if _, err := s.End(ctx, kgo.TryCommit); err != nil {
			fail("pass-through: %v", err)
		}
		polling, copying, ending = polling+t1.Sub(t0), copying+t2.Sub(t1), ending+time.Since(t2)
		txns, copied = txns+1, copied+fs.NumRecords()
	}
}

// runCost is where the wall-clock time of one run went: the CPU time the
// process under test and the broker used, and the time their threads
// were ready to run but waited for a CPU (the run-queue wait that a busy
// machine, or nice(1), adds). What is left of the wall time beyond them
// is time both spent blocked: on each other's round trips, or on timers.
type runCost struct {
	wall, cpu, cpuWait, broker, brokerWait time.Duration
}

// timeToCaughtUp starts cmd and returns the time until the group's
// committed offsets reach the end of the input, then stops it; and what
// the process and the broker (this process) spent meanwhile, which a busy
// machine does not stretch (CPU) or does (run-queue waits).
func timeToCaughtUp(addr, group string, cmd *exec.Cmd) runCost {
	drainCmd(cmd)
	brokerRun, brokerWait := schedStat(os.Getpid())
	start := time.Now()
	check(cmd.Start())
	waitCaughtUp(addr, group, "in")
	c := runCost{wall: time.Since(start), cpu: cpuTime(cmd.Process.Pid)}
	_, c.cpuWait = schedStat(cmd.Process.Pid)
	run, wait := schedStat(os.Getpid())
	c.broker, c.brokerWait = run-brokerRun, wait-brokerWait
	// SIGTERM: the pass-through prints where its time went and exits;
	// the processor finishes its transaction and exits.
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	fmt.Printf("  %s: %.2f s; the process %.2f s of CPU, %.2f s waiting for a CPU; the broker %.2f s of CPU, %.2f s waiting for a CPU\n",
		group, c.wall.Seconds(), c.cpu.Seconds(), c.cpuWait.Seconds(), c.broker.Seconds(), c.brokerWait.Seconds())
	return c
}

// schedStat returns the time the threads of process pid have run on a
// CPU and waited on a run queue, from /proc/pid/task/*/schedstat (Linux's
// scheduler statistics, in nanoseconds; threads that have ended are not
// counted, and Go's rarely end). The benchmark's own process is the
// broker's, and counts the benchmark's own polling too, a small part.
func schedStat(pid int) (run, wait time.Duration) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	check(err)
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		r, err1 := strconv.ParseInt(f[0], 10, 64)
		w, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 == nil && err2 == nil {
			run, wait = run+time.Duration(r), wait+time.Duration(w)
		}
	}
	return run, wait
}

// cpuTime returns the user and system time of process pid, from /proc.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	check(err)
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, err := strconv.ParseUint(f[11], 10, 64)
	check(err)
	stime, err := strconv.ParseUint(f[12], 10, 64)
	check(err)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

func waitCaughtUp(addr, group, topic string) {
	adm := admin(addr)
	ctx := context.Background()
	ends, err := adm.ListEndOffsets(ctx, topic)
	check(err)
	for {
		committed, err := adm.FetchOffsetsForTopics(ctx, group, topic)
		if err == nil {
			done := true
			ends.Each(func(o kadm.ListedOffset) {
				if c, ok := committed.Lookup(o.Topic, o.Partition); !ok || c.At < o.Offset {
					done = false
				}
			})
			if done {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func endOffsets(addr, topic string) int64 {
	ends, err := admin(addr).ListEndOffsets(context.Background(), topic)
	check(err)
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}

var admins = map[string]*kadm.Client{}

func admin(addr string) *kadm.Client {
	if a := admins[addr]; a != nil {
		return a
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	check(err)
	admins[addr] = kadm.NewClient(cl)
	return admins[addr]
}

func createTopic(addr, topic string) {
	_, err := admin(addr).CreateTopic(context.Background(), int32(*partitions), -1, map[string]*string{"retention.ms": ptr("-1")}, topic)
	check(err)
}

func ptr(s string) *string { return &s }

// produce writes one record per key, with timestamps 1 ms apart ending
// now, placed by the default partitioner. The values are random letters
// and digits, which compress about as well as event data (by a third), so
// that a fetch's records take in memory what they would.
func produce(addr, topic string, keys [][]byte) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(1<<16))
	check(err)
	defer cl.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	arena := make([]byte, len(keys)**valueSize)
	for i := range arena {
		arena[i] = alphabet[rng.IntN(len(alphabet))]
	}
	ctx := context.Background()
	first := time.Now().Add(-time.Duration(len(keys)) * time.Millisecond)
	errs := make(chan error, 1)
	for i, k := range keys {
		value := arena[i**valueSize : (i+1)**valueSize]
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: k, Value: value, Timestamp: first.Add(time.Duration(i) * time.Millisecond)},
			func(_ *kgo.Record, err error) {
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			})
	}
	check(cl.Flush(ctx))
	select {
	case err := <-errs:
		fail("producing: %v", err)
	default:
	}
}

func readAll(addr, topic string) []*kgo.Record {
	ends, err := admin(addr).ListEndOffsets(context.Background(), topic)
	check(err)
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	check(err)
	defer cl.Close()
	var all []*kgo.Record
	for len(want) > 0 {
		fs := cl.PollFetches(context.Background())
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				all = append(all, r)
			}
			if r.Offset+1 >= want[r.Partition] {
				delete(want, r.Partition)
			}
		})
	}
	return all
}

// status reads a field of /proc/pid/status, in bytes.
func status(pid int, field string) uint64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	check(err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			check(err)
			return kb << 10
		}
	}
	fail("no %s in /proc/%d/status", field, pid)
	return 0
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// medianOf returns the median of of(c) over cs.
func medianOf(cs []runCost, of func(runCost) time.Duration) time.Duration {
	s := make([]time.Duration, len(cs))
	for i, c := range cs {
		s[i] = of(c)
	}
	slices.Sort(s)
	return s[len(s)/2]
}

// drainCmd sends what cmd prints to standard error.
func drainCmd(cmd *exec.Cmd) {
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
}

// windowSize is the memory of a window of n keys at the default rate.
func windowSize(n uint64) uint64 {
	w, err := cuckoo.NewWindow(n, 24*time.Hour, cuckoo.WithFalsePositiveRate(1e-4))
	check(err)
	return w.SizeInBytes()
}

// gcLive is what a process's GODEBUG=gctrace=1 lines say.
type gcLive struct {
	collections      int
	maxLive, maxGoal uint64 // bytes
}

// drainGC reads what a process prints on standard error until it ends,
// passing on all but its collector's trace lines ("gc 7 @1.2s 3%: …,
// 80->81->40 MB, 82 MB goal, …"), whose live heaps (40) and goals (82) it
// returns the largest of.
func drainGC(r interface{ Read([]byte) (int, error) }) gcLive {
	var g gcLive
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "gc ") {
			fmt.Fprintln(os.Stderr, line)
			continue
		}
		g.collections++
		for _, part := range strings.Split(line, ", ") {
			switch f := strings.Fields(part); {
			case len(f) == 2 && f[1] == "MB" && strings.Count(f[0], "->") == 2:
				heaps := strings.Split(f[0], "->")
				if mb, err := strconv.ParseFloat(heaps[2], 64); err == nil {
					g.maxLive = max(g.maxLive, uint64(mb*(1<<20)))
				}
			case len(f) == 3 && f[1] == "MB" && f[2] == "goal":
				if mb, err := strconv.ParseFloat(f[0], 64); err == nil {
					g.maxGoal = max(g.maxGoal, uint64(mb*(1<<20)))
				}
			}
		}
	}
	return g
}

func check(err error) {
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kafkabench: "+format+"\n", args...)
	os.Exit(1)
}
