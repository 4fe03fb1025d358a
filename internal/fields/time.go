package fields

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrTime is wrapped by the error of a line whose time field is not a
// time in the expected format.
var ErrTime = errors.New("not a time")

// TimeField reads a line's time from its fields: one field, or several
// joined by one space (a date and a time split on blanks, say), parsed
// with a TimeFormat. It is not safe for concurrent use.
type TimeField struct {
	fields  []*KeyExtractor // one per field, in the line's order
	spec    string
	format  TimeFormat
	scratch []byte
}

// maxTimeFields bounds how many fields a time may span.
const maxTimeFields = 8

// NewTimeField returns the reader of the time in the fields spec selects
// (see ParseSpec; a bounded selection of at most 8 fields), split as
// NewKeyExtractor splits them.
func NewTimeField(spec, delim string, csv bool, format TimeFormat) (*TimeField, error) {
	fs, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	tf := &TimeField{spec: fs.String(), format: format}
	for _, r := range fs.ranges {
		if r.hi == 0 || r.hi-r.lo+1+len(tf.fields) > maxTimeFields {
			return nil, fmt.Errorf("%w: %q: a time spans at most %d fields, counted to the last", ErrSpec, spec, maxTimeFields)
		}
		for n := r.lo; n <= r.hi; n++ {
			tf.fields = append(tf.fields, NewKeyExtractor(Spec{ranges: []fieldRange{{n, n}}}, delim, csv))
		}
	}
	return tf, nil
}

// Clone returns a reader of the same times with buffers of its own, for
// another goroutine.
func (tf *TimeField) Clone() *TimeField {
	c := &TimeField{spec: tf.spec, format: tf.format}
	for _, k := range tf.fields {
		c.fields = append(c.fields, k.Clone())
	}
	return c
}

// Time returns the time of a line's content.
func (tf *TimeField) Time(content []byte) (time.Time, error) {
	text := tf.fields[0].Key(content)
	if len(tf.fields) > 1 {
		tf.scratch = append(tf.scratch[:0], text...)
		for _, k := range tf.fields[1:] {
			tf.scratch = append(append(tf.scratch, ' '), k.Key(content)...)
		}
		text = tf.scratch
	}
	t, err := tf.format.Parse(text)
	if err != nil {
		return time.Time{}, fmt.Errorf("field %s is %q, %w", tf.spec, truncate(text, 64), err)
	}
	return t, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// TimeFormat is how a time field is written: ParseTimeFormat lists them.
type TimeFormat struct {
	name   string // "": RFC 3339 or Unix seconds, whichever the text is
	layout string // a Go layout, when name is "layout"
	unit   int64  // nanoseconds per unit of a Unix time; 0: not one
	// numericZone reports that the layout has a numeric zone offset
	// (-0700, Z07:00 and their kin, all of which, and nothing else in a
	// layout, start "-07" or "Z07"): a zone abbreviation beside it only
	// names the offset.
	numericZone bool
}

// ParseTimeFormat interprets --time-format: "" (the default: RFC 3339, or
// Unix seconds when the text is a number), "rfc3339", "unix" (seconds,
// with or without a fraction), "unix-ms", "unix-us", "unix-ns", or a Go
// time layout such as "2006-01-02 15:04:05" (a time without a zone is
// UTC; one whose zone abbreviation the local zone does not define is an
// error, see TimeFormat.Parse).
func ParseTimeFormat(s string) (TimeFormat, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return TimeFormat{}, nil
	case "rfc3339":
		return TimeFormat{name: "rfc3339"}, nil
	case "unix", "unix-s":
		return TimeFormat{name: "unix", unit: 1e9}, nil
	case "unix-ms":
		return TimeFormat{name: "unix-ms", unit: 1e6}, nil
	case "unix-us":
		return TimeFormat{name: "unix-us", unit: 1e3}, nil
	case "unix-ns":
		return TimeFormat{name: "unix-ns", unit: 1}, nil
	}
	if !strings.ContainsAny(s, "0123456789") {
		return TimeFormat{}, fmt.Errorf("%q is not a time format: want rfc3339, unix, unix-ms, unix-us, unix-ns, or a Go layout such as \"2006-01-02 15:04:05\"", s)
	}
	return TimeFormat{name: "layout", layout: s, numericZone: strings.Contains(s, "-07") || strings.Contains(s, "Z07")}, nil
}

