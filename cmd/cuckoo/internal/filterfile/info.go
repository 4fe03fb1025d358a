package filterfile

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
)

// Field is one fact about a filter, for `cuckoo info`: Key names it in
// JSON, Label in text, Value is the raw value and Text its human form.
type Field struct {
	Key   string
	Label string
	Value any
	Text  string
}

// Fields is an ordered list of facts; it marshals to a JSON object whose
// keys keep that order.
type Fields []Field

// MarshalJSON writes the fields as one JSON object, in order.
func (fs Fields) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.Key)
		v, err := json.Marshal(f.Value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// How the items of a filter count a key added more than once, after the
// count in Info: a filter that stores copies (cuckoo filters, counting
// Bloom filters: a copy needs a delete of its own) counts each, a plain
// Bloom filter cannot tell a repeat from a key already there (it sets no
// bit) and counts neither.
const (
	copiesCount      = " (each copy of a key counts)"
	repeatsUncounted = " (a key added again sets no bit and is not counted again)"
)

// addFact adds one fact to a list of Fields.
type addFact = func(key, label string, v any, text string)

// Info describes the filter: kind, format version, then what its kind
// tells (items, parameters, load, expected false-positive rate), then
// seed, memory and file size.
func (f *Filter) Info() Fields {
	fs := Fields{
		{"kind", "kind", f.kind.String(), f.kind.Description()},
		{"format_version", "format version", f.version, fmt.Sprintf("%s version %d", f.magic(), f.version)},
	}
	add := func(key, label string, v any, text string) {
		fs = append(fs, Field{key, label, v, text})
	}
	f.f.facts(add)
	add("seed", "seed", units.Seed(f.Seed()), units.Seed(f.Seed()))
	size := f.SizeInBytes()
	add("memory_bytes", "memory", size, units.Bytes(size))
	if n := f.Len(); n > 0 {
		bpi := float64(size*8) / float64(n)
		add("bits_per_item", "bits per item", bpi, fmt.Sprintf("%.2f (memory / items)", bpi))
	}
	enc := f.EncodedSize()
	add("file_bytes", "file size", enc, units.Bytes(uint64(enc)))
	return fs
}

func (f *Filter) magic() string { ki, _ := f.kind.info(); return ki.file.Family().Magic() }
