// Command serverbench measures `cuckoo serve` against Debian's redis-server
// on the same machine, in one run, and prints the tables of
// docs/benchmarks.md ("The server"): redis-benchmark throughput of CF.ADD
// and CF.EXISTS against SADD and SISMEMBER (50 clients, random keys,
// unpipelined and with -P 16), in interleaved rounds, with medians and
// ratios; and the memory (INFO memory) after the same 10 million keys are
// added to a cuckoo filter at 0.1 % and to a Redis set.
//
// Run it from the repository root (it builds cmd/cuckoo):
//
//	nice go run ./server/internal/serverbench -rounds 3
//
// It needs redis-server and redis-benchmark (apt-get install -y
// redis-server redis-tools).
package main

import (
	"bufio"
	"cmp"
	"encoding/csv"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

var (
	rounds    = flag.Int("rounds", 3, "interleaved rounds of the throughput runs")
	requests  = flag.Int("n", 200_000, "requests per unpipelined run")
	pipelined = flag.Int("np", 2_000_000, "requests per pipelined run")
	keyspace  = flag.Int("keys", 1_000_000, "random keys (redis-benchmark -r)")
	clients   = flag.Int("c", 50, "clients")
	memKeys   = flag.Int("mem", 10_000_000, "keys of the memory comparison (0: skip it)")
	skipTput  = flag.Bool("skip-throughput", false, "run only the memory comparison")
	pin       = flag.Bool("pin", false, "per core: every server on CPU 0 (cuckoo with --threads 1), redis-benchmark on CPU 1 (taskset), unpipelined; server CPU per request from /proc")
	baseline  = flag.String("baseline", "", "with -pin, also measure this cuckoo `binary` (an earlier build) in the same rounds")
	extraArgs = flag.String("args", "", "more `flags` for the cuckoo serve under test, not the baseline (\"--metrics 127.0.0.1:0\")")
)

// server is a server under test.
type server struct {
	name string
	cmd  *exec.Cmd
	port int
}

// cpuTime returns the CPU time the server's process has used (user and
// system), from /proc: what a request costs a server however busy the
// rest of the machine is.
func (s *server) cpuTime() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	check(err)
	// The fields after the command name (which is in parentheses).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "serverbench:", err)
		os.Exit(1)
	}
}

