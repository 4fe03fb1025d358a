package main

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/server"
)

// parseServe parses serve's flags as the command does.
func parseServe(t *testing.T, args ...string) (server.Config, error) {
	t.Helper()
	f := new(serveFlags)
	fs := newFlags("serve")
	f.register(fs)
	if _, err := parseArgs(fs, "serve", args); err != nil {
		return server.Config{}, err
	}
	return f.serverConfig()
}

// TestServeDefaults: with no flags, serve listens on 127.0.0.1:6379 and
// keeps its data in ./cuckoo-data with the log fsynced every second.
func TestServeDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := parseServe(t)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:6379" || cfg.Dir != "cuckoo-data" || !cfg.AppendOnly || cfg.Sync != server.SyncEverySecond ||
		!cfg.ProtectedMode || cfg.Password != "" || !cfg.SaveOnShutdown || cfg.SaveInterval != 5*time.Minute ||
		cfg.MaxMemory != 0 || cfg.MaxClients != server.DefaultMaxClients || cfg.Limits.MaxBulk != 512<<20 ||
		cfg.Limits.MaxCommand != 1<<30 {
		t.Fatalf("defaults: %+v", cfg)
	}
	cfg, err = parseServe(t, "--port", "7000", "--bind", "::1", "--appendfsync", "always", "--maxmemory", "2gb",
		"--appendonly", "no", "--timeout", "30s", "--max-filter-size", "100m", "--client-query-buffer-limit", "64mb")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "[::1]:7000" || cfg.Sync != server.SyncAlways || cfg.MaxMemory != 2<<30 || cfg.AppendOnly ||
		cfg.IdleTimeout != 30*time.Second || cfg.MaxFilterBytes != 100e6 || cfg.Limits.MaxCommand != 64<<20 {
		t.Fatalf("flags: %+v", cfg)
	}
	for _, bad := range [][]string{{"--appendfsync", "sometimes"}, {"--maxmemory", "lots"}, {"--protected-mode", "maybe"},
		{"--proto-max-bulk-len", "2gb"}, {"--client-query-buffer-limit", "2gb"}, {"--client-query-buffer-limit", "0"},
		{"--maxclients", "0"}, {"--metrics", "9121"}, {"--shutdown-timeout", "-1s"}} {
		if _, err := parseServe(t, bad...); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestServeFilterSettings: the bf-* and cf-* flags and config lines set
// the server's filter settings, checked as CONFIG SET checks them.
func TestServeFilterSettings(t *testing.T) {
	cfg, err := parseServe(t)
	if err != nil || cfg.Filters != server.DefaultFilterSettings() {
		t.Fatalf("defaults: %+v, %v", cfg.Filters, err)
	}
	cfg, err = parseServe(t, "--cf-bucket-size", "2", "--cf-expansion-factor", "1", "--cf-max-iterations", "20",
		"--bf-error-rate", "0.001", "--bf-initial-size", "1000", "--bf-expansion-factor", "0", "--cf-initial-size", "4096", "--cf-max-expansions", "8")
	want := server.FilterSettings{BFErrorRate: 0.001, BFInitialSize: 1000, BFExpansionFactor: 0, CFBucketSize: 2,
		CFInitialSize: 4096, CFMaxIterations: 20, CFExpansionFactor: 1, CFMaxExpansions: 8}
	if err != nil || cfg.Filters != want {
		t.Fatalf("flags: %+v, %v", cfg.Filters, err)
	}
	path := filepath.Join(t.TempDir(), "serve.conf")
	os.WriteFile(path, []byte("cf-bucket-size 8\ncf-max-iterations 100\n"), 0o600)
	cfg, err = parseServe(t, "--config", path, "--cf-max-iterations", "50")
	if err != nil || cfg.Filters.CFBucketSize != 8 || cfg.Filters.CFMaxIterations != 50 {
		t.Fatalf("config file: %+v, %v", cfg.Filters, err)
	}
	for _, bad := range [][]string{{"--cf-bucket-size", "0"}, {"--cf-bucket-size", "256"}, {"--bf-error-rate", "1"},
		{"--cf-max-iterations", "x"}, {"--cf-initial-size", "6"}, {"--cf-expansion-factor", "32769"}} {
		if _, err := parseServe(t, bad...); err == nil || !strings.Contains(err.Error(), "must be in the range") && !strings.Contains(err.Error(), "Invalid value") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestServeConfigFile: a config file sets what the flags do not; the
// command line wins; unknown settings are refused.
func TestServeConfigFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "serve.conf")
	os.WriteFile(path, []byte("# comment\nrequirepass \"s3cret\"\nport 7001\nappendfsync always\n\nmaxmemory 1mb\n"), 0o600)
	cfg, err := parseServe(t, "--config", path, "--port", "7002")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Password != "s3cret" || cfg.Addr != "127.0.0.1:7002" || cfg.Sync != server.SyncAlways || cfg.MaxMemory != 1<<20 {
		t.Fatalf("config file: %+v", cfg)
	}
	t.Setenv("TEST_CUCKOO_PASSWORD", "from-env")
	if cfg, err := parseServe(t, "--requirepass-env", "TEST_CUCKOO_PASSWORD"); err != nil || cfg.Password != "from-env" {
		t.Fatalf("--requirepass-env: %q, %v", cfg.Password, err)
	}
	os.WriteFile(path, []byte("colour blue\n"), 0o600)
	if _, err := parseServe(t, "--config", path); err == nil || !strings.Contains(err.Error(), `unknown setting "colour"`) {
		t.Fatalf("an unknown setting: %v", err)
	}
}

// startServe runs `cuckoo serve` with args in dir and returns the process
// and its first line of output.
func startServe(t *testing.T, dir string, args ...string) (*exec.Cmd, string, *bytes.Buffer) {
	t.Helper()
	cmd, lines, stderr := startServeLines(t, dir, 1, args...)
	return cmd, lines[0], stderr
}

// startServeLines runs `cuckoo serve` with args in dir and returns the
// process and its first n lines of output.
func startServeLines(t *testing.T, dir string, n int, args ...string) (*exec.Cmd, []string, *bytes.Buffer) {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	cmd := exec.Command(binary, append([]string{"serve"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	br := bufio.NewReader(out)
	var lines []string
	for range n {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("serve printed %q: %v\n%s", lines, err, stderr.String())
		}
		lines = append(lines, line)
	}
	return cmd, lines, &stderr
}

var listenLine = regexp.MustCompile(`^cuckoo serve: listening on (127\.0\.0\.1:\d+), data in (\S+) \(append-only log, fsync everysec\)\n$`)

// TestServeRun: serve prints where it listens and where the data goes,
// answers redis clients, stops gracefully on SIGTERM (snapshot taken,
// exit status 0), and a restart has the data.
func TestServeRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd, line, stderr := startServe(t, dir, "--port", "0", "--dir", "data")
	m := listenLine.FindStringSubmatch(line)
	if m == nil || m[2] != "data" {
		t.Fatalf("first line %q", line)
	}
	do := func(addr string, req ...string) string {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		var b []byte
		for _, r := range req {
			b = append(b, r+"\r\n"...)
		}
		nc.Write(b)
		// A limit for a server that never answers, not a timing
		// assumption: generous for a loaded machine.
		nc.SetReadDeadline(time.Now().Add(60 * time.Second))
		buf := make([]byte, 1024)
		var got []byte
		for strings.Count(string(got), "\r\n") < len(req) {
			n, err := nc.Read(buf)
			if err != nil {
				break
			}
			got = append(got, buf[:n]...)
		}
		return string(got)
	}
	if got := do(m[1], "CF.ADD seen https://a.com/", "CF.EXISTS seen https://a.com/"); got != ":1\r\n:1\r\n" {
		t.Fatalf("replies %q", got)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "terminated: stopping") || !strings.Contains(stderr.String(), "snapshot of 1 key ") {
		t.Fatalf("stderr: %s", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "snapshot.ckdb")); err != nil {
		t.Fatal("no snapshot after SIGTERM")
	}
	_, line, _ = startServe(t, dir, "--port", "0", "--dir", "data")
	m = listenLine.FindStringSubmatch(line)
	if got := do(m[1], "CF.EXISTS seen https://a.com/"); got != ":1\r\n" {
		t.Fatalf("after a restart: %q", got)
	}
}

// TestServeNoFlags: with no flags at all, serve listens on
// 127.0.0.1:6379 with its data in ./cuckoo-data.
func TestServeNoFlags(t *testing.T) {
	t.Parallel()
	if ln, err := net.Listen("tcp", "127.0.0.1:6379"); err != nil {
		t.Skipf("port 6379 is in use here (%v): TestServeDefaults checks the defaults", err)
	} else {
		ln.Close()
	}
	dir := t.TempDir()
	cmd, line, _ := startServe(t, dir)
	if line != "cuckoo serve: listening on 127.0.0.1:6379, data in cuckoo-data (append-only log, fsync everysec)\n" {
		t.Fatalf("first line %q", line)
	}
	if fi, err := os.Stat(filepath.Join(dir, "cuckoo-data")); err != nil || !fi.IsDir() {
		t.Fatalf("no ./cuckoo-data: %v", err)
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGINT: %v", err)
	}
}

// TestServeRefusals: a non-loopback address without a password, a data
// directory in use, and a damaged log each stop serve with one line and
// the exit status of their kind.
func TestServeRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.run("", "serve", "--bind", "0.0.0.0", "--port", "0", "--dir", "d1")
	r.want(t, exitUsage, "serve")
	if !strings.Contains(r.stderr, "without a password; set --requirepass, or --protected-mode no") {
		t.Fatalf("protected mode: %q", r.stderr)
	}
	startServe(t, e.dir, "--port", "0", "--dir", "d2")
	r = e.run("", "serve", "--port", "0", "--dir", "d2")
	r.want(t, exitData, "serve")
	if !strings.Contains(r.stderr, "in use by another cuckoo server") || strings.Count(r.stderr, "server:") != 0 {
		t.Fatalf("a directory in use: %q", r.stderr)
	}
	// A port in use: refused before the directory is made.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	r = e.run("", "serve", "--port", port, "--dir", "d4")
	r.want(t, exitData, "serve")
	if _, err := os.Stat(filepath.Join(e.dir, "d4")); !os.IsNotExist(err) || !strings.Contains(r.stderr, "address already in use") {
		t.Fatalf("a port in use: stderr %q, the directory: %v", r.stderr, err)
	}
	os.MkdirAll(filepath.Join(e.dir, "d3"), 0o755)
	e.write("d3/appendonly.0.log", "\x20\x00\x00\x00garbage that is not a record, and more of it")
	r = e.run("", "serve", "--port", "0", "--dir", "d3")
	r.want(t, exitData, "serve")
	if !strings.Contains(r.stderr, "--repair") {
		t.Fatalf("a damaged log: %q", r.stderr)
	}
	r = e.run("", "serve", "extra")
	r.want(t, exitUsage, "serve")
}

// TestServeSaysWhatItBound checks that serve prints the address it bound:
// 0.0.0.0, an IPv4 address, is IPv4 only and printed as given (not as
// [::]), and that a --dir that is a file is said to be one.
func TestServeSaysWhatItBound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, line, _ := startServe(t, dir, "--bind", "0.0.0.0", "--protected-mode", "no", "--port", "0", "--dir", "data")
	if !regexp.MustCompile(`^cuckoo serve: listening on 0\.0\.0\.0:\d+, `).MatchString(line) {
		t.Errorf("--bind 0.0.0.0: %q", line)
	}
	e := &sandbox{t, dir}
	e.write("seen.ckoo", "not a directory")
	r := e.run("", "serve", "--port", "0", "--dir", "seen.ckoo")
	r.want(t, exitData, "serve")
	if !strings.Contains(r.stderr, "--dir seen.ckoo is not a directory") || strings.Contains(r.stderr, "Recovery") {
		t.Errorf("--dir FILE: %q", r.stderr)
	}
}

