package main

// The -reopen mode measures how long package store takes to open a store
// after a crash (SIGKILL of the process writing it) and after a clean
// Close, the peak RSS of the process that opens it, and what the index
// checkpoints cost the writer:
//
//	cd bench && go run ./storebench -reopen -sizes 3e6,1e7 -reps 3 -cost
//	cd bench && go run ./storebench -reopen -sizes 3e6,1e7 -reps 3 -before /tmp/storebench-old
//
// For each size n and repetition, a child process writes n keys of 16
// bytes with 100-byte values into a new store (with -sync, default the
// store's default policy, everysec) and is killed with SIGKILL while it
// holds the store open: right after the n-th Put ("at n"), and, in a
// second store, after it has gone on writing to just before its next
// checkpoint would start ("worst": the longest tail a crash can leave).
// A fresh child then opens the store and exits without closing it (so
// the store stays as the crash left it): "after kill -9". A third opens
// and closes it, and a fourth opens it again: "after Close". Each open's
// wall time is measured inside the child around store.Open; its peak RSS
// is the child's maximum resident set (getrusage), which counts the pages
// of the log and of the checkpoint that the open touched. The page cache
// is warm: the files were just written.
//
// -before names a binary of this program built against an older version
// of package store (with -tags oldstore, whose Stats have no Replayed):
// its children run the same steps "at n", interleaved with this
// version's, for a before/after table. -cost also loads each size with
// checkpoints off, for the writer's cost: load time, checkpoints written,
// the longest Put.

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dedupkit/cuckoo/store"
)

// The flags of -reopen.
var (
	reopenMode   = flag.Bool("reopen", false, "measure Open after a crash and after Close (with -sizes, -reps, -sync, -before, -cost)")
	reopenSizes  = flag.String("sizes", "3e6,1e7", "-reopen: store sizes (keys), comma-separated")
	reopenSync   = flag.String("sync", "everysec", "-reopen: the writer's sync policy: always, everysec or never")
	reopenBefore = flag.String("before", "", "-reopen: a binary of this program built against the older store (-tags oldstore)")
	reopenCost   = flag.Bool("cost", false, "-reopen: also load each size with checkpoints off, for the writer's cost")
	reopenChild  = flag.String("reopen-child", "", "internal: load, open or close")
	reopenKeys   = flag.Float64("keys", 0, "internal: keys to load")
	reopenKill   = flag.String("kill", "at", "internal: at (n keys) or worst (just before the next checkpoint)")
	reopenNoCk   = flag.Bool("nocheckpoints", false, "internal: load with checkpoints off")
)

// openResult is what an "open" child reports.
type openResult struct {
	Secs     float64 `json:"secs"`
	Keys     uint64  `json:"keys"`
	Replayed int64   `json:"replayed"` // records Open read from the log; -1 when the store does not say
	PeakMiB  float64 `json:"peak_mib"` // filled by the parent
	CPUSecs  float64 `json:"cpu_secs"` // the child's user and system time, filled by the parent
	HeapMiB  float64 `json:"heap_mib"` // the Go heap in use after Open (the index, mostly): memory of its own, not the log's pages
}

// loadResult is what a "load" child reports before it is killed.
type loadResult struct {
	Keys        uint64  `json:"keys"`
	Secs        float64 `json:"secs"`
	MaxPutMs    float64 `json:"max_put_ms"`
	Checkpoints int64   `json:"checkpoints"` // -1 when the store does not say
}

// run is one measurement: a load, the open after the kill, the open
// after Close.
type run struct {
	load         loadResult
	crash, clean openResult
}

