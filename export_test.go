package cuckoo

import (
	"errors"
	"fmt"
	"time"

	"github.com/dedupkit/cuckoo/internal/hash"
	"github.com/dedupkit/cuckoo/internal/hugepages"
	"github.com/dedupkit/cuckoo/internal/table"
)

// Hooks for the black-box tests (package cuckoo_test).

// CheckInvariants returns the first broken invariant, scanning the whole
// table.
func (f *Filter) CheckInvariants() error {
	if f.m.T.NumBuckets == 0 {
		return nil
	}
	return f.m.Validate(true)
}

// AltIndexForTest exposes the alternate-bucket function of a table of
// numBuckets buckets.
func AltIndexForTest(numBuckets, i, fp uint64) uint64 {
	t := table.Table{NumBuckets: numBuckets, Segments: 1}
	return t.AltIndex(i, fp)
}

// TargetLoad is the load New sizes a table of b-slot buckets and f-bit
// fingerprints for.
func TargetLoad(b, f int) float64 { return targetLoad(uint64(b), uint64(f)) }

// SmallTableMargin is the factor of the target load New sizes a table of
// capacity items for.
func SmallTableMargin(capacity uint64, b int) float64 { return smallTableMargin(capacity, uint64(b)) }

// TableBytes is the memory of the table alone.
func (f *Filter) TableBytes() uint64 { return uint64(len(f.m.T.Words)) * 8 }

// ExpectedFPR is the model the filter's FalsePositiveRate uses.
func ExpectedFPR(load float64, b, fpBits int) float64 {
	return expectedFPR(load, uint64(b), uint64(fpBits))
}

// SetHugePages switches the huge-page advice of new tables on or off and
// returns the previous setting.
func SetHugePages(on bool) bool {
	old := hugepages.Enabled
	hugepages.Enabled = on
	return old
}

// BucketsForTest returns the two buckets of key.
func (f *Filter) BucketsForTest(key []byte) (i1, i2 uint64) {
	i1, i2, _ = f.m.T.Pair(hash.Sum64(key, f.seed))
	return i1, i2
}

// CheckInvariants returns the first broken invariant of the chain or of one
// of its tables, scanning every table.
func (s *Scalable) CheckInvariants() error {
	if s.levels == nil {
		return nil
	}
	for _, lv := range s.levels {
		if g := lv.Grow; g != nil {
			if j, ok := g.Check(); !ok {
				return fmt.Errorf("growing table: bucket %d holds a misplaced tag", j)
			}
			if n := g.T.OccupiedSlots(); n != g.Occupied {
				return fmt.Errorf("growing table: %d slots occupied, %d recorded", n, g.Occupied)
			}
		} else if err := lv.Plain.Validate(true); err != nil {
			return err
		}
	}
	return s.validate()
}

// NewestGrowing reports whether the newest table is growing in place.
func (s *Scalable) NewestGrowing() bool {
	return len(s.levels) > 0 && s.levels[len(s.levels)-1].Grow != nil
}

// NewestGrowingLevel returns the level of the newest table while it grows
// in place (the halvings it has completed), or -1.
func (s *Scalable) NewestGrowingLevel() int {
	if !s.NewestGrowing() {
		return -1
	}
	_, depth, _ := s.levels[len(s.levels)-1].Grow.Geometry()
	return int(depth)
}

// OverflowCopies returns the copies counted beside full tables.
func (s *Scalable) OverflowCopies() uint64 { return s.extra }

// TableFingerprintBits returns the fingerprint width of each table, oldest
// first.
func (s *Scalable) TableFingerprintBits() []int {
	var w []int
	for _, lv := range s.levels {
		w = append(w, int(lv.FPBits()))
	}
	return w
}

// TableBytes is the memory of the tables alone.
func (s *Scalable) TableBytes() uint64 {
	var n uint64
	for _, lv := range s.levels {
		n += uint64(cap(lv.Table().Words)) * 8
	}
	return n
}

// RateBound is the bound on the false-positive rate the tables' shapes
// guarantee (the sum of each table's bound at its fill limit).
func (s *Scalable) RateBound() float64 {
	var b float64
	for _, lv := range s.levels {
		b += rateBound(lv.Table().Slots, lv.FPBits())
	}
	return b
}

// CheckInvariants checks a snapshot of the filter, as the decoder would.
func (c *Concurrent) CheckInvariants() error {
	e, st, err := c.snapshot()
	switch {
	case err != nil:
		return err
	case e != nil:
		return e.m.Validate(true)
	}
	var s Scalable
	s.adopt(st)
	if err := s.CheckInvariants(); err != nil {
		return err
	}
	if len(s.levels) != c.NumTables() {
		return errors.New("snapshot and filter differ in tables")
	}
	return nil
}

// Moves returns the number of fingerprints displacements have moved.
func (c *Concurrent) Moves() uint64 {
	var n uint64
	if ch := c.st.Load(); ch != nil {
		for _, t := range ch.tables {
			n += t.Moves()
		}
	}
	return n
}

// SnapshotPause returns how long writers waited for the last snapshot.
func (c *Concurrent) SnapshotPause() time.Duration { return time.Duration(c.pause.Load()) }

// SetMaxTableBytes sets the bound on a table's bytes that the
// constructors, the decoders and a growing filter's next table are
// checked against (maxTableBytes: this platform's largest slice, less a
// MiB, unless a test lowers it) and returns the previous one. Lowered, it
// takes small tables on any platform down the paths a 32-bit one takes
// past 2 GiB. Tests that set it must not run in parallel with others.
func SetMaxTableBytes(n uint64) uint64 {
	old := maxTableBytes
	maxTableBytes = n
	return old
}

// NextTableBytes returns the bytes of the slice the chain's next table
// would need as it grows in place (schedule.tableWords): what the
// platform's bound must allow for the chain to add it.
func (s *Scalable) NextTableBytes() uint64 {
	s.setUp()
	gen := s.g.at(s.levels[len(s.levels)-1].Gen + 1)
	return s.g.tableWords(gen, true) * 8
}

// NextTableBytes returns the bytes of the next table of a growing
// Concurrent, allocated whole.
func (c *Concurrent) NextTableBytes() uint64 {
	ch := c.st.Load()
	gen := ch.grow.at(ch.tables[len(ch.tables)-1].Gen().K + 1)
	return ch.grow.tableWords(gen, false) * 8
}

// PlatformTableBytes is the bound SetMaxTableBytes lowers: this platform's
// largest slice, less a MiB.
func PlatformTableBytes() uint64 { return platformTableBytes }

// SetMaxEncodingBytes sets the bound on the encodings MarshalBinary builds
// in memory (maxEncodingBytes: this platform's largest slice) and returns
// the previous one.
func SetMaxEncodingBytes(n uint64) uint64 {
	old := maxEncodingBytes
	maxEncodingBytes = n
	return old
}
