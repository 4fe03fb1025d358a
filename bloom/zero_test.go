package bloom_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/bloom"
)

// TestZeroSyncWrappers checks the documented zero SyncCounting and
// SyncScalable: lookups report nothing (no nil dereference), and Update
// decodes a filter into them, which they then serve.
func TestZeroSyncWrappers(t *testing.T) {
	key := []byte("k")
	var sc bloom.SyncCounting
	if sc.Contains(key) || sc.ContainsString("k") || sc.Len() != 0 || sc.Delete(key) || sc.DeleteString("k") {
		t.Fatal("the zero SyncCounting is not empty")
	}
	sc.View(func(c *bloom.Counting) {
		if c == nil || c.Contains(key) {
			t.Fatal("View of the zero SyncCounting")
		}
	})
	c, err := bloom.NewCounting(100, bloom.WithFalsePositiveRate(0.01))
	if err != nil {
		t.Fatal(err)
	}
	c.Add(key)
	data, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	sc.Update(func(c *bloom.Counting) {
		if err := c.UnmarshalBinary(data); err != nil {
			t.Fatal(err)
		}
	})
	if !sc.Contains(key) || sc.Len() != 1 {
		t.Fatal("the zero SyncCounting lost what Update decoded")
	}

	var ss bloom.SyncScalable
	if ss.Contains(key) || ss.ContainsString("k") || ss.Len() != 0 {
		t.Fatal("the zero SyncScalable is not empty")
	}
	s, err := bloom.NewScalable(100, bloom.WithFalsePositiveRate(0.01))
	if err != nil {
		t.Fatal(err)
	}
	s.Add(key)
	if data, err = s.MarshalBinary(); err != nil {
		t.Fatal(err)
	}
	ss.Update(func(s *bloom.Scalable) {
		if err := s.UnmarshalBinary(data); err != nil {
			t.Fatal(err)
		}
	})
	if !ss.Contains(key) || ss.Len() != 1 {
		t.Fatal("the zero SyncScalable lost what Update decoded")
	}
}

// TestZeroValueWrites checks the documented zero values: a zero Filter or
// Counting reads as empty, refuses Add and its key forms with an error
// wrapping ErrUninitialized that names its constructor (and stays empty),
// and so AddUnique and its key forms; a zero Scalable (and SyncScalable) sets itself up on the
// first write, as a zero cuckoo.Scalable does.
func TestZeroValueWrites(t *testing.T) {
	key := []byte("k")
	var f bloom.Filter
	if f.Contains(key) || f.ContainsString("k") || f.Len() != 0 || f.FalsePositiveRate() != 0 {
		t.Fatal("the zero Filter is not empty")
	}
	refuses := func(name, want string, adds map[string]func() error, empty func() bool) {
		t.Helper()
		for form, add := range adds {
			if err := add(); !errors.Is(err, bloom.ErrUninitialized) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s.%s: %v, want an error wrapping ErrUninitialized naming %s", name, form, err, want)
			}
		}
		if !empty() {
			t.Errorf("%s: a refused Add changed the zero value", name)
		}
	}
	refuses("Filter", "New", map[string]func() error{
		"Add":             func() error { return f.Add(key) },
		"AddString":       func() error { return f.AddString("k") },
		"AddUint64":       func() error { return f.AddUint64(7) },
		"AddHash":         func() error { return f.AddHash(7) },
		"AddUnique":       func() error { return refused(f.AddUnique(key)) },
		"AddUniqueString": func() error { return refused(f.AddUniqueString("k")) },
		"AddUniqueUint64": func() error { return refused(f.AddUniqueUint64(7)) },
		"AddUniqueHash":   func() error { return refused(f.AddUniqueHash(7)) },
	}, func() bool { return f.Len() == 0 && !f.Contains(key) })
	var c bloom.Counting
	if c.Contains(key) || c.Delete(key) || c.Len() != 0 {
		t.Fatal("the zero Counting is not empty")
	}
	refuses("Counting", "NewCounting", map[string]func() error{
		"Add":             func() error { return c.Add(key) },
		"AddString":       func() error { return c.AddString("k") },
		"AddUint64":       func() error { return c.AddUint64(7) },
		"AddHash":         func() error { return c.AddHash(7) },
		"AddUnique":       func() error { return refused(c.AddUnique(key)) },
		"AddUniqueString": func() error { return refused(c.AddUniqueString("k")) },
		"AddUniqueUint64": func() error { return refused(c.AddUniqueUint64(7)) },
		"AddUniqueHash":   func() error { return refused(c.AddUniqueHash(7)) },
	}, func() bool { return c.Len() == 0 && !c.Contains(key) })
	var sc bloom.SyncCounting
	if err := sc.Add(key); !errors.Is(err, bloom.ErrUninitialized) {
		t.Errorf("SyncCounting.Add on the zero value: %v, want ErrUninitialized", err)
	}
	if added, err := sc.AddUnique(key); added || !errors.Is(err, bloom.ErrUninitialized) {
		t.Errorf("SyncCounting.AddUnique on the zero value: %v, %v, want false and ErrUninitialized", added, err)
	}

	var s bloom.Scalable
	if s.Contains(key) || s.Len() != 0 || s.NumTables() != 0 {
		t.Fatal("the zero Scalable is not empty")
	}
	if !addedOK(s.AddUnique(key)) || addedOK(s.AddUnique(key)) || !s.Contains(key) || s.Len() != 1 {
		t.Fatal("the zero Scalable does not add")
	}
	if s.NumTables() != 1 || s.Capacity() != bloom.DefaultScalableCapacity || s.TargetFalsePositiveRate() != bloom.DefaultFalsePositiveRate {
		t.Fatalf("zero Scalable set up with %d tables, capacity %d, rate %v", s.NumTables(), s.Capacity(), s.TargetFalsePositiveRate())
	}
	var ss bloom.SyncScalable
	if err := ss.AddString("k"); err != nil {
		t.Fatal(err)
	}
	if !ss.ContainsString("k") || ss.Len() != 1 {
		t.Fatal("the zero SyncScalable does not add")
	}
}

// refused is the error of a refused AddUnique, or one saying it added.
func refused(added bool, err error) error {
	if added {
		return errors.New("added")
	}
	return err
}

// addedOK is the answer of an AddUnique that must not fail.
func addedOK(added bool, err error) bool {
	if err != nil {
		panic(err)
	}
	return added
}