func start(name string, port int, argv ...string) *server {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = nil, nil
	check(cmd.Start())
	s := &server{name: name, cmd: cmd, port: port}
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", fmt.Sprint("127.0.0.1:", port)); err == nil {
			c.Close()
			return s
		}
		if i > 200 {
			check(fmt.Errorf("%s did not start", name))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func (s *server) stop() {
	s.cli("SHUTDOWN", "NOSAVE")
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

// cli runs one command with redis-cli and returns its output.
func (s *server) cli(args ...string) string {
	out, _ := exec.Command("redis-cli", append([]string{"-p", strconv.Itoa(s.port)}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out))
}

// info returns a field of INFO.
func (s *server) info(section, field string) int64 {
	for _, line := range strings.Split(s.cli("INFO", section), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}

// bench runs redis-benchmark and returns the requests per second.
func (s *server) bench(n, pipeline int, command ...string) float64 {
	args := []string{"-p", strconv.Itoa(s.port), "-c", strconv.Itoa(*clients), "-n", strconv.Itoa(n),
		"-r", strconv.Itoa(*keyspace), "-P", strconv.Itoa(pipeline), "--csv"}
	argv := append([]string{"redis-benchmark"}, append(args, command...)...)
	if *pin {
		argv = append([]string{"taskset", "-c", "1"}, argv...)
	}
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	check(err)
	rows, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	check(err)
	if len(rows) < 2 {
		check(fmt.Errorf("redis-benchmark printed %q", out))
	}
	rps, err := strconv.ParseFloat(rows[len(rows)-1][1], 64)
	check(err)
	return rps
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func main() {
	flag.Parse()
	for _, tool := range []string{"redis-server", "redis-benchmark", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			check(fmt.Errorf("%s is not installed: apt-get install -y redis-server redis-tools", tool))
		}
	}
	tmp, err := os.MkdirTemp("", "serverbench")
	check(err)
	defer os.RemoveAll(tmp)
	cuckoo := filepath.Join(tmp, "cuckoo-binary")
	build := exec.Command("go", "build", "-o", cuckoo, "./cmd/cuckoo")
	build.Stderr = os.Stderr
	check(build.Run())
	version, _ := exec.Command("redis-server", "--version").Output()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("Run %s, %d CPUs (%s), load average %s; %s",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), cpuModel(), strings.Join(strings.Fields(string(load))[:3], " "), version)
	fmt.Printf("Command: nice go run ./server/internal/serverbench %s\n\n", strings.Join(os.Args[1:], " "))

	pinned := func(argv []string) []string {
		if *pin {
			return append([]string{"taskset", "-c", "0"}, argv...)
		}
		return argv
	}
	newRedis := func(name string, extra ...string) *server {
		port := freePort()
		dir := filepath.Join(tmp, name)
		check(os.MkdirAll(dir, 0o755))
		return start(name, port, pinned(append([]string{"redis-server", "--port", strconv.Itoa(port), "--dir", dir, "--logfile", filepath.Join(dir, "log")}, extra...))...)
	}
	newCuckooOf := func(bin, name string, extra ...string) *server {
		port := freePort()
		return start(name, port, pinned(append([]string{bin, "serve", "--port", strconv.Itoa(port), "--dir", filepath.Join(tmp, name), "--save-on-shutdown", "no"}, extra...))...)
	}
	newCuckoo := func(name string, extra ...string) *server {
		return newCuckooOf(cuckoo, name, append(extra, strings.Fields(*extraArgs)...)...)
	}
	switch {
	case *pin:
		perCore(newRedis, newCuckooOf, cuckoo)
	case !*skipTput:
		throughput(newRedis, newCuckoo)
	}
	if *memKeys > 0 {
		memory(newRedis, newCuckoo)
	}
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "model name\t: "); ok {
			return v
		}
	}
	return runtime.GOARCH
}

// A test is one redis-benchmark command line, on each server.
type test struct {
	name     string
	pipeline int
	redis    []string
	cuckoo   []string
}

// redis0 names the Redis command of a test, or says why there is none.
func (t test) redis0() string {
	if t.redis == nil {
		return "– (" + strings.TrimPrefix(t.name, "add, ") + ")"
	}
	return t.redis[0]
}

// comparedTests are the operations both servers run: CF.ADD against
// SADD and CF.EXISTS against SISMEMBER, unpipelined and with -P 16.
var comparedTests = []test{
	{"add", 1, []string{"SADD", "set", "__rand_int__"}, []string{"CF.ADD", "cf", "__rand_int__"}},
	{"exists", 1, []string{"SISMEMBER", "set", "__rand_int__"}, []string{"CF.EXISTS", "cf", "__rand_int__"}},
	{"add", 16, []string{"SADD", "set", "__rand_int__"}, []string{"CF.ADD", "cf", "__rand_int__"}},
	{"exists", 16, []string{"SISMEMBER", "set", "__rand_int__"}, []string{"CF.EXISTS", "cf", "__rand_int__"}},
}

// reset empties the server, and reserves a cuckoo server's filter.
func (s *server) reset() {
	s.cli("FLUSHALL")
	if strings.HasPrefix(s.name, "cuckoo") {
		s.cli("CF.RESERVE", "cf", "2000000")
	}
}

// argv returns the server's command line of test t.
func (s *server) argv(t test) []string {
	if strings.HasPrefix(s.name, "cuckoo") {
		return t.cuckoo
	}
	return t.redis
}

func stopAll(servers []*server) {
	for _, s := range servers {
		s.stop()
	}
}

