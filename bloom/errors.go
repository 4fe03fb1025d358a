package bloom

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidParameter is wrapped by the error a constructor returns for a
	// parameter out of range: capacity 0 or above [MaxCapacity], a rate
	// outside [[MinFalsePositiveRate], 1), a growth factor or tightening
	// ratio out of range, or an option given to a constructor it does not
	// apply to. Nothing is allocated when it is returned.
	ErrInvalidParameter = errors.New("bloom: invalid parameter")

	// ErrIncompatible is returned by Union when the two filters differ in
	// kind, size, hash count or seed: their bits do not mean the same keys,
	// so OR-ing them would be meaningless. The receiver is left unchanged.
	ErrIncompatible = errors.New("bloom: incompatible filters")

	// ErrCorrupt is wrapped by every decoding error the input causes:
	// damaged, truncated or foreign bytes, a checksum mismatch, a header
	// whose parameters are out of range or disagree with the payload, or an
	// encoding of another filter kind. The receiver of a failed decode is
	// left unchanged.
	ErrCorrupt = errors.New("bloom: corrupt encoding")

	// ErrUninitialized is wrapped by the error Add and its key forms
	// return on the zero [Filter] or [Counting] (or a [SyncCounting] that
	// wraps one): it has no table, and its size is known only to a
	// constructor or a decoder. The filter is left unchanged.
	ErrUninitialized = errors.New("bloom: filter not initialized")
)

// The errors the zero filters return, naming their constructors.
var (
	errZeroFilter   = fmt.Errorf("%w: the zero Filter has no table; create it with New or NewClassic, or decode into it", ErrUninitialized)
	errZeroCounting = fmt.Errorf("%w: the zero Counting has no table; create it with NewCounting, or decode into it", ErrUninitialized)
)
