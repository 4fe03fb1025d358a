// Package filterfile gives the CLI one type for every filter this module
// can build and save: it tells the kinds apart by their magic bytes, loads
// and saves them, and offers the operations the commands need, with the
// same semantics for every kind (a fixed-size filter of either family
// refuses new keys past its capacity with ErrFull, for example).
//
// Each kind is one entry of the table in kind.go and one type over its
// package's filter (cuckoo.go, bloom.go). The kinds and their encodings are
// those of the packages that define them; every encoding starts with a
// magic, a format version and a kind byte, which internal/format reads for
// this package (Sniff; docs/format.md). This package reads only those
// bytes; decoding, with all its checks, is the filter package's.
package filterfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/bloom"
	"github.com/dedupkit/cuckoo/internal/format"
	"github.com/dedupkit/cuckoo/internal/vfs"
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

	// ErrFull is wrapped by the errors of Add, AddUnique and
	// AddUniqueBatch when a fixed-capacity filter has no room left (with
	// the cuckoo package's ErrFull, for a cuckoo filter). The filter is
	// unchanged.
	ErrFull = errors.New("filterfile: filter is full")
)

// Filter is a filter of any kind. Like the filters themselves, a Filter
// may be read by many goroutines but needs exclusive access for any change.
// Its methods make one interface call to the kind's type; the per-key
// loops of the CLI go through the batch methods, which make one call per
// batch.
type Filter struct {
	kind    Kind
	version uint16 // format version it was read with, or the current one
	f       impl
}

// impl is one kind of filter as this package sees it: each kind's type
// (cuckoo.go, bloom.go) implements it over its package's filter, with the
// semantics of the Filter methods of the same names.
type impl interface {
	Add(key []byte) error
	AddUnique(key []byte) (bool, error)
	AddUniqueBatch(keys [][]byte, added []bool) (processed int, err error)
	Contains(key []byte) bool
	ContainsBatch(keys [][]byte, found []bool)
	Delete(key []byte) (bool, error)
	Len() uint64
	Capacity() uint64
	SizeInBytes() uint64
	FalsePositiveRate() float64
	TargetFalsePositiveRate() float64
	Seed() uint64
	EncodedSize() int64
	io.WriterTo
	io.ReaderFrom
	// facts adds what `cuckoo info` shows of the kind beyond what every
	// filter has (see Info).
	facts(add addFact)
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
	SeedSet         bool          // use Seed instead of a random seed
	Segments        int           // fixed-size cuckoo only: table segments (cuckoo.WithSegments); 0: one
	Window          time.Duration // CuckooWindow only: the window; Capacity is then the keys a window holds
}

// New builds an empty filter. Parameter errors wrap the filter package's
// ErrInvalidParameter.
func New(s Spec) (*Filter, error) {
	ki, ok := s.Kind.info()
	if !ok {
		return nil, fmt.Errorf("filter kind %s is not available in this build", s.Kind)
	}
	f, err := ki.new(s)
	if err != nil {
		return nil, err
	}
	return &Filter{kind: s.Kind, version: format.Latest, f: f}, nil
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
	if !format.Readable(version) {
		return nil, fmt.Errorf("%w: %s format version %d (written by a newer version?)", ErrUnsupported, kind.Description(), version)
	}
	ki, _ := kind.info()
	f := &Filter{kind: kind, version: version, f: ki.empty()}
	if _, err := f.f.ReadFrom(br); err != nil {
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
		return nil, &fs.PathError{Op: "read", Path: path, Err: syscall.EISDIR}
	}
	return Read(file)
}

// Save writes the filter to path atomically (see package internal/vfs):
// after an error or an interruption, the file at path is unchanged.
func (f *Filter) Save(path string) error {
	return vfs.WriteFile(path, 0o644, nil, func(w io.Writer) error {
		_, err := f.WriteTo(w)
		return err
	})
}

// WriteTo writes the filter's encoding to w.
func (f *Filter) WriteTo(w io.Writer) (int64, error) { return f.f.WriteTo(w) }

// EncodedSize returns the number of bytes WriteTo writes.
func (f *Filter) EncodedSize() int64 { return f.f.EncodedSize() }

// Kind returns the filter's kind.
func (f *Filter) Kind() Kind { return f.kind }

// FormatVersion returns the version of the encoding the filter was read
// from (the current version for a new filter).
func (f *Filter) FormatVersion() uint16 { return f.version }