func throughput(newRedis func(string, ...string) *server, newCuckoo func(string, ...string) *server) {
	servers := []*server{
		newRedis("redis-default"),
		newRedis("redis-aof", "--appendonly", "yes", "--appendfsync", "everysec"),
		newCuckoo("cuckoo"),
		newCuckoo("cuckoo-1thread", "--threads", "1"),
	}
	defer stopAll(servers)
	tests := append(comparedTests[:len(comparedTests):len(comparedTests)],
		test{"add, filter created by CF.ADD; a quarter of the requests", 16, nil, []string{"CF.ADD", "auto", "__rand_int__"}})
	results := map[string][]float64{} // server/test -> rps per round
	for round := range *rounds {
		for i := range servers {
			s := servers[(i+round)%len(servers)] // a different server first each round
			s.reset()
			for _, t := range tests {
				argv := s.argv(t)
				if argv == nil {
					continue
				}
				n := *requests
				if t.pipeline > 1 {
					n = *pipelined
				}
				if t.redis == nil {
					n /= 4
				}
				rps := s.bench(n, t.pipeline, argv...)
				key := fmt.Sprintf("%s|%s|%d", s.name, t.name, t.pipeline)
				results[key] = append(results[key], rps)
				fmt.Fprintf(os.Stderr, "round %d %-14s %-32s -P %-2d %10.0f/s\n", round+1, s.name, strings.Join(argv, " "), t.pipeline, rps)
			}
		}
	}
	fmt.Printf("Throughput, requests per second, median of %d interleaved rounds (%d clients, keys from %d random integers; %d requests per unpipelined run, %d with -P 16). Ratio: median over rounds of cuckoo / redis in the same round.\n\n",
		*rounds, *clients, *keyspace, *requests, *pipelined)
	fmt.Println("| operation | pipeline | redis-server (defaults) | redis-server (appendonly everysec) | cuckoo serve (defaults) | cuckoo serve --threads 1 | ratio, defaults to defaults | ratio, --threads 1 to defaults | ratio, defaults to appendonly |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, t := range tests {
		get := func(name string) []float64 { return results[fmt.Sprintf("%s|%s|%d", name, t.name, t.pipeline)] }
		ours, one := get("cuckoo"), get("cuckoo-1thread")
		ratio := func(ours, base []float64) string {
			if len(base) == 0 {
				return "–"
			}
			var r []float64
			for i := range ours {
				r = append(r, ours[i]/base[i])
			}
			return fmt.Sprintf("%.2f", median(r))
		}
		cell := func(xs []float64) string {
			if len(xs) == 0 {
				return "–"
			}
			return fmt.Sprintf("%.0f", median(xs))
		}
		label := t.cuckoo[0] + " vs " + t.redis0()
		fmt.Printf("| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", label, t.pipeline,
			cell(get("redis-default")), cell(get("redis-aof")), cell(ours), cell(one),
			ratio(ours, get("redis-default")), ratio(one, get("redis-default")), ratio(ours, get("redis-aof")))
	}
	fmt.Println()
}

