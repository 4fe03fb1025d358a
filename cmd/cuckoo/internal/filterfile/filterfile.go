// Package filterfile gives the CLI one type for every filter this module
// can build and save: it tells the kinds apart by their magic bytes, loads
// and saves them, and forwards Add, Contains and Delete to the concrete
// filter without an interface call.
//
// The kinds and their encodings are those of the packages that define
// them: "CKOO" + version + kind byte at offset 6 for the cuckoo filters
// (docs/format.md), "BLMF" + version + kind byte for the Bloom filters
// (docs/format.md). This package only reads the magic and the kind byte;
// decoding, with all its checks, is the filter package's.
package filterfile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/bloom"
	"github.com/dedupkit/cuckoo/internal/atomicfile"
)

var (
	// ErrNotFilter is returned by Read and Load for input that does not
	// start with the magic bytes of any filter this module writes.
	ErrNotFilter = errors.New("filterfile: not a filter file")

	// ErrDamaged is wrapped (together with the filter package's own
	// ErrCorrupt) by the error Read and Load return for a file that has
	// the right magic but is truncated, bit-flipped or otherwise invalid.
	ErrDamaged = errors.New("filterfile: damaged filter file")

	// ErrUnsupported is returned by Read and Load for a filter file of a
	// kind or format version this build does not know: one written by a
	// newer version of this module.
	ErrUnsupported = errors.New("filterfile: unsupported filter file")

	// ErrNoDelete is returned by Delete for a kind that cannot delete
	// (a plain or scalable Bloom filter). Nothing is changed.
	ErrNoDelete = errors.New("filterfile: this kind of filter cannot delete keys")

	// ErrFull is returned by Add and AddUnique when a fixed-capacity
	// filter has no room left; it wraps the filter package's own ErrFull.
	// The filter is unchanged.
	ErrFull = errors.New("filterfile: filter is full")
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
)

var kindNames = [...]string{
	Cuckoo:         "cuckoo",
	CuckooScalable: "cuckoo-scalable",
	BloomBlocked:   "bloom-blocked",
	BloomClassic:   "bloom-classic",
	BloomCounting:  "bloom-counting",
	BloomScalable:  "bloom-scalable",
}

var kindDescriptions = [...]string{
	Cuckoo:         "cuckoo filter (fixed capacity, supports delete)",
	CuckooScalable: "scalable cuckoo filter (grows as needed, supports delete)",
	BloomBlocked:   "blocked Bloom filter (one cache line per key, no delete)",
	BloomClassic:   "classic Bloom filter (no delete)",
	BloomCounting:  "counting Bloom filter (4-bit counters, supports delete)",
	BloomScalable:  "scalable Bloom filter (grows as needed, no delete)",
}

// String returns the kind's short name, as the CLI accepts and prints it.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Description says in a few words what the kind is.
func (k Kind) Description() string {
	if int(k) < len(kindDescriptions) {
		return kindDescriptions[k]
	}
	return k.String()
}

// CanDelete reports whether filters of this kind support Delete.
func (k Kind) CanDelete() bool {
	return k == Cuckoo || k == CuckooScalable || k == BloomCounting
}

// Grows reports whether filters of this kind grow instead of filling up.
func (k Kind) Grows() bool { return k == CuckooScalable || k == BloomScalable }

// IsBloom reports whether the kind is one of the Bloom filters.
func (k Kind) IsBloom() bool { return k >= BloomBlocked && k <= BloomScalable }

// ParseKind returns the kind named s (as String prints it).
func ParseKind(s string) (Kind, bool) {
	for k, name := range kindNames {
		if name != "" && name == s {
			return Kind(k), true
		}
	}
	return 0, false
}

// Supported reports whether this build can create and read filters of
// kind k. Kinds whose package has not been built into the module yet are
// listed but not supported.
func Supported(k Kind) bool { return k >= Cuckoo && k <= BloomScalable }

// HeaderSize is the number of leading bytes Sniff needs.
const HeaderSize = 8

