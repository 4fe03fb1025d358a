package server

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// alive checks that the server still answers a new connection.
func alive(t *testing.T, addr string) {
	t.Helper()
	if got := dial(t, addr).do("PING"); got != "+PONG\r\n" {
		t.Fatalf("the server no longer answers: %q", got)
	}
}

// readAll reads what the server sends until it closes the connection.
func readUntilClosed(t *testing.T, c *conn) string {
	t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(testDeadline))
	b, err := io.ReadAll(c.br)
	if err != nil {
		t.Fatalf("the server did not close the connection: %v (read %q)", err, b)
	}
	return string(b)
}

// TestMalformedRequests: garbage, truncated frames and huge lengths get a
// protocol error and a closed connection (or just a close, for a frame
// cut short), and the server goes on serving.
func TestMalformedRequests(t *testing.T) {
	parallel(t)
	_, addr := startServer(t, testConfig(t))
	for _, tc := range []struct{ in, reply string }{
		{"*1\r\n$4\r\nPING\r\n*1\r\n$-2\r\n", "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"},
		{"*1\r\n$1073741824\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"*1073741824\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"*2\r\n$6\r\nCF.ADD\r\n:1\r\n", "-ERR Protocol error: expected '$', got ':'\r\n"},
		{"*1\r\n$4\r\nPINGxx\r\n", "-ERR Protocol error: expected CRLF after bulk data\r\n"},
		{"ECHO \"unbalanced\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		{"\x00\xff\xfe garbage \x01\r\n*x\r\n", "-ERR unknown command '\x00\xff\xfe', with args beginning with: 'garbage' '\x01' \r\n-ERR Protocol error: invalid multibulk length\r\n"},
		{strings.Repeat("a", 70<<10), "-ERR Protocol error: too big inline request\r\n"},
		{"*1\r\n$" + strings.Repeat("9", 70<<10), "-ERR Protocol error: too big bulk count string\r\n"},
		{"*3\r\n$6\r\nCF.ADD\r\n$1\r\nk", ""}, // truncated: the client hangs up
	} {
		c := dial(t, addr)
		c.send([]byte(tc.in))
		if tc.reply == "" {
			c.nc.(*net.TCPConn).CloseWrite()
		}
		if got := readUntilClosed(t, c); got != tc.reply {
			t.Errorf("%.40q: got %q, want %q", tc.in, got, tc.reply)
		}
		alive(t, addr)
	}
}

// TestHugeLengthHeader: a header announcing 1 GB, followed by nothing,
// is refused from its header (512 MiB is the limit), without allocating.
func TestHugeLengthHeader(t *testing.T) {
	s, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	c.send([]byte("*2\r\n$4\r\nECHO\r\n$1000000000\r\nabc"))
	if got := readUntilClosed(t, c); got != "-ERR Protocol error: invalid bulk length\r\n" {
		t.Fatalf("got %q", got)
	}
	// Under the limit, 500 MB announced and 3 bytes sent: the server waits
	// for the data, holding no more than it received.
	var before, after runtimeMem
	before.read()
	c = dial(t, addr)
	c.send([]byte("*2\r\n$4\r\nECHO\r\n$500000000\r\nabc"))
	c.send(encode("PING")) // queued behind the unfinished ECHO: no reply
	time.Sleep(50 * time.Millisecond)
	after.read()
	if grew := after.total - before.total; grew > 64<<20 {
		t.Fatalf("a 500 MB header with 3 bytes of data made the server allocate %d bytes", grew)
	}
	_ = s
	alive(t, addr)
}

// TestPipeline100k: 100,000 pipelined commands, sent at once, all get
// their replies in order.
func TestPipeline100k(t *testing.T) {
	parallel(t)
	_, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	const n = 100_000
	var req bytes.Buffer
	for i := range n {
		req.Write(encode("CF.ADD", "k", fmt.Sprint(i)))
	}
	go func() { c.nc.Write(req.Bytes()) }()
	// One deadline for all the replies, there only to fail with a message:
	// ten replies' worth, as the race run on a loaded machine may take
	// minutes for them all.
	c.nc.SetReadDeadline(time.Now().Add(10 * testDeadline))
	for i := range n {
		line, err := c.br.ReadString('\n')
		if err != nil || line != ":1\r\n" {
			t.Fatalf("reply %d: %q, %v", i, line, err)
		}
	}
	if got := c.do("CF.INFO", "k"); !strings.Contains(got, "Number of items inserted\r\n:100000\r\n") {
		t.Fatalf("CF.INFO: %q", got)
	}
	for _, i := range []int{0, 1, 99_999} {
		if got := c.do("CF.EXISTS", "k", fmt.Sprint(i)); got != ":1\r\n" {
			t.Fatalf("item %d: %q", i, got)
		}
	}
}

// TestMaxClients: a connection past the limit gets Redis's error and is
// closed; the others go on.
func TestMaxClients(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	cfg.MaxClients = 2
	s, addr := startServer(t, cfg)
	a, b := dial(t, addr), dial(t, addr)
	a.do("PING")
	b.do("PING")
	waitFor(t, "two clients", func() bool { return s.numClients.Load() == 2 })
	if got := readUntilClosed(t, dial(t, addr)); got != "-ERR max number of clients reached\r\n" {
		t.Fatalf("the third client got %q", got)
	}
	a.do("QUIT")
	waitFor(t, "one client", func() bool { return s.numClients.Load() == 1 })
	alive(t, addr)
}

// TestOutputLimit: a client whose replies pass the output limit is
// disconnected.
func TestOutputLimit(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	cfg.MaxOutputBuffer = 1000
	_, addr := startServer(t, cfg)
	c := dial(t, addr)
	c.send(encode("ECHO", strings.Repeat("x", 2000)))
	if got := readUntilClosed(t, c); got != "" {
		t.Fatalf("got %q, want the connection closed", got[:min(len(got), 40)])
	}
	alive(t, addr)
}

// TestIdleTimeout: an idle connection is closed after the timeout.
func TestIdleTimeout(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	cfg.IdleTimeout = 100 * time.Millisecond
	_, addr := startServer(t, cfg)
	c := dial(t, addr)
	// The server's idle clock starts after it reads the PING, so after
	// start; taken once the reply is read, start could be later than the
	// server's clock by however long the client waited to be scheduled.
	start := time.Now()
	c.do("PING")
	readUntilClosed(t, c)
	if time.Since(start) < 100*time.Millisecond {
		t.Fatal("closed before the timeout")
	}
}

// TestMaxMemory: past MaxMemory, commands that may add memory get Redis's
// OOM error; reads and deletes go on, and freeing memory lifts it.
func TestMaxMemory(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	cfg.MaxMemory = 1 << 20
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	const oom = "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
	if got := c.do("CF.RESERVE", "huge", "10000000"); got != oom {
		t.Fatalf("a filter larger than maxmemory: %q", got)
	}
	if got := c.do("BF.RESERVE", "huge", "0.0001", "10000000"); got != oom {
		t.Fatalf("a Bloom filter larger than maxmemory: %q", got)
	}
	for i := 0; s.ks.used.Load() <= cfg.MaxMemory; i++ {
		if got := c.do("CF.RESERVE", fmt.Sprint("k", i), "50000"); got != "+OK\r\n" {
			if got != oom {
				t.Fatalf("filling up: %q", got)
			}
			c.do("CF.ADD", fmt.Sprint("k", i-1), "x") // may grow past it
			break
		}
	}
	for i := 0; s.ks.used.Load() <= cfg.MaxMemory; i++ {
		args := []string{"CF.INSERT", "k0", "ITEMS"}
		for j := range 100 {
			args = append(args, fmt.Sprint(i, "-", j))
		}
		if got := c.do(args...); got == oom {
			break
		}
	}
	for _, cmd := range [][]string{{"CF.ADD", "k0", "x"}, {"CF.ADDNX", "k0", "y"}, {"CF.INSERT", "k0", "ITEMS", "x"},
		{"BF.ADD", "b", "x"}, {"BF.MADD", "b", "x"}, {"CF.RESERVE", "new", "100"}} {
		if got := c.do(cmd...); got != oom {
			t.Fatalf("%q past maxmemory: %q", cmd, got)
		}
	}
	if got := c.do("CF.EXISTS", "k0", "0-0"); got != ":1\r\n" {
		t.Fatalf("a read past maxmemory: %q", got)
	}
	if got := c.do("CF.DEL", "k0", "0-0"); got != ":1\r\n" {
		t.Fatalf("a delete past maxmemory: %q", got)
	}
	if got := c.do("FLUSHALL"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := c.do("CF.ADD", "k0", "x"); got != ":1\r\n" {
		t.Fatalf("after freeing memory: %q", got)
	}
}

// TestFilterSizeLimits: a filter larger than MaxFilterBytes is refused with
// RedisBloom's out-of-memory text, one the library cannot build with its
// creation error.
func TestFilterSizeLimits(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	cfg.MaxFilterBytes = 1 << 20
	_, addr := startServer(t, cfg)
	c := dial(t, addr)
	for _, tc := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"CF.RESERVE", "k", "1000000"}, "-ERR Insufficient memory to create filter\r\n"},
		{[]string{"BF.RESERVE", "k", "0.01", "10000000"}, "-ERR Insufficient memory to create filter\r\n"},
		{[]string{"CF.INSERT", "k", "CAPACITY", "1000000", "ITEMS", "x"}, "-ERR Insufficient memory to create filter\r\n"},
		{[]string{"CF.RESERVE", "k", "100000"}, "+OK\r\n"},
	} {
		if got := c.do(tc.cmd...); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.cmd, got, tc.want)
		}
	}
	cfg = testConfig(t)
	cfg.MaxFilterBytes = 1 << 62
	_, addr = startServer(t, cfg)
	if got := dial(t, addr).do("BF.RESERVE", "k", "0.5", fmt.Sprint(uint64(1)<<41)); got != "-ERR capacity must be in the range [1, 1099511627776]\r\n" {
		t.Errorf("a Bloom filter past the library's capacity: %q", got)
	}
}

