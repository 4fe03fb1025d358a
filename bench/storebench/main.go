// Command storebench compares package store with bbolt and pebble, the
// embedded key-value stores Go users pick, on the same machine in one
// run: load n keys of 16 bytes with 100-byte values, random Get of
// present keys, Get of absent keys, Delete; ops/s, RAM and disk per key.
// Sync is off for all three (store.SyncNever, pebble.NoSync, bbolt
// NoSync). Each store runs in a child process of its own, so that RAM is
// measured from a clean start; repetitions are interleaved, and the
// report gives medians and ratios to pebble.
//
//	cd bench && go run ./storebench -n 1e7 -reps 3 -out ../docs/store-bench.md
//
// With -reopen it measures instead the time and memory of opening a store
// after a crash and after Close (reopen.go).
//
// RAM is the growth of the process's anonymous resident memory (RssAnon:
// Go heap, pebble's caches and memtables; not the page cache, which holds
// the files for all three alike). Pebble is compacted over the whole key
// range after the load, its best layout for reads, and has Bloom filters
// of 10 bits per key on every level; bbolt loads in
// transactions of 10,000 keys (one transaction per key is thousands of
// times slower with any sync setting).
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/dedupkit/cuckoo/store"
	bolt "go.etcd.io/bbolt"
)

type result struct {
	Store        string  `json:"store"`
	N            int     `json:"n"`
	LoadNs       float64 `json:"load_ns"`
	GetNs        float64 `json:"get_ns"`
	MissNs       float64 `json:"miss_ns"`
	DeleteNs     float64 `json:"delete_ns"`
	RAMPerKey    float64 `json:"ram_per_key"`
	HeapPerKey   float64 `json:"heap_per_key"`
	DiskPerKey   float64 `json:"disk_per_key"`
	SettleSecs   float64 `json:"settle_secs"`
	IndexPerKey  float64 `json:"index_per_key,omitempty"`
	OpenSecs     float64 `json:"open_secs,omitempty"`
	ScanSecs     float64 `json:"scan_secs,omitempty"`
	Verification string  `json:"verification"`
}

type kv interface {
	put(k, v []byte) error
	get(k []byte) ([]byte, bool, error)
	del(k []byte) error
	settle() error // after the load: flush, and compact where it helps reads
	close() error
}

func main() {
	n := flag.Float64("n", 1e6, "keys to load")
	reps := flag.Int("reps", 3, "repetitions of each store, interleaved")
	ops := flag.Int("ops", 1_000_000, "Gets, absent Gets and Deletes measured")
	stores := flag.String("stores", "cuckoo-store,pebble,bbolt", "stores to run")
	dir := flag.String("dir", os.TempDir(), "where the stores' directories go")
	out := flag.String("out", "", "write the markdown report to this file too")
	child := flag.String("child", "", "internal: run one store in this process")
	seed := flag.Uint64("seed", 1, "key seed")
	flag.Parse()
	if *reopenMode {
		reopenMain(*reps, *dir, *seed)
		return
	}
	if *child != "" {
		r := runOne(*child, int(*n), *ops, *dir, *seed)
		json.NewEncoder(os.Stdout).Encode(r)
		return
	}
	names := strings.Split(*stores, ",")
	all := map[string][]result{}
	for rep := range *reps {
		for i := range names {
			name := names[(i+rep)%len(names)]
			cmd := exec.Command(os.Args[0], "-child", name, "-n", fmt.Sprint(*n), "-ops", fmt.Sprint(*ops),
				"-dir", *dir, "-seed", fmt.Sprint(*seed+uint64(rep)))
			cmd.Stderr = os.Stderr
			b, err := cmd.Output()
			if err != nil {
				log.Fatalf("%s: %v", name, err)
			}
			var r result
			if err := json.Unmarshal(b, &r); err != nil {
				log.Fatalf("%s: %v: %s", name, err, b)
			}
			log.Printf("rep %d %s: %+v", rep, name, r)
			all[name] = append(all[name], r)
		}
	}
	report := render(names, all, int(*n), *reps)
	fmt.Print(report)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(report), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

func median(rs []result, f func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func render(names []string, all map[string][]result, n, reps int) string {
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "Store benchmark: %d keys of 16 bytes, 100-byte values, sync off; medians of %d interleaved runs; %s, %d CPUs, %s, %s.\n\n",
		n, reps, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), host)
	fmt.Fprintf(&b, "| store | load ops/s | Get present ops/s | Get absent ops/s | Delete ops/s | RAM B/key | disk B/key |\n|---|---:|---:|---:|---:|---:|---:|\n")
	ops := func(ns float64) string { return fmt.Sprintf("%.0f k", 1e6/ns) }
	for _, name := range names {
		rs := all[name]
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.1f | %.1f |\n", name,
			ops(median(rs, func(r result) float64 { return r.LoadNs })), ops(median(rs, func(r result) float64 { return r.GetNs })),
			ops(median(rs, func(r result) float64 { return r.MissNs })), ops(median(rs, func(r result) float64 { return r.DeleteNs })),
			median(rs, func(r result) float64 { return r.RAMPerKey }), median(rs, func(r result) float64 { return r.DiskPerKey }))
	}
	if ours, peb := all["cuckoo-store"], all["pebble"]; len(ours) > 0 && len(peb) == len(ours) {
		ratio := func(f func(result) float64) float64 {
			rs := make([]result, len(ours))
			for i := range ours {
				rs[i] = result{LoadNs: f(peb[i]) / f(ours[i])}
			}
			return median(rs, func(r result) float64 { return r.LoadNs })
		}
		gp, ga := ratio(func(r result) float64 { return r.GetNs }), ratio(func(r result) float64 { return r.MissNs })
		ld := ratio(func(r result) float64 { return r.LoadNs })
		ram := median(ours, func(r result) float64 { return r.RAMPerKey })
		verdict := func(ok bool) string {
			if ok {
				return "pass"
			}
			return "**fail**"
		}
		fmt.Fprintf(&b, "\nTargets (ratio = median over runs of pebble's time / ours, runs paired by repetition):\n\n| target | measured | result |\n|---|---:|---|\n")
		fmt.Fprintf(&b, "| Get of present keys ≥ 2× pebble | %.2f× | %s |\n", gp, verdict(gp >= 2))
		fmt.Fprintf(&b, "| Get of absent keys ≥ 3× pebble | %.2f× | %s |\n", ga, verdict(ga >= 3))
		fmt.Fprintf(&b, "| load ≥ pebble | %.2f× | %s |\n", ld, verdict(ld >= 1))
		fmt.Fprintf(&b, "| RAM per key ≤ 10 bytes | %.1f B | %s |\n", ram, verdict(ram <= 10))
		fmt.Fprintf(&b, "\ncuckoo-store: index %.2f bytes per key (Stats().IndexBytes / Len()); reopening the store after Close (index checkpoint) took %.2f s, and without the checkpoint, as after a crash (reading the whole log, checking every record, rebuilding the index), %.1f s (medians).\n",
			median(ours, func(r result) float64 { return r.IndexPerKey }), median(ours, func(r result) float64 { return r.OpenSecs }), median(ours, func(r result) float64 { return r.ScanSecs }))
	}
	return b.String()
}