// Sniff tells the kind of filter an encoding holds from its first
// HeaderSize bytes, and its format version. It returns an error wrapping
// ErrNotFilter for anything else, and ErrUnsupported for a kind this
// package does not know.
func Sniff(head []byte) (kind Kind, version uint16, err error) {
	if len(head) < HeaderSize {
		return 0, 0, fmt.Errorf("%w: only %d bytes", ErrNotFilter, len(head))
	}
	version = binary.LittleEndian.Uint16(head[4:6])
	b := head[6]
	switch string(head[:4]) {
	case "CKOO":
		switch b {
		case 1:
			return Cuckoo, version, nil
		case 2:
			return CuckooScalable, version, nil
		}
		return 0, version, fmt.Errorf("%w: a cuckoo filter of unknown kind %d (written by a newer version?)", ErrUnsupported, b)
	case "BLMF":
		if b >= 1 && b <= 4 {
			return [...]Kind{BloomBlocked, BloomClassic, BloomCounting, BloomScalable}[b-1], version, nil
		}
		return 0, version, fmt.Errorf("%w: a Bloom filter of unknown kind %d (written by a newer version?)", ErrUnsupported, b)
	}
	return 0, 0, fmt.Errorf("%w: starts with % x", ErrNotFilter, head[:4])
}

// Filter is a filter of any kind. Its methods dispatch with a switch on
// the kind, never an interface call, so the CLI's per-line loops stay as
// fast as calling the concrete filter. Like the filters themselves, a
// Filter may be read by many goroutines but needs exclusive access for
// any change.
type Filter struct {
	kind    Kind
	version uint16  // format version it was read with, or the current one
	target  float64 // a Bloom filter's target rate (its file header's)
	cf      *cuckoo.Filter
	cs      *cuckoo.Scalable
	bf      *bloom.Filter // BloomBlocked, BloomClassic
	bc      *bloom.Counting
	bs      *bloom.Scalable
}

// Spec describes a new filter.
type Spec struct {
	Kind            Kind
	Capacity        uint64  // keys it must hold (the initial size of a growing kind)
	FPR             float64 // target false-positive rate; 0: the kind's default
	BucketSize      int     // cuckoo only; 0: default
	FingerprintBits int     // cuckoo only; 0: from FPR, else the default
	SemiSorted      bool    // cuckoo only: semi-sorted buckets (one bit less per key)
	Seed            uint64
	SeedSet         bool // use Seed instead of a random seed
	Segments        int  // fixed-size cuckoo only: table segments (cuckoo.WithSegments); 0: one
}

// DefaultBloomFPR is the target rate of a new Bloom filter whose Spec
// gives none.
const DefaultBloomFPR = 0.01

