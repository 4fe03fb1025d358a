package cuckoo

import (
	"errors"
	"io"

	"github.com/dedupkit/cuckoo/internal/codec"
)

// A Filter's encoding is its table's (encoding.go has the layout).

// encoding returns the filter's table encoding.
func (f *Filter) encoding() tableEncoding {
	return tableEncoding{m: f.m, seed: f.seed, capacity: f.capacity, maxKicks: f.maxKicks}
}

// filterOf returns the Filter of a decoded, checked table encoding
// (decodeFilter).
func filterOf(e *tableEncoding) Filter {
	return Filter{m: e.m, seed: e.seed, capacity: e.capacity, maxKicks: e.maxKicks}
}

// EncodedSize returns the exact number of bytes MarshalBinary and WriteTo
// produce for the filter's current state.
func (f *Filter) EncodedSize() int64 {
	e := f.encoding()
	return e.size()
}

// MarshalBinary encodes the filter: parameters, seed, table and duplicate
// counters, with a checksum. The same state always gives the same bytes, and
// they are what WriteTo writes. docs/format.md describes the format.
func (f *Filter) MarshalBinary() ([]byte, error) {
	buf, err := encodingBuffer(f.EncodedSize())
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteTo(buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteTo writes the encoding of the filter to w and returns the number of
// bytes written. It only reads the filter, so concurrent readers may go on.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	if f.m.T.NumBuckets == 0 {
		return 0, errors.New("cuckoo: the zero Filter has no table to encode")
	}
	e := f.encoding()
	return e.writeTo(w)
}

// UnmarshalBinary replaces the filter's state with the one encoded in data
// by MarshalBinary or WriteTo. Damaged, truncated or foreign data gives an
// error wrapping [ErrCorrupt] and leaves the filter unchanged. A header that
// claims more than data holds is rejected before anything is allocated.
func (f *Filter) UnmarshalBinary(data []byte) error {
	d := codec.NewBytesDecoder(data)
	e, err := decodeFilter(d)
	if err == nil {
		err = d.ExpectEnd()
	}
	if err != nil {
		return asDecodeError(err)
	}
	*f = filterOf(e)
	return nil
}

// ReadFrom replaces the filter's state with one read from r, as written by
// WriteTo, and returns the number of bytes read. It reads exactly the
// encoding and nothing after it. On error (wrapping [ErrCorrupt] when the
// data is bad) the filter is unchanged. Memory grows with the data actually
// read, so a header that lies about the table's size cannot make it
// allocate much more than the stream delivers. A table larger than this
// platform's largest slice (on a 32-bit platform, 2 GiB) is refused after
// its header, before anything is allocated for it, with an error wrapping
// [ErrInvalidParameter], as [New] refuses such a capacity.
func (f *Filter) ReadFrom(r io.Reader) (int64, error) {
	d := codec.NewDecoder(r)
	e, err := decodeFilter(d)
	if err != nil {
		return d.Read(), asDecodeError(err)
	}
	*f = filterOf(e)
	return d.Read(), nil
}
