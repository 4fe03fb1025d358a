package bloom_test

import (
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
