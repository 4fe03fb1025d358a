package guard

import (
	"context"

	"github.com/dedupkit/cuckoo"
)

// Filter is the filter the guard consults: a local filter ([Local]) or one
// shared through Redis by a fleet of processes ([Shared], [OpenShared]).
// Any type with these methods will do, for example a wrapper that counts
// or a filter of another kind; it must never report absent a key added
// and not deleted, and it must be safe for concurrent use.
type Filter interface {
	// Contains reports whether key may be in the set: true for every key
	// added and not deleted, true with the filter's false-positive rate
	// for other keys. It should return by ctx's deadline: the guard gives
	// it the read timeout ([WithReadTimeout]). A set that cannot tell
	// whether it holds the key (its data is gone) must return an error,
	// never false.
	Contains(ctx context.Context, key []byte) (bool, error)
	// Add inserts one copy of key (a multiset insert: a key added twice
	// takes two deletes to go). On an error the set holds the key or is
	// as it was.
	Add(ctx context.Context, key []byte) error
	// Delete removes one copy of key and reports whether there was one.
	Delete(ctx context.Context, key []byte) (bool, error)
}

// Local returns the set of an in-process filter: lookups cost nanoseconds
// and never fail; Add fails with [cuckoo.ErrFull] when a fixed-capacity
// filter is full (a filter made with [cuckoo.WithGrowth] grows instead).
// Size it for the rows the table will hold before the next Rebuild. f
// must not be nil.
func Local(f *cuckoo.Concurrent) Filter {
	if f == nil {
		panic("guard: Local of a nil filter")
	}
	return &localSet{f: f}
}

type localSet struct{ f *cuckoo.Concurrent }

func (l *localSet) Contains(_ context.Context, key []byte) (bool, error) {
	return l.f.Contains(key), nil
}

func (l *localSet) Add(_ context.Context, key []byte) error { return l.f.Add(key) }

func (l *localSet) Delete(_ context.Context, key []byte) (bool, error) {
	return l.f.Delete(key), nil
}
