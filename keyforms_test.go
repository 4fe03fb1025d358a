package cuckoo_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/hash"
	"github.com/dedupkit/cuckoo/internal/testseed"
)

// keyformsFilter is what TestKeyFormsModel drives: the forms of keyforms.go
// beside the single-key forms they are defined by.
type keyformsFilter interface {
	Add(key []byte) error
	AddHash(h uint64) error
	AddUnique(key []byte) (bool, error)
	AddUniqueUint64(key uint64) (bool, error)
	AddUniqueHash(h uint64) (bool, error)
	AddHashBatch(hashes []uint64) (int, error)
	AddUniqueHashBatch(hashes []uint64, added []bool) (int, error)
	Contains(key []byte) bool
	ContainsHash(h uint64) bool
	Delete(key []byte) bool
	DeleteHash(h uint64) bool
	DeleteBatch(keys [][]byte, deleted []bool)
	DeleteHashBatch(hashes []uint64, deleted []bool)
	Len() uint64
	MarshalBinary() ([]byte, error)
}

// TestKeyFormsModel runs random operations through the new forms on one
// filter and through the single-key forms they are defined by on a twin
// with the same seed, and checks that every answer and, at the end, the
// encodings are the same; a map of counts checks that no key still added
// is ever reported absent.
func TestKeyFormsModel(t *testing.T) {
	const capacity = 2000
	seed := testseed.Seed(t)
	makers := map[string]func() keyformsFilter{
		"Filter": func() keyformsFilter {
			f, err := cuckoo.New(capacity, cuckoo.WithSeed(seed))
			kfMust(t, err)
			return f
		},
		"Scalable": func() keyformsFilter {
			f, err := cuckoo.NewScalable(100, cuckoo.WithSeed(seed))
			kfMust(t, err)
			return f
		},
		"Concurrent": func() keyformsFilter {
			f, err := cuckoo.NewConcurrent(capacity, cuckoo.WithSeed(seed))
			kfMust(t, err)
			return f
		},
		"Window": func() keyformsFilter {
			f, err := cuckoo.NewWindow(capacity, time.Hour, cuckoo.WithSeed(seed))
			kfMust(t, err)
			return f
		},
	}
	for name, mk := range makers {
		t.Run("type="+name, func(t *testing.T) {
			a, b := mk(), mk()
			r := testseed.New(seed)
			model := map[uint64]int{} // key number → copies added and not deleted
			// Keys are numbers below 600: bytes keys are their 8
			// little-endian bytes (what AddUint64 hashes), hash keys their
			// hash under the filter's seed, so the forms name the same keys.
			keyOf := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
			hashOf := func(v uint64) uint64 { return hash.Sum64Uint64(v, seed) }
			draw := func(n int) []uint64 {
				vs := make([]uint64, n)
				for i := range vs {
					vs[i] = r.Uint64N(600)
				}
				return vs
			}
			// present draws up to n distinct keys that hold copies: deleting
			// a key never added may remove another key's fingerprint (see
			// Filter.Delete), which the model cannot follow.
			present := func(n int) []uint64 {
				var vs []uint64
				for _, v := range r.Perm(600) {
					if len(vs) < n && model[uint64(v)] > 0 {
						vs = append(vs, uint64(v))
					}
				}
				return vs
			}
			for step := range 400 {
				op := r.IntN(6)
				vs := draw(1 + r.IntN(12))
				if op >= 4 {
					vs = present(1 + r.IntN(12))
				}
				hs := make([]uint64, len(vs))
				keys := make([][]byte, len(vs))
				for i, v := range vs {
					hs[i], keys[i] = hashOf(v), keyOf(v)
				}
				got, want := make([]bool, len(vs)), make([]bool, len(vs))
				switch op {
				case 0: // AddUniqueUint64 ≡ AddUnique of the bytes
					for i, v := range vs {
						x, err1 := a.AddUniqueUint64(v)
						y, err2 := b.AddUnique(keys[i])
						kfMust(t, err1)
						kfMust(t, err2)
						got[i], want[i] = x, y
					}
				case 1: // AddUniqueHash ≡ ContainsHash, then AddHash
					for i, h := range hs {
						x, err := a.AddUniqueHash(h)
						kfMust(t, err)
						got[i], want[i] = x, !b.ContainsHash(h)
						if want[i] {
							kfMust(t, b.AddHash(h))
						}
					}
				case 2: // AddHashBatch ≡ AddHash in a loop
					n, err := a.AddHashBatch(hs)
					kfMust(t, err)
					if n != len(hs) {
						t.Fatalf("step %d: AddHashBatch added %d of %d", step, n, len(hs))
					}
					for i, h := range hs {
						kfMust(t, b.AddHash(h))
						got[i], want[i] = true, true
					}
				case 3: // AddUniqueHashBatch ≡ AddUniqueHash in a loop
					n, err := a.AddUniqueHashBatch(hs, got)
					kfMust(t, err)
					if n != len(hs) {
						t.Fatalf("step %d: AddUniqueHashBatch processed %d of %d", step, n, len(hs))
					}
					for i, h := range hs {
						want[i] = !b.ContainsHash(h)
						if want[i] {
							kfMust(t, b.AddHash(h))
						}
					}
				case 4: // DeleteBatch ≡ Delete in a loop
					a.DeleteBatch(keys, got)
					for i, k := range keys {
						want[i] = b.Delete(k)
					}
				case 5: // DeleteHashBatch ≡ DeleteHash in a loop
					a.DeleteHashBatch(hs, got)
					for i, h := range hs {
						want[i] = b.DeleteHash(h)
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("step %d op %d keys %v: got %v, the single-key forms %v", step, op, vs, got, want)
				}
				for i, v := range vs {
					switch {
					case op <= 3 && got[i] && name == "Window":
						model[v] = 1 // a Window holds a key once: adding it again refreshes it
					case op <= 3 && got[i]:
						model[v]++
					case op >= 4 && got[i] && model[v] > 0:
						model[v]--
					}
				}
				if name == "Window" && op >= 4 {
					// A Window stores a key whose fingerprint matches a
					// present one by refreshing that one (it is a set), so
					// deleting either removes both: forget the keys that
					// went with a deleted one.
					for v := range model {
						if !a.Contains(keyOf(v)) {
							delete(model, v)
						}
					}
				}
				if a.Len() != b.Len() {
					t.Fatalf("step %d: Len %d, twin %d", step, a.Len(), b.Len())
				}
				for v, n := range model {
					if n > 0 && !a.Contains(keyOf(v)) {
						t.Fatalf("step %d: key %d (%d copies) reported absent", step, v, n)
					}
				}
			}
			if name == "Window" {
				return // its encoding holds the clock
			}
			ea, err1 := a.MarshalBinary()
			eb, err2 := b.MarshalBinary()
			kfMust(t, err1)
			kfMust(t, err2)
			if !bytes.Equal(ea, eb) {
				t.Fatal("the encodings differ")
			}
		})
	}
}

// TestKeyFormsZeroAndShort: on the zero values the new inserts report
// ErrUninitialized (Filter, Concurrent, Window) or set the filter up
// (Scalable), and a result slice shorter than the keys panics.
func TestKeyFormsZeroAndShort(t *testing.T) {
	var f cuckoo.Filter
	var c cuckoo.Concurrent
	for name, z := range map[string]keyformsFilter{"Filter": &f, "Concurrent": &c} {
		if _, err := z.AddUniqueHash(1); !errorsIsUninit(err) {
			t.Errorf("%s: AddUniqueHash: %v", name, err)
		}
		if n, err := z.AddHashBatch([]uint64{1, 2}); n != 0 || !errorsIsUninit(err) {
			t.Errorf("%s: AddHashBatch: %d, %v", name, n, err)
		}
		del := []bool{true}
		z.DeleteBatch([][]byte{[]byte("k")}, del)
		if del[0] {
			t.Errorf("%s: DeleteBatch on the zero value deleted", name)
		}
	}
	var s cuckoo.Scalable
	if added, err := s.AddUniqueUint64(7); !added || err != nil || !s.ContainsUint64(7) {
		t.Fatalf("zero Scalable: AddUniqueUint64 = %v, %v", added, err)
	}
	f2, err := cuckoo.New(100, cuckoo.WithSeed(1))
	kfMust(t, err)
	for name, fn := range map[string]func(){
		"DeleteBatch":        func() { f2.DeleteBatch([][]byte{nil, nil}, make([]bool, 1)) },
		"DeleteHashBatch":    func() { f2.DeleteHashBatch([]uint64{1, 2}, make([]bool, 1)) },
		"AddUniqueHashBatch": func() { _, _ = f2.AddUniqueHashBatch([]uint64{1, 2}, make([]bool, 1)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with a short result slice did not panic", name)
				}
			}()
			fn()
		}()
	}
}