// reopenMain runs the -reopen measurement, or one of its children.
func reopenMain(reps int, dir string, seed uint64) {
	if *reopenChild != "" {
		reopenRunChild(*reopenChild, dir, uint64(*reopenKeys), *reopenSync, *reopenKill, *reopenNoCk, seed)
		return
	}
	var ns []uint64
	for _, f := range strings.Split(*reopenSizes, ",") {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			log.Fatalf("bad -sizes %q", f)
		}
		ns = append(ns, uint64(v))
	}
	type variant struct {
		name, bin, kill string
		noCk            bool
	}
	variants := []variant{{"after, at n", os.Args[0], "at", false}, {"after, worst", os.Args[0], "worst", false}}
	if *reopenBefore != "" {
		variants = append([]variant{{"before, at n", *reopenBefore, "at", false}}, variants...)
	}
	if *reopenCost {
		variants = append(variants, variant{"after, checkpoints off", os.Args[0], "at", true})
	}
	runs := map[string][]run{}
	key := func(v variant, n uint64) string { return fmt.Sprintf("%s/%d", v.name, n) }
	for rep := range reps {
		for _, n := range ns {
			for _, v := range variants {
				d := filepath.Join(dir, fmt.Sprintf("storereopen-%d", n))
				os.RemoveAll(d)
				var r run
				r.load = reopenLoad(v.bin, d, n, *reopenSync, v.kill, v.noCk, seed)
				r.crash = reopenOpen(v.bin, d, "open")
				reopenOpen(v.bin, d, "close")
				r.clean = reopenOpen(v.bin, d, "open")
				log.Printf("rep %d n=%d %s: %+v", rep, n, v.name, r)
				if r.crash.Keys == 0 || r.crash.Keys > r.load.Keys || r.clean.Keys != r.crash.Keys {
					log.Fatalf("n=%d %s: %d keys loaded, %d after the crash, %d after Close", n, v.name, r.load.Keys, r.crash.Keys, r.clean.Keys)
				}
				runs[key(v, n)] = append(runs[key(v, n)], r)
				os.RemoveAll(d)
			}
		}
	}
	med := func(rs []run, f func(run) float64) float64 {
		v := make([]float64, len(rs))
		for i := range rs {
			v[i] = f(rs[i])
		}
		slices.Sort(v)
		if len(v)%2 == 0 {
			return (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		return v[len(v)/2]
	}
	host, _ := os.Hostname()
	fmt.Printf("store reopen: keys of 16 bytes, 100-byte values, writer's sync %s, killed with SIGKILL; medians of %d runs; %s, %d CPUs, %s, %s\n\n",
		*reopenSync, reps, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), host)
	fmt.Println("| store | keys | killed | open after Close (s) | peak RSS (MiB) | heap (MiB) | open after kill -9 (s) | CPU (s) | peak RSS (MiB) | heap (MiB) | records replayed | 3× Close + 1 s | runs after kill -9 (s) |")
	fmt.Println("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, n := range ns {
		for _, v := range variants {
			rs := runs[key(v, n)]
			if v.noCk {
				continue
			}
			var each []string
			for _, r := range rs {
				each = append(each, fmt.Sprintf("%.2f", r.crash.Secs))
			}
			clean := med(rs, func(r run) float64 { return r.clean.Secs })
			replayed := "?"
			if rs[0].crash.Replayed >= 0 {
				replayed = fmt.Sprintf("%.0f", med(rs, func(r run) float64 { return float64(r.crash.Replayed) }))
			}
			name, killed, _ := strings.Cut(v.name, ", ")
			fmt.Printf("| %s | %.0f | %s | %.2f | %.0f | %.0f | %.2f | %.2f | %.0f | %.0f | %s | %.2f | %s |\n", name,
				med(rs, func(r run) float64 { return float64(r.load.Keys) }), killed, clean,
				med(rs, func(r run) float64 { return r.clean.PeakMiB }), med(rs, func(r run) float64 { return r.clean.HeapMiB }),
				med(rs, func(r run) float64 { return r.crash.Secs }), med(rs, func(r run) float64 { return r.crash.CPUSecs }),
				med(rs, func(r run) float64 { return r.crash.PeakMiB }), med(rs, func(r run) float64 { return r.crash.HeapMiB }),
				replayed, 3*clean+1, strings.Join(each, " "))
		}
	}
	if !*reopenCost {
		return
	}
	fmt.Println("\n| keys | checkpoints | load (s), checkpoints on | off | longest Put (ms), on | off | runs on / off (s) |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---|")
	for _, n := range ns {
		on, off := runs[key(variants[len(variants)-3], n)], runs[key(variants[len(variants)-1], n)]
		var each []string
		for i := range on {
			each = append(each, fmt.Sprintf("%.1f/%.1f", on[i].load.Secs, off[i].load.Secs))
		}
		fmt.Printf("| %d | %.0f | %.1f | %.1f | %.0f | %.0f | %s |\n", n, med(on, func(r run) float64 { return float64(r.load.Checkpoints) }),
			med(on, func(r run) float64 { return r.load.Secs }), med(off, func(r run) float64 { return r.load.Secs }),
			med(on, func(r run) float64 { return r.load.MaxPutMs }), med(off, func(r run) float64 { return r.load.MaxPutMs }), strings.Join(each, " "))
	}
}

