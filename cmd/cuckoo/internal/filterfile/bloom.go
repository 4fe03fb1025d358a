package filterfile

import (
	"fmt"

	"github.com/dedupkit/cuckoo/bloom"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
)

// bloomFilter is the BloomBlocked or BloomClassic kind: a bloom.Filter.
type bloomFilter struct{ *bloom.Filter }

func newBloomBlocked(s Spec) (impl, error) { return newBloomFilter(s, bloom.New) }
func newBloomClassic(s Spec) (impl, error) { return newBloomFilter(s, bloom.NewClassic) }

func newBloomFilter(s Spec, mk func(uint64, ...bloom.Option) (*bloom.Filter, error)) (impl, error) {
	opts, err := bloomOptions(s)
	if err != nil {
		return nil, err
	}
	f, err := mk(s.Capacity, opts...)
	if err != nil {
		return nil, err
	}
	return bloomFilter{f}, nil
}

func emptyBloom() impl { return bloomFilter{new(bloom.Filter)} }

func (b bloomFilter) Add(key []byte) error                      { return addFixed(b.Filter, key) }
func (b bloomFilter) AddUnique(key []byte) (bool, error)        { return addUniqueFixed(b.Filter, key) }
func (b bloomFilter) Delete([]byte) (bool, error)               { return false, ErrNoDelete }
func (b bloomFilter) ContainsBatch(keys [][]byte, found []bool) { containsEach(b.Filter, keys, found) }
func (b bloomFilter) AddUniqueBatch(keys [][]byte, added []bool) (int, error) {
	if b.Len()+uint64(len(keys)) > b.Capacity() {
		return addUniqueEach(b, keys, added) // it may fill up in this batch
	}
	return addUniqueEach(b.Filter, keys, added)
}

func (b bloomFilter) facts(add addFact) {
	bloomFacts(add, b.Filter, b.EstimatedCount(), b.HashCount(), "false positives at capacity", repeatsUncounted)
}

// bloomCounting is the BloomCounting kind: a bloom.Counting.
type bloomCounting struct{ *bloom.Counting }

func newBloomCounting(s Spec) (impl, error) {
	opts, err := bloomOptions(s)
	if err != nil {
		return nil, err
	}
	f, err := bloom.NewCounting(s.Capacity, opts...)
	if err != nil {
		return nil, err
	}
	return bloomCounting{f}, nil
}

func emptyBloomCounting() impl { return bloomCounting{new(bloom.Counting)} }

func (b bloomCounting) Add(key []byte) error               { return addFixed(b.Counting, key) }
func (b bloomCounting) AddUnique(key []byte) (bool, error) { return addUniqueFixed(b.Counting, key) }
func (b bloomCounting) Delete(key []byte) (bool, error)    { return b.Counting.Delete(key), nil }
func (b bloomCounting) ContainsBatch(keys [][]byte, found []bool) {
	containsEach(b.Counting, keys, found)
}
func (b bloomCounting) AddUniqueBatch(keys [][]byte, added []bool) (int, error) {
	if b.Len()+uint64(len(keys)) > b.Capacity() {
		return addUniqueEach(b, keys, added) // it may fill up in this batch
	}
	return addUniqueEach(b.Counting, keys, added)
}

func (b bloomCounting) facts(add addFact) {
	bloomFacts(add, b.Counting, b.EstimatedCount(), b.HashCount(), "false positives at capacity", copiesCount)
}

// bloomScalable is the BloomScalable kind: a bloom.Scalable, which grows
// and never refuses a key.
type bloomScalable struct{ *bloom.Scalable }

func newBloomScalable(s Spec) (impl, error) {
	opts, err := bloomOptions(s)
	if err != nil {
		return nil, err
	}
	f, err := bloom.NewScalable(s.Capacity, opts...)
	if err != nil {
		return nil, err
	}
	return bloomScalable{f}, nil
}

func emptyBloomScalable() impl { return bloomScalable{new(bloom.Scalable)} }

func (b bloomScalable) Delete([]byte) (bool, error) { return false, ErrNoDelete }
func (b bloomScalable) ContainsBatch(keys [][]byte, found []bool) {
	containsEach(b.Scalable, keys, found)
}
func (b bloomScalable) AddUniqueBatch(keys [][]byte, added []bool) (int, error) {
	return addUniqueEach(b, keys, added)
}

