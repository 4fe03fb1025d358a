package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/server/resp"
)

// testDeadline bounds the tests' waits for a reply, a close or a
// condition: far beyond need, even on a busy machine running the tests in
// parallel, so that it fails a broken test with a message instead of
// measuring a working one.
const testDeadline = 30 * time.Second

// inGoroutineRun is set while TestGoroutineConnections runs other tests as
// its subtests with useLoops off: they must run before it turns it back on,
// not in parallel after it returns.
var inGoroutineRun bool

// parallel runs t in parallel with the package's other parallel tests
// (each starts its own server, on its own port and directory), unless
// TestGoroutineConnections runs it. Tests that change a package variable
// (maxDumpChunk, useLoops) or measure the whole process (allocations)
// stay sequential: Go runs them before the parallel ones. So do tests that
// start processes (redis-cli, redis-benchmark, the crash test's servers):
// a child holds copies of the test process's descriptors from its fork to
// its exec, the lock of another test's data directory among them, and
// that test's restart would find its directory in use.
func parallel(t *testing.T) {
	if !inGoroutineRun {
		t.Parallel()
	}
}

// testConfig is a configuration for tests: data in a temporary directory,
// no periodic snapshots, no snapshot on shutdown (tests ask for them).
func testConfig(t testing.TB) Config {
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Dir = t.TempDir()
	cfg.SaveInterval = 0
	cfg.SaveOnShutdown = false
	cfg.Logf = func(format string, args ...any) { t.Logf("server: "+format, args...) }
	return cfg
}

// startServer starts a server with cfg on a random loopback port and stops
// it when the test ends. It returns the server and its address.
func startServer(t testing.TB, cfg Config) (*Server, string) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, ln.Addr().String()
}

// stopServer shuts s down gracefully.
func stopServer(t testing.TB, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// conn is a raw RESP connection for tests.
type conn struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func dial(t testing.TB, addr string) *conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &conn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// encode returns args as a RESP array of bulk strings.
func encode(args ...string) []byte {
	b := resp.AppendArray(nil, len(args))
	for _, a := range args {
		b = resp.AppendBulkString(b, a)
	}
	return b
}

// send writes raw bytes.
func (c *conn) send(b []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(testDeadline))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// do sends one command and returns its reply, raw.
func (c *conn) do(args ...string) string {
	c.t.Helper()
	c.send(encode(args...))
	raw, err := c.reply()
	if err != nil {
		c.t.Fatalf("%q: %v", args, err)
	}
	return raw
}

// pipeline sends the commands at once, in batches, and returns their
// replies, raw, in order: what do returns for each, in fewer round trips.
func (c *conn) pipeline(cmds [][]string) []string {
	c.t.Helper()
	replies := make([]string, 0, len(cmds))
	for len(cmds) > 0 {
		batch := cmds[:min(len(cmds), 500)]
		cmds = cmds[len(batch):]
		var req []byte
		for _, args := range batch {
			req = append(req, encode(args...)...)
		}
		c.send(req)
		for _, args := range batch {
			raw, err := c.reply()
			if err != nil {
				c.t.Fatalf("%q: %v", args, err)
			}
			replies = append(replies, raw)
		}
	}
	return replies
}

// reply reads one reply and returns its raw bytes.
func (c *conn) reply() (string, error) { return c.replyWithin(testDeadline) }

// replyWithin reads one reply, waiting at most d for it.
func (c *conn) replyWithin(d time.Duration) (string, error) {
	c.nc.SetReadDeadline(time.Now().Add(d))
	var raw strings.Builder
	err := readReply(c.br, &raw)
	return raw.String(), err
}

// readReply copies one whole RESP2 or RESP3 reply from br to out.
func readReply(br *bufio.Reader, out *strings.Builder) error {
	line, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	out.WriteString(line)
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return fmt.Errorf("bad reply line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', '-', ':', '_', '#', ',', '(':
		return nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return err
		}
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return err
		}
		out.Write(buf)
		return nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for range n {
			if err := readReply(br, out); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown reply type %q", line)
}

// render shows a raw reply as redis-cli does, with the type of every
// element: "OK" a simple string, "\"x\"" a bulk string, (integer) 1,
// (error) ..., (nil) the RESP2 null, (null) the RESP3 one, (true),
// (double) 1.5, "1) ..." array elements, "1# k => v" map entries, "1~ x"
// set elements.
func render(raw string) string {
	var b strings.Builder
	br := bufio.NewReader(strings.NewReader(raw))
	for {
		if _, err := br.Peek(1); err != nil {
			break
		}
		renderOne(br, &b, "")
	}
	return b.String()
}

func renderOne(br *bufio.Reader, b *strings.Builder, indent string) {
	line, _ := br.ReadString('\n')
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		b.WriteString("(bad reply)\n")
		return
	}
	body := line[1:]
	switch line[0] {
	case '+':
		b.WriteString(body + "\n")
	case '-':
		b.WriteString("(error) " + body + "\n")
	case ':':
		b.WriteString("(integer) " + body + "\n")
	case '_':
		b.WriteString("(null)\n")
	case '#':
		b.WriteString(map[string]string{"t": "(true)\n", "f": "(false)\n"}[body])
	case ',':
		b.WriteString("(double) " + body + "\n")
	case '$', '=':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			b.WriteString("(nil)\n")
			return
		}
		buf := make([]byte, n+2)
		io.ReadFull(br, buf)
		s := string(buf[:n])
		if line[0] == '=' {
			b.WriteString("(verbatim) " + strconv.Quote(s) + "\n")
			return
		}
		b.WriteString(strconv.Quote(s) + "\n")
	case '*', '~', '%':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			b.WriteString("(nil)\n")
			return
		}
		if n == 0 {
			b.WriteString(map[byte]string{'*': "(empty array)\n", '~': "(empty set)\n", '%': "(empty map)\n"}[line[0]])
			return
		}
		mark := map[byte]string{'*': ") ", '~': "~ ", '%': "# "}[line[0]]
		for i := 1; i <= n; i++ {
			prefix := strconv.Itoa(i) + mark
			if i > 1 {
				b.WriteString(indent)
			}
			b.WriteString(prefix)
			inner := indent + strings.Repeat(" ", len(prefix))
			if line[0] == '%' {
				var k strings.Builder
				renderOne(br, &k, inner)
				b.WriteString(strings.TrimSuffix(k.String(), "\n") + " => ")
			}
			renderOne(br, b, inner)
		}
	default:
		b.WriteString("(unknown) " + line + "\n")
	}
}

// splitArgs splits a script line into arguments as redis-cli does:
// blanks separate them, "double quotes" take Go escapes.
func splitArgs(line string) ([]string, error) {
	var args []string
	for {
		line = strings.TrimLeft(line, " \t")
		if line == "" {
			return args, nil
		}
		if line[0] == '"' {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				return nil, err
			}
			s, _ := strconv.Unquote(q)
			args = append(args, s)
			line = line[len(q):]
			continue
		}
		end := strings.IndexAny(line, " \t")
		if end < 0 {
			end = len(line)
		}
		args = append(args, line[:end])
		line = line[end:]
	}
}

// waitFor polls cond until it holds or testDeadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// logSink collects server log lines.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// runtimeMem reads the bytes allocated so far by the process.
type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.total = ms.TotalAlloc
}

func splitLines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

func unquote(s string) string {
	u, err := strconv.Unquote(strings.TrimSpace(s))
	if err != nil {
		return s
	}
	return u
}
