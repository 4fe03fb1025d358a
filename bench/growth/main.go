// Command growth measures issue 28's goal table: a cuckoo.Scalable grown
// 1000-fold (from n/1000 to n keys) against a cuckoo.Filter sized for n,
// both at the same false-positive rate, in one process. It prints the
// medians of interleaved repetitions and the medians of the
// per-repetition ratios Scalable ÷ Filter, as markdown. (The memory
// averaged over a growth, which the papers report, is the root package's
// TestScalableGrowth and TestScalableRateIsABoundAtEverySize with
// -growth.full: they count the tables alone, as the papers do.)
//
//	cd bench && go run ./growth                      # 10^6 and 10^7 keys at 1e-4, 3 repetitions
//	cd bench && go run ./growth -sizes 1e6 -reps 5
//
// Each repetition builds both filters (timing Add over the n keys, growth
// included for the Scalable), measures the live heap they hold, then
// times, filter after filter in an order that alternates between
// repetitions: Contains of the n present keys, Contains of the absent
// probes (counting false positives), and ContainsBatch of both in batches
// of -batch keys. Keys are 16 random bytes (PCG, a pure function of the
// seed), present and absent from disjoint streams, in one array; the
// present keys are looked up in a shuffled order, not in the order they
// were added. Run it
// on a quiet machine: the figures are times, and other work on the
// machine changes them (the ratios less than the times). On a machine
// other jobs share, -clock thread times each phase by the CPU time of the
// thread that runs it (Linux), which leaves out the time it waits for a
// core:
//
//	cd bench && go run ./growth -clock thread
//
// -cpuprofile FILE writes a CPU profile of the whole run (for example of
// Scalable.Add: go tool pprof -focus 'Scalable..Add$').
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dedupkit/cuckoo"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("growth: ")
	sizes := flag.String("sizes", "1e6,1e7", "comma-separated final sizes n")
	rate := flag.Float64("rate", 1e-4, "false-positive rate of both filters")
	reps := flag.Int("reps", 3, "interleaved repetitions (medians are reported)")
	probes := flag.Float64("probes", 1e7, "absent keys looked up per repetition, one at a time and in batches each")
	batch := flag.Int("batch", 1024, "keys per ContainsBatch call")
	growthFactor := flag.Float64("growth", 1000, "growth of the Scalable: it starts at n/growth")
	step := flag.Float64("step", 0, "the Scalable's WithGrowth factor (0: the default)")
	seed := flag.Uint64("seed", 1, "seed of the keys and the filters")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	clockName := flag.String("clock", "wall", "what a phase's time is: wall, or thread (the CPU time of the thread that runs it, Linux only: on a machine other jobs share, it leaves out the time the thread waits for a core, but not the GC's background work)")
	flag.Parse()
	switch *clockName {
	case "wall":
	case "thread":
		if _, ok := threadCPU(); !ok {
			log.Fatal("-clock thread: a thread's CPU time is not available on this system")
		}
		threadClock = true
		runtime.LockOSThread()
	default:
		log.Fatalf("-clock %q: want wall or thread", *clockName)
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Printf("Go %s, %s/%s, %d CPUs, GOMAXPROCS %d, %s\n\n", runtime.Version(), runtime.GOOS, runtime.GOARCH,
		runtime.NumCPU(), runtime.GOMAXPROCS(0), time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Printf("`cd bench && go run ./growth %s`\n\n", strings.Join(os.Args[1:], " "))
	var opts []cuckoo.Option
	if *step != 0 {
		opts = append(opts, cuckoo.WithGrowth(*step))
	}
	for _, s := range strings.Split(*sizes, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || v < 1000 {
			log.Fatalf("bad size %q", s)
		}
		runSize(uint64(v), *rate, *reps, uint64(*probes), *batch, *growthFactor, *seed, opts)
	}
}

// keySet is n 16-byte keys in one array.
func keySet(n uint64, stream uint64) [][]byte {
	rng := rand.New(rand.NewPCG(stream, 0x6b657973))
	buf := make([]byte, 16*n)
	keys := make([][]byte, n)
	for i := range keys {
		k := buf[16*i : 16*i+16 : 16*i+16]
		binary.LittleEndian.PutUint64(k, rng.Uint64())
		binary.LittleEndian.PutUint64(k[8:], rng.Uint64())
		keys[i] = k
	}
	return keys
}

// subject is one of the two filters under test.
type subject interface {
	Add([]byte) error
	Contains([]byte) bool
	ContainsBatch([][]byte, []bool)
}

// figures are one repetition's measurements of one filter.
type figures struct {
	add, hit, miss, hitBatch, missBatch float64 // ns per key
	bitsPerKey                          float64
	falsePositives                      uint64
	tables                              int
}

func runSize(n uint64, p float64, reps int, probes uint64, batch int, growth float64, seed uint64, opts []cuckoo.Option) {
	present := keySet(n, seed<<1)
	order := shuffled(present, seed)
	absent := keySet(probes, seed<<1|1)
	initial := max(uint64(float64(n)/growth), 1)
	build := [2]func() subject{
		func() subject {
			f, err := cuckoo.New(n, cuckoo.WithFalsePositiveRate(p), cuckoo.WithSeed(seed))
			if err != nil {
				log.Fatal(err)
			}
			return f
		},
		func() subject {
			s, err := cuckoo.NewScalable(initial, append([]cuckoo.Option{cuckoo.WithFalsePositiveRate(p), cuckoo.WithSeed(seed)}, opts...)...)
			if err != nil {
				log.Fatal(err)
			}
			return s
		},
	}
	var all [2][]figures
	for r := range reps {
		for i := range 2 {
			which := i ^ r&1 // the order alternates
			all[which] = append(all[which], measure(build[which], present, order, absent, batch))
			log.Printf("n=%d rep %d %s: %+v", n, r, [2]string{"Filter", "Scalable"}[which], all[which][len(all[which])-1])
		}
	}
	med := func(which int, get func(figures) float64) float64 {
		var v []float64
		for _, f := range all[which] {
			v = append(v, get(f))
		}
		return median(v)
	}
	// Ratios are medians of the per-repetition ratios: both filters of a
	// repetition ran seconds apart, under much the same load.
	ratio := func(get func(figures) float64) float64 {
		var v []float64
		for r := range all[0] {
			v = append(v, get(all[1][r])/get(all[0][r]))
		}
		return median(v)
	}
	var fps [2]uint64
	for which := range all {
		for _, f := range all[which] {
			fps[which] += f.falsePositives
		}
	}
	lookups := float64(uint64(reps) * 2 * probes) // one at a time and in batches
	clock := "wall time"
	if threadClock {
		clock = "the thread's CPU time"
	}
	fmt.Printf("n = %s, the Scalable grown %g× from %d, rate %g, %d repetitions (%d tables), times in %s:\n\n", human(n), growth, initial, p, reps, all[1][0].tables, clock)
	fmt.Printf("| | Filter | Scalable | Scalable ÷ Filter | goal |\n|---|---:|---:|---:|---|\n")
	rows := []struct {
		name string
		get  func(figures) float64
		goal string
	}{
		{"Add, ns (growth included)", func(f figures) float64 { return f.add }, "≤ 2.0×"},
		{"Contains present, ns", func(f figures) float64 { return f.hit }, "≤ 1.5×"},
		{"Contains absent, ns", func(f figures) float64 { return f.miss }, "≤ 2.0×"},
		{"ContainsBatch present, ns per key", func(f figures) float64 { return f.hitBatch }, "≤ 1.5×"},
		{"ContainsBatch absent, ns per key", func(f figures) float64 { return f.missBatch }, "≤ 1.5×"},
		{"bits per key (live heap)", func(f figures) float64 { return f.bitsPerKey }, "≤ 1.35×"},
	}
	for _, row := range rows {
		fmt.Printf("| %s | %.1f | %.1f | %.2f× | %s |\n", row.name, med(0, row.get), med(1, row.get), ratio(row.get), row.goal)
	}
	fmt.Printf("| measured rate (%s absent lookups) | %.4f %% | %.4f %% | | ≤ %g %% |\n\n",
		human(uint64(lookups)), 100*float64(fps[0])/lookups, 100*float64(fps[1])/lookups, 100*p)
}

func median(v []float64) float64 {
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// shuffled returns keys in a random order (a pure function of seed), copied
// into one array in that order: lookups in insertion order would find the
// keys of a run in one table of a Scalable, which users' lookups do not.
func shuffled(keys [][]byte, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 0x6f72646572))
	order := rng.Perm(len(keys))
	buf := make([]byte, 0, 16*len(keys))
	out := make([][]byte, len(keys))
	for i, j := range order {
		buf = append(buf, keys[j]...)
		out[i] = buf[len(buf)-len(keys[j]) : len(buf) : len(buf)]
	}
	return out
}

