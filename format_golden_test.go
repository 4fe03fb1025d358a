package cuckoo_test

import (
	"bytes"
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo"
)

// TestEncodersWriteTheGoldenBytes: every encoder of the package writes,
// for a filter built by the same operations, the bytes committed in
// testdata/encoders/ (written once, by the code before the header moved to
// internal/format; a Window's is its golden file, which today's code
// still writes), and each file decodes and re-encodes to itself. A
// change to the encoders that moves a byte fails here. (So would a change
// to where an insert puts a fingerprint, which is not the format's: then
// decoding and re-encoding the committed file must still give it back, and
// the file is written again with -update after review.)
func TestEncodersWriteTheGoldenBytes(t *testing.T) {
	concurrent := func(growth float64) func(t *testing.T) encoderDecoder {
		return func(t *testing.T) encoderDecoder {
			opts := []cuckoo.Option{cuckoo.WithFingerprintBits(12), cuckoo.WithSeed(42)}
			if growth != 0 {
				opts = append(opts, cuckoo.WithGrowth(growth))
			}
			c, err := cuckoo.NewConcurrent(40, opts...)
			if err != nil {
				t.Fatal(err)
			}
			n := uint64(30)
			if growth != 0 {
				n = 300
			}
			for i := range n {
				if err := c.Add(key(0, i)); err != nil {
					t.Fatal(err)
				}
			}
			for range 10 {
				c.AddString("hot")
			}
			return c
		}
	}
	for _, tc := range []struct {
		file  string
		build func(t *testing.T) encoderDecoder
		empty func() encoderDecoder
	}{
		{"encoders/filter-b4-f12.bin", func(t *testing.T) encoderDecoder { return sample(t, 4, 12) }, func() encoderDecoder { return new(cuckoo.Filter) }},
		{"encoders/filter-b2-f7.bin", func(t *testing.T) encoderDecoder { return sample(t, 2, 7) }, func() encoderDecoder { return new(cuckoo.Filter) }},
		{"encoders/filter-b4-f13-semi.bin", func(t *testing.T) encoderDecoder { return sample(t, 4, 13, cuckoo.WithSemiSorting()) },
			func() encoderDecoder { return new(cuckoo.Filter) }},
		{"encoders/filter-b4-f16-seg3.bin", func(t *testing.T) encoderDecoder { return sample(t, 4, 16, cuckoo.WithSegments(3)) },
			func() encoderDecoder { return new(cuckoo.Filter) }},
		{"encoders/scalable-b4-f12.bin", func(t *testing.T) encoderDecoder { return growingScalable(t, layout{4, false}, 12) },
			func() encoderDecoder { return new(cuckoo.Scalable) }},
		{"encoders/scalable-b4-f13-semi.bin", func(t *testing.T) encoderDecoder { return growingScalable(t, layout{4, true}, 13) },
			func() encoderDecoder { return new(cuckoo.Scalable) }},
		{"encoders/concurrent-f12.bin", concurrent(0), func() encoderDecoder { return new(cuckoo.Concurrent) }},
		{"encoders/concurrent-growing-f12.bin", concurrent(2), func() encoderDecoder { return new(cuckoo.Concurrent) }},
		{"window-v1-b4-f12.bin", func(t *testing.T) encoderDecoder { w, _ := windowSample(t); return w },
			func() encoderDecoder { return new(cuckoo.Window) }},
	} {
		t.Run(path.Base(tc.file), func(t *testing.T) {
			built := mustMarshal(t, tc.build(t))
			data := golden(t, tc.file, built)
			if !bytes.Equal(built, data) {
				t.Errorf("the encoder wrote %d bytes that differ from the committed %d", len(built), len(data))
			}
			g := tc.empty()
			if err := g.UnmarshalBinary(data); err != nil {
				t.Fatal(err)
			}
			if again := mustMarshal(t, g); !bytes.Equal(again, data) {
				t.Error("decoding and re-encoding changed the bytes")
			}
		})
	}
}

type encoderDecoder interface {
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
}

// growingScalable returns sampleScalable grown until its newest table
// grows in place past its first level, in a chain of three tables or
// more: an encoding with every part a Scalable's can hold.
func growingScalable(t *testing.T, l layout, bits int) *cuckoo.Scalable {
	s := sampleScalable(t, l, bits)
	for i := uint64(300); !s.NewestGrowing() || s.NewestGrowingLevel() < 1 || s.NumTables() < 3; i++ {
		s.Add(key(0, i))
	}
	return s
}

// TestDecodersRejectUnknownVersionsAndKinds: a file of every kind whose
// version is one this build does not read, or whose kind byte is unknown,
// gets ErrCorrupt saying so from every decoder (resealed, so the header's
// check, not the checksum, must catch it).
func TestDecodersRejectUnknownVersionsAndKinds(t *testing.T) {
	decoders := map[string]func([]byte) error{
		"Filter":     new(cuckoo.Filter).UnmarshalBinary,
		"Scalable":   new(cuckoo.Scalable).UnmarshalBinary,
		"Concurrent": new(cuckoo.Concurrent).UnmarshalBinary,
		"Window":     new(cuckoo.Window).UnmarshalBinary,
		"Filter.ReadFrom": func(p []byte) error {
			_, err := new(cuckoo.Filter).ReadFrom(bytes.NewReader(p))
			return err
		},
		"Concurrent.ReadFrom": func(p []byte) error {
			_, err := new(cuckoo.Concurrent).ReadFrom(bytes.NewReader(p))
			return err
		},
		"Window.ReadFrom": func(p []byte) error {
			_, err := new(cuckoo.Window).ReadFrom(bytes.NewReader(p))
			return err
		},
	}
	for _, file := range []string{"encoders/filter-b4-f12.bin", "encoders/scalable-b4-f12.bin", "window-v1-b4-f12.bin"} {
		good := golden(t, file, nil)
		for _, c := range []struct {
			name string
			at   int
			v    byte
			want string
		}{
			{"version 0", 4, 0, "unsupported format version 0"},
			{"version 2", 4, 2, "unsupported format version 2"},
			{"kind 9", 6, 9, "kind 9"},
		} {
			data := bytes.Clone(good)
			data[c.at] = c.v
			data = reseal(data)
			for name, decode := range decoders {
				if err := decode(data); !errors.Is(err, cuckoo.ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s of %s with %s: %v; want ErrCorrupt saying %q", name, file, c.name, err, c.want)
				}
			}
		}
	}
}
