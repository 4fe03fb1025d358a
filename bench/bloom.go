package main

import (
	"fmt"

	"github.com/dedupkit/cuckoo/bloom"
)

// This project's Bloom filters (package bloom): the blocked layout of
// bloom.New and the classic layout of bloom.NewClassic, at each target rate
// of bloomTargets.

// bloomTargets are the rates every Bloom filter row is configured for: the
// two of issue 4's targets.
var bloomTargets = []float64{0.01, 0.0001}

func init() {
	layouts := []struct {
		name string
		new  func(uint64, ...bloom.Option) (*bloom.Filter, error)
	}{{"bloom.New (blocked)", bloom.New}, {"bloom.NewClassic", bloom.NewClassic}}
	for _, l := range layouts {
		for _, p := range bloomTargets {
			register(spec{
				name: fmt.Sprintf("%s @%s", l.name, targetName(p)), kind: kindBloom, ours: true, target: p,
				make: func(n, seed uint64) (filter, error) {
					f, err := l.new(n, bloom.WithFalsePositiveRate(p), bloom.WithSeed(seed))
					return &ourBloom{f}, err
				},
			})
		}
	}
}

type ourBloom struct{ f *bloom.Filter }

func (a *ourBloom) add(keys [][]byte) (failed int) {
	f := a.f
	for _, k := range keys {
		f.Add(k)
	}
	return 0
}

func (a *ourBloom) contains(keys [][]byte) (found int) {
	f := a.f
	for _, k := range keys {
		if f.Contains(k) {
			found++
		}
	}
	return found
}

func (a *ourBloom) remove([][]byte) int  { panic("bench: bloom.Filter has no Delete") }
func (a *ourBloom) seal() error          { return nil }
func (a *ourBloom) reportedBytes() int64 { return int64(a.f.SizeInBytes()) }