// TestRedisPathAgainstServe points the commands that need Redis
// Functions at cuckoo serve: they fail with status 3 and a message that
// says what the server is and what to use, without contradicting itself.
func TestRedisPathAgainstServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, line, _ := startServe(t, dir, "--port", "0", "--dir", "data")
	m := listenLine.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("first line %q", line)
	}
	e := &sandbox{t, dir}
	e.write("keys.txt", lines(0, 100))
	e.run("", "build", "--capacity", "1000", "-o", "f.ckoo", "keys.txt").want(t, exitOK, "build")
	for _, c := range []struct {
		cmd  string
		args []string
	}{
		{"push", []string{"push", "f.ckoo", "--redis", m[1], "--name", "seen"}},
		{"dedup", []string{"dedup", "--redis", m[1], "--name", "seen", "--capacity", "1000", "keys.txt"}},
		// Without --capacity the filter's metadata is read first (a GET,
		// which cuckoo serve does not know), as by pull.
		{"dedup", []string{"dedup", "--redis", m[1], "--name", "seen", "keys.txt"}},
		{"dedup", []string{"dedup", "--redis", m[1], "--name", "seen", "--window", "1h", "keys.txt"}},
		{"pull", []string{"pull", "--redis", m[1], "--name", "seen", "-o", "pulled.ckoo"}},
	} {
		r := e.run("", c.args...)
		r.want(t, exitData, c.cmd)
		if !strings.Contains(r.stderr, "the server is cuckoo serve") || !strings.Contains(r.stderr, "Redis 7.0 or later, or Valkey") ||
			strings.Contains(r.stderr, "version 8") {
			t.Errorf("%v: %q", c.args, r.stderr)
		}
	}
}
