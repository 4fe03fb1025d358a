package cuckoo

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/dedupkit/cuckoo/internal/codec"
	"github.com/dedupkit/cuckoo/internal/table/chain"
)

// TestGrowTableStrip fills a growing table through Scalable's own path
// until it becomes plain, checking at every split that no key is lost,
// and that the plain table it becomes is the generation's table: a Filter
// around it finds every key by Filter.ContainsHash, and counts agree.
func TestGrowTableStrip(t *testing.T) {
	for _, l := range []struct {
		slots uint64
		semi  bool
		f     int
	}{{4, false, 12}, {2, false, 7}, {8, false, 16}, {4, true, 13}, {4, false, 31}} {
		s, err := NewScalable(200, WithBucketSize(int(l.slots)), WithFingerprintBits(l.f), WithSeed(9), semiOpt(l.semi))
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(uint64(l.f), l.slots))
		var hs []uint64
		sawGrowing, splits := false, uint64(0)
		for len(s.levels) < 3 || s.levels[len(s.levels)-1].Grow != nil {
			h := r.Uint64()
			s.AddHash(h)
			hs = append(hs, h)
			lv := s.levels[len(s.levels)-1]
			if lv.Grow == nil {
				continue
			}
			sawGrowing = true
			if n := lv.Grow.T.NumBuckets; n != splits {
				splits = n
				for _, h := range hs {
					if !s.ContainsHash(h) {
						t.Fatalf("%+v: key lost at %d buckets", l, n)
					}
				}
				if j, ok := lv.Grow.Check(); !ok {
					t.Fatalf("%+v: bucket %d holds a misplaced tag", l, j)
				}
				if err := s.CheckInvariants(); err != nil {
					t.Fatalf("%+v: %v", l, err)
				}
			}
		}
		wantGrowing := s.g.reserveOf(s.levels[1].FPBits()) > 0
		if sawGrowing != wantGrowing {
			t.Fatalf("%+v: grew in place %v, want %v", l, sawGrowing, wantGrowing)
		}
		for _, lv := range s.levels {
			if lv.Table().NumBuckets != s.g.at(lv.Gen).numBuckets || lv.Table().FPBits != s.g.at(lv.Gen).fpBits {
				t.Fatalf("%+v: generation %d is not its plain table", l, lv.Gen)
			}
		}
		for _, h := range hs {
			if s.home(h) < 0 {
				t.Fatalf("%+v: key lost", l)
			}
		}
		if err := s.CheckInvariants(); err != nil {
			t.Fatalf("%+v: %v", l, err)
		}
	}
}

func semiOpt(semi bool) Option {
	if semi {
		return WithSemiSorting()
	}
	return func(*config) error { return nil }
}

// grownMidway returns a Scalable whose newest table is growing, with
// copies in its overflow counters.
func grownMidway(t *testing.T) (*Scalable, []uint64) {
	t.Helper()
	s, _ := NewScalable(100, WithFingerprintBits(12), WithSeed(3))
	r := rand.New(rand.NewPCG(3, 4))
	var hs []uint64
	// Past its first level and mid-split, so that tags have dropped a
	// reserve bit and buckets are of both kinds.
	for len(s.levels) < 3 || s.NewestGrowingLevel() < 1 || s.levels[len(s.levels)-1].Occupied() < 200 ||
		growingSplit(s) == 0 {
		h := r.Uint64()
		s.AddHash(h)
		hs = append(hs, h)
	}
	lv := s.levels[len(s.levels)-1]
	if lv.Grow == nil {
		t.Fatal("the newest table is not growing")
	}
	for k := 0; k < 5; k++ {
		s.AddHash(hs[len(hs)-1]) // a hot key: slot copies, then counted ones
	}
	if lv.NOver == 0 {
		t.Fatal("no overflow copies in the growing table")
	}
	return s, hs
}

// growingSplit returns the buckets of its level the newest table, growing,
// has split.
func growingSplit(s *Scalable) uint64 {
	_, _, split := s.levels[len(s.levels)-1].Grow.Geometry()
	return split
}

