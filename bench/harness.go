package main

import (
	"fmt"
	"runtime"
	"time"
)

// trial is one measurement of one row at one size and key kind: build,
// fill to capacity, look up every present key, look up the absent probes,
// delete every key. Times are wall-clock nanoseconds per operation; 0 means
// not applicable.
type trial struct {
	Row  string  `json:"row"`
	N    uint64  `json:"n"`
	Keys keyKind `json:"keys"`
	Rep  int     `json:"rep"`

	AddNs  float64 `json:"add_ns"`  // per key: inserts (and, for static filters, the build)
	HitNs  float64 `json:"hit_ns"`  // per Contains of a present key
	MissNs float64 `json:"miss_ns"` // per Contains of an absent key
	DelNs  float64 `json:"del_ns"`  // per Delete of a present key; 0: no Delete

	HeapBytes     int64 `json:"heap_bytes"`     // live heap held by the filter after the inserts
	ReportedBytes int64 `json:"reported_bytes"` // the library's own figure; -1: none

	FailedAdds    uint64 `json:"failed_adds"`    // inserts the library reported failed
	FalseNeg      uint64 `json:"false_neg"`      // present keys not found after the fill
	FalsePos      uint64 `json:"false_pos"`      // absent probes reported present
	Probes        uint64 `json:"probes"`         // absent probes
	FailedDeletes uint64 `json:"failed_deletes"` // Deletes of present keys that failed

	AddAllocs float64 `json:"add_allocs"` // heap allocations per insert
	HitAllocs float64 `json:"hit_allocs"` // heap allocations per Contains of a present key

	Err string `json:"err,omitempty"`
}

// overfill is the data-loss check of one row: offer 2n distinct keys to a
// filter of capacity n, one at a time, remember which inserts the library
// acknowledged, then look every acknowledged key up. A key acknowledged and
// then not found is a false negative: data lost. The offer stops early
// after maxRefusals refused inserts (a refused insert into our full filter
// costs tens of microseconds: the whole displacement search and its undo).
type overfill struct {
	Row       string  `json:"row"`
	N         uint64  `json:"n"`
	Keys      keyKind `json:"keys"`
	Attempted uint64  `json:"attempted"` // keys offered
	Refused   uint64  `json:"refused"`
	Acked     uint64  `json:"acked"`
	FirstFail uint64  `json:"first_fail"` // index of the first refused insert; = Attempted if none
	Missing   uint64  `json:"missing"`    // acknowledged keys not found afterwards
	Err       string  `json:"err,omitempty"`
}

// scratcher is implemented by adapters that keep harness-side scratch
// memory (pre-computed hashes); it is subtracted from the heap figure.
type scratcher interface{ scratchBytes() int64 }

// heapInUse returns the live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// timedWalk walks keys [lo, hi) of ks and times op over each chunk. The
// preparer hook, when f has one, runs before the timer starts.
func timedWalk(ks *keySet, lo, hi uint64, f filter, op func([][]byte) int) (elapsed time.Duration, sum uint64) {
	elapsed, sum, _ = timedWalkAllocs(ks, lo, hi, f, op)
	return elapsed, sum
}

// timedWalkAllocs is timedWalk that also counts heap allocations per key
// (the harness's own walk allocates nothing once warm).
func timedWalkAllocs(ks *keySet, lo, hi uint64, f filter, op func([][]byte) int) (elapsed time.Duration, sum uint64, allocs float64) {
	m0 := mallocs()
	defer func() { allocs = float64(mallocs()-m0) / float64(max(hi-lo, 1)) }()
	p, _ := f.(preparer)
	ks.walk(lo, hi, func(keys [][]byte) {
		if p != nil {
			p.prepare(keys)
		}
		start := time.Now()
		r := op(keys)
		elapsed += time.Since(start)
		sum += uint64(r)
	})
	return elapsed, sum, 0
}

func perOp(d time.Duration, ops uint64) float64 {
	if ops == 0 {
		return 0
	}
	return float64(d.Nanoseconds()) / float64(ops)
}

// warm walks the first chunk of each set so that chunk buffers of sets
// that are regenerated exist before a heap baseline is taken.
func warm(sets ...*keySet) {
	for _, s := range sets {
		s.walk(0, min(s.n, chunkKeys), func([][]byte) {})
	}
}

// runTrial measures row s at capacity n with the first n keys of present
// and probesN keys of absent.
func runTrial(s spec, n uint64, rep int, seed uint64, pres, abs *keySet, probesN uint64) (t trial) {
	t = trial{Row: s.name, N: n, Keys: pres.kind, Rep: rep, ReportedBytes: -1}
	warm(pres, abs)
	before := heapInUse()
	f, err := s.make(n, seed)
	if err != nil {
		t.Err = err.Error()
		return t
	}
	addTime, failed, addAllocs := timedWalkAllocs(pres, 0, n, f, f.add)
	start := time.Now()
	if err := f.seal(); err != nil {
		t.Err = fmt.Sprintf("build: %v", err)
		return t
	}
	addTime += time.Since(start)
	t.AddNs, t.FailedAdds, t.AddAllocs = perOp(addTime, n), failed, addAllocs

	t.HeapBytes = heapInUse() - before
	if sc, ok := f.(scratcher); ok {
		t.HeapBytes -= sc.scratchBytes()
	}
	t.ReportedBytes = f.reportedBytes()

	hitTime, found, hitAllocs := timedWalkAllocs(pres, 0, n, f, f.contains)
	t.HitNs, t.FalseNeg, t.HitAllocs = perOp(hitTime, n), n-found, hitAllocs

	missTime, fp := timedWalk(abs, 0, probesN, f, f.contains)
	t.MissNs, t.FalsePos, t.Probes = perOp(missTime, probesN), fp, probesN

	if s.deletes {
		delTime, df := timedWalk(pres, 0, n, f, f.remove)
		t.DelNs, t.FailedDeletes = perOp(delTime, n), df
	}
	runtime.KeepAlive(f)
	return t
}

// runOverfill runs the data-loss check of row s (see overfill). It needs
// 2n keys in pres.
func runOverfill(s spec, n, seed uint64, pres *keySet, maxRefusals uint64) (o overfill) {
	o = overfill{Row: s.name, N: n, Keys: pres.kind, FirstFail: 2 * n}
	f, err := s.make(n, seed)
	if err != nil {
		o.Err = err.Error()
		return o
	}
	p, _ := f.(preparer)
	one := func(keys [][]byte, k int) [][]byte {
		if p != nil {
			p.prepare(keys[k : k+1])
		}
		return keys[k : k+1]
	}
	acked := make([]uint64, (2*n+63)/64)
	i := uint64(0)
	pres.walk(0, 2*n, func(keys [][]byte) {
		for k := range keys {
			if o.Refused >= maxRefusals {
				return
			}
			if f.add(one(keys, k)) == 0 {
				acked[i/64] |= 1 << (i % 64)
				o.Acked++
			} else {
				o.FirstFail = min(o.FirstFail, i)
				o.Refused++
			}
			i++
		}
	})
	o.Attempted = i
	if err := f.seal(); err != nil {
		o.Err = fmt.Sprintf("build: %v", err)
		return o
	}
	i = 0
	pres.walk(0, o.Attempted, func(keys [][]byte) {
		for k := range keys {
			if acked[i/64]&(1<<(i%64)) != 0 && f.contains(one(keys, k)) == 0 {
				o.Missing++
			}
			i++
		}
	})
	return o
}