// New builds an empty filter. Parameter errors wrap the filter package's
// ErrInvalidParameter.
func New(s Spec) (*Filter, error) {
	if !Supported(s.Kind) {
		return nil, fmt.Errorf("filter kind %s is not available in this build", s.Kind)
	}
	f := &Filter{kind: s.Kind, version: 1}
	var err error
	if s.Kind.IsBloom() {
		if s.BucketSize != 0 || s.FingerprintBits != 0 || s.SemiSorted {
			return nil, fmt.Errorf("%w: bucket size, fingerprint bits and semi-sorting are cuckoo filter parameters", bloom.ErrInvalidParameter)
		}
		p := s.FPR
		if p == 0 {
			p = DefaultBloomFPR
		}
		f.target = p
		var opts []bloom.Option
		if s.SeedSet {
			opts = append(opts, bloom.WithSeed(s.Seed))
		}
		switch s.Kind {
		case BloomBlocked:
			f.bf, err = bloom.New(s.Capacity, p, opts...)
		case BloomClassic:
			f.bf, err = bloom.NewClassic(s.Capacity, p, opts...)
		case BloomCounting:
			f.bc, err = bloom.NewCounting(s.Capacity, p, opts...)
		case BloomScalable:
			f.bs, err = bloom.NewScalable(s.Capacity, p, opts...)
		}
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	if s.Kind == CuckooScalable {
		f.cs, err = cuckoo.NewScalable(s.Capacity, cuckooOptions(s)...)
	} else {
		f.cf, err = cuckoo.New(s.Capacity, cuckooOptions(s)...)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// cuckooOptions translates a Spec into the cuckoo package's options.
func cuckooOptions(s Spec) []cuckoo.Option {
	var opts []cuckoo.Option
	if s.BucketSize != 0 {
		opts = append(opts, cuckoo.WithBucketSize(s.BucketSize))
	}
	switch {
	case s.FingerprintBits != 0:
		opts = append(opts, cuckoo.WithFingerprintBits(s.FingerprintBits))
	case s.FPR != 0:
		opts = append(opts, cuckoo.WithFalsePositiveRate(s.FPR))
	}
	if s.SemiSorted {
		opts = append(opts, cuckoo.WithSemiSorting())
	}
	if s.SeedSet {
		opts = append(opts, cuckoo.WithSeed(s.Seed))
	}
	if s.Segments != 0 {
		opts = append(opts, cuckoo.WithSegments(s.Segments))
	}
	return opts
}

// Read decodes one filter of any kind from r, which must hold exactly the
// encoding: trailing bytes make it an error. Errors wrap ErrNotFilter or
// ErrDamaged (plus the filter package's ErrCorrupt), or are the reader's.
func Read(r io.Reader) (*Filter, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(HeaderSize)
	if len(head) < HeaderSize {
		if err == io.EOF || err == nil {
			if len(head) == 0 {
				return nil, fmt.Errorf("%w: the file is empty", ErrNotFilter)
			}
			return nil, fmt.Errorf("%w: only %d bytes", ErrNotFilter, len(head))
		}
		return nil, err
	}
	kind, version, err := Sniff(head)
	if err != nil {
		return nil, err
	}
	if !Supported(kind) {
		return nil, fmt.Errorf("%w: a %s, which this build cannot read", ErrUnsupported, kind.Description())
	}
	if version != 1 {
		return nil, fmt.Errorf("%w: %s format version %d (written by a newer version?)", ErrUnsupported, kind.Description(), version)
	}
	f := &Filter{kind: kind, version: version}
	if kind.IsBloom() {
		// The target rate is in the header (docs/format.md): offset 32 in
		// a table filter's, 24 in a scalable one's.
		off := 32
		if kind == BloomScalable {
			off = 24
		}
		if h, _ := br.Peek(off + 8); len(h) == off+8 {
			f.target = math.Float64frombits(binary.LittleEndian.Uint64(h[off:]))
		}
	}
	switch kind {
	case Cuckoo:
		f.cf = new(cuckoo.Filter)
		_, err = f.cf.ReadFrom(br)
	case CuckooScalable:
		f.cs = new(cuckoo.Scalable)
		_, err = f.cs.ReadFrom(br)
	case BloomBlocked, BloomClassic:
		f.bf = new(bloom.Filter)
		_, err = f.bf.ReadFrom(br)
	case BloomCounting:
		f.bc = new(bloom.Counting)
		_, err = f.bc.ReadFrom(br)
	case BloomScalable:
		f.bs = new(bloom.Scalable)
		_, err = f.bs.ReadFrom(br)
	}
	if err != nil {
		if isCorrupt(err) {
			return nil, fmt.Errorf("%w: %w", ErrDamaged, err)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: truncated: %w", ErrDamaged, err)
		}
		return nil, err
	}
	if _, err := br.ReadByte(); err == nil {
		return nil, fmt.Errorf("%w: extra bytes after the end of the filter", ErrDamaged)
	} else if err != io.EOF {
		return nil, err
	}
	return f, nil
}

func isCorrupt(err error) bool {
	return errors.Is(err, cuckoo.ErrCorrupt) || errors.Is(err, bloom.ErrCorrupt)
}

// Load reads the filter file at path (see Read).
func Load(path string) (*Filter, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	if fi, err := file.Stat(); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory", path)
	}
	return Read(file)
}

// Save writes the filter to path atomically (see package atomicfile):
// after an error or an interruption, the file at path is unchanged.
func (f *Filter) Save(path string) error {
	return atomicfile.WriteFile(path, 0o644, func(w io.Writer) error {
		_, err := f.WriteTo(w)
		return err
	})
}

// WriteTo writes the filter's encoding to w.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	switch f.kind {
	case Cuckoo:
		return f.cf.WriteTo(w)
	case CuckooScalable:
		return f.cs.WriteTo(w)
	case BloomBlocked, BloomClassic:
		return f.bf.WriteTo(w)
	case BloomCounting:
		return f.bc.WriteTo(w)
	case BloomScalable:
		return f.bs.WriteTo(w)
	}
	panic("filterfile: WriteTo on a filter of unknown kind")
}

