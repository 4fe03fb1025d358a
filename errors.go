package cuckoo

import (
	"errors"
	"fmt"
)

var (
	// ErrFull is returned by Add (and its variants) when the key's two buckets
	// are full and no chain of up to MaxKicks displacements frees a slot.
	// The filter is left exactly as it was: every fingerprint displaced on the
	// way is put back, so nothing already stored is lost.
	ErrFull = errors.New("cuckoo: filter is full")

	// ErrCorrupt is wrapped by every decoding error caused by the input:
	// damaged, truncated or foreign data, or a header whose parameters are
	// out of range or disagree with the payload. The receiver of a failed
	// decode is left unchanged.
	ErrCorrupt = errors.New("cuckoo: corrupt encoding")

	// ErrInvalidParameter is wrapped by the error New returns for a
	// parameter out of range (capacity 0, bucket size 3, 33 fingerprint
	// bits, a rate outside (0, 1), conflicting options).
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

// The errors of an insert on each zero value, naming what makes one.
var (
	errZeroFilter     = fmt.Errorf("%w: the zero Filter has no table; create it with New, or decode into it", ErrUninitialized)
	errZeroConcurrent = fmt.Errorf("%w: the zero Concurrent has no table; create it with NewConcurrent, or decode into it", ErrUninitialized)
	errZeroWindow     = fmt.Errorf("%w: the zero Window has no table; create it with NewWindow, or decode into it", ErrUninitialized)
)
