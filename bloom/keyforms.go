package bloom

import "github.com/dedupkit/cuckoo/internal/hash"

// The integer and hash key forms, which complete the set the cuckoo
// package offers (docs/api.md). An integer key is the same key as its 8
// little-endian bytes. A hash form takes the caller's own 64-bit hash of
// a key, which must be well mixed over all 64 bits; the filter's seed is
// not applied to it, so keys added by hash are found only by hash. They
// allocate nothing.

// AddUint64 is [Filter.Add] for an integer key.
func (f *Filter) AddUint64(key uint64) error { return f.add(hash.Sum64Uint64(key, f.seed)) }

// AddHash is [Filter.Add] for a key's 64-bit hash.
func (f *Filter) AddHash(h uint64) error { return f.add(h) }

// AddUniqueUint64 is [Filter.AddUnique] for an integer key.
func (f *Filter) AddUniqueUint64(key uint64) (added bool, err error) {
	return f.addUnique(hash.Sum64Uint64(key, f.seed))
}

// AddUniqueHash is [Filter.AddUnique] for a key's 64-bit hash.
func (f *Filter) AddUniqueHash(h uint64) (added bool, err error) { return f.addUnique(h) }

// ContainsUint64 is [Filter.Contains] for an integer key.
func (f *Filter) ContainsUint64(key uint64) bool {
	return f.containsHash(hash.Sum64Uint64(key, f.seed))
}

// ContainsHash is [Filter.Contains] for a key's 64-bit hash.
func (f *Filter) ContainsHash(h uint64) bool { return f.containsHash(h) }

// AddUint64 is [Counting.Add] for an integer key.
func (f *Counting) AddUint64(key uint64) error { return f.add(hash.Sum64Uint64(key, f.seed)) }

// AddHash is [Counting.Add] for a key's 64-bit hash.
func (f *Counting) AddHash(h uint64) error { return f.add(h) }

// AddUniqueString is [Counting.AddUnique] for a string key.
func (f *Counting) AddUniqueString(key string) (added bool, err error) {
	return f.addUniqueHash(hash.Sum64String(key, f.seed))
}

// AddUniqueUint64 is [Counting.AddUnique] for an integer key.
func (f *Counting) AddUniqueUint64(key uint64) (added bool, err error) {
	return f.addUniqueHash(hash.Sum64Uint64(key, f.seed))
}

// AddUniqueHash is [Counting.AddUnique] for a key's 64-bit hash.
func (f *Counting) AddUniqueHash(h uint64) (added bool, err error) { return f.addUniqueHash(h) }

// ContainsUint64 is [Counting.Contains] for an integer key.
func (f *Counting) ContainsUint64(key uint64) bool {
	return f.containsHash(hash.Sum64Uint64(key, f.seed))
}

// ContainsHash is [Counting.Contains] for a key's 64-bit hash.
func (f *Counting) ContainsHash(h uint64) bool { return f.containsHash(h) }

// DeleteUint64 is [Counting.Delete] for an integer key.
func (f *Counting) DeleteUint64(key uint64) bool {
	return f.deleteHash(hash.Sum64Uint64(key, f.seed))
}

// DeleteHash is [Counting.Delete] for a key's 64-bit hash.
func (f *Counting) DeleteHash(h uint64) bool { return f.deleteHash(h) }

// AddUint64 is [Scalable.Add] for an integer key.
func (s *Scalable) AddUint64(key uint64) error {
	s.setUp()
	s.addHash(hash.Sum64Uint64(key, s.seed))
	return nil
}

// AddHash is [Scalable.Add] for a key's 64-bit hash.
func (s *Scalable) AddHash(h uint64) error {
	s.setUp()
	s.addHash(h)
	return nil
}

// AddUniqueUint64 is [Scalable.AddUnique] for an integer key.
func (s *Scalable) AddUniqueUint64(key uint64) (added bool, err error) {
	s.setUp()
	return s.addHash(hash.Sum64Uint64(key, s.seed)), nil
}

// AddUniqueHash is [Scalable.AddUnique] for a key's 64-bit hash.
func (s *Scalable) AddUniqueHash(h uint64) (added bool, err error) {
	s.setUp()
	return s.addHash(h), nil
}

// ContainsUint64 is [Scalable.Contains] for an integer key.
func (s *Scalable) ContainsUint64(key uint64) bool {
	return s.containsHash(hash.Sum64Uint64(key, s.seed))
}

// ContainsHash is [Scalable.Contains] for a key's 64-bit hash.
func (s *Scalable) ContainsHash(h uint64) bool { return s.containsHash(h) }
