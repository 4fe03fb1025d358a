package server

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/testlong"
)

// TestGoroutineConnections runs the tests of the connection layer with a
// goroutine per connection, the layer of systems without event loops (on
// Linux the loops serve every test but this one).
func TestGoroutineConnections(t *testing.T) {
	testlong.SkipQuickRun(t)
	if !useLoops {
		t.Skip("connections are served by goroutines in every test here")
	}
	useLoops, inGoroutineRun = false, true
	defer func() { useLoops, inGoroutineRun = true, false }()
	for name, test := range map[string]func(*testing.T){
		"Scripts": TestScripts, "GoRedisCuckoo": TestGoRedisCuckoo, "MalformedRequests": TestMalformedRequests,
		"HugeLengthHeader": TestHugeLengthHeader, "Pipeline100k": TestPipeline100k, "MaxClients": TestMaxClients,
		"OutputLimit": TestOutputLimit, "IdleTimeout": TestIdleTimeout, "ShutdownFinishesCommands": TestShutdownFinishesCommands,
		"ShutdownCommand": TestShutdownCommand, "ClientList": TestClientList, "ManyClients": TestManyClients,
		"StatsCommandsByResult": TestStatsCommandsByResult, "StatsProtocolAndOutputErrors": TestStatsProtocolAndOutputErrors,
		"QueryLimitsApply": TestQueryLimitsApply, "ClientBuffersCountAgainstMaxMemory": TestClientBuffersCountAgainstMaxMemory,
	} {
		t.Run(name, test)
	}
}

// TestLoopsServe: with event loops, every connection is served by a loop
// (none by a goroutine of its own), one loop per GOMAXPROCS.
func TestLoopsServe(t *testing.T) {
	parallel(t)
	if !useLoops || runtime.GOOS != "linux" {
		t.Skip("no event loops here")
	}
	s, addr := startServer(t, testConfig(t))
	a, b := dial(t, addr), dial(t, addr)
	a.do("PING")
	b.do("PING")
	if len(s.loops) != runtime.GOMAXPROCS(0) {
		t.Fatalf("%d loops, GOMAXPROCS %d", len(s.loops), runtime.GOMAXPROCS(0))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.mu.clients {
		if c.nc != nil || c.lc == nil {
			t.Errorf("client %d is not served by a loop", c.id)
		}
	}
}

// TestManyClients: many clients, each sending pipelines of writes and
// reads concurrently, get every reply in order, and the filter holds
// every item added (the loops share one log write between the clients of
// a round: each reply still waits for its own record).
func TestManyClients(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	const clients, rounds, batch = 40, 30, 20
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		c := dial(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				var req bytes.Buffer
				for j := range batch {
					req.Write(encode("CF.ADD", "k", fmt.Sprint(i, "-", r, "-", j)))
					req.Write(encode("CF.EXISTS", "k", fmt.Sprint(i, "-", r, "-", j)))
				}
				if _, err := c.nc.Write(req.Bytes()); err != nil {
					errs <- err
					return
				}
				for range 2 * batch {
					if got, err := c.reply(); err != nil || got != ":1\r\n" {
						errs <- fmt.Errorf("client %d round %d: %q, %v", i, r, got, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c := dial(t, addr)
	if got := c.do("CF.INFO", "k"); !strings.Contains(got, fmt.Sprintf("Number of items inserted\r\n:%d\r\n", clients*rounds*batch)) {
		t.Fatalf("CF.INFO: %q", got)
	}
	// The log holds every write: a restart replays them all.
	stopServer(t, s)
	_, addr = startServer(t, cfg)
	if got := dial(t, addr).do("CF.INFO", "k"); !strings.Contains(got, fmt.Sprintf("Number of items inserted\r\n:%d\r\n", clients*rounds*batch)) {
		t.Fatalf("CF.INFO after a restart: %q", got)
	}
}

// TestSlowReader: a client that does not read its replies while
// sending more requests has them kept (the socket takes what it can, the
// loop keeps the rest and sends it when the socket takes more), and gets
// every one, in order, once it reads.
func TestSlowReader(t *testing.T) {
	parallel(t)
	_, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	const n = 3000
	big := strings.Repeat("x", 4000)
	var req bytes.Buffer
	for i := range n {
		req.Write(encode("ECHO", fmt.Sprint(i, big)))
	}
	done := make(chan error, 1)
	go func() { _, err := c.nc.Write(req.Bytes()); done <- err }()
	time.Sleep(200 * time.Millisecond) // the server's socket fills meanwhile
	for i := range n {
		want := fmt.Sprint(i, big)
		if got, err := c.reply(); err != nil || got != fmt.Sprintf("$%d\r\n%s\r\n", len(want), want) {
			t.Fatalf("reply %d: %.40q, %v", i, got, err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