// measure builds one filter from present and times its operations: lookups
// of the present keys go in the order of lookups (the same keys, shuffled).
func measure(build func() subject, present, lookups, absent [][]byte, batch int) figures {
	var fig figures
	before := liveHeap()
	start := now()
	f := build()
	for _, k := range present {
		f.Add(k)
	}
	fig.add = perKey(start, len(present))
	fig.bitsPerKey = float64(liveHeap()-before) * 8 / float64(len(present))
	if s, ok := f.(*cuckoo.Scalable); ok {
		fig.tables = s.NumTables()
	}

	found := 0
	start = now()
	for _, k := range lookups {
		if f.Contains(k) {
			found++
		}
	}
	fig.hit = perKey(start, len(present))
	if found != len(present) {
		log.Fatalf("%d of %d present keys found", found, len(present))
	}
	start = now()
	for _, k := range absent {
		if f.Contains(k) {
			fig.falsePositives++
		}
	}
	fig.miss = perKey(start, len(absent))

	res := make([]bool, batch)
	batchFound := func(keys [][]byte) (n uint64, ns float64) {
		start := now()
		for lo := 0; lo < len(keys); lo += batch {
			hi := min(lo+batch, len(keys))
			f.ContainsBatch(keys[lo:hi], res)
			for _, ok := range res[:hi-lo] {
				if ok {
					n++
				}
			}
		}
		return n, perKey(start, len(keys))
	}
	var n uint64
	if n, fig.hitBatch = batchFound(lookups); n != uint64(len(present)) {
		log.Fatalf("batch: %d of %d present keys found", n, len(present))
	}
	n, fig.missBatch = batchFound(absent)
	fig.falsePositives += n
	runtime.KeepAlive(f)
	return fig
}

// threadClock makes now the thread's CPU time (-clock thread); main then
// keeps the measuring goroutine on one thread.
var threadClock bool

// now returns the clock a phase is timed with, in nanoseconds.
func now() int64 {
	if threadClock {
		ns, _ := threadCPU()
		return ns
	}
	return time.Now().UnixNano()
}

func perKey(start int64, n int) float64 {
	return float64(now()-start) / float64(n)
}

// liveHeap returns the bytes the heap holds after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func human(n uint64) string {
	switch {
	case n >= 1e6 && n%1e6 == 0:
		return fmt.Sprintf("%dM", n/1e6)
	case n >= 1e3 && n%1e3 == 0:
		return fmt.Sprintf("%dk", n/1e3)
	}
	return strconv.FormatUint(n, 10)
}