// Add adds key. When a filter of fixed capacity has no room, it returns an
// error wrapping ErrFull and the filter is unchanged: a cuckoo filter
// whose buckets are full, or a Bloom filter of fixed size that holds its
// capacity of keys (past it, its rate would rise above its target) and is
// given a key it does not report present.
func (f *Filter) Add(key []byte) error { return full(f.f.Add(key)) }

// AddUnique adds key unless Contains says it is there, and reports whether
// it added it (see Add for errors).
func (f *Filter) AddUnique(key []byte) (bool, error) {
	added, err := f.f.AddUnique(key)
	return added, full(err)
}

// AddUniqueBatch is AddUnique for every key, in order: added[i] reports
// whether keys[i] was added (false when it, or an earlier key of the batch
// equal to it, was reported present). It returns how many keys it
// processed: len(keys), unless the filter was full at keys[processed].
// For cuckoo filters it overlaps the cache misses of the keys (see
// cuckoo.Filter.AddUniqueBatch).
func (f *Filter) AddUniqueBatch(keys [][]byte, added []bool) (processed int, err error) {
	n, err := f.f.AddUniqueBatch(keys, added)
	return n, full(err)
}

// hashBatcher is a kind that takes keys' hashes in batches.
type hashBatcher interface {
	AddUniqueHashBatch(hashes []uint64, added []bool) (processed int, err error)
}

// HashSeed returns the filter's seed and true when AddUniqueHashBatch
// takes the hashes this module's filters give keys, hash.Sum64(key,
// seed): for the cuckoo filters of fixed size and the growing ones. For
// the other kinds it returns false.
func (f *Filter) HashSeed() (seed uint64, ok bool) {
	switch f.f.(type) {
	case cuckooFilter, cuckooScalable:
		return f.f.Seed(), true
	}
	return 0, false
}

// AddUniqueHashBatch is AddUniqueBatch for keys given by their hashes,
// hash.Sum64(key, seed) with the seed HashSeed returns: the same answers
// and the same filter afterwards. It panics for a kind for which HashSeed
// returns false.
func (f *Filter) AddUniqueHashBatch(hashes []uint64, added []bool) (processed int, err error) {
	if _, ok := f.HashSeed(); !ok {
		panic("filterfile: AddUniqueHashBatch on a " + f.kind.Description())
	}
	n, err := f.f.(hashBatcher).AddUniqueHashBatch(hashes, added)
	return n, full(err)
}

// full wraps a filter package's ErrFull in this package's.
func full(err error) error {
	if err != nil && errors.Is(err, cuckoo.ErrFull) && !errors.Is(err, ErrFull) {
		return fmt.Errorf("%w: %w", ErrFull, err)
	}
	return err
}

// Contains reports whether key may be in the filter: always for a key
// added (and not deleted), with the false-positive rate for others.
func (f *Filter) Contains(key []byte) bool { return f.f.Contains(key) }

// ContainsBatch sets found[i] to Contains(keys[i]) for every key (found
// must be as long as keys). For cuckoo filters it overlaps the cache
// misses of the keys (see cuckoo.Filter.ContainsBatch).
func (f *Filter) ContainsBatch(keys [][]byte, found []bool) { f.f.ContainsBatch(keys, found) }

// Delete removes one copy of key and reports whether there was one. Kinds
// that cannot delete return ErrNoDelete and change nothing.
func (f *Filter) Delete(key []byte) (bool, error) {
	if !f.kind.CanDelete() {
		return false, fmt.Errorf("%w (a %s)", ErrNoDelete, f.kind.Description())
	}
	return f.f.Delete(key)
}

// Len returns the number of items added: copies included for cuckoo and
// counting Bloom filters; for the other Bloom filters, the adds that set a
// bit.
func (f *Filter) Len() uint64 { return f.f.Len() }

// Capacity returns the number of distinct keys the filter was sized for
// (the current total of a growing kind).
func (f *Filter) Capacity() uint64 { return f.f.Capacity() }

// SizeInBytes returns the memory the filter holds.
func (f *Filter) SizeInBytes() uint64 { return f.f.SizeInBytes() }

// FalsePositiveRate returns the expected false-positive rate at the
// current fill. It is O(1) for cuckoo filters but reads the whole bit
// array of a Bloom filter (see RateIsCheap).
func (f *Filter) FalsePositiveRate() float64 { return f.f.FalsePositiveRate() }

// RateIsCheap reports whether FalsePositiveRate costs O(1) (cuckoo
// filters) rather than a pass over the filter's memory (Bloom filters).
func (f *Filter) RateIsCheap() bool { ki, _ := f.kind.info(); return ki.cheapRate }

// Seed returns the filter's hash seed.
func (f *Filter) Seed() uint64 { return f.f.Seed() }
