package filterfile

import (
	"errors"
	"fmt"

	"github.com/dedupkit/cuckoo/internal/format"
)

// Kind is a filter type. The values are this package's, not a file
// format's.
type Kind uint8

// The kinds of filter a file can hold.
const (
	Cuckoo         Kind = iota + 1 // cuckoo.Filter: fixed capacity, deletes
	CuckooScalable                 // cuckoo.Scalable: grows, deletes
	BloomBlocked                   // bloom.New: one cache line per key
	BloomClassic                   // bloom.NewClassic: fewest bits
	BloomCounting                  // bloom.NewCounting: deletes
	BloomScalable                  // bloom.NewScalable: grows
	CuckooWindow                   // cuckoo.Window: forgets keys older than its window (window.go)
)

// kindInfo is what the package knows of a kind: its names, what it can
// do, how its files start, and how to make one. Adding a kind is one entry
// here and one type implementing impl.
type kindInfo struct {
	name        string // as the CLI accepts and prints it
	description string
	file        format.Kind // what its encoding's header says it is
	canDelete   bool
	grows       bool
	cheapRate   bool                     // FalsePositiveRate is O(1)
	new         func(Spec) (impl, error) // an empty filter for the Spec
	empty       func() impl              // a zero filter to decode into
}

var kinds = [...]kindInfo{
	Cuckoo: {name: "cuckoo", description: "cuckoo filter (fixed capacity, supports delete)",
		file: format.Filter, canDelete: true, cheapRate: true, new: newCuckoo, empty: emptyCuckoo},
	CuckooScalable: {name: "cuckoo-scalable", description: "scalable cuckoo filter (grows as needed, supports delete)",
		file: format.Scalable, canDelete: true, grows: true, cheapRate: true, new: newCuckooScalable, empty: emptyCuckooScalable},
	BloomBlocked: {name: "bloom-blocked", description: "blocked Bloom filter (one cache line per key, no delete)",
		file: format.BloomBlocked, new: newBloomBlocked, empty: emptyBloom},
	BloomClassic: {name: "bloom-classic", description: "classic Bloom filter (no delete)",
		file: format.BloomClassic, new: newBloomClassic, empty: emptyBloom},
	BloomCounting: {name: "bloom-counting", description: "counting Bloom filter (4-bit counters, supports delete)",
		file: format.BloomCounting, canDelete: true, new: newBloomCounting, empty: emptyBloomCounting},
	BloomScalable: {name: "bloom-scalable", description: "scalable Bloom filter (grows as needed, no delete)",
		file: format.BloomScalable, grows: true, new: newBloomScalable, empty: emptyBloomScalable},
	CuckooWindow: {name: "cuckoo-window", description: "cuckoo filter with a time window (forgets keys older than its window)",
		file: format.Window, canDelete: true, cheapRate: true, new: newCuckooWindow, empty: emptyCuckooWindow},
}

// info returns the kind's entry; ok is false for a value that names no
// kind.
func (k Kind) info() (kindInfo, bool) {
	if int(k) < len(kinds) && kinds[k].name != "" {
		return kinds[k], true
	}
	return kindInfo{}, false
}

// String returns the kind's short name, as the CLI accepts and prints it.
func (k Kind) String() string {
	if ki, ok := k.info(); ok {
		return ki.name
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Description says in a few words what the kind is.
func (k Kind) Description() string {
	if ki, ok := k.info(); ok {
		return ki.description
	}
	return k.String()
}

// CanDelete reports whether filters of this kind support Delete.
func (k Kind) CanDelete() bool { ki, _ := k.info(); return ki.canDelete }

// Grows reports whether filters of this kind grow instead of filling up.
func (k Kind) Grows() bool { ki, _ := k.info(); return ki.grows }

// IsBloom reports whether the kind is one of the Bloom filters.
func (k Kind) IsBloom() bool { ki, _ := k.info(); return ki.file.Family() == format.Bloom }

// ParseKind returns the kind named s (as String prints it).
func ParseKind(s string) (Kind, bool) {
	for k, ki := range kinds {
		if ki.name != "" && ki.name == s {
			return Kind(k), true
		}
	}
	return 0, false
}

// HeaderSize is the number of leading bytes Sniff needs.
const HeaderSize = format.StartSize

// Sniff tells the kind of filter an encoding holds from its first
// HeaderSize bytes, and its format version: every encoding this module
// writes starts with a magic, a version and a kind byte (internal/format,
// docs/format.md). It returns an error wrapping ErrNotFilter for anything
// else, and ErrUnsupported for a kind this package does not know; whether
// this build reads the version is Read's to check (format.Readable).
func Sniff(head []byte) (kind Kind, version uint16, err error) {
	s, err := format.Sniff(head)
	switch {
	case errors.Is(err, format.ErrNotFilter):
		return 0, 0, fmt.Errorf("%w: %w", ErrNotFilter, err)
	case errors.Is(err, format.ErrKind):
		return 0, s.Version, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	for k, ki := range kinds {
		if ki.name != "" && ki.file == s.Kind {
			return Kind(k), s.Version, nil
		}
	}
	return 0, s.Version, fmt.Errorf("%w: %s", ErrUnsupported, s.Kind)
}
