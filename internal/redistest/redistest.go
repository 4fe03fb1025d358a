// Package redistest starts real redis-server processes for tests and for
// people trying things by hand: a single node, or a Redis Cluster of
// masters and replicas, each on a free loopback port in a directory of its
// own, stopped when done. Nothing here fakes Redis.
//
// The binaries are redis-server and redis-cli from PATH, or those named by
// the REDISTEST_SERVER and REDISTEST_CLI environment variables (a Valkey
// build, say: valkey-server and valkey-cli). When they are missing,
// [NewServer] and [NewCluster] skip the test with a message saying how to
// install them; [Start] and [StartCluster] return [ErrNoServer].
package redistest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNoServer means redis-server or redis-cli is not installed.
var ErrNoServer = errors.New("redistest: redis-server and redis-cli not found; install them with 'apt-get install -y redis-server redis-tools' (or set REDISTEST_SERVER and REDISTEST_CLI)")

// Install is the command that installs the binaries on Debian and Ubuntu.
const Install = "apt-get install -y redis-server redis-tools"

// ClientTimeout is the dial, read and write timeout of the Redis clients
// of tests whose subject is not a timeout: far beyond any reply of a
// local server, however busy the machine (a loaded CI runner, -race), where
// go-redis's defaults (5 s to dial, 3 s to read) are not. Tests about
// timeouts set their own.
const ClientTimeout = 30 * time.Second

// Binaries returns the paths of the server and the command-line client,
// or ErrNoServer.
func Binaries() (server, cli string, err error) {
	server, cli = os.Getenv("REDISTEST_SERVER"), os.Getenv("REDISTEST_CLI")
	if server == "" {
		server = "redis-server"
	}
	if cli == "" {
		cli = "redis-cli"
	}
	if server, err = exec.LookPath(server); err != nil {
		return "", "", ErrNoServer
	}
	if cli, err = exec.LookPath(cli); err != nil {
		return "", "", ErrNoServer
	}
	return server, cli, nil
}

// Config describes one server.
type Config struct {
	// Dir is the server's working directory (its data files and log);
	// it must exist. Required.
	Dir string
	// Cluster starts the server in cluster mode (cluster-enabled yes).
	Cluster bool
	// NodeTimeout is cluster-node-timeout in cluster mode (default 2 s):
	// how long a master may be unreachable before its replica takes over.
	NodeTimeout time.Duration
	// AOF turns on the append-only file with appendfsync always, so a
	// write acknowledged to a client survives a kill of the process.
	AOF bool
	// Debug enables the DEBUG command for loopback clients
	// (enable-debug-command local), which [Server.Sleep] needs.
	Debug bool
	// Directives are more configuration lines, such as
	// "rename-command FUNCTION \"\"".
	Directives []string
}

// Server is one running (or stopped) redis-server process.
type Server struct {
	Addr string // 127.0.0.1:port
	Port int
	cfg  Config
	bin  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// Start starts a server on a free loopback port and waits until it
// answers PING. Stop it with [Server.Stop].
func Start(cfg Config) (*Server, error) {
	bin, _, err := Binaries()
	if err != nil {
		return nil, err
	}
	if cfg.Dir == "" {
		return nil, errors.New("redistest: Config.Dir is required")
	}
	var last error
	for range 5 {
		port, err := freePort(cfg.Cluster)
		if err != nil {
			return nil, err
		}
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, cfg: cfg, bin: bin}
		if last = s.start(); last == nil {
			return s, nil
		}
		// Another process may have taken the port between the probe and
		// the start: try another.
	}
	return nil, last
}

// configFile writes the server's configuration and returns its path.
func (s *Server) configFile() (string, error) {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("port %d", s.Port)
	line("bind 127.0.0.1")
	line("dir %s", s.cfg.Dir)
	line("logfile %s", filepath.Join(s.cfg.Dir, "redis.log"))
	line("daemonize no")
	line(`save ""`)
	if s.cfg.AOF {
		line("appendonly yes")
		line("appendfsync always")
	} else {
		line("appendonly no")
	}
	if s.cfg.Cluster {
		nt := s.cfg.NodeTimeout
		if nt == 0 {
			nt = 2 * time.Second
		}
		line("cluster-enabled yes")
		line("cluster-config-file nodes.conf")
		line("cluster-node-timeout %d", nt.Milliseconds())
	}
	if s.cfg.Debug {
		line("enable-debug-command local")
	}
	for _, d := range s.cfg.Directives {
		line("%s", d)
	}
	path := filepath.Join(s.cfg.Dir, "redis.conf")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

func (s *Server) start() error {
	conf, err := s.configFile()
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, conf)
	cmd.Dir = s.cfg.Dir
	// Its own process group: a Ctrl-C of the test run reaches the test
	// binary, whose cleanup stops the server.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(s.done)
	if err := s.waitReady(15 * time.Second); err != nil {
		s.Kill()
		return fmt.Errorf("redistest: %s did not start: %w\n%s", s.Addr, err, s.LogTail(10))
	}
	return nil
}

