// Command dedupbench times `cuckoo dedup` in each of its modes against
// the tools it replaces, awk '!seen[$0]++', `sort -u` and `sort | uniq`
// (with LC_ALL=C), as whole processes on the same machine in one run:
// wall time, CPU time (user + system) and peak resident memory, as GNU
// time reports them for the finished process (a shell pipeline's figures
// include its children's; its peak is the largest one's). The commands
// run in turn, round after round, so that a busy machine's noise falls
// on all alike; the report gives medians, ratios taken round by round
// (each round's pair measured seconds apart), and the targets of
// docs/dedup-benchmark.md, met or not.
//
//	cd bench && go run ./dedupbench                         # seq and Go's source, 5 rounds
//	cd bench && go run ./dedupbench -rounds 3 -before main  # and the build of main, for a before/after table
//	cd bench && go run ./dedupbench -floor                  # and the floor: reading, hashing, one cache miss per new key, writing
//
// The inputs: seq (`seq 1 5000000`, every line distinct), gosrc (every
// .go file of $(go env GOROOT)/src, joined in sorted path order: real
// text, 59 % repeats) and, with -inputs, urls (URL-like lines, 30 %
// repeats). A pipe is cat's, and its figures include cat's. Before the
// timed rounds, each mode's output is checked: the exact modes against
// awk's (with dedup's rule for a trailing CR), and the filter modes
// against the same mode on one core (GOMAXPROCS=1) with the same seed,
// byte for byte.
package main

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/dedupkit/cuckoo/internal/urlgen"
)

var (
	rounds  = flag.Int("rounds", 5, "timed rounds (each command once a round)")
	inputs  = flag.String("inputs", "seq,gosrc", "inputs: seq, gosrc, urls")
	only    = flag.String("commands", "", "run only the commands whose names contain one of these (comma-separated)")
	before  = flag.String("before", "", "also time the build of this git revision (a before/after table)")
	repo    = flag.String("repo", "..", "the repository's root")
	dir     = flag.String("dir", filepath.Join(os.TempDir(), "cuckoo-dedupbench"), "where the binaries, inputs and outputs go")
	out     = flag.String("out", "", "also write the report (Markdown) to this file")
	floor   = flag.Bool("floor", false, "also measure the floor: read, hash every line, one cache miss per new key, write")
	seqN    = flag.Int("seq", 5_000_000, "lines of the seq input")
	urlsN   = flag.Int("urls", 3_000_000, "lines of the urls input")
	timeout = flag.Duration("timeout", 10*time.Minute, "the longest one command may run")
)

// command is one process to time.
type command struct {
	name string
	argv []string
	env  []string // added to the environment
	// pipe feeds the input through a pipe from cat (sh -c 'cat FILE |
	// CMD'), not as a file argument: the figures are the shell's, with
	// cat's CPU time.
	pipe  bool
	exact bool // its output is awk's (CR rule)
	// seeded commands take --seed 1 in the check, so that their output
	// is the same from run to run; sameAs names the command whose output
	// (then) it must equal: the filter modes on one core.
	seeded bool
	sameAs string
}

// sample is one timed run.
type sample struct{ wall, cpu, peakMiB float64 }

func main() {
	log.SetFlags(0)
	flag.Parse()
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		log.Fatal(err)
	}
	if _, err := os.Stat(gnuTime); err != nil {
		log.Fatalf("needs GNU time at %s (Debian: apt-get install time)", gnuTime)
	}
	bin := build("cuckoo", "")
	var old string
	if *before != "" {
		old = build("cuckoo-before", *before)
	}
	var report bytes.Buffer
	w := io.MultiWriter(os.Stdout, &report)
	fmt.Fprintf(w, "Machine: %d CPUs (%s), %s; load average %s at the start; %s, %s.\n\n",
		runtime.NumCPU(), cpuModel(), runtime.Version(), loadAverage(), toolVersion("awk", "-W", "version"), toolVersion("sort", "--version"))
	for _, in := range strings.Split(*inputs, ",") {
		path := makeInput(in)
		cmds := commands(bin, old, path)
		check(cmds, path)
		results := measure(cmds, path)
		table(w, in, path, cmds, results)
		if *floor {
			measureFloor(w, path)
		}
	}
	fmt.Fprintf(w, "Load average at the end: %s.\n", loadAverage())
	if *out != "" {
		if err := os.WriteFile(*out, report.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// build builds cmd/cuckoo of the working tree, or of a git revision.
func build(name, rev string) string {
	bin := filepath.Join(*dir, name)
	src := *repo
	if rev != "" {
		src = filepath.Join(*dir, "src-"+strings.NewReplacer("/", "-", ".", "-").Replace(rev))
		os.RemoveAll(src)
		if err := os.MkdirAll(src, 0o755); err != nil {
			log.Fatal(err)
		}
		run(*repo, "sh", "-c", fmt.Sprintf("git archive %q | tar -x -C %q", rev, src))
	}
	run(src, "go", "build", "-o", bin, "./cmd/cuckoo")
	return bin
}

func run(dir string, argv ...string) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		log.Fatalf("%v: %v", argv, err)
	}
}

