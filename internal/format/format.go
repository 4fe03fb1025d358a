// Package format owns the headers of the module's filter files: the magic
// of each family (cuckoo "CKOO", Bloom "BLMF"), the format versions, the
// kind bytes, and the fixed headers of the cuckoo kinds (a table, a
// growing filter's chain, a window) with their sizes. Every encoder,
// decoder and tool that reads or writes a filter file (the cuckoo and
// bloom packages, redisfilter's push and snapshot, the CLI's file reader)
// goes through it, so none of them spells an offset, a magic or a kind
// byte.
//
// Every file starts with the same seven bytes in every version and family:
// the magic (4 bytes), the format version (2 bytes, little-endian) and the
// kind (1 byte), read by [ReadStart] and [Sniff]. The rest of a header is
// read by the reader of the file's version, chosen from each header's list
// of readers, one a version: a new version adds its reader to each list
// and raises [Latest], and decoders go on reading every version ever
// written.
// Encoders write [Latest]. A header is returned as one struct whatever
// version wrote it.
//
// The bytes around the headers (the payloads, the CRC-32C trailer of
// [ChecksumSize] bytes over every byte before it) are written and read
// with internal/codec, whose framing every file uses. docs/format.md and
// docs/format-scalable.md describe every byte.
package format

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dedupkit/cuckoo/internal/codec"
)

// The format versions. The values are frozen.
const (
	// Version1 is the first frozen format, and the only one so far.
	Version1 = 1
	// Latest is the version encoders write; decoders read every version
	// from Version1 to Latest.
	Latest = Version1
)

// Readable reports whether this build's decoders read format version v.
func Readable(v uint16) bool { return v >= Version1 && v <= Latest }

// Family is a family of filter files, told apart by their magic.
type Family uint8

// The families.
const (
	Cuckoo Family = iota + 1 // the cuckoo filters: magic "CKOO"
	Bloom                    // the Bloom filters: magic "BLMF"
)

var magics = [...]string{Cuckoo: "CKOO", Bloom: "BLMF"}

// Magic returns the four bytes every file of the family starts with.
func (f Family) Magic() string {
	if int(f) < len(magics) {
		return magics[f]
	}
	return ""
}

// String names the family in messages.
func (f Family) String() string {
	switch f {
	case Cuckoo:
		return "cuckoo"
	case Bloom:
		return "Bloom"
	}
	return fmt.Sprintf("family(%d)", uint8(f))
}

// Kind is a kind of filter file: its family and the kind byte at offset
// 6. The kind bytes are frozen.
type Kind uint16

// The kinds.
const (
	Filter   = Kind(Cuckoo)<<8 | 1 // a cuckoo.Filter, and each table of a chain (TableHeader)
	Scalable = Kind(Cuckoo)<<8 | 2 // a growing filter's chain: cuckoo.Scalable, a growing Concurrent (ChainHeader)
	Window   = Kind(Cuckoo)<<8 | 3 // a cuckoo.Window (WindowHeader)

	BloomBlocked  = Kind(Bloom)<<8 | 1 // bloom.New
	BloomClassic  = Kind(Bloom)<<8 | 2 // bloom.NewClassic
	BloomCounting = Kind(Bloom)<<8 | 3 // bloom.NewCounting
	BloomScalable = Kind(Bloom)<<8 | 4 // bloom.NewScalable
)

var kindNames = map[Kind]string{
	Filter:        "a cuckoo Filter",
	Scalable:      "a cuckoo Scalable",
	Window:        "a cuckoo Window",
	BloomBlocked:  "a Bloom blocked Filter",
	BloomClassic:  "a Bloom classic Filter",
	BloomCounting: "a Bloom Counting filter",
	BloomScalable: "a Bloom Scalable filter",
}

// Family returns the kind's family.
func (k Kind) Family() Family { return Family(k >> 8) }

// Code returns the kind byte.
func (k Kind) Code() uint8 { return uint8(k) }

// Known reports whether k is one of the kinds above.
func (k Kind) Known() bool { _, ok := kindNames[k]; return ok }

// String names the kind in messages ("a cuckoo Filter").
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("a %s filter of unknown kind %d", k.Family(), k.Code())
}