// waitReady polls PING until the server answers PONG (not LOADING), and
// checks that the server answering is the process it started: another
// process may have taken the port between the probe and the start, and
// then answers while ours exits.
func (s *Server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return errors.New("the process exited")
		default:
		}
		var reply string
		if reply, err = s.Do("PING"); err == nil && reply == "PONG" {
			info, err := s.Do("INFO", "server")
			if err != nil {
				return err
			}
			want := fmt.Sprintf("process_id:%d", s.cmd.Process.Pid)
			for _, l := range strings.Split(info, "\n") {
				if strings.TrimSpace(l) == want {
					return nil
				}
			}
			return fmt.Errorf("another server answers on %s", s.Addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// Do sends one command over a fresh connection and returns its reply as
// text: a status or bulk string as is, an integer in decimal, an error as
// an error. Arrays are not supported. It is for the harness and for
// tests' administrative commands; use a real client for anything else.
func (s *Server) Do(args ...string) (string, error) {
	return s.do(10*time.Second, args...)
}

// Sleep stalls the server for d with DEBUG SLEEP, as a fork of a large
// process, a slow script or a paused machine would: it reads and answers
// nothing, on any connection, until d has passed, and then runs what
// arrived meanwhile. Sleep returns when the server answers again. It needs
// Config.Debug.
func (s *Server) Sleep(d time.Duration) error {
	_, err := s.do(d+10*time.Second, "DEBUG", "SLEEP", strconv.FormatFloat(d.Seconds(), 'f', -1, 64))
	return err
}

// do is Do with a deadline of timeout for the whole exchange.
func (s *Server) do(timeout time.Duration, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", s.Addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	var req bytes.Buffer
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write(req.Bytes()); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	head = strings.TrimRight(head, "\r\n")
	if head == "" {
		return "", errors.New("redistest: empty reply")
	}
	switch head[0] {
	case '+', ':':
		return head[1:], nil
	case '-':
		return "", errors.New(head[1:])
	case '$':
		n, err := strconv.Atoi(head[1:])
		if err != nil || n < 0 {
			return "", err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("redistest: unsupported reply %q", head)
}

// Info returns one field of INFO (for example "redis_version").
func (s *Server) Info(field string) (string, error) {
	text, err := s.Do("INFO")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("redistest: INFO has no field %q", field)
}

// Stop shuts the server down (SIGTERM: it writes its files and exits) and
// waits for it. Stopping a stopped server does nothing.
func (s *Server) Stop() error { return s.signal(syscall.SIGTERM) }

// Kill ends the server at once (SIGKILL), as a crash would, and waits for
// it: only what it had written to its files survives.
func (s *Server) Kill() error { return s.signal(syscall.SIGKILL) }

func (s *Server) signal(sig syscall.Signal) error {
	if s.cmd == nil {
		return nil
	}
	select {
	case <-s.done:
		return nil
	default:
	}
	s.cmd.Process.Signal(sig)
	if sig != syscall.SIGKILL {
		s.cmd.Process.Signal(syscall.SIGCONT) // a paused process handles SIGTERM only when it runs
	}
	select {
	case <-s.done:
		return nil
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("redistest: %s ignored %v", s.Addr, sig)
	}
}

// Pause stops the server's process (SIGSTOP) until [Server.Resume]: it
// answers nothing meanwhile, as a machine paused by its hypervisor or a
// process stopped by a debugger; connections and what clients send
// wait in the kernel and are served on Resume.
func (s *Server) Pause() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() error { return s.cmd.Process.Signal(syscall.SIGCONT) }

// Restart starts a stopped or killed server again, on the same port and
// directory (so it loads its files), and waits until it answers.
func (s *Server) Restart() error {
	if s.cmd != nil {
		select {
		case <-s.done:
		default:
			return fmt.Errorf("redistest: %s is still running", s.Addr)
		}
	}
	var err error
	for range 50 {
		// The port may linger briefly after the kill.
		if err = s.start(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// Running reports whether the process is alive.
func (s *Server) Running() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string {
	data, _ := os.ReadFile(filepath.Join(s.cfg.Dir, "redis.log"))
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePort returns a loopback port that was free a moment ago; in cluster
// mode, port+10000 (the cluster bus) was free too.
func freePort(cluster bool) (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !cluster {
			return port, nil
		}
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		if err != nil {
			continue
		}
		bus.Close()
		return port, nil
	}
	return 0, errors.New("redistest: no free port pair for a cluster node")
}