func (b bloomScalable) facts(add addFact) {
	bloomFacts(add, b.Scalable, b.EstimatedCount(), 0, "false positives, bound", repeatsUncounted)
	add("layers", "layers", b.NumTables(), fmt.Sprint(b.NumTables()))
}

// bloomOptions translates a Spec into the bloom package's options; the
// cuckoo filters' parameters are an error.
func bloomOptions(s Spec) ([]bloom.Option, error) {
	if s.BucketSize != 0 || s.FingerprintBits != 0 || s.SemiSorted {
		return nil, fmt.Errorf("%w: bucket size, fingerprint bits and semi-sorting are cuckoo filter parameters", bloom.ErrInvalidParameter)
	}
	var opts []bloom.Option
	if s.FPR != 0 {
		opts = append(opts, bloom.WithFalsePositiveRate(s.FPR))
	}
	if s.SeedSet {
		opts = append(opts, bloom.WithSeed(s.Seed))
	}
	return opts, nil
}

// fixedBloom is what a Bloom filter of fixed size offers: bloom.Filter
// and bloom.Counting.
type fixedBloom interface {
	Add(key []byte) error
	AddUnique(key []byte) (bool, error)
	Contains(key []byte) bool
	Len() uint64
	Capacity() uint64
}

// addFixed adds key to a Bloom filter of fixed size, unless it holds its
// capacity of keys and key is new to it: past its capacity its rate would
// rise above its target, so it refuses the key with ErrFull, as a full
// cuckoo filter does, and is unchanged. A key it reports present (a copy,
// for a counting filter) is always added. A counting filter's Len counts
// copies, which thus take room as a cuckoo filter's do.
func addFixed(f fixedBloom, key []byte) error {
	if f.Len() >= f.Capacity() && !f.Contains(key) {
		return bloomFull(f)
	}
	return f.Add(key)
}

// addUniqueFixed is AddUnique with the capacity of addFixed.
func addUniqueFixed(f fixedBloom, key []byte) (bool, error) {
	if f.Len() >= f.Capacity() {
		if f.Contains(key) {
			return false, nil
		}
		return false, bloomFull(f)
	}
	return f.AddUnique(key)
}

func bloomFull(f fixedBloom) error {
	return fmt.Errorf("%w: a Bloom filter of fixed size holds its capacity of %s", ErrFull, units.Counted(f.Capacity(), "key"))
}

// containsEach is ContainsBatch one key at a time.
func containsEach(f interface{ Contains([]byte) bool }, keys [][]byte, found []bool) {
	for i, k := range keys {
		found[i] = f.Contains(k)
	}
}

// addUniqueEach is AddUniqueBatch one key at a time.
func addUniqueEach(f interface {
	AddUnique([]byte) (bool, error)
}, keys [][]byte, added []bool) (int, error) {
	for i, k := range keys {
		ok, err := f.AddUnique(k)
		if err != nil {
			return i, err
		}
		added[i] = ok
	}
	return len(keys), nil
}

// bloomFacts adds the facts every Bloom filter has; k is 0 for a Scalable,
// whose layers differ.
func bloomFacts(add addFact, f interface {
	Len() uint64
	Capacity() uint64
	FalsePositiveRate() float64
	TargetFalsePositiveRate() float64
}, estimated uint64, k int, targetLabel, counted string) {
	add("items", "items", f.Len(), units.Count(f.Len())+" added"+counted)
	add("estimated_keys", "estimated keys", estimated, units.Count(estimated)+" (from the bits set)")
	add("capacity", "capacity", f.Capacity(), units.Counted(f.Capacity(), "key")+" at the target rate")
	if k != 0 {
		add("hash_count", "hash functions", k, fmt.Sprint(k))
	}
	rate := f.FalsePositiveRate()
	add("fpr", "false positives now", rate, units.Rate(rate))
	add("fpr_target", targetLabel, f.TargetFalsePositiveRate(), units.Rate(f.TargetFalsePositiveRate()))
}
