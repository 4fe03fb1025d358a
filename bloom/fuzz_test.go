package bloom_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/dedupkit/cuckoo/bloom"
)

// FuzzDecode feeds arbitrary bytes to the decoders of every type, as they
// are and with the checksum fixed up (so that the header checks behind it
// are reached). Decoding must never panic; it fails with ErrCorrupt or
// yields a filter that re-encodes to exactly the input, answers lookups,
// takes adds and reports its statistics. ReadFrom must agree with
// UnmarshalBinary. Allocation is bounded by the codec (TestDecodeHugeLength).
//
// The seed corpus is the valid encodings of samples plus the files in
// testdata/fuzz/FuzzDecode, which TestFuzzCorpus writes with -update.
func FuzzDecode(f *testing.F) {
	for _, s := range samples(f) {
		enc, _ := s.MarshalBinary()
		f.Add(enc)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeAll(t, data)
		if len(data) >= 4 {
			decodeAll(t, fixCRC(data))
		}
	})
}

func decodeAll(t *testing.T, data []byte) {
	for _, mk := range []func() decoder{
		func() decoder { return new(bloom.Filter) },
		func() decoder { return new(bloom.Counting) },
		func() decoder { return new(bloom.Scalable) },
	} {
		d, r := mk(), mk()
		err := d.UnmarshalBinary(data)
		n, rerr := r.ReadFrom(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, bloom.ErrCorrupt) {
				t.Fatalf("%T.UnmarshalBinary: error %v does not wrap ErrCorrupt", d, err)
			}
			if rerr == nil && n == int64(len(data)) {
				t.Fatalf("%T: ReadFrom accepted what UnmarshalBinary refused: %v", d, err)
			}
			continue
		}
		if rerr != nil || n != int64(len(data)) {
			t.Fatalf("%T: UnmarshalBinary accepted, ReadFrom = %d, %v", d, n, rerr)
		}
		enc, err := d.MarshalBinary()
		if err != nil || !bytes.Equal(enc, data) {
			t.Fatalf("%T: re-encoding differs (%v)", d, err)
		}
		s := d.(set)
		var kb keyBuf
		for i := range uint64(50) {
			s.Contains(kb.at(1, i))
		}
		_ = s.EstimatedCount()
		if _, ok := s.(*bloom.Scalable); !ok {
			_ = s.FalsePositiveRate() // a Scalable's may take long with 256 dense layers
		}
		before := s.Len()
		fill(s, 0, 20)
		requirePresent(t, s, 0, 20)
		if s.Len() < before {
			t.Fatalf("%T: Len went down on Add", d)
		}
	}
}

// TestFuzzCorpus writes the checked-in seed corpus with -update: valid
// encodings, damaged ones, and lying headers with valid checksums.
func TestFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	if !*update {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		if len(files) == 0 {
			t.Fatalf("no seed corpus in %s: run go test -run TestFuzzCorpus -update", dir)
		}
		return
	}
	m := samples(t)
	enc := map[string][]byte{}
	for name, s := range m {
		enc[name], _ = s.MarshalBinary()
	}
	seeds := map[string][]byte{
		"valid-blocked":            enc["blocked"],
		"valid-classic":            enc["classic"],
		"valid-counting":           enc["counting"],
		"valid-scalable":           enc["scalable"],
		"truncated-header":         enc["blocked"][:30],
		"truncated-payload":        enc["scalable"][:200],
		"bad-checksum":             append(append([]byte(nil), enc["classic"][:len(enc["classic"])-1]...), 0),
		"huge-words":               put(enc["blocked"], 48, uint64(1<<36)),
		"huge-layers":              put(enc["scalable"], 48, uint32(1<<31)),
		"lying-capacity":           put(enc["counting"], 24, uint64(1<<40)),
		"scalable-layer-off-sched": put(enc["scalable"], 64, uint64(11)),
		"empty":                    {},
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range seeds {
		content := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(data)))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
