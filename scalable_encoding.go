package cuckoo

import (
	"errors"
	"io"

	"github.com/dedupkit/cuckoo/internal/codec"
)

// A Scalable's encoding is its chain's (encoding.go has the layout).

// EncodedSize returns the exact number of bytes MarshalBinary and WriteTo
// produce for the filter's current state.
func (s *Scalable) EncodedSize() int64 { return s.encodedSize() }

// MarshalBinary encodes the filter: its parameters and every table, with a
// checksum. The same state always gives the same bytes, and they are what
// WriteTo writes. On a 32-bit platform the tables may add up to more than
// one []byte holds (2 GiB): MarshalBinary then returns an error, and
// WriteTo writes the encoding.
func (s *Scalable) MarshalBinary() ([]byte, error) {
	buf, err := encodingBuffer(s.EncodedSize())
	if err != nil {
		return nil, err
	}
	if _, err := s.WriteTo(buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteTo writes the encoding of the filter to w and returns the number of
// bytes written. It only reads the filter.
func (s *Scalable) WriteTo(w io.Writer) (int64, error) {
	if len(s.levels) == 0 {
		return 0, errors.New("cuckoo: the zero Scalable has no table to encode")
	}
	return s.writeTo(w)
}

// UnmarshalBinary replaces the filter's state with the one encoded in data
// by MarshalBinary or WriteTo. Damaged, truncated or foreign data gives an
// error wrapping [ErrCorrupt] and leaves the filter unchanged. A table that
// this platform cannot hold (on a 32-bit platform, one of more than 2 GiB,
// or a growing newest table that would pass it as it grows) gives one
// wrapping [ErrInvalidParameter], as [NewScalable] refuses such a
// capacity.
func (s *Scalable) UnmarshalBinary(data []byte) error {
	d := codec.NewBytesDecoder(data)
	st, err := decodeChainState(d)
	if err == nil {
		err = d.ExpectEnd()
	}
	if err != nil {
		return asDecodeError(err)
	}
	s.adopt(st)
	return nil
}

// ReadFrom replaces the filter's state with one read from r, as written by
// WriteTo, and returns the number of bytes read. It reads exactly the
// encoding. On error (wrapping [ErrCorrupt] when the data is bad) the
// filter is unchanged. Memory grows with the data actually read; a table
// this platform cannot hold is refused after its header, before anything
// is allocated for it, with an error wrapping [ErrInvalidParameter] (see
// [Scalable.UnmarshalBinary]).
func (s *Scalable) ReadFrom(r io.Reader) (int64, error) {
	d := codec.NewDecoder(r)
	st, err := decodeChainState(d)
	if err != nil {
		return d.Read(), asDecodeError(err)
	}
	s.adopt(st)
	return d.Read(), nil
}

// adopt takes a decoded chain, with the probe of its lookups.
func (s *Scalable) adopt(st *chainState) {
	*s = Scalable{chainState: *st}
	s.reprobe()
}