// EncodedSize returns the number of bytes WriteTo writes.
func (f *Filter) EncodedSize() int64 {
	switch f.kind {
	case Cuckoo:
		return f.cf.EncodedSize()
	case CuckooScalable:
		return f.cs.EncodedSize()
	case BloomBlocked, BloomClassic:
		return f.bf.EncodedSize()
	case BloomCounting:
		return f.bc.EncodedSize()
	case BloomScalable:
		return f.bs.EncodedSize()
	}
	return 0
}

// Kind returns the filter's kind.
func (f *Filter) Kind() Kind { return f.kind }

// FormatVersion returns the version of the encoding the filter was read
// from (the current version for a new filter).
func (f *Filter) FormatVersion() uint16 { return f.version }

// Add adds key. A fixed-capacity cuckoo filter that has no room returns
// an error wrapping ErrFull and is unchanged; Bloom filters always take
// the key (past their capacity, their rate rises).
func (f *Filter) Add(key []byte) error {
	switch f.kind {
	case Cuckoo:
		return full(f.cf.Add(key))
	case CuckooScalable:
		return full(f.cs.Add(key))
	case BloomBlocked, BloomClassic:
		f.bf.Add(key)
	case BloomCounting:
		f.bc.Add(key)
	case BloomScalable:
		f.bs.Add(key)
	}
	return nil
}

// AddUnique adds key unless Contains says it is there, and reports whether
// it added it (see Add for errors).
func (f *Filter) AddUnique(key []byte) (bool, error) {
	switch f.kind {
	case Cuckoo:
		added, err := f.cf.AddUnique(key)
		return added, full(err)
	case CuckooScalable:
		added, err := f.cs.AddUnique(key)
		return added, full(err)
	case BloomBlocked, BloomClassic:
		return f.bf.AddIfAbsent(key), nil
	case BloomCounting:
		return f.bc.AddIfAbsent(key), nil
	case BloomScalable:
		return f.bs.AddIfAbsent(key), nil
	}
	return false, nil
}

// AddUniqueBatch is AddUnique for every key, in order: added[i] reports
// whether keys[i] was added (false when it, or an earlier key of the batch
// equal to it, was reported present). It returns how many keys it
// processed: len(keys), unless the filter was full at keys[processed].
// For cuckoo filters it overlaps the cache misses of the keys (see
// cuckoo.Filter.AddUniqueBatch).
func (f *Filter) AddUniqueBatch(keys [][]byte, added []bool) (processed int, err error) {
	switch f.kind {
	case Cuckoo:
		n, err := f.cf.AddUniqueBatch(keys, added)
		return n, full(err)
	case CuckooScalable:
		return f.cs.AddUniqueBatch(keys, added)
	case BloomBlocked, BloomClassic:
		for i, k := range keys {
			added[i] = f.bf.AddIfAbsent(k)
		}
		return len(keys), nil
	}
	for i, k := range keys {
		ok, err := f.AddUnique(k)
		if err != nil {
			return i, err
		}
		added[i] = ok
	}
	return len(keys), nil
}

func full(err error) error {
	if err != nil && errors.Is(err, cuckoo.ErrFull) {
		return fmt.Errorf("%w: %w", ErrFull, err)
	}
	return err
}

// Contains reports whether key may be in the filter: always for a key
// added (and not deleted), with the false-positive rate for others.
func (f *Filter) Contains(key []byte) bool {
	switch f.kind {
	case Cuckoo:
		return f.cf.Contains(key)
	case CuckooScalable:
		return f.cs.Contains(key)
	case BloomBlocked, BloomClassic:
		return f.bf.Contains(key)
	case BloomCounting:
		return f.bc.Contains(key)
	case BloomScalable:
		return f.bs.Contains(key)
	}
	return false
}

