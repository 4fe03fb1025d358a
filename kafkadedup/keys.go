package kafkadedup

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupkit/cuckoo/internal/fields"
)

// KeyFunc returns the dedup key of a record. The key may point into the
// record or into a buffer of the function's own: it needs to stay valid
// only until the next call, since a Processor calls the function from one
// goroutine and copies nothing. An error marks the record unreadable (see
// WithPassUnreadable).
type KeyFunc func(r *kgo.Record) ([]byte, error)

// TimeFunc returns the time of a record, for the window. An error marks
// the record unreadable.
type TimeFunc func(r *kgo.Record) (time.Time, error)

// KeyFields returns a KeyFunc that reads the key from fields of the
// record's value, as `cuckoo dedup --key SPEC --delimiter D [--csv]` reads
// it from a line: spec selects fields as cut -f does (2, 1,3, 2-4, 3-);
// fields are split on runs of blanks when delimiter is "", else on
// delimiter ("\t" or "tab", Go escapes such as "\x1f"); csv honours
// double-quoted fields. A value with fewer fields has empty ones there, as
// in awk, so every value has a key.
func KeyFields(spec, delimiter string, csv bool) (KeyFunc, error) {
	s, err := fields.ParseSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidParameter, err)
	}
	d, err := fields.ParseDelimiter(delimiter)
	if err != nil {
		return nil, fmt.Errorf("%w: delimiter: %w", ErrInvalidParameter, err)
	}
	k := fields.NewKeyExtractor(s, d, csv)
	return func(r *kgo.Record) ([]byte, error) { return k.Key(r.Value), nil }, nil
}

// KeyJSON returns a KeyFunc that reads the key from the JSON value of a
// record at path, written as jq writes a simple path (".user.id",
// ".items[0].sku", or "$.user.id"): a string's content, unescaped, or the
// text of any other value. A value without the path, or not JSON, is
// unreadable.
func KeyJSON(path string) (KeyFunc, error) {
	p, err := fields.ParseJSONPath(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidParameter, err)
	}
	return func(r *kgo.Record) ([]byte, error) {
		v, err := p.Value(r.Value)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
		}
		return v, nil
	}, nil
}

// TimeFields returns a TimeFunc that reads a record's time from fields of
// its value, as `cuckoo dedup --time-field SPEC --time-format F` reads it
// from a line (fields split as KeyFields splits them; several fields are
// joined by a space). format is "" (RFC 3339, or Unix seconds when the
// text is a number), "rfc3339", "unix", "unix-ms", "unix-us", "unix-ns",
// or a Go layout such as "2006-01-02 15:04:05" (UTC unless it has a zone;
// a zone abbreviation, MST in the layout, that the local zone does not
// define makes the time unreadable: write offsets, -0700, instead).
func TimeFields(spec, delimiter string, csv bool, format string) (TimeFunc, error) {
	f, err := fields.ParseTimeFormat(format)
	if err != nil {
		return nil, fmt.Errorf("%w: time format: %w", ErrInvalidParameter, err)
	}
	d, err := fields.ParseDelimiter(delimiter)
	if err != nil {
		return nil, fmt.Errorf("%w: delimiter: %w", ErrInvalidParameter, err)
	}
	tf, err := fields.NewTimeField(spec, d, csv, f)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidParameter, err)
	}
	return func(r *kgo.Record) (time.Time, error) {
		t, err := tf.Time(r.Value)
		if err != nil {
			return time.Time{}, fmt.Errorf("%w: %w", ErrUnreadable, err)
		}
		return t, nil
	}, nil
}

// TimeJSON returns a TimeFunc that reads a record's time from its JSON
// value at path (see KeyJSON), in format (see TimeFields): a string such
// as "2026-03-01T12:00:00Z" or a number such as 1772366400.
func TimeJSON(path, format string) (TimeFunc, error) {
	p, err := fields.ParseJSONPath(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidParameter, err)
	}
	f, err := fields.ParseTimeFormat(format)
	if err != nil {
		return nil, fmt.Errorf("%w: time format: %w", ErrInvalidParameter, err)
	}
	return func(r *kgo.Record) (time.Time, error) {
		v, err := p.Value(r.Value)
		if err == nil {
			var t time.Time
			if t, err = f.Parse(v); err == nil {
				return t, nil
			}
			err = fmt.Errorf("%s is %q, %w", p, truncate(v, 64), err)
		}
		return time.Time{}, fmt.Errorf("%w: %w", ErrUnreadable, err)
	}, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