// makeInput writes an input (once: it is kept in -dir) and returns its
// path.
func makeInput(name string) string {
	path := filepath.Join(*dir, name+".txt")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	var b bytes.Buffer
	switch name {
	case "seq":
		for i := 1; i <= *seqN; i++ {
			fmt.Fprintf(&b, "%d\n", i)
		}
	case "gosrc":
		root := filepath.Join(runtime.GOROOT(), "src")
		var paths []string
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") {
				paths = append(paths, p)
			}
			return nil
		})
		slices.Sort(paths) // as LC_ALL=C sort orders them
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				log.Fatal(err)
			}
			b.Write(data)
		}
	case "urls":
		g := urlgen.New(1, 0.3)
		var line []byte
		for range *urlsN {
			line, _ = g.Append(line[:0])
			b.Write(line)
		}
	default:
		log.Fatalf("unknown input %q: want seq, gosrc or urls", name)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	return path
}

// commands lists what to time on the input at path.
func commands(bin, old, path string) []command {
	n := fmt.Sprint(lines(path))
	cs := []command{
		{name: "cuckoo dedup FILE", argv: []string{bin, "dedup", "-q", path}, seeded: true, sameAs: "cuckoo dedup FILE, one core"},
		{name: "cuckoo dedup FILE, one core", argv: []string{bin, "dedup", "-q", path}, env: []string{"GOMAXPROCS=1"}, seeded: true},
		{name: "cat FILE | cuckoo dedup", argv: []string{bin, "dedup", "-q"}, pipe: true},
		{name: "cuckoo dedup --capacity N FILE", argv: []string{bin, "dedup", "-q", "--capacity", n, path}, seeded: true,
			sameAs: "cuckoo dedup --capacity N FILE, one core"},
		{name: "cuckoo dedup --capacity N FILE, one core", argv: []string{bin, "dedup", "-q", "--capacity", n, path},
			env: []string{"GOMAXPROCS=1"}, seeded: true},
		{name: "cuckoo dedup --window 24h FILE", argv: []string{bin, "dedup", "-q", "--window", "24h", path}},
		{name: "cuckoo dedup --exact FILE", argv: []string{bin, "dedup", "-q", "--exact", path}, exact: true},
		{name: "cuckoo dedup --exact FILE, one core", argv: []string{bin, "dedup", "-q", "--exact", path}, env: []string{"GOMAXPROCS=1"}, exact: true},
		{name: "cat FILE | cuckoo dedup --exact", argv: []string{bin, "dedup", "-q", "--exact"}, pipe: true, exact: true},
		{name: "awk '!seen[$0]++' FILE", argv: []string{"awk", "!seen[$0]++", path}},
		{name: "sort -u FILE", argv: []string{"sort", "-u", path}, env: []string{"LC_ALL=C"}},
		{name: "sort FILE | uniq", argv: []string{"sh", "-c", `sort "$1" | uniq`, "sh", path}, env: []string{"LC_ALL=C"}},
	}
	if old != "" {
		cs = append(cs,
			command{name: "before: cuckoo dedup FILE", argv: []string{old, "dedup", "-q", path}, seeded: true, sameAs: "cuckoo dedup FILE, one core"},
			command{name: "before: cat FILE | cuckoo dedup", argv: []string{old, "dedup", "-q"}, pipe: true},
			command{name: "before: cuckoo dedup --exact FILE", argv: []string{old, "dedup", "-q", "--exact", path}, exact: true})
	}
	if *only == "" {
		return cs
	}
	return slices.DeleteFunc(cs, func(c command) bool {
		for _, s := range strings.Split(*only, ",") {
			if strings.Contains(c.name, s) {
				return false
			}
		}
		return true
	})
}

