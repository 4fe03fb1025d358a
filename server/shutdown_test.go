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