// TestOutOfRangeCapacityTexts: a capacity past what a cuckoo filter's table
// can address gets Redis 8's range text with this server's bound, and one
// the table can address but --max-filter-size (16 GiB by default) does not
// admit gets Redis 8's out-of-memory text, as docs/server.md says.
func TestOutOfRangeCapacityTexts(t *testing.T) {
	parallel(t)
	_, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	for _, tc := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"CF.RESERVE", "k", "20000000000"}, fmt.Sprintf("-Capacity must be in the range [2 * BUCKETSIZE, %d]\r\n", mostDefault)},
		{[]string{"CF.RESERVE", "k", "20000000000", "EXPANSION", "0"}, fmt.Sprintf("-Capacity must be in the range [2 * BUCKETSIZE, %d]\r\n", mostDefault)},
		{[]string{"CF.RESERVE", "k", "10000000000"}, "-ERR Insufficient memory to create filter\r\n"},
		{[]string{"CF.RESERVE", "k", "10000000000", "EXPANSION", "0"}, "-ERR Insufficient memory to create filter\r\n"},
		{[]string{"CF.INSERT", "k", "CAPACITY", "20000000000", "ITEMS", "x"}, fmt.Sprintf("-Capacity must be in the range [cf-bucket-size * 2, %d]\r\n", mostDefault)},
		{[]string{"CF.INSERT", "k", "CAPACITY", "10000000000", "ITEMS", "x"}, "-ERR Insufficient memory to create filter\r\n"},
		{[]string{"CF.RESERVE", "k", "0"}, fmt.Sprintf("-Capacity must be in the range [2 * BUCKETSIZE, %d]\r\n", mostDefault)},
		{[]string{"EXISTS", "k"}, ":0\r\n"},
	} {
		if got := c.do(tc.cmd...); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.cmd, got, tc.want)
		}
	}
	if mostDefault < 16_000_000_000 || mostDefault > 17_000_000_000 {
		t.Errorf("the largest capacity of 4-slot buckets of 16 bits is %d, not about 2^32 · 4 · 0.95", mostDefault)
	}
}

