package main

import (
	"sync"
	"sync/atomic"

	"github.com/dedupkit/cuckoo"
)

// This project's growing and concurrent cuckoo filters: cuckoo.NewScalable
// (8-bit fingerprints, like seiflotfy's scalable filter, grown from the
// default initial capacity to n) and cuckoo.NewConcurrent (16-bit, fixed
// capacity), driven by one goroutine, and by all of GOMAXPROCS at once.

func init() {
	register(spec{
		name: "cuckoo Scalable f=8 (grown from 1024)", kind: kindCuckoo, ours: true, deletes: true, maxN: 10_000_000,
		make: func(n, seed uint64) (filter, error) {
			f, err := cuckoo.NewScalable(cuckoo.DefaultScalableCapacity, cuckoo.WithFingerprintBits(8), cuckoo.WithSeed(seed))
			return &scalable{f}, err
		},
	})
	register(spec{
		name: "cuckoo Concurrent f=16", kind: kindCuckoo, ours: true, deletes: true,
		make: func(n, seed uint64) (filter, error) {
			f, err := cuckoo.NewConcurrent(n, cuckoo.WithFingerprintBits(16), cuckoo.WithSeed(seed))
			return &concurrent{f: f}, err
		},
	})
	register(spec{
		name: "cuckoo Concurrent f=16, all cores", kind: kindCuckoo, ours: true, deletes: true, variant: true,
		make: func(n, seed uint64) (filter, error) {
			f, err := cuckoo.NewConcurrent(n, cuckoo.WithFingerprintBits(16), cuckoo.WithSeed(seed))
			return &concurrent{f: f, parallel: true}, err
		},
	})
}

type scalable struct{ f *cuckoo.Scalable }

func (a *scalable) add(keys [][]byte) (failed int) {
	f := a.f
	for _, k := range keys {
		if f.Add(k) != nil {
			failed++
		}
	}
	return failed
}

func (a *scalable) contains(keys [][]byte) (found int) {
	f := a.f
	for _, k := range keys {
		if f.Contains(k) {
			found++
		}
	}
	return found
}

func (a *scalable) remove(keys [][]byte) (failed int) {
	f := a.f
	for _, k := range keys {
		if !f.Delete(k) {
			failed++
		}
	}
	return failed
}

func (a *scalable) seal() error          { return nil }
func (a *scalable) reportedBytes() int64 { return int64(a.f.SizeInBytes()) }

// concurrent runs each chunk on one goroutine, or split evenly over
// GOMAXPROCS goroutines when parallel (ns/op is then wall time per key:
// throughput, not latency).
type concurrent struct {
	f        *cuckoo.Concurrent
	parallel bool
}

func (a *concurrent) add(keys [][]byte) int {
	return a.split(keys, func(f *cuckoo.Concurrent, keys [][]byte) (failed int) {
		for _, k := range keys {
			if f.Add(k) != nil {
				failed++
			}
		}
		return failed
	})
}

func (a *concurrent) contains(keys [][]byte) int {
	return a.split(keys, func(f *cuckoo.Concurrent, keys [][]byte) (found int) {
		for _, k := range keys {
			if f.Contains(k) {
				found++
			}
		}
		return found
	})
}

func (a *concurrent) remove(keys [][]byte) int {
	return a.split(keys, func(f *cuckoo.Concurrent, keys [][]byte) (failed int) {
		for _, k := range keys {
			if !f.Delete(k) {
				failed++
			}
		}
		return failed
	})
}

// split runs loop over keys, in parallel parts when a.parallel. The loop
// is a direct function literal: the call per part costs nothing per key.
func (a *concurrent) split(keys [][]byte, loop func(*cuckoo.Concurrent, [][]byte) int) int {
	if !a.parallel || len(keys) < 1024 {
		return loop(a.f, keys)
	}
	parts := gomaxprocs()
	var total atomic.Int64
	var wg sync.WaitGroup
	for p := 0; p < parts; p++ {
		lo, hi := len(keys)*p/parts, len(keys)*(p+1)/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			total.Add(int64(loop(a.f, keys[lo:hi])))
		}()
	}
	wg.Wait()
	return int(total.Load())
}

func (a *concurrent) seal() error          { return nil }
func (a *concurrent) reportedBytes() int64 { return int64(a.f.SizeInBytes()) }
