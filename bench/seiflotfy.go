package main

import (
	cuckoofilter "github.com/seiflotfy/cuckoofilter"
)

// github.com/seiflotfy/cuckoofilter: 8-bit fingerprints, 4-slot buckets,
// a power-of-two table; and its ScalableCuckooFilter. Neither takes a seed
// (the hash seed is fixed in the library).

func init() {
	register(spec{
		name: "seiflotfy/cuckoofilter (8-bit)", module: "github.com/seiflotfy/cuckoofilter",
		kind: kindCuckoo, deletes: true,
		make: func(n, _ uint64) (filter, error) {
			return &seiflotfy{cuckoofilter.NewFilter(uint(n))}, nil
		},
	})
	register(spec{
		name: "seiflotfy/cuckoofilter Scalable", module: "github.com/seiflotfy/cuckoofilter",
		kind: kindCuckoo, deletes: true, maxN: 1_000_000,
		make: func(n, _ uint64) (filter, error) {
			return &seiflotfyScalable{cuckoofilter.NewScalableCuckooFilter()}, nil
		},
	})
}

type seiflotfy struct{ f *cuckoofilter.Filter }

func (a *seiflotfy) add(keys [][]byte) (failed int) {
	f := a.f
	for _, k := range keys {
		if !f.Insert(k) {
			failed++
		}
	}
	return failed
}

func (a *seiflotfy) contains(keys [][]byte) (found int) {
	f := a.f
	for _, k := range keys {
		if f.Lookup(k) {
			found++
		}
	}
	return found
}

func (a *seiflotfy) remove(keys [][]byte) (failed int) {
	f := a.f
	for _, k := range keys {
		if !f.Delete(k) {
			failed++
		}
	}
	return failed
}

func (a *seiflotfy) seal() error { return nil }

// reportedBytes is the length of its encoding, which is the raw table.
func (a *seiflotfy) reportedBytes() int64 { return int64(len(a.f.Encode())) }

type seiflotfyScalable struct {
	f *cuckoofilter.ScalableCuckooFilter
}

func (a *seiflotfyScalable) add(keys [][]byte) (failed int) {
	f := a.f
	for _, k := range keys {
		if !f.Insert(k) {
			failed++
		}
	}
	return failed
}

func (a *seiflotfyScalable) contains(keys [][]byte) (found int) {
	f := a.f
	for _, k := range keys {
		if f.Lookup(k) {
			found++
		}
	}
	return found
}

func (a *seiflotfyScalable) remove(keys [][]byte) (failed int) {
	f := a.f
	for _, k := range keys {
		if !f.Delete(k) {
			failed++
		}
	}
	return failed
}

func (a *seiflotfyScalable) seal() error          { return nil }
func (a *seiflotfyScalable) reportedBytes() int64 { return -1 }
