package cuckoo_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/dedupkit/cuckoo"
)

func TestContainsBatchMatchesContains(t *testing.T) {
	for _, l := range layouts {
		f, _ := cuckoo.New(5000, l.opts(10, cuckoo.WithSeed(2))...)
		for i := uint64(0); i < 5000; i++ {
			f.Add(key(0, i))
		}
		for _, n := range []int{0, 1, 15, 16, 17, 100, 1000} {
			keys := make([][]byte, n)
			hashes := make([]uint64, n)
			for i := range keys {
				keys[i] = key(uint64(i%2), uint64(i*7))
				hashes[i] = uint64(i) * 0x9e3779b97f4a7c15
			}
			found := make([]bool, n+3)
			found[n] = true // past the keys: must be left alone
			f.ContainsBatch(keys, found)
			for i, k := range keys {
				if found[i] != f.Contains(k) {
					t.Fatalf("%v n=%d: found[%d] = %v, Contains = %v", l, n, i, found[i], f.Contains(k))
				}
			}
			if !found[n] {
				t.Fatal("ContainsBatch wrote past its keys")
			}
			f.ContainsHashBatch(hashes, found)
			for i, h := range hashes {
				if found[i] != f.ContainsHash(h) {
					t.Fatalf("%v n=%d: hash batch differs at %d", l, n, i)
				}
			}
		}
	}
	var zero cuckoo.Filter
	found := []bool{true, true}
	zero.ContainsBatch([][]byte{{1}, {2}}, found)
	if found[0] || found[1] {
		t.Fatal("the zero Filter found keys")
	}
}

func TestAddBatchMatchesAdd(t *testing.T) {
	for _, l := range layouts {
		const n = 1200 // past capacity: the batch must stop where Add fails
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = key(0, uint64(i))
		}
		a, _ := cuckoo.New(1000, l.opts(8, cuckoo.WithSeed(3))...)
		b, _ := cuckoo.New(1000, l.opts(8, cuckoo.WithSeed(3))...)
		var want int
		var wantErr error
		for i, k := range keys {
			if err := a.Add(k); err != nil {
				want, wantErr = i, err
				break
			}
		}
		if wantErr == nil {
			want = n
		}
		got, err := b.AddBatch(keys)
		if got != want || !errors.Is(err, wantErr) && err != wantErr {
			t.Fatalf("%v: AddBatch = %d, %v; loop of Add = %d, %v", l, got, err, want, wantErr)
		}
		if !bytes.Equal(mustMarshal(t, a), mustMarshal(t, b)) {
			t.Fatalf("%v: AddBatch built a different filter from a loop of Add", l)
		}
	}
}

func TestAddUniqueBatchMatchesAddUnique(t *testing.T) {
	for _, l := range layouts {
		keys := make([][]byte, 700)
		for i := range keys {
			keys[i] = key(0, uint64(i%250)) // repeats inside one group and across groups
		}
		a, _ := cuckoo.New(1000, l.opts(12, cuckoo.WithSeed(4))...)
		b, _ := cuckoo.New(1000, l.opts(12, cuckoo.WithSeed(4))...)
		added := make([]bool, len(keys))
		n, err := b.AddUniqueBatch(keys, added)
		if err != nil || n != len(keys) {
			t.Fatalf("AddUniqueBatch = %d, %v", n, err)
		}
		for i, k := range keys {
			want, _ := a.AddUnique(k)
			if added[i] != want {
				t.Fatalf("%v: key %d: batch added %v, AddUnique %v", l, i, added[i], want)
			}
		}
		if !bytes.Equal(mustMarshal(t, a), mustMarshal(t, b)) {
			t.Fatalf("%v: filters differ (len %d)", l, a.Len())
		}
	}
}

// batcher is the batch API that Filter and Scalable share.
type batcher interface {
	ContainsBatch(keys [][]byte, found []bool)
	ContainsHashBatch(hashes []uint64, found []bool)
	AddBatch(keys [][]byte) (int, error)
	AddUniqueBatch(keys [][]byte, added []bool) (int, error)
}

// batchers returns a Filter of capacity n and a Scalable of initial
// capacity n, both with seed 1.
func batchers(n uint64) map[string]batcher {
	f, _ := cuckoo.New(n, cuckoo.WithSeed(1))
	s, _ := cuckoo.NewScalable(n, cuckoo.WithSeed(1))
	return map[string]batcher{"Filter": f, "Scalable": s}
}

func TestBatchPanicsOnShortOutput(t *testing.T) {
	for kind, f := range batchers(10) {
		for name, call := range map[string]func(){
			"ContainsBatch":     func() { f.ContainsBatch(make([][]byte, 3), make([]bool, 2)) },
			"ContainsHashBatch": func() { f.ContainsHashBatch(make([]uint64, 3), make([]bool, 2)) },
			"AddUniqueBatch":    func() { f.AddUniqueBatch(make([][]byte, 3), make([]bool, 2)) },
		} {
			func() {
				defer func() {
					if r := recover(); r == nil || !bytes.HasPrefix([]byte(fmt.Sprint(r)), []byte("cuckoo: ")) {
						t.Errorf("%s.%s: recover() = %v, want a cuckoo: panic", kind, name, r)
					}
				}()
				call()
			}()
		}
	}
}

// TestBatchNoAllocations: batches allocate nothing, also in a Scalable
// grown to several tables (300 keys from an initial capacity of 100).
func TestBatchNoAllocations(t *testing.T) {
	for kind, capacity := range map[string]uint64{"Filter": 10000, "Scalable": 100} {
		f := batchers(capacity)[kind]
		keys := make([][]byte, 300)
		for i := range keys {
			keys[i] = key(0, uint64(i))
		}
		found := make([]bool, len(keys))
		f.AddBatch(keys) // the Scalable grows to its tables now
		if a := testing.AllocsPerRun(100, func() {
			f.ContainsBatch(keys, found)
			f.AddUniqueBatch(keys, found)
		}); a != 0 {
			t.Fatalf("%s: %v allocations per batch", kind, a)
		}
	}
}
