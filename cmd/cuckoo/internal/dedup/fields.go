package dedup

import "github.com/dedupkit/cuckoo/internal/fields"

// The key and time forms of the command line (--key, --delimiter, --csv,
// --time-field, --time-format) live in package internal/fields, which
// package kafkadedup shares; these are its names as this package's
// callers know them.
type (
	// FieldSpec is fields.Spec: fields selected as cut -f selects them.
	FieldSpec = fields.Spec
	// KeyExtractor is fields.KeyExtractor: the key a FieldSpec selects.
	KeyExtractor = fields.KeyExtractor
	// TimeField is fields.TimeField: a line's time read from its fields.
	TimeField = fields.TimeField
	// TimeFormat is fields.TimeFormat: how a time field is written.
	TimeFormat = fields.TimeFormat
)

var (
	// ErrFieldSpec is fields.ErrSpec.
	ErrFieldSpec = fields.ErrSpec
	// ErrTime is fields.ErrTime.
	ErrTime = fields.ErrTime

	// The constructors and parsers of internal/fields.
	ParseFieldSpec  = fields.ParseSpec
	ParseDelimiter  = fields.ParseDelimiter
	NewKeyExtractor = fields.NewKeyExtractor
	NewTimeField    = fields.NewTimeField
	ParseTimeFormat = fields.ParseTimeFormat
)
