package filterfile

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/dedupkit/cuckoo"
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

// Info describes the filter: kind, parameters, items, load, expected
// false-positive rate, size, seed and format version.
func (f *Filter) Info() Fields {
	fs := Fields{
		{"kind", "kind", f.kind.String(), f.kind.Description()},
		{"format_version", "format version", f.version, fmt.Sprintf("%s version %d", f.magic(), f.version)},
	}
	add := func(key, label string, v any, text string) {
		fs = append(fs, Field{key, label, v, text})
	}
	switch f.kind {
	case Cuckoo:
		c := f.cf
		add("items", "items", c.Len(), units.Count(c.Len()))
		add("capacity", "capacity", c.Capacity(), units.Count(c.Capacity())+" distinct keys")
		cuckooShape(add, c.LoadFactor(), c.BucketSize(), c.FingerprintBits(), c.SemiSorted(), "")
		add("buckets", "buckets", c.NumBuckets(), units.Count(c.NumBuckets()))
		add("max_kicks", "max kicks", c.MaxKicks(), fmt.Sprint(c.MaxKicks()))
		add("fpr", "false positives now", c.FalsePositiveRate(), units.Rate(c.FalsePositiveRate()))
		if p, err := cuckoo.NewPlan(c.Capacity(), cuckooOptions(Spec{BucketSize: c.BucketSize(),
			FingerprintBits: c.FingerprintBits(), SemiSorted: c.SemiSorted()})...); err == nil {
			add("fpr_at_capacity", "false positives at capacity", p.FalsePositiveRate, units.Rate(p.FalsePositiveRate))
		}
	case CuckooScalable:
		c := f.cs
		add("items", "items", c.Len(), units.Count(c.Len()))
		add("capacity", "capacity", c.Capacity(), units.Count(c.Capacity())+" distinct keys in the current tables (it grows)")
		add("initial_capacity", "initial capacity", c.InitialCapacity(), units.Count(c.InitialCapacity()))
		add("tables", "tables", c.NumTables(), fmt.Sprintf("%d (growth ×%g)", c.NumTables(), c.Growth()))
		cuckooShape(add, c.LoadFactor(), c.BucketSize(), c.FingerprintBits(), c.SemiSorted(), " in the first table, more in later ones")
		add("fpr", "false positives now", c.FalsePositiveRate(), units.Rate(c.FalsePositiveRate()))
		bound := 2 * c.TargetFalsePositiveRate()
		add("fpr_bound", "false positives, bound", bound, units.Rate(bound)+" (at any size)")
	case BloomBlocked, BloomClassic, BloomCounting, BloomScalable:
		var est uint64
		var k int
		switch f.kind {
		case BloomBlocked, BloomClassic:
			est, k = f.bf.EstimatedCount(), f.bf.HashCount()
		case BloomCounting:
			est, k = f.bc.EstimatedCount(), f.bc.HashCount()
		case BloomScalable:
			est = f.bs.EstimatedCount()
		}
		add("items", "items", f.Len(), units.Count(f.Len())+" added")
		add("estimated_keys", "estimated keys", est, units.Count(est)+" (from the bits set)")
		add("capacity", "capacity", f.Capacity(), units.Count(f.Capacity())+" keys at the target rate")
		if k != 0 {
			add("hash_count", "hash functions", k, fmt.Sprint(k))
		}
		if f.kind == BloomScalable {
			add("layers", "layers", f.bs.Layers(), fmt.Sprint(f.bs.Layers()))
		}
		rate := f.FalsePositiveRate()
		add("fpr", "false positives now", rate, units.Rate(rate))
		if f.target > 0 {
			label := "false positives at capacity"
			if f.kind == BloomScalable {
				label = "false positives, bound"
			}
			add("fpr_target", label, f.target, units.Rate(f.target))
		}
	}
	add("seed", "seed", fmt.Sprintf("%#016x", f.Seed()), fmt.Sprintf("%#016x", f.Seed()))
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

// cuckooShape adds the fields a cuckoo filter's table shape gives.
func cuckooShape(add func(key, label string, v any, text string), load float64, slots, bits int, semi bool, bitsNote string) {
	add("load", "load", load, fmt.Sprintf("%.1f %% of the slots", 100*load))
	add("bucket_size", "bucket size", slots, fmt.Sprintf("%d slots", slots))
	fp := fmt.Sprintf("%d bits%s", bits, bitsNote)
	if semi {
		fp += ", semi-sorted buckets"
	}
	add("fingerprint_bits", "fingerprint", bits, fp)
	add("semi_sorted", "semi-sorted", semi, fmt.Sprint(semi))
}

func (f *Filter) magic() string {
	if f.kind.IsBloom() {
		return "BLMF"
	}
	return "CKOO"
}
