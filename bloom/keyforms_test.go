package bloom_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/dedupkit/cuckoo/bloom"
	"github.com/dedupkit/cuckoo/internal/hash"
)

// intForms is what each filter type offers in integer and hash forms.
type intForms interface {
	set
	AddUint64(key uint64) error
	AddUniqueUint64(key uint64) (bool, error)
	AddUnique(key []byte) (bool, error)
	AddHash(h uint64) error
	AddUniqueHash(h uint64) (bool, error)
	ContainsUint64(key uint64) bool
	ContainsHash(h uint64) bool
}

// TestKeyForms: an integer key is its 8 little-endian bytes, and a hash
// form with the key's seeded hash is the key: a filter written through
// those forms answers and encodes as its twin written with bytes.
func TestKeyForms(t *testing.T) {
	const seed = 0x5eed
	mks := map[string]func() intForms{
		"New":         func() intForms { f, _ := bloom.New(3000, bloom.WithSeed(seed)); return f },
		"NewClassic":  func() intForms { f, _ := bloom.NewClassic(3000, bloom.WithSeed(seed)); return f },
		"NewCounting": func() intForms { f, _ := bloom.NewCounting(3000, bloom.WithSeed(seed)); return f },
		"NewScalable": func() intForms { f, _ := bloom.NewScalable(300, bloom.WithSeed(seed)); return f },
	}
	for name, mk := range mks {
		t.Run(name, func(t *testing.T) {
			a, b := mk(), mk()
			le := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
			for v := range uint64(2000) {
				var x, y bool
				switch v % 4 {
				case 0:
					a.AddUint64(v)
					b.Add(le(v))
				case 1:
					x, y = addedOK(a.AddUniqueUint64(v)), addedOK(b.AddUnique(le(v)))
				case 2:
					a.AddHash(hash.Sum64Uint64(v, seed))
					b.Add(le(v))
				case 3:
					x, y = addedOK(a.AddUniqueHash(hash.Sum64Uint64(v, seed))), addedOK(b.AddUnique(le(v)))
				}
				if x != y {
					t.Fatalf("key %d: added %v, twin %v", v, x, y)
				}
			}
			for v := range uint64(4000) {
				want := b.Contains(le(v))
				if a.ContainsUint64(v) != want || a.ContainsHash(hash.Sum64Uint64(v, seed)) != want || (v < 2000 && !want) {
					t.Fatalf("key %d: ContainsUint64 %v, ContainsHash %v, twin %v", v, a.ContainsUint64(v), a.ContainsHash(hash.Sum64Uint64(v, seed)), want)
				}
			}
			ea, _ := a.MarshalBinary()
			eb, _ := b.MarshalBinary()
			if !bytes.Equal(ea, eb) {
				t.Fatal("the encodings differ")
			}
		})
	}
	c, _ := bloom.NewCounting(100, bloom.WithSeed(seed))
	c.AddUint64(7)
	c.AddHash(hash.Sum64Uint64(8, seed))
	if !addedOK(c.AddUniqueString("s")) || addedOK(c.AddUniqueString("s")) {
		t.Fatal("Counting.AddUniqueString")
	}
	if !c.DeleteUint64(8) || !c.DeleteHash(hash.Sum64Uint64(7, seed)) || c.ContainsUint64(7) || c.Len() != 1 {
		t.Fatal("Counting's integer and hash deletes")
	}
}
