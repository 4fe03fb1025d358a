package main

import (
	"fmt"

	"github.com/AndreasBriese/bbloom"
)

// github.com/AndreasBriese/bbloom, sized with New(n, p); it rounds the bit
// array up to a power of two. Common as an indirect dependency.

func init() {
	for _, p := range bloomTargets {
		register(spec{
			name: fmt.Sprintf("AndreasBriese/bbloom @%s", targetName(p)), module: "github.com/AndreasBriese/bbloom",
			kind: kindBloom, target: p,
			make: func(n, _ uint64) (filter, error) {
				f := bbloom.New(float64(n), p)
				return &bbloomFilter{&f}, nil
			},
		})
	}
}

type bbloomFilter struct{ f *bbloom.Bloom }

func (a *bbloomFilter) add(keys [][]byte) (failed int) {
	f := a.f
	for _, k := range keys {
		f.Add(k)
	}
	return 0
}

func (a *bbloomFilter) contains(keys [][]byte) (found int) {
	f := a.f
	for _, k := range keys {
		if f.Has(k) {
			found++
		}
	}
	return found
}

func (a *bbloomFilter) remove([][]byte) int  { panic("bench: no Delete") }
func (a *bbloomFilter) seal() error          { return nil }
func (a *bbloomFilter) reportedBytes() int64 { return -1 }