// memory adds the same keys to a Redis set and to a cuckoo filter at
// 0.1 %, pipelined over one connection, and compares INFO memory.
func memory(newRedis func(string, ...string) *server, newCuckoo func(string, ...string) *server) {
	r := newRedis("redis-mem")
	c := newCuckoo("cuckoo-mem")
	defer r.stop()
	defer c.stop()
	c.cli("CF.RESERVE", "mem", strconv.Itoa(*memKeys), "FPR", "0.001")
	for _, s := range []*server{r, c} {
		load(s, s == c)
	}
	type row struct{ used, rss, items int64 }
	rr := row{r.info("memory", "used_memory"), r.info("memory", "used_memory_rss"), 0}
	rr.items, _ = strconv.ParseInt(r.cli("SCARD", "mem"), 10, 64)
	cr := row{c.info("memory", "used_memory"), c.info("memory", "used_memory_rss"), 0}
	cfSize := c.cli("CF.INFO", "mem")
	fmt.Printf("Memory after adding the same %d random 12-digit keys (INFO memory; used_memory is the allocator's live bytes, the Go heap for cuckoo; RSS the resident set):\n\n", *memKeys)
	fmt.Println("| server | structure | used_memory | used_memory_rss | bytes per key (used) |")
	fmt.Println("|---|---|---:|---:|---:|")
	mb := func(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
	fmt.Printf("| redis-server | set (SADD), %d members | %s | %s | %.1f |\n", rr.items, mb(rr.used), mb(rr.rss), float64(rr.used)/float64(*memKeys))
	fmt.Printf("| cuckoo serve | cuckoo filter (CF.RESERVE mem %d FPR 0.001, CF.ADD) | %s | %s | %.1f |\n", *memKeys, mb(cr.used), mb(cr.rss), float64(cr.used)/float64(*memKeys))
	fmt.Printf("\nRatio cuckoo / redis: used_memory %.3f (1/%.0f), RSS %.3f (1/%.0f). CF.INFO: %s\n\n",
		float64(cr.used)/float64(rr.used), float64(rr.used)/float64(cr.used), float64(cr.rss)/float64(rr.rss), float64(rr.rss)/float64(cr.rss),
		strings.Join(strings.Fields(cfSize), " "))
}

// load pipelines the keys to s over one connection: SADD for Redis,
// CF.ADD for cuckoo. The keys are the same for both (a fixed seed).
func load(s *server, cf bool) {
	nc, err := net.Dial("tcp", fmt.Sprint("127.0.0.1:", s.port))
	check(err)
	defer nc.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	cmd, key := "SADD", "mem"
	if cf {
		cmd = "CF.ADD"
	}
	done := make(chan error, 1)
	go func() {
		br := bufio.NewReaderSize(nc, 1<<16)
		for range *memKeys {
			line, err := br.ReadString('\n')
			if err != nil {
				done <- err
				return
			}
			if line[0] == '-' {
				done <- fmt.Errorf("%s: %s", cmd, line)
				return
			}
		}
		done <- nil
	}()
	w := bufio.NewWriterSize(nc, 1<<16)
	for range *memKeys {
		item := fmt.Sprintf("%012d", rng.Uint64N(1e12))
		fmt.Fprintf(w, "*3\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(cmd), cmd, len(key), key, len(item), item)
	}
	check(w.Flush())
	check(<-done)
}

// perCore compares the servers on one core each: redis-server (its
// defaults: one thread) and cuckoo serve --threads 1 (its defaults
// otherwise: the append-only log, fsynced every second), each pinned to
// CPU 0 while redis-benchmark runs on CPU 1, unpipelined, in interleaved
// rounds. Besides the requests per second it reports the CPU time the
// server's process spent per request, which a shared machine disturbs
// less than the throughput.
func perCore(newRedis func(string, ...string) *server, newCuckooOf func(string, string, ...string) *server, cuckoo string) {
	servers := []*server{newRedis("redis"), newCuckooOf(cuckoo, "cuckoo", append([]string{"--threads", "1"}, strings.Fields(*extraArgs)...)...)}
	if *baseline != "" {
		servers = append(servers, newCuckooOf(*baseline, "cuckoo-baseline", "--threads", "1"))
	}
	defer stopAll(servers)
	tests := comparedTests
	type result struct{ rps, cpu []float64 } // cpu: µs per request
	results := map[string]*result{}
	for round := range *rounds {
		for i := range servers {
			s := servers[(i+round)%len(servers)]
			s.reset()
			for _, t := range tests {
				argv := s.argv(t)
				n := *requests
				if t.pipeline > 1 {
					n = *pipelined
				}
				before := s.cpuTime()
				rps := s.bench(n, t.pipeline, argv...)
				cpu := float64((s.cpuTime() - before).Microseconds()) / float64(n)
				key := fmt.Sprintf("%s|%s|%d", s.name, t.name, t.pipeline)
				if results[key] == nil {
					results[key] = &result{}
				}
				results[key].rps = append(results[key].rps, rps)
				results[key].cpu = append(results[key].cpu, cpu)
				fmt.Fprintf(os.Stderr, "round %d %-16s %-28s -P %-2d %9.0f/s %6.2f µs CPU/request\n", round+1, s.name, strings.Join(argv, " "), t.pipeline, rps, cpu)
			}
		}
	}
	fmt.Printf("Per core: every server pinned to CPU 0 (taskset -c 0; cuckoo serve --threads 1), redis-benchmark on CPU 1 (-c %d, %d requests unpipelined, %d with -P 16, keys from %d random integers), %d interleaved rounds, medians. CPU: the server process's user+system time per request (/proc, 10 ms ticks). Ratios: median over rounds of cuckoo / redis in the same round (throughput: higher is faster; CPU: redis / cuckoo, higher is cheaper).\n\n",
		*clients, *requests, *pipelined, *keyspace, *rounds)
	names := []string{"cuckoo"}
	if *baseline != "" {
		names = append(names, "cuckoo-baseline")
	}
	fmt.Print("| operation | pipeline | redis-server req/s | redis CPU µs/req |")
	for _, n := range names {
		fmt.Printf(" %s req/s | %s CPU µs/req | throughput ratio | CPU ratio |", n, n)
	}
	fmt.Println()
	fmt.Print("|---|---:|---:|---:|")
	for range names {
		fmt.Print("---:|---:|---:|---:|")
	}
	fmt.Println()
	for _, t := range tests {
		r := results[fmt.Sprintf("redis|%s|%d", t.name, t.pipeline)]
		fmt.Printf("| %s vs %s | %d | %.0f | %.2f |", t.cuckoo[0], t.redis[0], t.pipeline, median(r.rps), median(r.cpu))
		for _, n := range names {
			c := results[fmt.Sprintf("%s|%s|%d", n, t.name, t.pipeline)]
			var tr, cr []float64
			for i := range c.rps {
				tr = append(tr, c.rps[i]/r.rps[i])
				cr = append(cr, r.cpu[i]/c.cpu[i])
			}
			fmt.Printf(" %.0f | %.2f | %.2f (%s) | %.2f (%s) |", median(c.rps), median(c.cpu), median(tr), spread(tr), median(cr), spread(cr))
		}
		fmt.Println()
	}
	fmt.Println()
	if *baseline == "" {
		return
	}
	fmt.Printf("This build (%s) against the baseline (%s), in the same rounds: median over rounds of the ratio, with the smallest and largest.\n\n",
		cmp.Or(*extraArgs, "no extra flags"), *baseline)
	fmt.Println("| operation | pipeline | throughput, this / baseline | CPU per request, this / baseline |")
	fmt.Println("|---|---:|---:|---:|")
	for _, t := range tests {
		c := results[fmt.Sprintf("cuckoo|%s|%d", t.name, t.pipeline)]
		b := results[fmt.Sprintf("cuckoo-baseline|%s|%d", t.name, t.pipeline)]
		var tr, cr []float64
		for i := range c.rps {
			tr = append(tr, c.rps[i]/b.rps[i])
			cr = append(cr, c.cpu[i]/b.cpu[i])
		}
		spread3 := func(xs []float64) string { return fmt.Sprintf("%.3f–%.3f", slices.Min(xs), slices.Max(xs)) }
		fmt.Printf("| %s | %d | %.3f (%s) | %.3f (%s) |\n", t.cuckoo[0], t.pipeline, median(tr), spread3(tr), median(cr), spread3(cr))
	}
	fmt.Println()
}

// spread returns the smallest and largest of xs, as "a–b".
func spread(xs []float64) string {
	return fmt.Sprintf("%.2f–%.2f", slices.Min(xs), slices.Max(xs))
}
