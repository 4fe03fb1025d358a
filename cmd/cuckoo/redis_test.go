package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dedupkit/cuckoo/internal/redistest"
)

// goSourceLines returns the lines of some of Go's own source files: real
// text no one tuned for, with many repeated lines ("}", "return nil").
func goSourceLines(t *testing.T, max int) []string {
	t.Helper()
	root := filepath.Join(runtimeGOROOT(t), "src", "net", "http")
	var lines []string
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || len(lines) >= max || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err == nil {
			lines = append(lines, strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")...)
		}
		return nil
	})
	if len(lines) < 1000 {
		t.Skip("Go's source tree is not there")
	}
	return lines[:min(len(lines), max)]
}

func runtimeGOROOT(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skip("go env GOROOT:", err)
	}
	return strings.TrimSpace(string(out))
}

// TestPushPull builds a segmented filter file from Go's source lines,
// pushes it into a real Redis server, pulls it back (the same bytes),
// and checks the errors of the Redis commands.
func TestPushPull(t *testing.T) {
	s := redistest.NewServer(t, redistest.Config{})
	e := newEnv(t)
	lines := goSourceLines(t, 40000)
	e.write("keys.txt", strings.Join(lines, "\n")+"\n")
	e.run("", "build", "--segments", "4", "--capacity", "50000", "--seed", "7", "-o", "a.ckoo", "keys.txt").want(t, 0, "build")
	e.run("", "push", "a.ckoo", "--redis", s.Addr, "--name", "src").want(t, 0, "push")
	e.run("", "pull", "--redis", "redis://"+s.Addr, "--name", "src", "-o", "b.ckoo").want(t, 0, "pull")
	if !bytes.Equal(e.read("a.ckoo"), e.read("b.ckoo")) {
		t.Fatal("the pulled file differs from the pushed one")
	}
	e.run("", "query", "b.ckoo", "--key", lines[0]).want(t, 0, "query")
	e.run("", "push", "a.ckoo", "--redis", s.Addr, "--name", "src").want(t, 3, "push")
	e.run("", "push", "a.ckoo", "--redis", s.Addr, "--name", "src", "--replace").want(t, 0, "push")
	e.run("", "pull", "--redis", s.Addr, "--name", "nothing", "-o", "c.ckoo").want(t, 3, "pull")
	e.run("", "pull", "--redis", s.Addr, "--name", "src").want(t, 2, "pull")
	e.run("", "push", "a.ckoo", "--name", "src").want(t, 2, "push")
	e.run("", "build", "--segments", "4", "--grow", "-o", "g.ckoo", "keys.txt").want(t, 2, "build")
	e.run("", "build", "--bloom", "--capacity", "50000", "-o", "bl.ckoo", "keys.txt").want(t, 0, "build")
	e.run("", "push", "bl.ckoo", "--redis", s.Addr, "--name", "bl").want(t, 2, "push")
	e.run("", "push", "a.ckoo", "--redis", "127.0.0.1:1", "--name", "x").want(t, 3, "push")
	if names := e.files(); len(names) != 4 {
		t.Fatalf("files left: %v", names)
	}
}

// TestDedupRedis runs two dedup processes at once on two halves of one
// stream, sharing a filter in Redis: together they print every distinct
// line exactly once (compared with an exact set), each in its input's
// order.
//
// Two distinct lines with the same fingerprint and bucket pair would make
// the second a false positive, missing from the output. The filter is
// large (a million keys, 32-bit fingerprints: about 270,000 buckets) so
// that for any 32,000 distinct lines that happens with probability about
// D²/(buckets·2^32) ≈ 1e-6, and its seed is fixed: whether it happens
// depends only on the seed and the set of lines, not on which process
// adds a line first, and with this seed and the net/http sources of Go
// 1.26 it does not.
func TestDedupRedis(t *testing.T) {
	s := redistest.NewServer(t, redistest.Config{})
	e := newEnv(t)
	lines := goSourceLines(t, 60000)
	half := len(lines) / 2
	e.write("a.txt", strings.Join(lines[:half], "\n")+"\n")
	e.write("b.txt", strings.Join(lines[half:], "\n")+"\n")
	args := []string{"dedup", "--redis", s.Addr, "--name", "shared", "--capacity", "1M", "--fingerprint-bits", "32", "--seed", "0xded0"}
	var out [2]result
	var wg sync.WaitGroup
	for i, in := range []string{"a.txt", "b.txt"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = runIn(t, e.dir, nil, append(args, in)...)
		}()
	}
	wg.Wait()
	distinct := map[string]bool{}
	for _, l := range lines {
		distinct[l] = true
	}
	printed := map[string]int{}
	for i, r := range out {
		r.want(t, 0, "dedup")
		got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		src := lines[:half]
		if i == 1 {
			src = lines[half:]
		}
		if !isSubsequence(got, src) {
			t.Fatalf("process %d printed lines out of its input's order", i)
		}
		for _, l := range got {
			printed[l]++
		}
	}
	if len(printed) != len(distinct) {
		var missing []string
		for l := range distinct {
			if printed[l] == 0 {
				missing = append(missing, l)
			}
		}
		sort.Strings(missing)
		t.Fatalf("%d distinct lines printed, want %d; missing %q", len(printed), len(distinct), missing[:min(5, len(missing))])
	}
	for l, n := range printed {
		if n != 1 {
			t.Fatalf("%q printed %d times", l, n)
		}
	}
	// A third run sees everything: --count counts every line as a repeat.
	r := e.run("", "dedup", "--redis", s.Addr, "--name", "shared", "--count", "a.txt")
	r.want(t, 0, "dedup")
	if strings.TrimSpace(r.stdout) != strconv.Itoa(half) {
		t.Fatalf("--count printed %q, want %d", r.stdout, half)
	}
	e.run("", "dedup", "--redis", s.Addr, "--name", "absent", "a.txt").want(t, 3, "dedup")
	e.run("", "dedup", "--redis", s.Addr, "--name", "shared", "--capacity", "5", "a.txt").want(t, 2, "dedup")
	e.run("", "dedup", "--redis", s.Addr, "--name", "shared", "--save", "x.ckoo", "a.txt").want(t, 2, "dedup")
}

func isSubsequence(sub, of []string) bool {
	j := 0
	for _, s := range sub {
		for j < len(of) && of[j] != s {
			j++
		}
		if j == len(of) {
			return false
		}
		j++
	}
	return true
}