// key writes the 16-byte key of i: stream 0 for present keys, 1 for absent.
func key(dst []byte, i uint64, stream, seed uint64) []byte {
	x := splitmix(i ^ seed<<32 ^ stream<<62)
	dst = binary.LittleEndian.AppendUint64(dst[:0], x)
	return binary.LittleEndian.AppendUint64(dst, splitmix(x))
}

func value(dst []byte, i uint64) []byte {
	dst = dst[:0]
	for len(dst) < 100 {
		i = splitmix(i)
		dst = binary.LittleEndian.AppendUint64(dst, i)
	}
	return dst[:100]
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func rssAnon() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "RssAnon:") {
			f := strings.Fields(l)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb * 1024
		}
	}
	return 0
}

func heap() float64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc)
}

func duSize(dir string) float64 {
	var t int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				t += fi.Size()
			}
		}
		return nil
	})
	return float64(t)
}

func runOne(name string, n, ops int, base string, seed uint64) result {
	dir, err := os.MkdirTemp(base, "storebench-"+name+"-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	heap0, rss0 := heap(), rssAnon()
	db := openKV(name, dir)
	r := result{Store: name, N: n}
	var k, v []byte
	start := time.Now()
	for i := range uint64(n) {
		k, v = key(k, i, 0, seed), value(v, i)
		if err := db.put(k, v); err != nil {
			log.Fatal(err)
		}
	}
	r.LoadNs = float64(time.Since(start).Nanoseconds()) / float64(n)
	start = time.Now()
	if err := db.settle(); err != nil {
		log.Fatal(err)
	}
	r.SettleSecs = time.Since(start).Seconds()
	r.HeapPerKey = (heap() - heap0) / float64(n)
	r.RAMPerKey = (rssAnon() - rss0) / float64(n)
	r.DiskPerKey = duSize(dir) / float64(n)
	if s, ok := db.(*ourKV); ok {
		st := s.s.Stats()
		r.IndexPerKey = float64(st.IndexBytes) / float64(st.Keys)
	}
	rng := seed
	pick := func() uint64 { rng = splitmix(rng); return rng % uint64(n) }
	bad := 0
	start = time.Now()
	for range ops {
		i := pick()
		got, ok, err := db.get(key(k, i, 0, seed))
		if err != nil || !ok || !bytes.Equal(got, value(v, i)) {
			bad++
		}
	}
	r.GetNs = float64(time.Since(start).Nanoseconds()) / float64(ops)
	start = time.Now()
	for i := range uint64(ops) {
		if _, ok, err := db.get(key(k, i, 1, seed)); ok || err != nil {
			bad++
		}
	}
	r.MissNs = float64(time.Since(start).Nanoseconds()) / float64(ops)
	start = time.Now()
	step := uint64(n / ops)
	for i := range uint64(ops) {
		if err := db.del(key(k, i*step, 0, seed)); err != nil {
			log.Fatal(err)
		}
	}
	r.DeleteNs = float64(time.Since(start).Nanoseconds()) / float64(ops)
	if _, ok, _ := db.get(key(k, step, 0, seed)); ok {
		bad++
	}
	if err := db.close(); err != nil {
		log.Fatal(err)
	}
	if name == "cuckoo-store" {
		start = time.Now()
		s, err := store.Open(dir)
		if err != nil {
			log.Fatal(err)
		}
		r.OpenSecs = time.Since(start).Seconds()
		if s.Len() != uint64(n-ops) {
			bad++
		}
		s.Close()
		// Without the checkpoint, as after a crash: the whole log.
		os.Remove(filepath.Join(dir, "INDEX"))
		start = time.Now()
		if s, err = store.Open(dir); err != nil {
			log.Fatal(err)
		}
		r.ScanSecs = time.Since(start).Seconds()
		if s.Len() != uint64(n-ops) {
			bad++
		}
		s.Close()
	}
	r.Verification = fmt.Sprintf("%d wrong answers", bad)
	if bad > 0 {
		log.Fatalf("%s: %s", name, r.Verification)
	}
	return r
}

func openKV(name, dir string) kv {
	switch name {
	case "cuckoo-store":
		s, err := store.Open(dir, store.WithSync(store.SyncNever))
		if err != nil {
			log.Fatal(err)
		}
		return &ourKV{s}
	case "pebble":
		// Bloom filters of 10 bits per key on every level, as pebble
		// recommends (and CockroachDB runs it); without them an absent
		// key costs a search of every level.
		opts := &pebble.Options{Levels: make([]pebble.LevelOptions, 7)}
		for i := range opts.Levels {
			opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
			opts.Levels[i].FilterType = pebble.TableFilter
		}
		db, err := pebble.Open(dir, opts)
		if err != nil {
			log.Fatal(err)
		}
		return &pebbleKV{db: db}
	case "bbolt":
		db, err := bolt.Open(filepath.Join(dir, "bolt.db"), 0o644, &bolt.Options{NoSync: true, NoFreelistSync: true})
		if err != nil {
			log.Fatal(err)
		}
		db.NoSync = true
		if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(boltBucket); return err }); err != nil {
			log.Fatal(err)
		}
		return &boltKV{db: db}
	}
	log.Fatalf("unknown store %q", name)
	return nil
}

