package store_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
	"github.com/dedupkit/cuckoo/store"
)

// ackModel is what a crash test knows: the state after every acknowledged
// write, and the one write in flight, which a crash may or may not have
// applied.
type ackModel struct {
	vals     map[string]string
	inflight string // the key of the write in flight, if any
	hasIn    bool
	inVal    string // its value; "" with inDel for a delete
	inDel    bool
}

// check compares a reopened store with the model, and settles the write
// in flight as the store has it.
func (m *ackModel) check(t *testing.T, s *store.Store) {
	t.Helper()
	for k, want := range m.vals {
		if m.hasIn && k == m.inflight {
			continue
		}
		v, err := s.Get([]byte(k))
		if err != nil || string(v) != want {
			t.Fatalf("acknowledged key %q: got %q, %v; want %q", k, v, err, want)
		}
	}
	if m.hasIn {
		v, err := s.Get([]byte(m.inflight))
		old, had := m.vals[m.inflight]
		switch {
		case err == nil && had && string(v) == old, errors.Is(err, store.ErrNotFound) && !had:
			// not applied
		case err == nil && !m.inDel && string(v) == m.inVal:
			m.vals[m.inflight] = m.inVal
		case errors.Is(err, store.ErrNotFound) && m.inDel:
			delete(m.vals, m.inflight)
		default:
			t.Fatalf("key in flight %q: got %q, %v; before %q (present %v), write %q (delete %v)", m.inflight, v, err, old, had, m.inVal, m.inDel)
		}
		m.hasIn = false
	}
	if n := s.Len(); n != uint64(len(m.vals)) {
		t.Fatalf("Len %d, model %d", n, len(m.vals))
	}
}

// TestCrashMemFS stops a store at a random write (of a record, a log file,
// a manifest, an index checkpoint; in a Put, a Delete or a Compact),
// keeps what a crash might keep of the unsynced bytes and names, reopens,
// and checks that every acknowledged write (SyncAlways) is there and the
// store takes writes.
func TestCrashMemFS(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	rng := testseed.Rand(t)
	rounds := 300
	switch {
	case testlong.Enabled():
		rounds = 3000
	case testing.Short():
		rounds = 60
	}
	fs := store.NewMemFS()
	opts := func(fs *store.MemFS) []store.Option {
		return []store.Option{store.WithFS(fs), store.WithSync(store.SyncAlways), store.WithLogFileSize(8 << 10),
			store.WithAutoCompact(0, 0), store.WithCheckpoints(0.1, 40), store.WithInlineCheckpoints()}
	}
	m := &ackModel{vals: map[string]string{}}
	compacted := 0
	for round := range rounds {
		s, err := store.Open("db", opts(fs)...)
		if err != nil {
			t.Fatalf("round %d: open: %v", round, err)
		}
		m.check(t, s)
		fs.CrashAtWrite(int64(1 + rng.IntN(60)))
		crashed := func() (crashed bool) {
			defer func() {
				if r := recover(); r != nil {
					if r != store.ErrCrash {
						panic(r)
					}
					crashed = true
				}
			}()
			for i := 0; ; i++ {
				k := fmt.Sprintf("k%d", rng.IntN(200))
				switch r := rng.IntN(20); {
				case r == 0:
					m.hasIn, m.inflight = false, ""
					compacted++
					if err := s.Compact(); err != nil {
						t.Fatalf("compact: %v", err)
					}
				case r < 5:
					m.hasIn, m.inflight, m.inDel = true, k, true
					if _, err := s.Delete([]byte(k)); err != nil {
						t.Fatalf("delete: %v", err)
					}
					delete(m.vals, k)
					m.hasIn = false
				default:
					v := fmt.Sprintf("v%d-%d-%s", round, i, strings.Repeat("x", rng.IntN(300)))
					m.hasIn, m.inflight, m.inVal, m.inDel = true, k, v, false
					if err := s.Put([]byte(k), []byte(v)); err != nil {
						t.Fatalf("put: %v", err)
					}
					m.vals[k] = v
					m.hasIn = false
				}
			}
		}()
		if !crashed {
			t.Fatal("no crash")
		}
		fs = fs.Crash(rng)
	}
	s, err := store.Open("db", opts(fs)...)
	if err != nil {
		t.Fatal(err)
	}
	m.check(t, s)
	if err := s.CheckIndex(); err != nil {
		t.Fatal(err)
	}
	if err := s.Put([]byte("after"), []byte("crashes")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	t.Logf("%d crashes, %d compactions begun, %d keys", rounds, compacted, len(m.vals))
}

// The SIGKILL test: a child process (this test binary, run again) writes
// with SyncAlways and reports each write before and after it; the parent
// kills it at a random moment, reopens the store and checks.

const crashChildEnv = "CUCKOO_STORE_CRASH_CHILD"

// TestCrashChild is the child's body; it does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	arg := os.Getenv(crashChildEnv)
	if arg == "" {
		t.Skip("run by TestCrashKill")
	}
	dir, mode, _ := strings.Cut(arg, ",")
	seed, _ := strconv.ParseUint(os.Getenv(crashChildEnv+"_SEED"), 10, 64)
	rng := testseed.New(seed)
	s, err := store.Open(dir, store.WithSync(store.SyncAlways), store.WithLogFileSize(64<<10), store.WithAutoCompact(0, 0),
		store.WithCheckpoints(0.1, 50))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	if mode == "compact" {
		go func() {
			for {
				if err := s.Compact(); err != nil {
					say("error compact %v", err)
					os.Exit(2)
				}
			}
		}()
	}
	say("ready")
	if mode == "hold" {
		// Keep the store open until killed, and reachable: a store the
		// program no longer refers to may be collected, and its lock file
		// closed by the runtime.
		for {
			time.Sleep(time.Hour)
			runtime.KeepAlive(s)
		}
	}
	for i := 0; ; i++ {
		k := fmt.Sprintf("k%d", rng.IntN(500))
		if rng.IntN(5) == 0 {
			say("begin del %s", k)
			if _, err := s.Delete([]byte(k)); err != nil {
				say("error %v", err)
				os.Exit(2)
			}
			say("ack")
			continue
		}
		v := fmt.Sprintf("%d-%d-%s", seed, i, strings.Repeat("v", rng.IntN(200)))
		say("begin put %s %s", k, v)
		if err := s.Put([]byte(k), []byte(v)); err != nil {
			say("error %v", err)
			os.Exit(2)
		}
		say("ack")
	}
}

