// Package fields reads keys and times from the fields of a line or a
// record's value, in the forms the command line takes: a field spec as cut
// -f writes one (--key 2, 1,3, 2-4, 3-), a delimiter (--delimiter, --csv),
// and a time format (--time-field, --time-format). The CLI's line dedup
// and package kafkadedup share it, so that a key means the same in both.
package fields

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrSpec is wrapped by the errors ParseSpec returns.
var ErrSpec = errors.New("invalid field spec")

// maxField is the largest field number a spec may name.
const maxField = 1 << 20

// Spec selects fields of a line by number, from 1, as cut -f does:
// "2" is the second field, "1,3" the first and third, "2-4" the second to
// fourth, "3-" the third and every one after it, "-2" the first two. The
// parts may come in any order and overlap; the selection is their union,
// taken in the order of the line.
//
// The zero Spec selects nothing; ParseSpec never returns it.
type Spec struct {
	// ranges are sorted, disjoint and not adjacent; hi == 0 means "to the
	// last field".
	ranges []fieldRange
}

type fieldRange struct{ lo, hi int }

// ParseSpec parses a field spec (see Spec).
func ParseSpec(s string) (Spec, error) {
	if strings.TrimSpace(s) == "" {
		return Spec{}, fmt.Errorf("%w: empty; want a field number such as 2, a list such as 1,3 or a range such as 2-4", ErrSpec)
	}
	var rs []fieldRange
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		var r fieldRange
		var err error
		switch {
		case !isRange:
			r.lo, err = fieldNumber(lo, part)
			r.hi = r.lo
		case lo == "" && hi == "":
			err = fmt.Errorf("%w: %q is a range without ends", ErrSpec, part)
		case lo == "":
			r.lo = 1
			r.hi, err = fieldNumber(hi, part)
		case hi == "":
			r.lo, err = fieldNumber(lo, part)
		default:
			if r.lo, err = fieldNumber(lo, part); err == nil {
				r.hi, err = fieldNumber(hi, part)
			}
			if err == nil && r.hi < r.lo {
				err = fmt.Errorf("%w: %q is a decreasing range", ErrSpec, part)
			}
		}
		if err != nil {
			return Spec{}, err
		}
		rs = append(rs, r)
	}
	return Spec{ranges: normalize(rs)}, nil
}

func fieldNumber(s, part string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 || n > maxField || strings.HasPrefix(strings.TrimSpace(s), "+") {
		return 0, fmt.Errorf("%w: %q: fields are numbered from 1 (to %d)", ErrSpec, part, maxField)
	}
	return n, nil
}

