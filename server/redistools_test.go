package server

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testlong"
)

// needTool skips the test when a Redis tool is not installed.
func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (apt-get install -y redis-tools): skipping the test with the real client", name)
	}
	return path
}

func hostPort(addr string) (string, string) {
	i := strings.LastIndexByte(addr, ':')
	return addr[:i], addr[i+1:]
}

// TestRedisCLI runs Debian's redis-cli against the server: commands as
// arguments, RESP3 (-3), --scan, INFO, and a password. Its output, not
// being a terminal, is raw: one value a line.
func TestRedisCLI(t *testing.T) {
	// Not parallel: it starts processes (see parallel).
	cli := needTool(t, "redis-cli")
	cfg := testConfig(t)
	cfg.Password = "pw"
	_, addr := startServer(t, cfg)
	host, port := hostPort(addr)
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(cli, append([]string{"-h", host, "-p", port, "-a", "pw", "--no-auth-warning"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"CF.ADD", "seen", "https://a.com/"}, "1\n"},
		{[]string{"CF.EXISTS", "seen", "https://a.com/"}, "1\n"},
		{[]string{"CF.EXISTS", "seen", "https://b.com/"}, "0\n"},
		{[]string{"-3", "CF.MEXISTS", "seen", "https://a.com/", "x"}, "(true)\n(false)\n"}, // after HELLO 3: booleans
		{[]string{"BF.ADD", "bloom", "x"}, "1\n"},
		{[]string{"--scan", "--pattern", "s*"}, "seen\n"},
		{[]string{"TYPE", "bloom"}, "MBbloom--\n"},
		{[]string{"DBSIZE"}, "2\n"},
		{[]string{"CF.RESERVE", "seen", "10"}, "ERR item exists\n\n"},
	} {
		if got := run(tc.args...); got != tc.want {
			t.Errorf("redis-cli %q: %q, want %q", tc.args, got, tc.want)
		}
	}
	if info := run("INFO", "keyspace"); !strings.Contains(info, "db0:keys=2") {
		t.Errorf("INFO keyspace: %q", info)
	}
	// redis-cli reads commands from standard input, too (interactive use
	// starts with COMMAND DOCS).
	cmd := exec.Command(cli, "-h", host, "-p", port, "-a", "pw", "--no-auth-warning")
	cmd.Stdin = strings.NewReader("CF.ADD seen b\nCF.COUNT seen b\n")
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "1\n1\n" {
		t.Errorf("redis-cli from stdin: %q, %v", out, err)
	}
}

// TestRedisBenchmark runs a short redis-benchmark against the server: it
// must start (it queries the configuration), run pipelined CF.ADD and
// CF.EXISTS from 5 clients without an error, and the filter must hold the
// items it added.
func TestRedisBenchmark(t *testing.T) {
	testlong.SkipQuickRun(t)
	// Not parallel: it starts processes (see parallel).
	bench := needTool(t, "redis-benchmark")
	_, addr := startServer(t, testConfig(t))
	host, port := hostPort(addr)
	for _, args := range [][]string{
		{"-t", "ping"},
		{"-P", "8", "CF.ADD", "bench", "__rand_int__"},
		{"CF.EXISTS", "bench", "__rand_int__"},
		{"-P", "8", "BF.ADD", "bench-bf", "__rand_int__"},
	} {
		cmd := exec.Command(bench, append([]string{"-h", host, "-p", port, "-c", "5", "-n", "2000", "-r", "1000", "-q"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "ERR") || !strings.Contains(string(out), "requests per second") {
			t.Fatalf("redis-benchmark %q: %v\n%s", args, err, out)
		}
	}
	c := dial(t, addr)
	if got := c.do("CF.INFO", "bench"); !strings.Contains(got, "Number of items inserted\r\n:2000\r\n") {
		t.Fatalf("after 2000 CF.ADDs: %q", got)
	}
}