// TestCrashKill kills a writing child with SIGKILL 6 times (and 6 times
// more while it compacts in a loop; 100 and 100 with CUCKOO_LONG=1) and
// checks every acknowledged write. The child checkpoints its index every
// 50 records or so, so kills land before, during and after checkpoints.
func TestCrashKill(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		t.Skip("in the child")
	}
	kills := 6
	if testlong.Enabled() {
		kills = 100
	}
	for _, mode := range []string{"write", "compact"} {
		t.Run("mode="+mode, func(t *testing.T) {
			t.Parallel()
			rng := testseed.Rand(t)
			dir := t.TempDir()
			m := &ackModel{vals: map[string]string{}}
			for round := range kills {
				cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v=false")
				cmd.Env = append(os.Environ(), crashChildEnv+"="+dir+","+mode, fmt.Sprintf("%s_SEED=%d", crashChildEnv, rng.Uint64()))
				stdout, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				lines := make(chan string, 1024)
				go func() {
					sc := bufio.NewScanner(stdout)
					sc.Buffer(nil, 1<<20)
					for sc.Scan() {
						lines <- sc.Text()
					}
					close(lines)
				}()
				deadline := time.After(time.Duration(20+rng.IntN(200)) * time.Millisecond)
				ready := false
			read:
				for {
					select {
					case l, ok := <-lines:
						if !ok {
							break read
						}
						if !ready {
							if l != "ready" {
								t.Fatalf("round %d: child: %s %s", round, l, stderr.String())
							}
							ready = true
							continue
						}
						m.apply(t, l)
					case <-deadline:
						if !ready {
							deadline = time.After(10 * time.Millisecond)
							continue
						}
						cmd.Process.Signal(syscall.SIGKILL)
						deadline = nil
					}
				}
				cmd.Wait()
				s, err := store.Open(dir, store.WithSync(store.SyncAlways))
				if err != nil {
					t.Fatalf("round %d: reopen: %v", round, err)
				}
				m.check(t, s)
				if err := s.CheckIndex(); err != nil {
					t.Fatal(err)
				}
				if err := s.Put([]byte("parent"), []byte(fmt.Sprint(round))); err != nil {
					t.Fatalf("round %d: the store takes no write: %v", round, err)
				}
				m.vals["parent"] = fmt.Sprint(round)
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%d kills, %d keys at the end", kills, len(m.vals))
		})
	}
}

// apply reads one line of the child's report.
func (m *ackModel) apply(t *testing.T, l string) {
	switch {
	case strings.HasPrefix(l, "begin put "):
		f := strings.SplitN(strings.TrimPrefix(l, "begin put "), " ", 2)
		m.hasIn, m.inflight, m.inVal, m.inDel = true, f[0], f[1], false
	case strings.HasPrefix(l, "begin del "):
		m.hasIn, m.inflight, m.inDel = true, strings.TrimPrefix(l, "begin del "), true
	case l == "ack":
		if m.inDel {
			delete(m.vals, m.inflight)
		} else {
			m.vals[m.inflight] = m.inVal
		}
		m.hasIn = false
	default:
		t.Fatalf("child: %s", l)
	}
}

var _ = rand.N[int]

// TestLockedByAnotherProcess: while a child process has the store open,
// Open in this one fails with ErrLocked; once the child is gone, it works.
func TestLockedByAnotherProcess(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		t.Skip("in the child")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir+",hold", crashChildEnv+"_SEED=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "ready" {
		cmd.Process.Kill()
		t.Fatalf("child: %q", sc.Text())
	}
	_, err = store.Open(dir)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("Open while another process has the store: %v", err)
	}
	s, err := store.Open(dir)
	if err != nil {
		t.Fatalf("Open after the other process died: %v", err)
	}
	s.Close()
}