// String names the format as ParseTimeFormat takes it.
func (f TimeFormat) String() string {
	switch f.name {
	case "":
		return "RFC 3339 or Unix seconds"
	case "layout":
		return f.layout
	}
	return f.name
}

// Parse reads a time written in the format.
//
// A zone abbreviation (MST in a layout without a numeric offset) is read
// as the local zone (time.Local, the TZ environment variable) defines it
// at that time, and UTC and GMT as UTC; any other is an error wrapping
// ErrTime, not a guess. (time.Parse reads an abbreviation it does not know
// as UTC, in a made-up zone of that name: "10:00 PST" on a machine whose
// zone is UTC is 10:00 UTC, 8 hours off; and "GMT+3" as UTC too, with the
// offset only in the zone's name.)
func (f TimeFormat) Parse(b []byte) (time.Time, error) {
	s := string(bytes.TrimSpace(b))
	switch {
	case f.name == "layout":
		t, err := time.Parse(f.layout, s)
		if err != nil {
			return time.Time{}, fmt.Errorf("%w in the layout %q", ErrTime, f.layout)
		}
		if err := f.checkZone(t); err != nil {
			return time.Time{}, err
		}
		return t, nil
	case f.unit != 0:
		return parseUnix(s, f.unit)
	case f.name == "" && looksNumeric(s):
		return parseUnix(s, 1e9)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		if f.name == "" {
			return time.Time{}, fmt.Errorf("%w: want RFC 3339 (2006-01-02T15:04:05Z) or Unix seconds; --time-format reads others", ErrTime)
		}
		return time.Time{}, fmt.Errorf("%w: want RFC 3339 (2006-01-02T15:04:05Z)", ErrTime)
	}
	return t, nil
}

// checkZone returns the error of a time that time.Parse read with a zone
// abbreviation it does not know: its location is then neither time.Local
// (an abbreviation the local zone defines) nor time.UTC ("UTC", or no
// zone at all) but a zone it made up, of offset 0 (or, for "GMT+3", the
// offset in the name, which it does not apply to the time), unless the
// layout gave the offset in numbers. Plain "GMT" is UTC indeed.
func (f TimeFormat) checkZone(t time.Time) error {
	if loc := t.Location(); f.numericZone || loc == time.UTC || loc == time.Local {
		return nil
	}
	name, _ := t.Zone()
	if name == "GMT" {
		return nil
	}
	local, _ := t.In(time.Local).Zone()
	return fmt.Errorf("%w: the zone %s is unknown to the local zone (%s at that time), and would be read as UTC; "+
		"use a layout with a numeric offset (-0700, Z07:00), or run with TZ set to the zone's location (TZ=America/Los_Angeles for PST and PDT)",
		ErrTime, name, local)
}

func looksNumeric(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return s != "" && strings.Trim(s, "0123456789.") == "" && s[0] != '.'
}

// parseUnix reads a Unix time in units of unit ns, with an optional
// fraction (exactly, without floating point).
func parseUnix(s string, unit int64) (time.Time, error) {
	bad := fmt.Errorf("%w: want a Unix time, a whole or decimal number", ErrTime)
	neg := strings.HasPrefix(s, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	if whole == "" || strings.Trim(whole, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" {
		return time.Time{}, bad
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > (1<<62)/unit {
		return time.Time{}, fmt.Errorf("%w: %s is out of range", ErrTime, s)
	}
	ns := w * unit
	// The fraction's digits, as many as the unit has below it.
	for u := unit / 10; u > 0 && frac != ""; u /= 10 {
		ns += int64(frac[0]-'0') * u
		frac = frac[1:]
	}
	if neg {
		ns = -ns
	}
	return time.Unix(0, ns).UTC(), nil
}