func lines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	n, buf := 0, make([]byte, 1<<20)
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n
		}
		if err != nil {
			log.Fatal(err)
		}
	}
}

// start runs c once, its output to stdout, and returns what it cost:
// the wall time around the process, and the CPU time and peak resident
// memory GNU time reports for it. (A process this program started
// directly would report this program's own resident memory as its peak
// when that is larger: Linux carries the parent's high-water mark across
// the exec. GNU time is small, and its child's figure is the command's.)
func start(c command, path string, stdout io.Writer) (sample, error) {
	stats := filepath.Join(*dir, "time.out")
	argv := c.argv
	if c.pipe {
		argv = append([]string{"sh", "-c", `cat "$0" | "$@"`, path}, argv...)
	}
	argv = append([]string{gnuTime, "-f", "%U %S %M", "-o", stats}, argv...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Stdout, cmd.Stderr = stdout, os.Stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return sample{}, err
	}
	timer := time.AfterFunc(*timeout, func() { cmd.Process.Kill() })
	err := cmd.Wait()
	wall := time.Since(t0).Seconds()
	timer.Stop()
	if err != nil {
		return sample{}, fmt.Errorf("%s: %v", c.name, err)
	}
	data, err := os.ReadFile(stats)
	if err != nil {
		return sample{}, err
	}
	var user, sys, kib float64
	if _, err := fmt.Sscan(string(data), &user, &sys, &kib); err != nil {
		return sample{}, fmt.Errorf("%s: GNU time wrote %q: %v", c.name, data, err)
	}
	return sample{wall: wall, cpu: user + sys, peakMiB: kib / 1024}, nil
}

// gnuTime is GNU time, which reports a command's resources.
const gnuTime = "/usr/bin/time"

// check runs each command once more, untimed, and checks its output.
func check(cmds []command, path string) {
	sum := func(c command) [32]byte {
		if c.seeded {
			c.argv = append(slices.Clone(c.argv[:2]), append([]string{"--seed", "1"}, c.argv[2:]...)...)
		}
		h := sha256.New()
		if _, err := start(c, path, h); err != nil {
			log.Fatal(err)
		}
		return [32]byte(h.Sum(nil))
	}
	awkCR := command{name: "awk with the CR rule", argv: []string{"awk", `{ k = $0; sub(/\r$/, "", k) } !seen[k]++`, path}}
	want := sum(awkCR)
	sums := map[string][32]byte{}
	for _, c := range cmds {
		if !strings.Contains(c.argv[0], "cuckoo") {
			continue
		}
		sums[c.name] = sum(c)
		if c.exact && sums[c.name] != want {
			log.Fatalf("%s: the output differs from awk's", c.name)
		}
	}
	for _, c := range cmds {
		if other, ok := sums[c.sameAs]; ok && sums[c.name] != other {
			log.Fatalf("%s: the output differs from %s's with the same seed", c.name, c.sameAs)
		}
	}
	log.Printf("%s: outputs checked", filepath.Base(path))
}

// measure runs the commands in turn, round after round.
func measure(cmds []command, path string) [][]sample {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		log.Fatal(err)
	}
	defer devnull.Close()
	res := make([][]sample, len(cmds))
	for r := range *rounds {
		for i, c := range cmds {
			s, err := start(c, path, devnull)
			if err != nil {
				log.Fatal(err)
			}
			res[i] = append(res[i], s)
		}
		log.Printf("%s: round %d of %d done", filepath.Base(path), r+1, *rounds)
	}
	return res
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ratio is the median over the rounds of a's figure over b's.
func ratio(a, b []sample, f func(sample) float64) float64 {
	var rs []float64
	for i := range a {
		rs = append(rs, f(a[i])/f(b[i]))
	}
	return median(rs)
}

func wall(s sample) float64 { return s.wall }
func peak(s sample) float64 { return s.peakMiB }

