package filterfile

import (
	"encoding/binary"
	"fmt"
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
	magic       string // the first 4 bytes of its encoding
	code        byte   // the kind byte at offset 6 of its encoding
	canDelete   bool
	grows       bool
	cheapRate   bool                     // FalsePositiveRate is O(1)
	new         func(Spec) (impl, error) // an empty filter for the Spec
	empty       func() impl              // a zero filter to decode into
}

var kinds = [...]kindInfo{
	Cuckoo: {name: "cuckoo", description: "cuckoo filter (fixed capacity, supports delete)",
		magic: "CKOO", code: 1, canDelete: true, cheapRate: true, new: newCuckoo, empty: emptyCuckoo},
	CuckooScalable: {name: "cuckoo-scalable", description: "scalable cuckoo filter (grows as needed, supports delete)",
		magic: "CKOO", code: 2, canDelete: true, grows: true, cheapRate: true, new: newCuckooScalable, empty: emptyCuckooScalable},
	BloomBlocked: {name: "bloom-blocked", description: "blocked Bloom filter (one cache line per key, no delete)",
		magic: "BLMF", code: 1, new: newBloomBlocked, empty: emptyBloom},
	BloomClassic: {name: "bloom-classic", description: "classic Bloom filter (no delete)",
		magic: "BLMF", code: 2, new: newBloomClassic, empty: emptyBloom},
	BloomCounting: {name: "bloom-counting", description: "counting Bloom filter (4-bit counters, supports delete)",
		magic: "BLMF", code: 3, canDelete: true, new: newBloomCounting, empty: emptyBloomCounting},
	BloomScalable: {name: "bloom-scalable", description: "scalable Bloom filter (grows as needed, no delete)",
		magic: "BLMF", code: 4, grows: true, new: newBloomScalable, empty: emptyBloomScalable},
	CuckooWindow: {name: "cuckoo-window", description: "cuckoo filter with a time window (forgets keys older than its window)",
		magic: "CKOO", code: 3, canDelete: true, cheapRate: true, new: newCuckooWindow, empty: emptyCuckooWindow},
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
func (k Kind) IsBloom() bool { ki, _ := k.info(); return ki.magic == "BLMF" }

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
const HeaderSize = 8

// Sniff tells the kind of filter an encoding holds from its first
// HeaderSize bytes, and its format version: every encoding this module
// writes starts with a 4-byte magic, a 2-byte little-endian version and a
// kind byte (docs/format.md). It returns an error wrapping ErrNotFilter
// for anything else, and ErrUnsupported for a kind this package does not
// know.
func Sniff(head []byte) (kind Kind, version uint16, err error) {
	if len(head) < HeaderSize {
		return 0, 0, fmt.Errorf("%w: only %d bytes", ErrNotFilter, len(head))
	}
	magic, version, code := string(head[:4]), binary.LittleEndian.Uint16(head[4:6]), head[6]
	family := ""
	for k, ki := range kinds {
		if ki.magic != magic {
			continue
		}
		if ki.code == code {
			return Kind(k), version, nil
		}
		family = "Bloom"
		if magic == "CKOO" {
			family = "cuckoo"
		}
	}
	if family != "" {
		return 0, version, fmt.Errorf("%w: a %s filter of unknown kind %d (written by a newer version?)", ErrUnsupported, family, code)
	}
	return 0, 0, fmt.Errorf("%w: starts with % x", ErrNotFilter, head[:4])
}
