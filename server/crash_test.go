package server

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
)

// childEnv names the data directory of a server run as a child process
// by the crash test; the test binary then serves instead of testing.
const childEnv = "CUCKOO_SERVER_TEST_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		runChild(dir)
		return
	}
	os.Exit(m.Run())
}

// runChild serves dir with appendfsync always and prints its address.
func runChild(dir string) {
	cfg := DefaultConfig()
	cfg.Dir = dir
	cfg.Sync = SyncAlways
	cfg.SaveInterval = 0
	cfg.RewriteMinSize = 64 << 10 // snapshots during the test, too
	cfg.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	s, err := New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	fmt.Printf("ADDR %s\n", ln.Addr())
	s.Serve(ln)
}

// startChild runs the test binary as a server on dir and returns the
// process and its address.
func startChild(t *testing.T, dir string) (*exec.Cmd, string, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Wait()
		t.Fatalf("the child server did not start: %v\n%s", err, stderr.String())
	}
	return cmd, strings.TrimSpace(strings.TrimPrefix(line, "ADDR ")), &stderr
}

// TestKill9 writes from several clients, kills the server with SIGKILL at
// a random moment, restarts it on its data, and checks that every write
// the server acknowledged is there, three times over on one directory (30
// in the long checks, CUCKOO_LONG=1). The
// server fsyncs the log before each reply (appendfsync always); a write
// handed to the OS before its reply survives the kill of the process
// whatever the policy, so the test shows that no reply ever precedes the
// log. Snapshots run all the while, so kills also land during them.
func TestKill9(t *testing.T) {
	testlong.SkipQuickRun(t)
	// Not parallel: it starts processes (see parallel).
	if testing.Short() {
		t.Skip("starts and kills a server process five times")
	}
	rng := testseed.Rand(t)
	dir := t.TempDir()
	var mu sync.Mutex
	acked := map[string]bool{}
	rounds := 3
	if testlong.Enabled() {
		rounds = 30
	}
	for round := range rounds {
		cmd, addr, stderr := startChild(t, dir)
		// Everything acknowledged before must have survived.
		c := dial(t, addr)
		mu.Lock()
		for item := range acked {
			if got := c.do("CF.EXISTS", "seen", item); got != ":1\r\n" {
				cmd.Process.Kill()
				t.Fatalf("round %d: acknowledged item %q lost after kill -9: %q\nserver log:\n%s", round, item, got, stderr.String())
			}
		}
		n := len(acked)
		mu.Unlock()
		if n > 0 {
			info := c.do("CF.INFO", "seen")
			var items int
			fmt.Sscanf(info[strings.Index(info, "inserted\r\n:")+len("inserted\r\n:"):], "%d", &items)
			if items < n {
				t.Fatalf("round %d: %d items in the filter, %d acknowledged", round, items, n)
			}
		}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				nc, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer nc.Close()
				br := bufio.NewReader(nc)
				for i := 0; ; i++ {
					// Pipelines of 1 to 8 commands.
					batch := 1 + i%8
					var req []byte
					var items []string
					for j := range batch {
						item := fmt.Sprintf("r%d-w%d-%d-%d", round, w, i, j)
						items = append(items, item)
						req = append(req, encode("CF.ADD", "seen", item)...)
					}
					if _, err := nc.Write(req); err != nil {
						return
					}
					for _, item := range items {
						line, err := br.ReadString('\n')
						if err != nil {
							return
						}
						if line != ":1\r\n" {
							t.Errorf("CF.ADD: %q", line)
							return
						}
						mu.Lock()
						acked[item] = true
						mu.Unlock()
					}
				}
			}()
		}
		// Snapshots too, so that some kills land in the middle of one.
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer nc.Close()
			br := bufio.NewReader(nc)
			for {
				if _, err := nc.Write(encode("BGSAVE")); err != nil {
					return
				}
				if _, err := br.ReadString('\n'); err != nil {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
		time.Sleep(time.Duration(50+rng.IntN(300)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		wg.Wait()
		mu.Lock()
		t.Logf("round %d: %d writes acknowledged so far", round, len(acked))
		mu.Unlock()
	}
	cmd, addr, _ := startChild(t, dir)
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	c := dial(t, addr)
	for item := range acked {
		if got := c.do("CF.EXISTS", "seen", item); got != ":1\r\n" {
			t.Fatalf("acknowledged item %q lost: %q", item, got)
		}
	}
}