// TestGrowingEncoding: a Scalable with a growing table round-trips; the
// growing table's own encoding is refused as a Filter; a tag moved to a
// bucket it does not belong in is refused; a Concurrent loading it gets
// the table at full size, every key found.
func TestGrowingEncoding(t *testing.T) {
	s, hs := grownMidway(t)
	data, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var g Scalable
	if err := g.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if again, _ := g.MarshalBinary(); !bytes.Equal(again, data) {
		t.Fatal("re-encoding changed the bytes")
	}
	for _, h := range hs {
		if !g.ContainsHash(h) {
			t.Fatal("key lost in the round trip")
		}
	}
	if got, want := g.CountHash(hs[len(hs)-1]), s.CountHash(hs[len(hs)-1]); got != want || got < 6 {
		t.Fatalf("hot key: count %d after the round trip, %d before", got, want)
	}

	lv := s.levels[len(s.levels)-1]
	var buf bytes.Buffer
	e := s.levelEncoding(lv)
	if _, err := e.writeTo(&buf); err != nil {
		t.Fatal(err)
	}
	var f Filter
	if err := f.UnmarshalBinary(buf.Bytes()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a growing table as a Filter: %v", err)
	}

	// Move one tag into a bucket it does not live in.
	bad := *s
	badLv, badGrow := *lv, *lv.Grow
	badGrow.T.Words = append([]uint64(nil), lv.Grow.T.Words...)
	badLv.Grow = &badGrow
	bad.levels = append(append([]*chain.Level(nil), s.levels[:len(s.levels)-1]...), &badLv)
	tb := &badGrow.T
	base, depth, _ := badGrow.Geometry()
	moved := false
	// A tag moved to a bucket whose reserve bits it does not hold is a
	// valid tag of another key (as a fingerprint moved in a Filter is);
	// one that holds bits saying otherwise is misplaced: one block of m_ℓ
	// buckets on, say, as the tags hold bit ℓ on.
	for j := uint64(0); j+base<<depth < tb.NumBuckets && !moved; j++ {
		dst := j + base<<depth
		for sl := uint64(0); sl < tb.Slots; sl++ {
			if tag := tb.Slot(j, sl); tag != 0 && tb.Insert(dst, tag) {
				tb.Replace(j, tag, 0)
				if _, ok := badLv.Grow.Check(); !ok {
					moved = true
					break
				}
				tb.Replace(dst, tag, 0)
				tb.Insert(j, tag)
			}
		}
	}
	if !moved {
		t.Fatal("found no tag to misplace")
	}
	if err := new(Scalable).UnmarshalBinary(mustEncode(t, &bad)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a misplaced tag: %v", err)
	}

	var c Concurrent
	if err := c.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if !c.ContainsHash(h) {
			t.Fatal("key lost loading into a Concurrent")
		}
	}
	if err := c.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if c.Len() != s.Len() || c.CountHash(hs[len(hs)-1]) != s.CountHash(hs[len(hs)-1]) {
		t.Fatalf("Concurrent: Len %d, want %d", c.Len(), s.Len())
	}
	// The decoder that checks a stream sees the same.
	if _, err := decodeChainState(codec.NewDecoder(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
}

func mustEncode(t *testing.T, s *Scalable) []byte {
	t.Helper()
	data, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestGrowingLookupsFar: with the chain's prefetch on (a chain of
// chain.FarChainBytes or more, forced here on a small one) and the growing
// table large, a lookup prefetches both before it probes (Growing.Locate);
// its answers are those of the same filter without the prefetches, for
// every added key (each found) and for absent ones.
func TestGrowingLookupsFar(t *testing.T) {
	s, hs := grownMidway(t)
	var far Scalable
	if err := far.UnmarshalBinary(mustEncode(t, s)); err != nil {
		t.Fatal(err)
	}
	if chain.Far(far.probe) || far.growing() == nil {
		t.Fatal("want a near chain with a growing table to start from")
	}
	for k := range far.probe {
		far.probe[k].Prefetch = true
	}
	far.growing().Probe().Large = true
	r := rand.New(rand.NewPCG(5, 6))
	for k := range len(hs) + 20000 {
		h, added := r.Uint64(), false
		if k < len(hs) {
			h, added = hs[k], true
		}
		got, want := far.ContainsHash(h), s.ContainsHash(h)
		if got != want || added && !got {
			t.Fatalf("hash %#x (added %v): ContainsHash %v, without the prefetches %v", h, added, got, want)
		}
		if got, want := far.home(h), s.home(h); got != want {
			t.Fatalf("hash %#x: home %d, without the prefetches %d", h, got, want)
		}
	}
}
