package main

import (
	"fmt"

	"github.com/cespare/xxhash/v2"
	holiman "github.com/holiman/bloomfilter/v2"
)

// github.com/holiman/bloomfilter/v2, sized with NewOptimal(n, p). It takes
// a pre-hashed uint64: the adapter hashes each key with xxhash inside the
// timed loop, as its users must. Each filter draws its own random keys.

func init() {
	for _, p := range bloomTargets {
		register(spec{
			name: fmt.Sprintf("holiman/bloomfilter @%s", targetName(p)), module: "github.com/holiman/bloomfilter/v2",
			kind: kindBloom, target: p,
			make: func(n, _ uint64) (filter, error) {
				f, err := holiman.NewOptimal(n, p)
				return &holimanBloom{f}, err
			},
		})
	}
}

type holimanBloom struct{ f *holiman.Filter }

func (a *holimanBloom) add(keys [][]byte) (failed int) {
	f := a.f
	for _, k := range keys {
		f.AddHash(xxhash.Sum64(k))
	}
	return 0
}

func (a *holimanBloom) contains(keys [][]byte) (found int) {
	f := a.f
	for _, k := range keys {
		if f.ContainsHash(xxhash.Sum64(k)) {
			found++
		}
	}
	return found
}

func (a *holimanBloom) remove([][]byte) int  { panic("bench: no Delete") }
func (a *holimanBloom) seal() error          { return nil }
func (a *holimanBloom) reportedBytes() int64 { return int64(a.f.M() / 8) }