// ContainsBatch sets found[i] to Contains(keys[i]) for every key (found
// must be as long as keys). For cuckoo filters it overlaps the cache
// misses of the keys (see cuckoo.Filter.ContainsBatch).
func (f *Filter) ContainsBatch(keys [][]byte, found []bool) {
	switch f.kind {
	case Cuckoo:
		f.cf.ContainsBatch(keys, found)
		return
	case CuckooScalable:
		f.cs.ContainsBatch(keys, found)
		return
	}
	for i, k := range keys {
		found[i] = f.Contains(k)
	}
}

// Delete removes one copy of key and reports whether there was one. Kinds
// that cannot delete return ErrNoDelete and change nothing.
func (f *Filter) Delete(key []byte) (bool, error) {
	switch f.kind {
	case Cuckoo:
		return f.cf.Delete(key), nil
	case CuckooScalable:
		return f.cs.Delete(key), nil
	case BloomCounting:
		return f.bc.Delete(key), nil
	}
	return false, fmt.Errorf("%w (a %s)", ErrNoDelete, f.kind.Description())
}

// Len returns the number of items added: copies included for cuckoo
// filters; for Bloom filters, the adds that set a bit.
func (f *Filter) Len() uint64 {
	switch f.kind {
	case Cuckoo:
		return f.cf.Len()
	case CuckooScalable:
		return f.cs.Len()
	case BloomBlocked, BloomClassic:
		return f.bf.Len()
	case BloomCounting:
		return f.bc.Len()
	case BloomScalable:
		return f.bs.Len()
	}
	return 0
}

// Capacity returns the number of distinct keys the filter was sized for
// (the current total of a growing kind).
func (f *Filter) Capacity() uint64 {
	switch f.kind {
	case Cuckoo:
		return f.cf.Capacity()
	case CuckooScalable:
		return f.cs.Capacity()
	case BloomBlocked, BloomClassic:
		return f.bf.Capacity()
	case BloomCounting:
		return f.bc.Capacity()
	case BloomScalable:
		return f.bs.Capacity()
	}
	return 0
}

// SizeInBytes returns the memory the filter holds.
func (f *Filter) SizeInBytes() uint64 {
	switch f.kind {
	case Cuckoo:
		return f.cf.SizeInBytes()
	case CuckooScalable:
		return f.cs.SizeInBytes()
	case BloomBlocked, BloomClassic:
		return f.bf.SizeInBytes()
	case BloomCounting:
		return f.bc.SizeInBytes()
	case BloomScalable:
		return f.bs.SizeInBytes()
	}
	return 0
}

// FalsePositiveRate returns the expected false-positive rate at the
// current fill. It is O(1) for cuckoo filters but reads the whole bit
// array of a Bloom filter (see RateIsCheap).
func (f *Filter) FalsePositiveRate() float64 {
	switch f.kind {
	case Cuckoo:
		return f.cf.FalsePositiveRate()
	case CuckooScalable:
		return f.cs.FalsePositiveRate()
	case BloomBlocked, BloomClassic:
		return f.bf.FalsePositiveRate()
	case BloomCounting:
		return f.bc.FalsePositiveRate()
	case BloomScalable:
		return f.bs.FalsePositiveRate()
	}
	return 0
}

// HashCount returns a Bloom filter's k, the bits (or counters) each key
// sets; 0 for cuckoo filters and scalable Bloom filters (whose layers
// differ).
func (f *Filter) HashCount() int {
	switch f.kind {
	case BloomBlocked, BloomClassic:
		return f.bf.HashCount()
	case BloomCounting:
		return f.bc.HashCount()
	}
	return 0
}

// RateIsCheap reports whether FalsePositiveRate costs O(1) (cuckoo
// filters) rather than a pass over the filter's memory (Bloom filters).
func (f *Filter) RateIsCheap() bool { return !f.kind.IsBloom() }

// Seed returns the filter's hash seed.
func (f *Filter) Seed() uint64 {
	switch f.kind {
	case Cuckoo:
		return f.cf.Seed()
	case CuckooScalable:
		return f.cs.Seed()
	case BloomBlocked, BloomClassic:
		return f.bf.Seed()
	case BloomCounting:
		return f.bc.Seed()
	case BloomScalable:
		return f.bs.Seed()
	}
	return 0
}