// normalize sorts the ranges and merges those that overlap or touch.
func normalize(rs []fieldRange) []fieldRange {
	end := func(r fieldRange) int {
		if r.hi == 0 {
			return maxField + 1
		}
		return r.hi
	}
	slices.SortFunc(rs, func(a, b fieldRange) int { return a.lo - b.lo })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.lo <= end(*last)+1 {
			if last.hi != 0 && (r.hi == 0 || r.hi > last.hi) {
				last.hi = r.hi
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// String returns the spec in canonical form: ParseSpec(s.String())
// equals s.
func (s Spec) String() string {
	var b strings.Builder
	for i, r := range s.ranges {
		if i > 0 {
			b.WriteByte(',')
		}
		switch {
		case r.hi == r.lo:
			b.WriteString(strconv.Itoa(r.lo))
		case r.hi == 0:
			b.WriteString(strconv.Itoa(r.lo) + "-")
		default:
			b.WriteString(strconv.Itoa(r.lo) + "-" + strconv.Itoa(r.hi))
		}
	}
	return b.String()
}

// single returns the one field s selects, or 0 when it selects more.
func (s Spec) single() int {
	if len(s.ranges) == 1 && s.ranges[0].lo == s.ranges[0].hi {
		return s.ranges[0].lo
	}
	return 0
}

// last returns the highest field s selects, or 0 when it is open-ended.
func (s Spec) last() int {
	return s.ranges[len(s.ranges)-1].hi
}

// selects reports whether field i is selected; k is the index of the
// range to start looking at, advanced as i grows.
func (s Spec) selects(i int, k *int) bool {
	for *k < len(s.ranges) {
		r := s.ranges[*k]
		if i < r.lo {
			return false
		}
		if r.hi == 0 || i <= r.hi {
			return true
		}
		*k++
	}
	return false
}

// ParseDelimiter interprets a --delimiter value: "" means runs of blanks
// (spaces and tabs, as awk splits by default); "\t", "tab" and Go escapes
// such as "\x1f" are understood; anything else is taken literally.
func ParseDelimiter(s string) (string, error) {
	switch s {
	case "":
		return "", nil
	case "tab", "TAB", `\t`:
		return "\t", nil
	case "space":
		return " ", nil
	}
	if strings.Contains(s, `\`) {
		if u, err := strconv.Unquote(`"` + s + `"`); err == nil && u != "" {
			return u, nil
		}
	}
	if strings.ContainsAny(s, "\n") {
		return "", errors.New("a delimiter cannot contain a newline")
	}
	return s, nil
}

// KeyExtractor turns a line's content into the key a field spec selects.
// When one field is selected the key is that field's bytes, sliced from
// the line without copying. When several are, the key is each selected
// field's length (uvarint) and bytes, concatenated in a scratch buffer, so
// that different selections can never give the same key. A line with
// fewer fields than the spec names has empty fields there, as in awk.
//
// A KeyExtractor is not safe for concurrent use (it owns the scratch
// buffer).
type KeyExtractor struct {
	spec    Spec
	delim   []byte // nil: runs of blanks
	csv     bool
	single  int
	last    int
	padded  int // the fields a key may have to pad as empty: those of a closed spec
	scratch []byte
	fields  [][]byte // CSV: the selected fields, unquoted
}

// NewKeyExtractor returns an extractor for spec with delimiter delim ("":
// runs of blanks, leading and trailing blanks ignored). With csv true,
// fields are CSV fields (RFC 4180 on one line): a field that starts with
// a double quote runs to the closing quote, may hold the delimiter, and
// has "" for a quote; the key is the unquoted value, so "a" and a are the
// same key. CSV needs a delimiter ("" gives ",").
func NewKeyExtractor(spec Spec, delim string, csv bool) *KeyExtractor {
	if len(spec.ranges) == 0 {
		panic("fields: NewKeyExtractor with an empty Spec")
	}
	if csv && delim == "" {
		delim = ","
	}
	k := &KeyExtractor{spec: spec, csv: csv, single: spec.single(), last: spec.last()}
	if k.last != 0 {
		for _, r := range spec.ranges {
			k.padded += r.hi - r.lo + 1
		}
	}
	if delim != "" {
		k.delim = []byte(delim)
	}
	return k
}

// Clone returns an extractor of the same keys with buffers of its own,
// for another goroutine.
func (k *KeyExtractor) Clone() *KeyExtractor {
	c := *k
	c.scratch, c.fields = nil, nil
	return &c
}

// SlicesContent reports whether every key Key returns is a slice of the
// content it was given (one field selected, not CSV), never the scratch
// buffer: such a key stays valid while the content does, across calls.
func (k *KeyExtractor) SlicesContent() bool { return k.single != 0 && !k.csv }

// Key returns the key of a line's content (a line without its
// terminator). The result may point into content or into the
// extractor's scratch buffer, and is valid until the next call.
func (k *KeyExtractor) Key(content []byte) []byte {
	if k.csv {
		return k.csvKey(content)
	}
	if k.single != 0 {
		return k.field(content, k.single)
	}
	k.reserve(k.maxKey(len(content)))
	rk := 0
	for i, rest := 1, content; ; i++ {
		if k.last != 0 && i > k.last {
			break
		}
		f, next, more := k.cut(rest)
		if !more && len(f) == 0 && k.delim == nil {
			k.appendMissing(i, &rk) // whitespace mode: no field left
			break
		}
		if k.spec.selects(i, &rk) {
			k.scratch = appendField(k.scratch, f)
		}
		if !more {
			k.appendMissing(i+1, &rk)
			break
		}
		rest = next
	}
	return k.scratch
}

// longContent is the size of a line's content from which Key builds a
// key of several fields in a buffer made for it (reserve).
const longContent = 64 << 10

// reserve empties the scratch buffer for a key of at most n bytes and,
// for a long one, makes it that large, so that the key is built without
// growing it: growing by appending copies the key so far at each growth
// and holds the old buffer and the new one at once, near three times the
// key at the last growth. A shorter key grows the buffer as needed, which
// later keys reuse.
func (k *KeyExtractor) reserve(n int) {
	k.scratch = k.scratch[:0]
	if n >= longContent && cap(k.scratch) < n {
		k.scratch = nil // not kept beside the new one
		k.scratch = make([]byte, 0, n)
	}
}

// maxKey returns the most bytes the key of several fields of a line's
// content of n bytes may take: n + n/128 + 2, plus one for each field a
// closed spec pads as empty. Each field present costs its uvarint length
// and its bytes, and is followed by at least one byte of delimiter (or
// blank, or, in CSV, a quote) that the key leaves out, but for the last;
// a length takes one byte below 128 and at most one more for each 128
// bytes of its field.
func (k *KeyExtractor) maxKey(n int) int { return n + n/128 + 2 + k.padded }

// appendMissing encodes the selected fields from field i to the last one
// selected as empty, for a line that ends before field i: fields past the
// end are empty, as in awk, so "a", "a " and "" give the key of their
// empty fields 2 and 3, and "a" and "a," different keys only when they
// should. rk is Key's cursor in the spec's ranges, from which the ranges
// hold the fields from i on: each is an empty field, a zero length, one
// byte, appended all at once (a spec such as 1-1048576 pads most lines
// with a million of them).
func (k *KeyExtractor) appendMissing(i int, rk *int) {
	if k.last == 0 {
		return
	}
	n := 0
	for _, r := range k.spec.ranges[*rk:] {
		if lo := max(r.lo, i); lo <= r.hi {
			n += r.hi - lo + 1
		}
	}
	end := len(k.scratch) + n
	k.scratch = slices.Grow(k.scratch, n)[:end]
	clear(k.scratch[end-n:])
}

func appendField(dst, f []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(f)))
	return append(dst, f...)
}

// field returns field n (from 1) of content, empty when there are fewer.
func (k *KeyExtractor) field(content []byte, n int) []byte {
	rest := content
	for i := 1; ; i++ {
		f, next, more := k.cut(rest)
		if i == n {
			return f
		}
		if !more {
			return content[:0]
		}
		rest = next
	}
}

// cut splits the first field off s: the field, what follows its
// delimiter, and whether a delimiter followed it.
func (k *KeyExtractor) cut(s []byte) (field, rest []byte, more bool) {
	if k.delim == nil {
		// Skip leading blanks, take the run of non-blanks.
		i := 0
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		j := i
		for j < len(s) && s[j] != ' ' && s[j] != '\t' {
			j++
		}
		field = s[i:j]
		// More fields follow only if a non-blank does.
		m := j
		for m < len(s) && (s[m] == ' ' || s[m] == '\t') {
			m++
		}
		return field, s[m:], m < len(s)
	}
	var i int
	if len(k.delim) == 1 {
		i = bytes.IndexByte(s, k.delim[0])
	} else {
		i = bytes.Index(s, k.delim)
	}
	if i < 0 {
		return s, nil, false
	}
	return s[:i], s[i+len(k.delim):], true
}

// csvKey is Key for CSV fields.
func (k *KeyExtractor) csvKey(content []byte) []byte {
	if k.single == 0 {
		k.reserve(k.maxKey(len(content)))
	}
	rk := 0
	rest := content
	for i := 1; ; i++ {
		if k.last != 0 && i > k.last {
			break
		}
		selected := k.spec.selects(i, &rk)
		start := len(k.scratch)
		if selected && k.single == 0 {
			k.scratch = append(k.scratch, 0) // length placeholder, fixed below
		}
		var more bool
		var raw []byte
		raw, rest, more = k.csvCut(rest, selected)
		if selected {
			if k.single != 0 {
				if raw != nil {
					return raw // unquoted or quote-free: sliced from content
				}
				return k.scratch
			}
			if raw != nil {
				k.scratch = append(k.scratch, raw...)
			}
			k.scratch = fixLength(k.scratch, start)
		}
		if !more {
			if k.single == 0 {
				k.appendMissing(i+1, &rk)
			}
			break
		}
	}
	if k.single != 0 {
		return content[:0]
	}
	return k.scratch
}

// csvCut splits the first CSV field off s. For a field without escaped
// quotes it returns the value as a slice of s; for one with "" escapes it
// appends the value to k.scratch and returns raw == nil (only when want).
func (k *KeyExtractor) csvCut(s []byte, want bool) (raw, rest []byte, more bool) {
	if len(s) == 0 || s[0] != '"' {
		f, r, m := k.cut(s)
		return f, r, m
	}
	// A quoted field: find the closing quote, skipping "" pairs.
	escaped := false
	i := 1
	for {
		j := bytes.IndexByte(s[i:], '"')
		if j < 0 {
			i = len(s) // unterminated: the field runs to the end of the line
			break
		}
		i += j
		if i+1 < len(s) && s[i+1] == '"' {
			escaped = true
			i += 2
			continue
		}
		break
	}
	value := s[1:min(i, len(s))]
	// Skip to the next delimiter (bytes after the closing quote are junk).
	after := s[min(i+1, len(s)):]
	_, r, m := k.cut(after)
	if !escaped {
		return value, r, m
	}
	if want {
		if k.single != 0 {
			k.reserve(len(value)) // the key is this value alone
		}
		for p := 0; p < len(value); p++ {
			k.scratch = append(k.scratch, value[p])
			if value[p] == '"' && p+1 < len(value) && value[p+1] == '"' {
				p++
			}
		}
	}
	return nil, r, m
}

// fixLength replaces the one-byte placeholder at start with the uvarint
// length of what follows it.
func fixLength(b []byte, start int) []byte {
	n := len(b) - start - 1
	if n < 0x80 {
		b[start] = byte(n)
		return b
	}
	var v [binary.MaxVarintLen64]byte
	w := binary.PutUvarint(v[:], uint64(n))
	b = append(b, v[:w-1]...)
	copy(b[start+w:], b[start+1:start+1+n])
	copy(b[start:], v[:w])
	return b
}