type ourKV struct{ s *store.Store }

func (o *ourKV) put(k, v []byte) error { return o.s.Put(k, v) }
func (o *ourKV) get(k []byte) ([]byte, bool, error) {
	v, err := o.s.Get(k)
	if err == store.ErrNotFound {
		return nil, false, nil
	}
	return v, err == nil, err
}
func (o *ourKV) del(k []byte) error { _, err := o.s.Delete(k); return err }
func (o *ourKV) settle() error      { return o.s.Sync() }
func (o *ourKV) close() error       { return o.s.Close() }

type pebbleKV struct{ db *pebble.DB }

func (p *pebbleKV) put(k, v []byte) error { return p.db.Set(k, v, pebble.NoSync) }
func (p *pebbleKV) get(k []byte) ([]byte, bool, error) {
	v, c, err := p.db.Get(k)
	if err == pebble.ErrNotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), v...)
	c.Close()
	return out, true, nil
}
func (p *pebbleKV) del(k []byte) error { return p.db.Delete(k, pebble.NoSync) }
func (p *pebbleKV) settle() error {
	if err := p.db.Flush(); err != nil {
		return err
	}
	return p.db.Compact([]byte{0}, bytes.Repeat([]byte{0xff}, 17), true)
}
func (p *pebbleKV) close() error { return p.db.Close() }

var boltBucket = []byte("b")

// boltKV batches puts in transactions of 10,000.
type boltKV struct {
	db      *bolt.DB
	pending [][2][]byte
}

func (b *boltKV) put(k, v []byte) error {
	b.pending = append(b.pending, [2][]byte{append([]byte(nil), k...), append([]byte(nil), v...)})
	if len(b.pending) < 10_000 {
		return nil
	}
	return b.flush()
}

func (b *boltKV) flush() error {
	err := b.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(boltBucket)
		for _, p := range b.pending {
			if err := bk.Put(p[0], p[1]); err != nil {
				return err
			}
		}
		return nil
	})
	b.pending = b.pending[:0]
	return err
}

func (b *boltKV) get(k []byte) (out []byte, ok bool, err error) {
	err = b.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(boltBucket).Get(k); v != nil {
			out, ok = append([]byte(nil), v...), true
		}
		return nil
	})
	return out, ok, err
}

func (b *boltKV) del(k []byte) error {
	return b.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(boltBucket).Delete(k) })
}
func (b *boltKV) settle() error { return b.flush() }
func (b *boltKV) close() error  { return b.db.Close() }