// TestSaveInProgress: SAVE and BGSAVE during a snapshot get Redis's error.
func TestSaveInProgress(t *testing.T) {
	parallel(t)
	s, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	s.save.Lock()
	s.save.running.Store(true)
	for _, cmd := range []string{"SAVE", "BGSAVE"} {
		if got := c.do(cmd); got != "-ERR Background save already in progress\r\n" {
			t.Errorf("%s during a snapshot: %q", cmd, got)
		}
	}
	if got := c.do("BGREWRITEAOF"); got != "-ERR Background append only file rewriting already in progress\r\n" {
		t.Errorf("BGREWRITEAOF during a snapshot: %q", got)
	}
	s.save.running.Store(false)
	s.save.Unlock()
	if got := c.do("BGSAVE"); got != "+Background saving started\r\n" {
		t.Fatal(got)
	}
	waitFor(t, "the snapshot", func() bool { return !s.save.running.Load() })
	if got := c.do("LASTSAVE"); got == ":0\r\n" {
		t.Fatal("LASTSAVE after a snapshot is 0")
	}
}

// TestProtectedMode: serving a non-loopback address needs a password,
// unless protected mode is off.
func TestProtectedMode(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		addr      string
		pass      string
		protected bool
		refused   bool
	}{
		{"0.0.0.0:0", "", true, true},
		{"[::]:0", "", true, true},
		{"0.0.0.0:0", "secret", true, false},
		{"0.0.0.0:0", "", false, false},
		{"127.0.0.1:0", "", true, false},
		{"localhost:0", "", true, false},
	} {
		cfg := testConfig(t)
		cfg.Addr, cfg.Password, cfg.ProtectedMode = tc.addr, tc.pass, tc.protected
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		err = s.checkProtected(tc.addr)
		if refused := err != nil; refused != tc.refused {
			t.Errorf("%s password=%q protected=%v: %v", tc.addr, tc.pass, tc.protected, err)
		}
		s.Close()
	}
}

// TestCreateErrors: parameters that pass the commands' checks but that
// the libraries refuse get RedisBloom's creation errors, and nothing is
// allocated. (The commands' checks leave little room for these: a Bloom
// filter whose table would pass the library's 1 TiB, a cuckoo filter
// whose parameters a replay gives.)
func TestCreateErrors(t *testing.T) {
	parallel(t)
	c := &call{s: &Server{cfg: Config{MaxFilterBytes: 1 << 62}, ks: newKeyspace()}}
	fs := DefaultFilterSettings()
	cf := defaultCFParams(&fs, 100)
	cf.bucketSize = 300
	if _, err := cf.newObject(c); err != errCFCreate || err.Error() != "ERR Could not create filter" {
		t.Errorf("a cuckoo filter of 300-slot buckets: %v", err)
	}
	bf := defaultBFParams(&fs)
	bf.capacity, bf.errorRate = 1<<40, 1e-15
	if _, err := bf.newObject(c); err != errBFCreate || err.Error() != "ERR could not create filter" {
		t.Errorf("a Bloom filter of 10 TB: %v", err)
	}
}