// The errors of the package's readers. Every one wraps ErrHeader, and
// some one of the others too; a short or failing input gives the codec's
// error (codec.ErrTruncated) or the reader's instead.
var (
	// ErrHeader is wrapped by every error about a header's bytes.
	ErrHeader = errors.New("invalid header")
	// ErrNotFilter means the input does not start with a magic of the
	// family asked for (of any family, for Sniff).
	ErrNotFilter = errors.New("not a filter file")
	// ErrVersion means a format version this build does not read (a file
	// written by a newer version of the module, or damaged).
	ErrVersion = errors.New("unsupported format version")
	// ErrKind means a kind byte this build does not know, or another kind
	// than the one asked for.
	ErrKind = errors.New("unexpected kind")
	// ErrPreV1 means a file written before format 1 was frozen: version 1
	// in its header, but a hash that is retired.
	ErrPreV1 = errors.New("written by a version of github.com/dedupkit/cuckoo from before format 1.0, whose hash is retired; build the filter again from its keys")
)

// headerError is an error about a header: its message, wrapping ErrHeader
// and the error that says which check failed (nil for the checks of one
// field's range).
type headerError struct {
	msg   string
	cause error
}

func (e *headerError) Error() string { return e.msg }

func (e *headerError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrHeader}
	}
	return []error{ErrHeader, e.cause}
}

func invalid(cause error, format string, args ...any) error {
	return &headerError{msg: fmt.Sprintf(format, args...), cause: cause}
}

// errPreV1 is ErrPreV1 wrapping ErrHeader, and with its text alone.
var errPreV1 = &headerError{msg: ErrPreV1.Error(), cause: ErrPreV1}

// StartSize is the number of bytes of a file's start: the magic, the
// version and the kind.
const StartSize = 7

// Start is what the first StartSize bytes of every filter file say.
type Start struct {
	Kind    Kind
	Version uint16
}

// AppendStart appends the start of a file of kind k in the latest version.
func AppendStart(b []byte, k Kind) []byte {
	b = append(b, k.Family().Magic()...)
	b = append(b, byte(Latest), byte(Latest>>8), k.Code())
	return b
}

// WriteStart writes the start of a file of kind k in the latest version.
func WriteStart(e *codec.Encoder, k Kind) {
	var buf [StartSize]byte
	e.Bytes(AppendStart(buf[:0], k))
}

// ReadStart reads the start of a file that must be of family f and of a
// version this build reads. The kind is returned as it is, known or not:
// each header's reader checks it against the kind it reads.
func ReadStart(d *codec.Decoder, f Family) (Start, error) {
	var m [4]byte
	for i := range m {
		m[i] = d.Uint8()
	}
	version := d.Uint16()
	code := d.Uint8()
	if err := d.Err(); err != nil {
		return Start{}, err
	}
	s := Start{Kind: Kind(f)<<8 | Kind(code), Version: version}
	if string(m[:]) != f.Magic() {
		return s, invalid(ErrNotFilter, "not a %s filter (magic %q)", f, m[:])
	}
	if !Readable(version) {
		return s, unsupported(version)
	}
	return s, nil
}

func unsupported(version uint16) error {
	return invalid(ErrVersion, "unsupported format version %d (this build reads %s; written by a newer version?)", version, readableVersions())
}

func readableVersions() string {
	if Latest == Version1 {
		return "version 1"
	}
	return fmt.Sprintf("versions 1 to %d", Latest)
}

// Sniff tells what a file holds from its first StartSize bytes (or more),
// whatever its family. It returns an error wrapping ErrNotFilter for a
// magic of no family; ErrKind for a kind byte this build does not know
// (Start's Kind holds the family and byte); ErrVersion for a version it
// does not read (Start's Kind is then the file's).
func Sniff(head []byte) (Start, error) {
	if len(head) < StartSize {
		return Start{}, invalid(ErrNotFilter, "only %d bytes", len(head))
	}
	var s Start
	for f := Cuckoo; f <= Bloom; f++ {
		if string(head[:4]) == f.Magic() {
			s.Kind = Kind(f)<<8 | Kind(head[6])
		}
	}
	if s.Kind == 0 {
		return s, invalid(ErrNotFilter, "starts with % x", head[:4])
	}
	s.Version = uint16(head[4]) | uint16(head[5])<<8
	if !s.Kind.Known() {
		return s, invalid(ErrKind, "%s (written by a newer version?)", s.Kind)
	}
	if !Readable(s.Version) {
		return s, unsupported(s.Version)
	}
	return s, nil
}

// ExpectKind fails unless a file's kind is one of want.
func ExpectKind(s Start, want ...Kind) error {
	for _, w := range want {
		if s.Kind == w {
			return nil
		}
	}
	names := make([]string, len(want))
	for i, w := range want {
		names[i] = w.String()
	}
	return invalid(ErrKind, "the input holds %s, not %s", s.Kind, strings.Join(names, " or "))
}
