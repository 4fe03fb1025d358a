package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/server"
)

// httpGet returns the status and body of a GET of url, with a timeout
// generous for a loaded machine.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	client := http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// sample returns the value of the sample of a scrape whose name and
// labels are exactly series (`cuckoo_keys{type="cuckoo"}`), or -1 when
// the scrape lacks it.
func sample(scrape, series string) float64 {
	for _, line := range strings.Split(scrape, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return -1
			}
			return f
		}
	}
	return -1
}

var metricsLine = regexp.MustCompile(`^cuckoo serve: metrics on http://(127\.0\.0\.1:\d+)/metrics, health on /healthz and /readyz\n$`)

// testRedis returns a go-redis client of addr with the tests' generous
// timeouts and no retries (a retried write would blur what was
// acknowledged). Its pipelines share the pool of its other commands
// (PipelinePoolSize -1), so a client used one command at a time holds one
// connection, which the tests of connected_clients count.
func testRedis(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 30 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, MaxRetries: -1, PipelinePoolSize: -1})
}

// TestServeMetricsFollowCommands: with --metrics, serve prints where the
// metrics are; /healthz and /readyz answer; a scrape of /metrics has the
// Go runtime's, the process's and the server's metrics, and its counters
// and histograms move with the commands a client sends.
func TestServeMetricsFollowCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd, lines, stderr := startServeLines(t, dir, 2, "--port", "0", "--dir", "data", "--metrics", "127.0.0.1:0")
	m, mm := listenLine.FindStringSubmatch(lines[0]), metricsLine.FindStringSubmatch(lines[1])
	if m == nil || mm == nil {
		t.Fatalf("output %q", lines)
	}
	base := "http://" + mm[1]
	if code, body := httpGet(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	waitUntil(t, "/readyz", func() bool { code, _ := httpGet(t, base+"/readyz"); return code == 200 })
	_, before := httpGet(t, base+"/metrics")
	for _, series := range []string{`cuckoo_keys{type="cuckoo"}`, "cuckoo_connected_clients", "go_goroutines", "process_resident_memory_bytes",
		`cuckoo_errors_total{kind="wrong_type"}`} {
		if sample(before, series) != 0 && !strings.HasPrefix(series, "go_") && !strings.HasPrefix(series, "process_") {
			t.Errorf("%s before any command: %v", series, sample(before, series))
		}
		if sample(before, series) < 0 {
			t.Errorf("the scrape lacks %s:\n%s", series, before)
		}
	}
	if !strings.Contains(before, "cuckoo_build_info{") {
		t.Errorf("the scrape lacks cuckoo_build_info")
	}

	rdb := testRedis(m[1])
	defer rdb.Close()
	ctx := context.Background()
	for i := range 30 {
		if err := rdb.CFAdd(ctx, "seen", fmt.Sprint(i)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	pipe := rdb.Pipeline()
	for i := range 40 {
		pipe.CFExists(ctx, "seen", fmt.Sprint(i))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	rdb.BFAdd(ctx, "seen", "x") // WRONGTYPE
	_, after := httpGet(t, base+"/metrics")
	for series, want := range map[string]float64{
		`cuckoo_commands_total{command="cf.add",result="ok"}`:         30,
		`cuckoo_commands_total{command="cf.exists",result="ok"}`:      40,
		`cuckoo_commands_total{command="bf.add",result="wrong_type"}`: 1,
		`cuckoo_errors_total{kind="wrong_type"}`:                      1,
		`cuckoo_keys{type="cuckoo"}`:                                  1,
		`cuckoo_filter_items{type="cuckoo"}`:                          30,
		"cuckoo_connected_clients":                                    1,
	} {
		if got := sample(after, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	// The durations are of a sample of the commands: one in 16 at random.
	timed := sample(after, `cuckoo_command_duration_seconds_count{command="cf.exists",result="ok"}`)
	if timed < 0 || timed > 40 || sample(after, `cuckoo_command_duration_seconds_bucket{command="cf.exists",result="ok",le="+Inf"}`) != timed ||
		sample(after, `cuckoo_command_duration_seconds_sum{command="cf.exists",result="ok"}`) < 0 ||
		sample(after, "cuckoo_log_size_bytes") <= 0 || sample(after, "cuckoo_log_fsync_duration_seconds_count") < 0 {
		t.Errorf("durations, the log's size or its fsyncs missing:\n%s", after)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExitWithin(t, cmd, 2*time.Minute); code != 0 {
		t.Fatalf("exit status %d after SIGTERM\n%s", code, stderr)
	}
}

// TestOpsReadiness: /readyz is 503 while the data directory loads and
// until the server accepts connections, 200 while it does, and 503 again
// once it stops; /healthz is 200 throughout.
func TestOpsReadiness(t *testing.T) {
	t.Parallel()
	ops, err := startOps("127.0.0.1:0", t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer ops.close()
	base := "http://" + ops.addr().String()
	check := func(when string, want int, wantBody string) {
		t.Helper()
		code, body := httpGet(t, base+"/readyz")
		if code != want || !strings.Contains(body, wantBody) {
			t.Fatalf("%s: /readyz %d %q, want %d %q", when, code, body, want, wantBody)
		}
		if code, body := httpGet(t, base+"/healthz"); code != 200 || body != "ok\n" {
			t.Fatalf("%s: /healthz %d %q", when, code, body)
		}
	}
	check("loading", 503, "loading the data directory")
	cfg := server.DefaultConfig()
	cfg.Dir = ""
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ops.serve(srv)
	check("loaded, not serving yet", 503, "not accepting connections")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	waitUntil(t, "the server to serve", func() bool { return srv.Addr() != nil })
	check("serving", 200, "ready")
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, server.ErrClosed) {
		t.Fatal(err)
	}
	check("stopped", 503, "not accepting connections")
	if code, _ := httpGet(t, base+"/metrics"); code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
}

// waitUntil polls cond until it holds, failing after a deadline far
// beyond need.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServeMetricsUnderRedisBenchmark scrapes /metrics while
// redis-benchmark sends pipelined CF.ADDs: the scrapes succeed as it
// runs, the counter never goes back, and at the end it and the sampled
// histogram account for every request.
func TestServeMetricsUnderRedisBenchmark(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	bench, err := exec.LookPath("redis-benchmark")
	if err != nil {
		t.Skip("redis-benchmark is not installed (apt-get install -y redis-tools)")
	}
	dir := t.TempDir()
	cmd, lines, stderr := startServeLines(t, dir, 2, "--port", "0", "--dir", "data", "--metrics", "127.0.0.1:0")
	m, mm := listenLine.FindStringSubmatch(lines[0]), metricsLine.FindStringSubmatch(lines[1])
	if m == nil || mm == nil {
		t.Fatalf("output %q", lines)
	}
	host, port, _ := net.SplitHostPort(m[1])
	const requests = 200_000
	run := exec.Command(bench, "-h", host, "-p", port, "-c", "10", "-n", fmt.Sprint(requests), "-r", "100000", "-P", "16", "-q",
		"CF.ADD", "bench", "__rand_int__")
	var out bytes.Buffer
	run.Stdout, run.Stderr = &out, &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run.Wait() }()
	const added = `cuckoo_commands_total{command="cf.add",result="ok"}`
	last, scrapes := 0.0, 0
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil || !strings.Contains(out.String(), "requests per second") {
				t.Fatalf("redis-benchmark: %v\n%s", err, out.String())
			}
			running = false
		case <-time.After(50 * time.Millisecond):
		}
		code, scrape := httpGet(t, "http://"+mm[1]+"/metrics")
		v := max(sample(scrape, added), 0) // absent before the first CF.ADD
		if code != 200 || v < last {
			t.Fatalf("scrape %d: status %d, %s = %v after %v", scrapes, code, added, v, last)
		}
		last = v
		scrapes++
	}
	_, scrape := httpGet(t, "http://"+mm[1]+"/metrics")
	timed := sample(scrape, `cuckoo_command_duration_seconds_count{command="cf.add",result="ok"}`)
	// One request in 16 is timed, at random: 12,500 of 200,000, with a
	// standard deviation of about 62 (TestCommandSampleGaps): the bounds
	// are 8 of them either side.
	if sample(scrape, added) != requests || timed < 12_000 || timed > 13_000 {
		t.Fatalf("after %d CF.ADDs in %d scrapes: %s = %v, %v of them timed", requests, scrapes, added, sample(scrape, added), timed)
	}
	t.Logf("%d scrapes while redis-benchmark ran", scrapes)
	cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExitWithin(t, cmd, 2*time.Minute); code != 0 {
		t.Fatalf("exit status %d after SIGTERM\n%s", code, stderr)
	}
}
