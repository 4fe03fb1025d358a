package main

import (
	boom "github.com/tylertreat/BoomFilters"
)

// github.com/tylertreat/BoomFilters CuckooFilter, sized with
// NewCuckooFilter(n, 0.001). Each slot is its own []byte and the table has
// about 32 slots per expected key, so it needs about 1 GB per million keys:
// it runs only at 10^6.

func init() {
	register(spec{
		name: "tylertreat/BoomFilters Cuckoo", module: "github.com/tylertreat/BoomFilters",
		kind: kindCuckoo, deletes: true, maxN: 1_000_000,
		bytesAt: func(n uint64) uint64 { return n * 1100 },
		make: func(n, _ uint64) (filter, error) {
			return &boomCuckoo{boom.NewCuckooFilter(uint(n), 0.001)}, nil
		},
	})
}

type boomCuckoo struct{ f *boom.CuckooFilter }

func (a *boomCuckoo) add(keys [][]byte) (failed int) {
	f := a.f
	for _, k := range keys {
		if f.Add(k) != nil {
			failed++
		}
	}
	return failed
}

func (a *boomCuckoo) contains(keys [][]byte) (found int) {
	f := a.f
	for _, k := range keys {
		if f.Test(k) {
			found++
		}
	}
	return found
}

func (a *boomCuckoo) remove(keys [][]byte) (failed int) {
	f := a.f
	for _, k := range keys {
		if !f.TestAndRemove(k) {
			failed++
		}
	}
	return failed
}

func (a *boomCuckoo) seal() error          { return nil }
func (a *boomCuckoo) reportedBytes() int64 { return -1 }
