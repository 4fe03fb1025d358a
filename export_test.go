package cuckoo

import "github.com/dedupkit/cuckoo/internal/hash"

// Hooks for the black-box tests (package cuckoo_test).

// CheckInvariants returns the first broken invariant, scanning the whole
// table.
func (f *Filter) CheckInvariants() error {
	if f.t.numBuckets == 0 {
		return nil
	}
	return f.validate(true)
}

// AltIndexForTest exposes the alternate-bucket function of a table of
// numBuckets buckets.
func AltIndexForTest(numBuckets, i, fp uint64) uint64 {
	t := table{numBuckets: numBuckets, segments: 1}
	return t.altIndex(i, fp)
}

// TargetLoad is the load New sizes a table of b-slot buckets and f-bit
// fingerprints for.
func TargetLoad(b, f int) float64 { return targetLoad(uint64(b), uint64(f)) }

// SmallTableMargin is the factor of the target load New sizes a table of
// capacity items for.
func SmallTableMargin(capacity uint64, b int) float64 { return smallTableMargin(capacity, uint64(b)) }

// TableBytes is the memory of the table alone.
func (f *Filter) TableBytes() uint64 { return uint64(len(f.t.words)) * 8 }

// ExpectedFPR is the model the filter's FalsePositiveRate uses.
func ExpectedFPR(load float64, b, fpBits int) float64 {
	return expectedFPR(load, uint64(b), uint64(fpBits))
}

// SetHugePages switches the huge-page advice of new tables on or off and
// returns the previous setting.
func SetHugePages(on bool) bool {
	old := useHugePages
	useHugePages = on
	return old
}

// BucketsForTest returns the two buckets of key.
func (f *Filter) BucketsForTest(key []byte) (i1, i2 uint64) {
	i1, fp := f.locate(hash.Sum64(key, f.seed))
	return i1, f.t.altIndex(i1, fp)
}