// TestKeyFormsAllocs: the new forms allocate nothing.
func TestKeyFormsAllocs(t *testing.T) {
	f, err := cuckoo.New(1000, cuckoo.WithSeed(1))
	kfMust(t, err)
	hs := []uint64{1, 2, 3, 4}
	keys := [][]byte{[]byte("a"), []byte("b")}
	res := make([]bool, 4)
	for name, fn := range map[string]func(){
		"AddUniqueHash":      func() { _, _ = f.AddUniqueHash(9); f.DeleteHash(9) },
		"AddUniqueUint64":    func() { _, _ = f.AddUniqueUint64(9); f.DeleteUint64(9) },
		"AddHashBatch":       func() { _, _ = f.AddHashBatch(hs); f.DeleteHashBatch(hs, res) },
		"AddUniqueHashBatch": func() { _, _ = f.AddUniqueHashBatch(hs, res); f.DeleteHashBatch(hs, res) },
		"DeleteBatch":        func() { f.DeleteBatch(keys, res) },
	} {
		if allocs := testing.AllocsPerRun(100, fn); allocs != 0 {
			t.Errorf("%s: %v allocations per run", name, allocs)
		}
	}
}

func errorsIsUninit(err error) bool { return errors.Is(err, cuckoo.ErrUninitialized) }

