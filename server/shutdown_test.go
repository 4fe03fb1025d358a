package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// TestShutdownFinishesCommands: Shutdown answers the commands a client has
// sent before it closes the connection, and a restart finds their writes.
func TestShutdownFinishesCommands(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	cfg.SaveOnShutdown = true
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	c.do("PING")
	var req bytes.Buffer
	const n = 20_000
	for i := range n {
		req.Write(encode("CF.ADD", "k", fmt.Sprint(i)))
	}
	go c.nc.Write(req.Bytes()) // 20,000 commands may fill the socket buffers
	// Shut down once the pipeline is being served: after its first reply.
	// (A sleep of 20 ms stood here; on a loaded machine the server may not
	// have read the pipeline by then, and then it owes no reply at all.)
	c.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	if line, err := c.br.ReadString('\n'); err != nil || line != ":1\r\n" {
		t.Fatalf("first reply %q, %v", line, err)
	}
	replies := 1
	stopped := make(chan error, 1)
	go func() { stopped <- s.Shutdown(context.Background()) }()
	for {
		line, err := c.br.ReadString('\n')
		if err != nil {
			break
		}
		if line != ":1\r\n" {
			t.Fatalf("reply %q", line)
		}
		replies++
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if replies == 0 {
		t.Fatal("no reply before the connection closed")
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Fatal("the server still accepts connections")
	}
	_, addr = startServer(t, cfg)
	c = dial(t, addr)
	info := c.do("CF.INFO", "k")
	if !strings.Contains(info, fmt.Sprintf("Number of items inserted\r\n:%d\r\n", replies)) {
		t.Fatalf("%d replies before the shutdown, after the restart: %q", replies, info)
	}
}

// TestShutdownCommand: SHUTDOWN stops the server, closing the connection
// without a reply, as Redis does; Done is closed.
func TestShutdownCommand(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	c.do("CF.ADD", "k", "x")
	c.send(encode("SHUTDOWN", "SAVE"))
	if got := readUntilClosed(t, c); got != "" {
		t.Fatalf("SHUTDOWN replied %q", got)
	}
	select {
	case <-s.Done():
	case <-time.After(testDeadline):
		t.Fatal("the server did not stop")
	}
	if err := s.Serve(newClosedListener()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Serve after shutdown: %v", err)
	}
	if s.save.count.Load() != 1 {
		t.Fatal("SHUTDOWN SAVE took no snapshot")
	}
}

func newClosedListener() net.Listener {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	return ln
}

// TestShutdownOutOfTime: a Shutdown whose context has ended takes no
// snapshot when the log keeps the writes, and a restart finds them in the
// log; without a log, the snapshot is taken all the same.
func TestShutdownOutOfTime(t *testing.T) {
	parallel(t)
	for _, appendOnly := range []bool{true, false} {
		t.Run(fmt.Sprint("appendonly=", appendOnly), func(t *testing.T) {
			cfg := testConfig(t)
			cfg.AppendOnly = appendOnly
			cfg.SaveOnShutdown = true
			var logs logSink
			cfg.Logf = logs.logf
			s, addr := startServer(t, cfg)
			dial(t, addr).do("CF.ADD", "k", "x")
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := s.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if snapshots := s.Stats().Snapshot.Count; snapshots != map[bool]int64{true: 0, false: 1}[appendOnly] {
				t.Fatalf("%d snapshots taken; log:\n%s", snapshots, logs.String())
			}
			if appendOnly && !strings.Contains(logs.String(), "no snapshot on shutdown: out of time") {
				t.Fatalf("log:\n%s", logs.String())
			}
			_, addr = startServer(t, cfg)
			if got := dial(t, addr).do("CF.EXISTS", "k", "x"); got != ":1\r\n" {
				t.Fatalf("after a restart: %q", got)
			}
		})
	}
}