// reopenLoad runs a child of bin that writes n keys, and kills it once
// it says so.
func reopenLoad(bin, dir string, n uint64, sync, kill string, noCk bool, seed uint64) loadResult {
	cmd := exec.Command(bin, "-reopen", "-reopen-child", "load", "-dir", dir, "-keys", fmt.Sprint(n), "-sync", sync, "-kill", kill,
		fmt.Sprintf("-nocheckpoints=%v", noCk), "-seed", fmt.Sprint(seed))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		log.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var r loadResult
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &r) != nil {
		log.Fatalf("load: %q", sc.Text())
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	return r
}

// reopenOpen runs a child of bin that opens the store ("open") or opens
// and closes it ("close"), and returns what it reports with its peak RSS.
func reopenOpen(bin, dir, mode string) openResult {
	cmd := exec.Command(bin, "-reopen", "-reopen-child", mode, "-dir", dir)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		log.Fatalf("%s: %v", mode, err)
	}
	var r openResult
	if err := json.Unmarshal(b, &r); err != nil {
		log.Fatalf("%s: %v: %s", mode, err, b)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.PeakMiB = float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	r.CPUSecs = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	return r
}

func reopenRunChild(mode, dir string, n uint64, sync, kill string, noCk bool, seed uint64) {
	switch mode {
	case "load":
		policy := map[string]store.SyncPolicy{"always": store.SyncAlways, "everysec": store.SyncEverySecond, "never": store.SyncNever}[sync]
		opts := []store.Option{store.WithSync(policy)}
		if noCk {
			opts = append(opts, checkpointsOff())
		}
		s, err := store.Open(dir, opts...)
		if err != nil {
			log.Fatal(err)
		}
		var k, v []byte
		var r loadResult
		start := time.Now()
		put := func(i uint64) {
			k, v = key(k, i, 0, seed), value(v, i)
			t := time.Now()
			if err := s.Put(k, v); err != nil {
				log.Fatal(err)
			}
			r.MaxPutMs = max(r.MaxPutMs, float64(time.Since(t).Microseconds())/1000)
		}
		for i := range n {
			put(i)
		}
		r.Secs = time.Since(start).Seconds()
		if kill == "worst" {
			for i := n; !nearCheckpoint(s); i++ {
				put(i)
			}
		}
		r.Keys, r.Checkpoints = s.Len(), checkpoints(s)
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
		select {} // until killed
	case "open", "close":
		start := time.Now()
		s, err := store.Open(dir)
		if err != nil {
			log.Fatal(err)
		}
		r := openResult{Secs: time.Since(start).Seconds(), Keys: s.Len(), Replayed: replayed(s)}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		r.HeapMiB = float64(ms.HeapInuse) / (1 << 20)
		if mode == "close" {
			if err := s.Close(); err != nil {
				log.Fatal(err)
			}
		}
		json.NewEncoder(os.Stdout).Encode(r)
		os.Exit(0) // "open": without Close, the store stays as it was
	}
	log.Fatalf("unknown child mode %q", mode)
}
