package codec

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func encodeSample(t *testing.T, words []uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	e := NewEncoder(&buf, 0)
	e.Bytes([]byte("TEST"))
	e.Uint16(1)
	e.Uint8(7)
	e.Uint32(0xdeadbeef)
	e.Uint64(uint64(len(words)))
	e.Words(words)
	n, err := e.Finish()
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("Finish = %d, %v; buffer holds %d", n, err, buf.Len())
	}
	return buf.Bytes()
}

func decodeSample(d *Decoder) ([]uint64, error) {
	magic := d.Bytes(4, 4)
	if d.Uint16() != 1 || d.Uint8() != 7 || d.Uint32() != 0xdeadbeef {
		d.Fail(errors.New("bad header"))
	}
	if d.Err() == nil && string(magic) != "TEST" {
		d.Fail(errors.New("bad magic"))
	}
	n := d.Uint64()
	words := d.WordsGrow(n, 1, 1<<30)
	if err := d.VerifyChecksum(); err != nil {
		return nil, err
	}
	return words, d.ExpectEnd()
}

func TestRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 7, 100_000, 300_000} {
		words := make([]uint64, n)
		for i := range words {
			words[i] = uint64(i) * 0x9e3779b97f4a7c15
		}
		data := encodeSample(t, words)
		for name, d := range map[string]*Decoder{
			"bytes":  NewBytesDecoder(data),
			"stream": NewDecoder(iotestOneByte(bytes.NewReader(data), n < 10)),
		} {
			got, err := decodeSample(d)
			if err != nil {
				t.Fatalf("n=%d %s: %v", n, name, err)
			}
			if len(got) != n+1 || got[n] != 0 {
				t.Fatalf("n=%d %s: got %d words", n, name, len(got))
			}
			for i := range words {
				if got[i] != words[i] {
					t.Fatalf("n=%d %s: word %d differs", n, name, i)
				}
			}
		}
	}
}

// iotestOneByte returns r, or when slow is set a reader that delivers one
// byte per call, to exercise short reads.
func iotestOneByte(r io.Reader, slow bool) io.Reader {
	if !slow {
		return r
	}
	return oneByteReader{r}
}

type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

func TestEveryTruncationFails(t *testing.T) {
	data := encodeSample(t, []uint64{1, 2, 3})
	for cut := 0; cut < len(data); cut++ {
		if _, err := decodeSample(NewBytesDecoder(data[:cut])); err == nil {
			t.Fatalf("cut at %d decoded without error", cut)
		}
		if _, err := decodeSample(NewDecoder(bytes.NewReader(data[:cut]))); err == nil {
			t.Fatalf("stream cut at %d decoded without error", cut)
		}
	}
	if _, err := decodeSample(NewBytesDecoder(append(data, 0))); !errors.Is(err, ErrTrailing) {
		t.Fatalf("trailing byte: %v", err)
	}
}

func TestEveryBitFlipFails(t *testing.T) {
	data := encodeSample(t, []uint64{1, 2, 3})
	for i := 0; i < len(data)*8; i++ {
		c := bytes.Clone(data)
		c[i/8] ^= 1 << (i % 8)
		if _, err := decodeSample(NewBytesDecoder(c)); err == nil {
			t.Fatalf("flip of bit %d decoded without error", i)
		}
	}
}

// TestHugeLengthDoesNotAllocate: a header claiming 2^29 words (4 GiB) over a
// stream that ends at once must fail after allocating about one chunk.
func TestHugeLengthDoesNotAllocate(t *testing.T) {
	var buf bytes.Buffer
	e := NewEncoder(&buf, 0)
	e.Bytes([]byte("TEST"))
	e.Uint16(1)
	e.Uint8(7)
	e.Uint32(0xdeadbeef)
	e.Uint64(1 << 29)
	e.Finish()
	data := buf.Bytes()
	if _, err := decodeSample(NewBytesDecoder(data)); !errors.Is(err, ErrTruncated) {
		t.Fatalf("bytes: %v", err)
	}
	allocs := testing.AllocsPerRun(5, func() {
		decodeSample(NewDecoder(bytes.NewReader(data)))
	})
	if allocs > 20 {
		t.Fatalf("%v allocations", allocs)
	}
	if _, err := decodeSample(NewDecoder(bytes.NewReader(data))); !errors.Is(err, ErrTruncated) {
		t.Fatalf("stream: %v", err)
	}
}

type failWriter struct{ after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.after <= 0 {
		return 0, errors.New("disk full")
	}
	f.after--
	return len(p), nil
}

func TestEncoderStickyError(t *testing.T) {
	e := NewEncoder(&failWriter{after: 1}, 0)
	e.Words(make([]uint64, 100_000))
	e.Uint8(1)
	if _, err := e.Finish(); err == nil || err.Error() != "disk full" {
		t.Fatalf("Finish error = %v", err)
	}
}
