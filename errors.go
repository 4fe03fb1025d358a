package cuckoo

import "errors"

var (
	// ErrFull is returned by Add (and its variants) when the key's two buckets
	// are full and no chain of up to MaxKicks displacements frees a slot.
	// The filter is left exactly as it was: every fingerprint displaced on the
	// way is put back, so nothing already stored is lost. A growing filter
	// ([Scalable], [Concurrent] with [WithGrowth]) adds a table instead, and
	// returns ErrFull only when it cannot: on a 32-bit platform, when its
	// next table would pass 2 GiB, the largest slice there.
	ErrFull = errors.New("cuckoo: filter is full")

	// ErrCorrupt is wrapped by every decoding error caused by the input:
	// damaged, truncated or foreign data, or a header whose parameters are
	// out of range or disagree with the payload. The receiver of a failed
	// decode is left unchanged.
	ErrCorrupt = errors.New("cuckoo: corrupt encoding")

	// ErrInvalidParameter is wrapped by the error New returns for a
	// parameter out of range (capacity 0, bucket size 3, 33 fingerprint
	// bits, a rate outside (0, 1), conflicting options, or, on a 32-bit
	// platform, a table of more than 2 GiB), and by a decoder's for a valid
	// encoding the receiver cannot take (such a table; semi-sorted buckets
	// for a [Concurrent]).
	ErrInvalidParameter = errors.New("cuckoo: invalid parameter")

	// ErrUninitialized is wrapped by the error every insert (Add, AddUnique,
	// Touch and their variants) returns on the zero value of a fixed-size
	// filter ([Filter], [Concurrent], [Window]): it has no table, and its
	// size is not known until a constructor or a decoder gives it one. The
	// zero value is otherwise an empty filter: lookups report nothing
	// present and Delete nothing deleted. (The zero [Scalable], which grows,
	// needs no size and takes keys.)
	ErrUninitialized = errors.New("cuckoo: filter not initialized")
)
