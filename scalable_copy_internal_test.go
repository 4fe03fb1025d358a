package cuckoo

import (
	"encoding/binary"
	"testing"

	"github.com/dedupkit/cuckoo/internal/table"
)

// TestScalableCopiesInClosedTables adds copies of keys held by the closed
// tables of a grown Scalable (the tables before the newest): each copy
// goes into an empty slot of its two buckets or to the overflow counters,
// never by moving the fingerprints a closed table holds, which stay
// where they were, slot for slot; and every key is still counted at least
// as many times as it was added, through encoding and deletes.
func TestScalableCopiesInClosedTables(t *testing.T) {
	s, err := NewScalable(500, WithFalsePositiveRate(1e-3), WithSeed(11))
	if err != nil {
		t.Fatal(err)
	}
	key := func(i uint64) []byte { return binary.LittleEndian.AppendUint64(nil, i) }
	const n = 20000
	for i := range uint64(n) {
		s.Add(key(i))
	}
	closed := len(s.levels) - 1
	if closed < 3 {
		t.Fatalf("%d tables: the test wants at least 4", len(s.levels))
	}
	before := make([][]uint64, closed)
	for k, lv := range s.levels[:closed] {
		if lv.Grow != nil {
			t.Fatalf("closed table %d is growing", k)
		}
		before[k] = tableSlots(&lv.Plain.T)
	}
	// Three more copies of the first keys (most in the oldest tables).
	added := map[uint64]uint64{}
	for i := range uint64(n) {
		added[i] = 1
	}
	for range 3 {
		for i := range uint64(n / 4) {
			s.Add(key(i))
			added[i]++
		}
	}
	for k, lv := range s.levels[:closed] {
		after := tableSlots(&lv.Plain.T)
		for j, v := range before[k] {
			if v != 0 && after[j] != v {
				t.Fatalf("table %d, slot %d: fingerprint %#x moved (now %#x)", k, j, v, after[j])
			}
		}
	}
	if s.extra == 0 {
		t.Errorf("no copy went to the overflow counters: the closed tables were not full")
	}
	check := func(s *Scalable, what string) {
		t.Helper()
		for i, c := range added {
			if got := s.Count(key(i)); got < c {
				t.Fatalf("%s: key %d counted %d times, added %d", what, i, got, c)
			}
		}
	}
	check(s, "after the copies")
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var d Scalable
	if err := d.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	check(&d, "decoded")
	for i := range uint64(n / 4) {
		for range 2 {
			if !s.Delete(key(i)) {
				t.Fatalf("key %d: delete of a copy found none", i)
			}
			added[i]--
		}
	}
	check(s, "after deletes")
}

// tableSlots returns every slot of t, bucket by bucket.
func tableSlots(t *table.Table) []uint64 {
	var v []uint64
	for i := range t.NumBuckets {
		for j := range t.Slots {
			v = append(v, t.Slot(i, j))
		}
	}
	return v
}