// table writes the figures of one input and its targets.
func table(w io.Writer, in, path string, cmds []command, res [][]sample) {
	st, _ := os.Stat(path)
	fmt.Fprintf(w, "### %s (%d lines, %.1f MiB)\n\n", in, lines(path), float64(st.Size())/(1<<20))
	fmt.Fprintln(w, "| command | wall s | CPU s | peak MiB | wall ÷ plain dedup's |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	idx := map[string]int{}
	for i, c := range cmds {
		idx[c.name] = i
	}
	plain, hasPlain := idx["cuckoo dedup FILE"]
	for i, c := range cmds {
		col := func(f func(sample) float64) float64 {
			var xs []float64
			for _, s := range res[i] {
				xs = append(xs, f(s))
			}
			return median(xs)
		}
		rel := "–"
		if hasPlain {
			rel = fmt.Sprintf("%.2f", ratio(res[i], res[plain], wall))
		}
		fmt.Fprintf(w, "| `%s` | %.2f | %.2f | %.1f | %s |\n", strings.ReplaceAll(c.name, "|", `\|`),
			col(wall), col(func(s sample) float64 { return s.cpu }), col(peak), rel)
	}
	fmt.Fprintf(w, "\nMedians of %d rounds; ratios are medians of the rounds' ratios.\n\n", *rounds)
	targets := []struct {
		what     string
		a, b     string
		f        func(sample) float64
		min, max float64
	}{
		{"plain dedup ≥ 3× faster than sort -u (seq), ≥ 8× (Go's source)", "sort -u FILE", "cuckoo dedup FILE", wall, map[string]float64{"seq": 3, "gosrc": 8}[in], 0},
		{"plain dedup ≥ 10× faster than awk", "awk '!seen[$0]++' FILE", "cuckoo dedup FILE", wall, 10, 0},
		{"--exact ≥ 3× faster than awk", "awk '!seen[$0]++' FILE", "cuckoo dedup --exact FILE", wall, 3, 0},
		{"--exact ≤ 2.5× plain dedup's time", "cuckoo dedup --exact FILE", "cuckoo dedup FILE", wall, 0, 2.5},
		{"--exact's peak memory ≤ 1/3 of awk's", "awk '!seen[$0]++' FILE", "cuckoo dedup --exact FILE", peak, 3, 0},
		{"a pipe ≤ 1.3× the file's time", "cat FILE | cuckoo dedup", "cuckoo dedup FILE", wall, 0, 1.3},
		{"plain dedup on every core against one", "cuckoo dedup FILE, one core", "cuckoo dedup FILE", wall, 0, 0},
		{"--exact on every core against one", "cuckoo dedup --exact FILE, one core", "cuckoo dedup --exact FILE", wall, 0, 0},
		{"plain dedup before ÷ now", "before: cuckoo dedup FILE", "cuckoo dedup FILE", wall, 0, 0},
		{"--exact before ÷ now", "before: cuckoo dedup --exact FILE", "cuckoo dedup --exact FILE", wall, 0, 0},
	}
	fmt.Fprintln(w, "| target | ratio (median of rounds) | each round | result |")
	fmt.Fprintln(w, "|---|---:|---|---|")
	for _, t := range targets {
		ia, oka := idx[t.a]
		ib, okb := idx[t.b]
		if !oka || !okb {
			continue
		}
		var each []string
		for r := range res[ia] {
			each = append(each, fmt.Sprintf("%.2f", t.f(res[ia][r])/t.f(res[ib][r])))
		}
		q := ratio(res[ia], res[ib], t.f)
		verdict := "(figure)"
		switch {
		case t.min > 0:
			verdict = map[bool]string{true: "met", false: "not met"}[q >= t.min]
		case t.max > 0:
			verdict = map[bool]string{true: "met", false: "not met"}[q <= t.max]
		}
		fmt.Fprintf(w, "| %s | %.2f | %s | %s |\n", t.what, q, strings.Join(each, " "), verdict)
	}
	fmt.Fprintln(w)
}

func cpuModel() string {
	data, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func loadAverage() string {
	data, _ := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

func toolVersion(argv ...string) string {
	out, _ := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	first, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(first)
}
