package bloom_test

import (
	"testing"

	"github.com/dedupkit/cuckoo/bloom"
)

var sink bool

// TestZeroAllocs: the operations on keys allocate nothing, on every type
// and path (a Scalable Add allocates only when it adds a layer, which this
// test avoids by staying under the capacity).
func TestZeroAllocs(t *testing.T) {
	b, _ := bloom.New(100_000, bloom.WithFalsePositiveRate(0.01))
	c, _ := bloom.NewClassic(100_000, bloom.WithFalsePositiveRate(0.01))
	n, _ := bloom.NewCounting(100_000, bloom.WithFalsePositiveRate(0.01))
	s, _ := bloom.NewScalable(100_000, bloom.WithFalsePositiveRate(0.01))
	sc := bloom.NewSyncCounting(func() *bloom.Counting { c, _ := bloom.NewCounting(1000, bloom.WithFalsePositiveRate(0.01)); return c }())
	ss := bloom.NewSyncScalable(func() *bloom.Scalable {
		s, _ := bloom.NewScalable(100_000, bloom.WithFalsePositiveRate(0.01))
		return s
	}())
	var kb keyBuf
	i := uint64(0)
	str := "a string key"
	ops := map[string]func(){
		"Filter/blocked/Add":       func() { b.Add(kb.at(0, i)) },
		"Filter/blocked/AddUnique": func() { sink = addedOK(b.AddUnique(kb.at(0, i))) },
		"Filter/blocked/Contains":  func() { sink = b.Contains(kb.at(1, i)) },
		"Filter/blocked/String":    func() { b.AddString(str); sink = b.ContainsString(str) || addedOK(b.AddUniqueString(str)) },
		"Filter/classic/Add":       func() { c.Add(kb.at(0, i)) },
		"Filter/classic/AddUnique": func() { sink = addedOK(c.AddUnique(kb.at(0, i))) },
		"Filter/classic/Contains":  func() { sink = c.Contains(kb.at(1, i)) },
		"Filter/classic/String":    func() { c.AddString(str); sink = c.ContainsString(str) },
		"Counting/Add+Delete":      func() { n.Add(kb.at(0, i)); sink = n.Delete(kb.at(0, i)) },
		"Counting/Contains":        func() { sink = n.Contains(kb.at(1, i)) },
		"Counting/AddUnique":       func() { sink = addedOK(n.AddUnique(kb.at(0, i))) },
		"Counting/String":          func() { n.AddString(str); sink = n.ContainsString(str) && n.DeleteString(str) },
		"Scalable/Add":             func() { s.Add(kb.at(0, i)) },
		"Scalable/Contains":        func() { sink = s.Contains(kb.at(1, i)) },
		"Scalable/String":          func() { s.AddString(str); sink = s.ContainsString(str) || addedOK(s.AddUniqueString(str)) },
		"SyncCounting":             func() { sc.Add(kb.at(0, i)); sink = sc.Contains(kb.at(0, i)) && sc.Delete(kb.at(0, i)) },
		"SyncScalable":             func() { ss.Add(kb.at(0, i)); sink = ss.Contains(kb.at(1, i)) },
	}
	for name, op := range ops {
		if got := testing.AllocsPerRun(1000, func() { op(); i++ }); got != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, got)
		}
	}
}
