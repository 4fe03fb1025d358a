package main

import (
	"fmt"

	bitsbloom "github.com/bits-and-blooms/bloom/v3"
)

// github.com/bits-and-blooms/bloom/v3, sized with NewWithEstimates(n, p):
// the Bloom filter most Go users pick. It takes no seed.

func init() {
	for _, p := range bloomTargets {
		register(spec{
			name: fmt.Sprintf("bits-and-blooms/bloom @%s", targetName(p)), module: "github.com/bits-and-blooms/bloom/v3",
			kind: kindBloom, target: p,
			make: func(n, _ uint64) (filter, error) {
				return &bitsAndBlooms{bitsbloom.NewWithEstimates(uint(n), p)}, nil
			},
		})
	}
}

type bitsAndBlooms struct{ f *bitsbloom.BloomFilter }

func (a *bitsAndBlooms) add(keys [][]byte) (failed int) {
	f := a.f
	for _, k := range keys {
		f.Add(k)
	}
	return 0
}

func (a *bitsAndBlooms) contains(keys [][]byte) (found int) {
	f := a.f
	for _, k := range keys {
		if f.Test(k) {
			found++
		}
	}
	return found
}

func (a *bitsAndBlooms) remove([][]byte) int  { panic("bench: no Delete") }
func (a *bitsAndBlooms) seal() error          { return nil }
func (a *bitsAndBlooms) reportedBytes() int64 { return int64(a.f.Cap() / 8) }
