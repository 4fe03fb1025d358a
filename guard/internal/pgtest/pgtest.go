// Package pgtest starts real PostgreSQL servers for tests: initdb into a
// temporary directory, then postgres on a free loopback port, stopped and
// removed when done. Nothing here fakes PostgreSQL.
//
// The binaries are those of the directory named by PGTEST_BIN, or the
// newest /usr/lib/postgresql/N/bin (Debian's and Ubuntu's postgresql
// package), or initdb and postgres from PATH. When they are missing, New
// skips the test saying how to install them.
//
// Set PGTEST_REQUIRED=1 (CI does) to make New fail the test instead of
// skipping it.
//
// PostgreSQL refuses to run as root. Run as root (a CI container, say),
// the package runs initdb and postgres as the user named by PGTEST_USER,
// or as the user postgres, which Debian's package creates; if there is
// neither, New skips the test saying so.
package pgtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Install is the command that installs the binaries on Debian and Ubuntu.
const Install = "apt-get install -y postgresql"

var (
	// ErrNoServer means initdb or postgres is not installed.
	ErrNoServer = errors.New("pgtest: PostgreSQL not found; install it with '" + Install + "' (or set PGTEST_BIN to the directory of initdb and postgres)")
	// ErrRoot means the process runs as root and there is no unprivileged
	// user to run PostgreSQL as.
	ErrRoot = errors.New("pgtest: PostgreSQL does not run as root and there is no user postgres; create one (Debian's postgresql package does) or set PGTEST_USER")
)

// User is the database superuser the servers are created with.
const User = "pgtest"

// Binaries returns the directory that holds initdb, postgres and
// pg_isready, or ErrNoServer.
func Binaries() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres", "pg_isready"} {
			if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
				return false
			}
		}
		return true
	}
	if d := os.Getenv("PGTEST_BIN"); d != "" {
		if has(d) {
			return d, nil
		}
		return "", fmt.Errorf("%w: PGTEST_BIN=%s lacks initdb, postgres or pg_isready", ErrNoServer, d)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil && has(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	return "", ErrNoServer
}

// version is the N of /usr/lib/postgresql/N/bin.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// Server is one running (or stopped) postgres process.
type Server struct {
	// URL is a connection string for the database postgres as User.
	URL  string
	Port int
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// Start creates a database cluster in a new temporary directory and
// starts a server on a free loopback port, without fsync (a test's data
// need not survive a crash of the machine). Stop it with [Server.Stop].
func Start() (*Server, error) {
	bin, err := Binaries()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir}
	if err := s.start(bin, cred); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// credential returns who to run PostgreSQL as: nil for this process's
// user, or an unprivileged user when this process is root.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	name := os.Getenv("PGTEST_USER")
	if name == "" {
		name = "postgres"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrRoot, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil || uid == 0 {
		return nil, fmt.Errorf("%w (user %s has uid %s)", ErrRoot, name, u.Uid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (s *Server) start(bin string, cred *syscall.Credential) error {
	data := filepath.Join(s.dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return err
	}
	if cred != nil {
		// The server's user must reach and own its data directory.
		if err := os.Chmod(s.dir, 0o755); err != nil {
			return err
		}
		if err := os.Chown(data, int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	run := func(name string, args ...string) *exec.Cmd {
		c := exec.Command(filepath.Join(bin, name), args...)
		c.Dir = s.dir
		c.Env = append(os.Environ(), "LC_ALL=C")
		// Its own process group: a Ctrl-C of the test run reaches the test
		// binary, whose cleanup stops the server.
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
		return c
	}
	if out, err := run("initdb", "-D", data, "-U", User, "-A", "trust", "--no-locale", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	var last error
	for range 5 {
		port, err := freePort()
		if err != nil {
			return err
		}
		if last = s.listen(run, data, port); last == nil {
			return nil
		}
		// Another process may have taken the port: try another.
	}
	return last
}

// listen starts postgres on port and waits until it accepts connections.
func (s *Server) listen(run func(string, ...string) *exec.Cmd, data string, port int) error {
	logf, err := os.Create(filepath.Join(s.dir, "postgres.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := run("postgres", "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=200")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd, s.done, s.Port = cmd, make(chan struct{}), port
	go func(done chan struct{}) { cmd.Wait(); close(done) }(s.done)
	s.URL = fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", User, port)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("pgtest: postgres exited:\n%s", s.LogTail(10))
		default:
		}
		check := exec.Command(filepath.Join(filepath.Dir(cmd.Path), "pg_isready"), "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", User)
		if check.Run() == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.kill()
	return fmt.Errorf("pgtest: postgres did not accept connections within 30 s:\n%s", s.LogTail(10))
}

// Stop shuts the server down (fast shutdown: open transactions are rolled
// back), waits for it, and removes its directory.
func (s *Server) Stop() {
	if s.cmd != nil {
		select {
		case <-s.done:
		default:
			s.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-s.done:
			case <-time.After(20 * time.Second):
				s.kill()
			}
		}
	}
	os.RemoveAll(s.dir)
}

func (s *Server) kill() {
	if s.cmd != nil {
		s.cmd.Process.Kill()
		<-s.done
	}
}

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string {
	data, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// New starts a server for the test and stops it when the test ends. It
// skips the test when the binaries are missing or no user can run them,
// saying what to do (or fails it, with PGTEST_REQUIRED set), and fails it
// when the server does not start.
func New(t testing.TB) *Server {
	t.Helper()
	skip := t.Skipf
	if v := os.Getenv("PGTEST_REQUIRED"); v != "" && v != "0" {
		skip = t.Fatalf
	}
	if _, err := Binaries(); err != nil {
		skip("%v", err)
	}
	if _, err := credential(); err != nil {
		skip("%v", err)
	}
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
