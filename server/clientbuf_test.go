package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// infoField returns the value of field in INFO's reply.
func infoField(t *testing.T, c *conn, field string) int64 {
	t.Helper()
	info := c.do("INFO")
	i := strings.Index(info, "\r\n"+field+":")
	if i < 0 {
		t.Fatalf("INFO has no %s", field)
	}
	v := info[i+len(field)+3:]
	n, err := strconv.ParseInt(v[:strings.IndexByte(v, '\r')], 10, 64)
	if err != nil {
		t.Fatalf("INFO %s: %v", field, err)
	}
	return n
}

// TestQueryLimitsConfig: proto-max-bulk-len and client-query-buffer-limit
// are in CONFIG GET with Redis's defaults, and CONFIG SET changes them,
// within Redis's bounds and this server's, with Redis's errors, all the
// settings of one CONFIG SET or none.
func TestQueryLimitsConfig(t *testing.T) {
	parallel(t)
	_, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	get := func() string { return render(c.do("CONFIG", "GET", "*-max-bulk-len", "client-query-*")) }
	if got := get(); got != "1) \"proto-max-bulk-len\"\n2) \"536870912\"\n3) \"client-query-buffer-limit\"\n4) \"1073741824\"\n" {
		t.Fatalf("defaults: %q", got)
	}
	for _, tc := range []struct{ set, reply string }{
		{"proto-max-bulk-len 2mb", "+OK\r\n"},
		{"client-query-buffer-limit 3145728", "+OK\r\n"},
		{"proto-max-bulk-len 100", "-ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - argument must be between 1048576 and 1073741824 inclusive\r\n"},
		{"client-query-buffer-limit 2gb", "-ERR CONFIG SET failed (possibly related to argument 'client-query-buffer-limit') - argument must be between 1048576 and 1073741824 inclusive\r\n"},
		{"proto-max-bulk-len lots", "-ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - argument must be a memory value\r\n"},
		{"proto-max-bulk-len 5mb cf-bucket-size 999", "-ERR CONFIG SET failed (possibly related to argument 'cf-bucket-size') - Value for `cf-bucket-size` must be in the range [1, 255]\r\n"},
		{"proto-max-bulk-len 5mb proto-max-bulk-len 6mb", "-ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - duplicate parameter\r\n"},
	} {
		if got := c.do(append([]string{"CONFIG", "SET"}, strings.Fields(tc.set)...)...); got != tc.reply {
			t.Errorf("CONFIG SET %s: %q, want %q", tc.set, got, tc.reply)
		}
	}
	if got := get(); got != "1) \"proto-max-bulk-len\"\n2) \"2097152\"\n3) \"client-query-buffer-limit\"\n4) \"3145728\"\n" {
		t.Fatalf("after CONFIG SET: %q", got)
	}
}

// TestQueryLimitsApply: the limits CONFIG SET sets apply to the clients
// connected before it, as in Redis: an argument past proto-max-bulk-len
// gets "invalid bulk length" and a closed connection, from its header; a
// command past client-query-buffer-limit a closed connection and no
// reply, which the server logs and INFO counts; a command within both is
// served.
func TestQueryLimitsApply(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	var log logSink
	cfg.Logf = log.logf
	_, addr := startServer(t, cfg)
	bulk, query, admin := dial(t, addr), dial(t, addr), dial(t, addr)
	bulk.do("PING")
	query.do("PING")
	doEach(t, admin, "+OK\r\n", "CONFIG SET proto-max-bulk-len 1mb client-query-buffer-limit 2mb")
	// An argument of 1 MiB + 1, announced and not sent.
	bulk.send([]byte(fmt.Sprintf("*2\r\n$4\r\nECHO\r\n$%d\r\n", 1<<20+1)))
	if got := readUntilClosed(t, bulk); got != "-ERR Protocol error: invalid bulk length\r\n" {
		t.Fatalf("an argument past proto-max-bulk-len: %q", got)
	}
	// Three arguments of 1 MiB: 3 MiB in one command.
	arg := strings.Repeat("x", 1<<20)
	if got := dial(t, addr).do("ECHO", arg); got != fmt.Sprintf("$%d\r\n%s\r\n", len(arg), arg) {
		t.Fatal("an argument of 1 MiB was not echoed")
	}
	go query.nc.Write(encode("CF.INSERT", "k", "ITEMS", arg, arg, arg))
	// The server closes with the rest of the command unread, which the
	// system answers with a reset.
	query.nc.SetReadDeadline(time.Now().Add(testDeadline))
	if got, err := io.ReadAll(query.br); len(got) > 0 || err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("a command past client-query-buffer-limit: %q, %v; want the connection closed, no reply", got, err)
	}
	if n := infoField(t, admin, "client_query_buffer_limit_disconnections"); n != 1 {
		t.Fatalf("client_query_buffer_limit_disconnections:%d", n)
	}
	if !strings.Contains(log.String(), "that reached client-query-buffer-limit (2097152 bytes)") {
		t.Fatalf("the close was not logged:\n%s", log.String())
	}
	alive(t, addr)
}

// TestClientBuffersCountAgainstMaxMemory: with maxmemory set, the bytes a
// client's unfinished argument holds count as Redis counts them: while
// they pass maxmemory, a write that may add memory gets the OOM error, and
// once the client leaves its buffer is given back (mem_clients_normal) and
// writes go on.
func TestClientBuffersCountAgainstMaxMemory(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	cfg.MaxMemory = 8 << 20
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	idle := infoField(t, c, "mem_clients_normal")
	if got := c.do("CF.ADD", "k", "before"); got != ":1\r\n" {
		t.Fatalf("under maxmemory: %q", got)
	}
	big := dial(t, addr)
	big.send([]byte(fmt.Sprintf("*3\r\n$4\r\nECHO\r\n$%d\r\n", 64<<20)))
	big.send(bytes.Repeat([]byte("y"), 12<<20)) // of 64 MiB announced
	waitFor(t, "the server to hold the 12 MiB sent", func() bool { return s.clientBufs.used() >= 12<<20 })
	if got := c.do("CF.ADD", "k", "during"); got != "-OOM command not allowed when used memory > 'maxmemory'.\r\n" {
		t.Fatalf("a write while a client's buffer passes maxmemory: %q", got)
	}
	if held := infoField(t, c, "mem_clients_normal"); held < 12<<20 || held > 40<<20 {
		t.Fatalf("mem_clients_normal:%d with 12 MiB of an argument buffered", held)
	}
	big.nc.Close()
	waitFor(t, "the buffer to be given back", func() bool { return s.clientBufs.used() <= idle })
	if got := c.do("CF.ADD", "k", "after"); got != ":1\r\n" {
		t.Fatalf("once the client left: %q", got)
	}
}