func kfMust(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestFilterHashBatchesStopWhenFull: a Filter's hash batches stop at the
// first ErrFull as a loop of single calls does, and leave the filter
// holding exactly the hashes before it (the same bytes as the loop's twin).
func TestFilterHashBatchesStopWhenFull(t *testing.T) {
	hs := make([]uint64, 4000)
	for i := range hs {
		hs[i] = hash.Sum64Uint64(uint64(i), 7)
	}
	for _, unique := range []bool{false, true} {
		batch, err := cuckoo.New(500, cuckoo.WithSeed(3), cuckoo.WithFingerprintBits(8))
		kfMust(t, err)
		loop, err := cuckoo.New(500, cuckoo.WithSeed(3), cuckoo.WithFingerprintBits(8))
		kfMust(t, err)
		var n int
		if unique {
			n, err = batch.AddUniqueHashBatch(hs, make([]bool, len(hs)))
		} else {
			n, err = batch.AddHashBatch(hs)
		}
		if !errors.Is(err, cuckoo.ErrFull) {
			t.Fatalf("unique=%v: %d hashes, err %v; want ErrFull", unique, n, err)
		}
		want := 0
		for _, h := range hs {
			var lerr error
			if unique {
				_, lerr = loop.AddUniqueHash(h)
			} else {
				lerr = loop.AddHash(h)
			}
			if lerr != nil {
				break
			}
			want++
		}
		if n != want {
			t.Fatalf("unique=%v: the batch stopped after %d hashes, the loop after %d", unique, n, want)
		}
		got, err := batch.MarshalBinary()
		kfMust(t, err)
		exp, err := loop.MarshalBinary()
		kfMust(t, err)
		if !bytes.Equal(got, exp) {
			t.Fatalf("unique=%v: the batch's filter differs from the loop's", unique)
		}
		for _, h := range hs[:n] {
			if !batch.ContainsHash(h) {
				t.Fatalf("unique=%v: hash %x added and not found", unique, h)
			}
		}
	}
}
