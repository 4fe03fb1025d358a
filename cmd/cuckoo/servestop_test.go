package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dedupkit/cuckoo/internal/testlong"
)

// writeLoad runs clients that add distinct items to the filter "k" of the
// server at addr until their connection fails: half one CF.ADD at a time,
// half pipelines of 32. It returns a function that stops them (if the
// server has not) and returns the items whose add was acknowledged, and
// the count of those so far.
func writeLoad(t *testing.T, addr string) (stop func() []string, acked *atomic.Int64) {
	t.Helper()
	const clients = 4
	acked = new(atomic.Int64)
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		kept []string
	)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := testRedis(addr)
			defer rdb.Close()
			var mine []string
			defer func() { mu.Lock(); kept = append(kept, mine...); mu.Unlock() }()
			for i := 0; ctx.Err() == nil; {
				if c%2 == 0 {
					item := fmt.Sprintf("c%d-%d", c, i)
					i++
					if rdb.CFAdd(ctx, "k", item).Err() != nil {
						return
					}
					mine = append(mine, item)
					acked.Add(1)
					continue
				}
				pipe := rdb.Pipeline()
				var cmds []*redis.BoolCmd
				for range 32 {
					cmds = append(cmds, pipe.CFAdd(ctx, "k", fmt.Sprintf("c%d-%d", c, i)))
					i++
				}
				pipe.Exec(ctx)
				for _, cmd := range cmds {
					if cmd.Err() != nil {
						return
					}
					mine = append(mine, cmd.Args()[2].(string))
					acked.Add(1)
				}
			}
		}()
	}
	return func() []string { cancel(); wg.Wait(); return kept }, acked
}

// checkStored fails unless the filter "k" of the server at addr holds
// every item.
func checkStored(t *testing.T, addr string, items []string) {
	t.Helper()
	rdb := testRedis(addr)
	defer rdb.Close()
	ctx := context.Background()
	for len(items) > 0 {
		n := min(len(items), 1000)
		args := make([]any, n)
		for i, item := range items[:n] {
			args[i] = item
		}
		found, err := rdb.CFMExists(ctx, "k", args...).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i, ok := range found {
			if !ok {
				t.Fatalf("%q was acknowledged before the stop, and is missing after the restart", items[i])
			}
		}
		items = items[n:]
	}
}

// TestServeStopUnderLoadKeepsAcknowledgedWrites sends SIGTERM to serve
// while clients write, one command at a time and in pipelines, with each
// fsync policy: serve exits with status 0, and after a restart the filter
// holds every item whose add was acknowledged.
func TestServeStopUnderLoadKeepsAcknowledgedWrites(t *testing.T) {
	t.Parallel()
	for _, fsync := range []string{"everysec", "always"} {
		t.Run("appendfsync="+fsync, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"--port", "0", "--dir", "data", "--appendfsync", fsync}
			cmd, line, stderr := startServe(t, dir, args...)
			addr := listenAddr(t, line)
			if err := testRedis(addr).CFReserve(context.Background(), "k", 1_000_000).Err(); err != nil {
				t.Fatal(err)
			}
			stop, acked := writeLoad(t, addr)
			waitUntil(t, "3000 acknowledged adds", func() bool { return acked.Load() >= 3000 })
			cmd.Process.Signal(syscall.SIGTERM)
			code := waitExitWithin(t, cmd, 2*time.Minute)
			items := stop()
			if code != 0 {
				t.Fatalf("exit status %d after SIGTERM\n%s", code, stderr)
			}
			t.Logf("%d adds acknowledged before the stop", len(items))
			_, line, _ = startServe(t, dir, args...)
			checkStored(t, listenAddr(t, line), items)
		})
	}
}

// listenAddr returns the address of serve's first line of output.
func listenAddr(t *testing.T, line string) string {
	t.Helper()
	addr, _, ok := strings.Cut(strings.TrimPrefix(line, "cuckoo serve: listening on "), ",")
	if !ok || !strings.HasPrefix(line, "cuckoo serve: listening on ") {
		t.Fatalf("first line %q", line)
	}
	return addr
}

// stallClient connects to addr and sends requests whose replies, 32 MB,
// fill the socket buffers, and never reads them: a graceful stop waits
// for the replies to go out, which they never do. It returns once the
// requests are sent: the server has then read all but what the sockets'
// buffers hold (a few MB), and so run more than the buffers take of
// replies.
func stallClient(t *testing.T, addr string) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	arg := strings.Repeat("x", 1<<20)
	var req bytes.Buffer
	for range 32 {
		fmt.Fprintf(&req, "*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\n", len(arg), arg)
	}
	nc.SetWriteDeadline(time.Now().Add(2 * time.Minute))
	if _, err := nc.Write(req.Bytes()); err != nil {
		t.Fatalf("sending the requests of the stalled client: %v", err)
	}
}

// TestServeSecondSignalExitsAtOnce: while a graceful stop waits for a
// client that reads no replies, a second SIGTERM ends serve at once with
// status 143, and every acknowledged write is there after a restart.
func TestServeSecondSignalExitsAtOnce(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--port", "0", "--dir", "data", "--shutdown-timeout", "1h"}
	cmd, line, stderr := startServe(t, dir, args...)
	addr := listenAddr(t, line)
	stop, acked := writeLoad(t, addr)
	waitUntil(t, "1000 acknowledged adds", func() bool { return acked.Load() >= 1000 })
	stallClient(t, addr)
	cmd.Process.Signal(syscall.SIGTERM)
	// The stop has begun once the port refuses connections; it then
	// waits for the stalled client.
	waitUntil(t, "the port to close", func() bool {
		nc, err := net.Dial("tcp", addr)
		if err == nil {
			nc.Close()
		}
		return err != nil
	})
	cmd.Process.Signal(syscall.SIGTERM)
	code := waitExitWithin(t, cmd, 2*time.Minute)
	items := stop()
	if code != 128+int(syscall.SIGTERM) || !strings.Contains(stderr.String(), "terminated again: exiting at once") {
		t.Fatalf("exit status %d after a second SIGTERM\n%s", code, stderr)
	}
	_, line, _ = startServe(t, dir, args...)
	checkStored(t, listenAddr(t, line), items)
}

// TestServeShutdownTimeout: a stop that outlasts --shutdown-timeout (a
// client reading no replies holds it) closes the connections left, skips
// the snapshot, and exits with status 0; a restart replays the log and
// finds every acknowledged write.
func TestServeShutdownTimeout(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--port", "0", "--dir", "data", "--shutdown-timeout", "1s"}
	cmd, line, stderr := startServe(t, dir, args...)
	addr := listenAddr(t, line)
	stop, acked := writeLoad(t, addr)
	waitUntil(t, "1000 acknowledged adds", func() bool { return acked.Load() >= 1000 })
	stallClient(t, addr)
	cmd.Process.Signal(syscall.SIGTERM)
	code := waitExitWithin(t, cmd, 2*time.Minute)
	items := stop()
	if code != 0 || !strings.Contains(stderr.String(), "no snapshot on shutdown: out of time") {
		t.Fatalf("exit status %d\n%s", code, stderr)
	}
	_, line, _ = startServe(t, dir, args...)
	checkStored(t, listenAddr(t, line), items)
}
