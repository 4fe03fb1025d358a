package cuckoo_test

import (
	"errors"
	"testing"

	"github.com/dedupkit/cuckoo"
)

// TestZeroValueInserts checks the documented zero values of the
// fixed-size filters: every insert fails with ErrUninitialized (never
// ErrFull, never a panic), and reads see an empty filter.
func TestZeroValueInserts(t *testing.T) {
	key := []byte("k")
	type op struct {
		name string
		run  func() error
	}
	var f cuckoo.Filter
	var c cuckoo.Concurrent
	var w cuckoo.Window
	second := func(_ bool, err error) error { return err }
	count := func(_ int, err error) error { return err }
	cases := map[string][]op{
		"Filter": {
			{"Add", func() error { return f.Add(key) }},
			{"AddString", func() error { return f.AddString("k") }},
			{"AddUint64", func() error { return f.AddUint64(1) }},
			{"AddHash", func() error { return f.AddHash(1) }},
			{"AddUnique", func() error { return second(f.AddUnique(key)) }},
			{"AddUniqueString", func() error { return second(f.AddUniqueString("k")) }},
			{"AddBatch", func() error { return count(f.AddBatch([][]byte{key})) }},
			{"AddUniqueBatch", func() error { return count(f.AddUniqueBatch([][]byte{key}, make([]bool, 1))) }},
		},
		"Concurrent": {
			{"Add", func() error { return c.Add(key) }},
			{"AddString", func() error { return c.AddString("k") }},
			{"AddUint64", func() error { return c.AddUint64(1) }},
			{"AddHash", func() error { return c.AddHash(1) }},
			{"AddUnique", func() error { return second(c.AddUnique(key)) }},
			{"AddUniqueString", func() error { return second(c.AddUniqueString("k")) }},
			{"AddBatch", func() error { return count(c.AddBatch([][]byte{key})) }},
			{"AddUniqueBatch", func() error { return count(c.AddUniqueBatch([][]byte{key}, make([]bool, 1))) }},
		},
		"Window": {
			{"Add", func() error { return w.Add(key) }},
			{"AddString", func() error { return w.AddString("k") }},
			{"AddUint64", func() error { return w.AddUint64(1) }},
			{"AddHash", func() error { return w.AddHash(1) }},
			{"AddUnique", func() error { return second(w.AddUnique(key)) }},
			{"AddUniqueHash", func() error { return second(w.AddUniqueHash(1)) }},
			{"Touch", func() error { return second(w.Touch(key)) }},
			{"TouchHash", func() error { return second(w.TouchHash(1)) }},
			{"AddBatch", func() error { return count(w.AddBatch([][]byte{key})) }},
			{"AddUniqueBatch", func() error { return count(w.AddUniqueBatch([][]byte{key}, make([]bool, 1))) }},
			{"TouchBatch", func() error { return count(w.TouchBatch([][]byte{key}, make([]bool, 1))) }},
		},
	}
	for typ, ops := range cases {
		for _, o := range ops {
			err := o.run()
			if !errors.Is(err, cuckoo.ErrUninitialized) || errors.Is(err, cuckoo.ErrFull) {
				t.Errorf("zero %s.%s: %v, want ErrUninitialized (and not ErrFull)", typ, o.name, err)
			}
		}
	}
	if err := f.Add(key); err == nil || err.Error() != "cuckoo: filter not initialized: the zero Filter has no table; create it with New, or decode into it" {
		t.Errorf("zero Filter.Add: %q", err)
	}
	if f.Contains(key) || f.Count(key) != 0 || f.Delete(key) || f.Len() != 0 {
		t.Error("the zero Filter does not read as empty")
	}
	if c.Contains(key) || c.Count(key) != 0 || c.Delete(key) || c.Len() != 0 {
		t.Error("the zero Concurrent does not read as empty")
	}
	if w.Contains(key) || w.Delete(key) || w.Len() != 0 {
		t.Error("the zero Window does not read as empty")
	}
}

// TestZeroValueScalable checks the documented zero Scalable: it takes
// keys, growing from DefaultScalableCapacity.
func TestZeroValueScalable(t *testing.T) {
	var s cuckoo.Scalable
	if s.Contains([]byte("k")) {
		t.Fatal("the zero Scalable reports a key")
	}
	if err := s.Add([]byte("k")); err != nil {
		t.Fatalf("zero Scalable.Add: %v", err)
	}
	if !s.Contains([]byte("k")) || s.Len() != 1 {
		t.Fatal("the zero Scalable lost its key")
	}
}
