package cuckoo_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo"
)

// sample builds a small filter with distinct keys and a hot key, so the
// encoding has a table and duplicate counters.
func sample(t testing.TB, b, bits int, more ...cuckoo.Option) *cuckoo.Filter {
	opts := append([]cuckoo.Option{cuckoo.WithBucketSize(b), cuckoo.WithFingerprintBits(bits), cuckoo.WithSeed(42)}, more...)
	f, err := cuckoo.New(200, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(0); i < 150; i++ {
		if err := f.Add(key(0, i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 10; i++ {
		f.AddString("hot")
		f.AddString("warm")
	}
	return f
}

func TestEncodingRoundTrip(t *testing.T) {
	for _, l := range layouts {
		b := l.b
		for _, bits := range []int{4, 9, 12, 13, 16, 23, 32} {
			var more []cuckoo.Option
			if l.semi {
				more = append(more, cuckoo.WithSemiSorting())
			}
			f := sample(t, b, bits, more...)
			data := mustMarshal(t, f)
			if int64(len(data)) != f.EncodedSize() {
				t.Fatalf("EncodedSize %d, encoding %d bytes", f.EncodedSize(), len(data))
			}
			var buf bytes.Buffer
			n, err := f.WriteTo(&buf)
			if err != nil || n != int64(len(data)) || !bytes.Equal(buf.Bytes(), data) {
				t.Fatalf("WriteTo = %d, %v; differs from MarshalBinary", n, err)
			}
			var g cuckoo.Filter // the zero Filter decodes
			if err := g.UnmarshalBinary(data); err != nil {
				t.Fatalf("b=%d f=%d: %v", b, bits, err)
			}
			if !bytes.Equal(mustMarshal(t, &g), data) {
				t.Fatal("decode then encode changed the bytes")
			}
			if g.Len() != f.Len() || g.Seed() != f.Seed() || g.Capacity() != f.Capacity() ||
				g.FingerprintBits() != bits || g.BucketSize() != b || g.SemiSorted() != l.semi || g.Count([]byte("hot")) != f.Count([]byte("hot")) {
				t.Fatal("decoded filter differs")
			}
			for i := uint64(0); i < 150; i++ {
				if !g.Contains(key(0, i)) {
					t.Fatalf("key %d lost in a round trip", i)
				}
			}
			// The decoded filter goes on exactly like the original.
			for i := uint64(150); i < 190; i++ {
				if (f.Add(key(0, i)) == nil) != (g.Add(key(0, i)) == nil) {
					t.Fatal("decoded filter accepts different keys")
				}
			}
			if !bytes.Equal(mustMarshal(t, f), mustMarshal(t, &g)) {
				t.Fatal("original and decoded filter diverged")
			}
		}
	}
}

func TestEncodingIsDeterministic(t *testing.T) {
	a := mustMarshal(t, sample(t, 4, 12))
	b := mustMarshal(t, sample(t, 4, 12))
	if !bytes.Equal(a, b) {
		t.Fatal("the same operations gave different encodings")
	}
}

func TestReadFromStream(t *testing.T) {
	checkReadFromStream(t, sample(t, 4, 8), sample(t, 8, 16), func() decodable { return new(cuckoo.Filter) })
}

// encodable is a filter whose encoding the stream tests write.
type encodable interface {
	WriteTo(io.Writer) (int64, error)
	MarshalBinary() ([]byte, error)
	EncodedSize() int64
}

// checkReadFromStream writes two encodings and a trailer to one stream:
// ReadFrom must read exactly one encoding at a time, and the filters read
// must encode as the ones written.
func checkReadFromStream(t *testing.T, a, b encodable, fresh func() decodable) {
	t.Helper()
	var buf bytes.Buffer
	a.WriteTo(&buf)
	b.WriteTo(&buf)
	buf.WriteString("trailer")
	g1, g2 := fresh(), fresh()
	if n, err := g1.ReadFrom(&buf); err != nil || n != a.EncodedSize() {
		t.Fatalf("first ReadFrom = %d, %v", n, err)
	}
	if _, err := g2.ReadFrom(&buf); err != nil {
		t.Fatal(err)
	}
	if rest, _ := io.ReadAll(&buf); string(rest) != "trailer" {
		t.Fatalf("ReadFrom consumed past its encoding: %q left", rest)
	}
	if !bytes.Equal(mustMarshal(t, g1), mustMarshal(t, a)) || !bytes.Equal(mustMarshal(t, g2), mustMarshal(t, b)) {
		t.Fatal("streamed filters differ")
	}
}

// TestDamageIsDetected cuts and flips every bit of an encoding: each must
// fail with ErrCorrupt and leave the receiver as it was.
func TestDamageIsDetected(t *testing.T) {
	for _, semi := range []bool{false, true} {
		var more []cuckoo.Option
		if semi {
			more = append(more, cuckoo.WithSemiSorting())
		}
		testDamageIsDetected(t, mustMarshal(t, sample(t, 4, 12, more...)))
	}
}

func testDamageIsDetected(t *testing.T, data []byte) {
	receiver := sample(t, 2, 8)
	before := mustMarshal(t, receiver)
	expectCorrupt := func(what string, input []byte) {
		t.Helper()
		if err := receiver.UnmarshalBinary(input); !errors.Is(err, cuckoo.ErrCorrupt) {
			t.Fatalf("%s: UnmarshalBinary = %v", what, err)
		}
		if _, err := receiver.ReadFrom(bytes.NewReader(input)); !errors.Is(err, cuckoo.ErrCorrupt) {
			t.Fatalf("%s: ReadFrom = %v", what, err)
		}
	}
	for cut := 0; cut < len(data); cut++ {
		expectCorrupt("truncated", data[:cut])
	}
	for bit := 0; bit < len(data)*8; bit++ {
		c := bytes.Clone(data)
		c[bit/8] ^= 1 << (bit % 8)
		expectCorrupt("bit flip", c)
	}
	if err := receiver.UnmarshalBinary(append(bytes.Clone(data), 0)); !errors.Is(err, cuckoo.ErrCorrupt) {
		t.Fatalf("trailing byte: %v", err)
	}
	if !bytes.Equal(mustMarshal(t, receiver), before) {
		t.Fatal("a failed decode changed the receiver")
	}
}

// filterHeader is the size of a Filter encoding's header: the table words
// follow it.
const filterHeader = 72

// TestStructuralChecks edits header fields and the payload and re-seals the
// checksum: the decoder must still refuse every state operations cannot
// produce.
func TestStructuralChecks(t *testing.T) {
	data := mustMarshal(t, sample(t, 4, 12))
	edits := map[string]func(d []byte){
		"magic":          func(d []byte) { d[0] = 'X' },
		"version":        func(d []byte) { d[4] = 2 },
		"kind":           func(d []byte) { d[6] = 9 },
		"flags":          func(d []byte) { d[7] = 1 },
		"bucket size":    func(d []byte) { d[8] = 3 },
		"bits=3":         func(d []byte) { d[9] = 3 },
		"bits=33":        func(d []byte) { d[9] = 33 },
		"hash=0":         func(d []byte) { d[10] = 0 },
		"hash=2":         func(d []byte) { d[10] = 2 },
		"reserved":       func(d []byte) { d[11] = 1 },
		"segments=0":     func(d []byte) { binary.LittleEndian.PutUint32(d[64:], 0) },
		"segments=2":     func(d []byte) { binary.LittleEndian.PutUint32(d[64:], 2) },
		"reserved2":      func(d []byte) { d[68] = 1 },
		"kicks=0":        func(d []byte) { binary.LittleEndian.PutUint32(d[12:], 0) },
		"capacity=0":     func(d []byte) { binary.LittleEndian.PutUint64(d[24:], 0) },
		"capacity>slots": func(d []byte) { binary.LittleEndian.PutUint64(d[24:], 1<<40) },
		"odd buckets":    func(d []byte) { binary.LittleEndian.PutUint64(d[32:], binary.LittleEndian.Uint64(d[32:])+1) },
		"items+1":        func(d []byte) { binary.LittleEndian.PutUint64(d[40:], binary.LittleEndian.Uint64(d[40:])+1) },
		"words-1":        func(d []byte) { binary.LittleEndian.PutUint64(d[48:], binary.LittleEndian.Uint64(d[48:])-1) },
		"dups+1":         func(d []byte) { binary.LittleEndian.PutUint64(d[56:], binary.LittleEndian.Uint64(d[56:])+1) },
		"slot cleared":   func(d []byte) { clearFirstSlot(d) },
		"tail bits":      func(d []byte) { setTailBit(d) },
		"counter zero":   func(d []byte) { binary.LittleEndian.PutUint64(d[len(d)-4-8:], 0) },
		"counter key":    func(d []byte) { binary.LittleEndian.PutUint64(d[len(d)-4-16:], 1<<31|1) },
		"semi flag":      func(d []byte) { d[7] = 1 },
	}
	for name, edit := range edits {
		c := bytes.Clone(data)
		edit(c)
		var g cuckoo.Filter
		if err := g.UnmarshalBinary(reseal(c)); !errors.Is(err, cuckoo.ErrCorrupt) {
			t.Errorf("%s: UnmarshalBinary = %v", name, err)
		}
	}
	// Semi-sorted buckets must be canonical: a nibble code past 3875, or
	// high parts out of order, is refused even with a valid checksum and
	// item count.
	empty, _ := cuckoo.New(200, cuckoo.WithFingerprintBits(13), cuckoo.WithSemiSorting(), cuckoo.WithSeed(1))
	for name, edit := range map[string]func(d []byte){
		"code=4095": func(d []byte) { d[filterHeader] |= 0xff; d[filterHeader+1] |= 0x0f },
		"unsorted": func(d []byte) {
			// Bucket 0 holds nibbles 0,0,0,0 (code 0); give slots 2 and 3
			// the high parts 5 and 3 (9 bits each, at bits 30 and 39): the
			// fingerprints 0x50 and 0x30 in decreasing order.
			w := binary.LittleEndian.Uint64(d[filterHeader:])
			w |= 5<<30 | 3<<39
			binary.LittleEndian.PutUint64(d[filterHeader:], w)
			binary.LittleEndian.PutUint64(d[40:], 2) // two items
		},
	} {
		c := mustMarshal(t, empty)
		edit(c)
		var g cuckoo.Filter
		if err := g.UnmarshalBinary(reseal(c)); !errors.Is(err, cuckoo.ErrCorrupt) {
			t.Errorf("semi %s: UnmarshalBinary = %v", name, err)
		}
	}
	// The same edit in sorted order is a valid filter: the check above is
	// about the order, not the edit.
	c := mustMarshal(t, empty)
	w := binary.LittleEndian.Uint64(c[filterHeader:])
	w |= 3<<30 | 5<<39
	binary.LittleEndian.PutUint64(c[filterHeader:], w)
	binary.LittleEndian.PutUint64(c[40:], 2)
	var g cuckoo.Filter
	if err := g.UnmarshalBinary(reseal(c)); err != nil {
		t.Errorf("semi sorted edit: %v", err)
	}
}

// clearFirstSlot zeroes the first non-zero table word, which removes whole
// fingerprints without updating the item count.
func clearFirstSlot(d []byte) {
	for i := filterHeader; i+8 <= len(d); i += 8 {
		if binary.LittleEndian.Uint64(d[i:]) != 0 {
			clear(d[i : i+8])
			return
		}
	}
}

// setTailBit sets the highest bit of the last table word, past the last
// bucket (the sample's table does not end on a word boundary).
func setTailBit(d []byte) {
	words := binary.LittleEndian.Uint64(d[48:])
	d[filterHeader+8*words-1] |= 0x80
}

// TestHugeHeaderDoesNotAllocate: a header claiming a 2^32-bucket table,
// followed by nothing, must fail fast without allocating that table, from
// a byte slice and from a stream. (On a 32-bit platform a stream's table
// of 32 GiB is refused from the header with ErrInvalidParameter:
// TestReadFromRefusesTableLargerThanPlatformSliceBeforeReadingIt.)
func TestHugeHeaderDoesNotAllocate(t *testing.T) {
	data := mustMarshal(t, sample(t, 4, 16))
	h := bytes.Clone(data[:filterHeader])
	binary.LittleEndian.PutUint64(h[24:], 1<<33)           // capacity
	binary.LittleEndian.PutUint64(h[32:], 1<<32)           // buckets
	binary.LittleEndian.PutUint64(h[48:], (1<<32)*4*16/64) // 32 GiB of words
	binary.LittleEndian.PutUint64(h[40:], 0)
	binary.LittleEndian.PutUint64(h[56:], 0)
	for name, decode := range map[string]func() error{
		"bytes":  func() error { var g cuckoo.Filter; return g.UnmarshalBinary(h) },
		"stream": func() error { var g cuckoo.Filter; _, err := g.ReadFrom(bytes.NewReader(h)); return err },
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := decode()
		runtime.ReadMemStats(&after)
		want := cuckoo.ErrCorrupt
		if name == "stream" && strconv.IntSize == 32 {
			want = cuckoo.ErrInvalidParameter
		}
		if !errors.Is(err, want) {
			t.Fatalf("%s: %v, want %v", name, err, want)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
			t.Fatalf("%s: decoding a lying header allocated %d bytes", name, grew)
		}
	}
}

func TestReadFromReaderError(t *testing.T) {
	data := mustMarshal(t, sample(t, 4, 16))
	boom := errors.New("boom")
	var g cuckoo.Filter
	_, err := g.ReadFrom(io.MultiReader(bytes.NewReader(data[:100]), errReader{boom}))
	if !errors.Is(err, boom) || errors.Is(err, cuckoo.ErrCorrupt) {
		t.Fatalf("ReadFrom with a failing reader = %v; want the reader's error, not ErrCorrupt", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// TestGolden decodes the committed version-1 encodings: decoders must read
// every version ever written. Write new files only for a new version, with
// -update (and keep the old files).
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		file     string
		b, bits  int
		semi     bool
		segments int
	}{{"filter-v1-b4-f12.bin", 4, 12, false, 1}, {"filter-v1-b2-f7.bin", 2, 7, false, 1}, {"filter-v1-b8-f32.bin", 8, 32, false, 1},
		{"filter-v1-b4-f13-semi.bin", 4, 13, true, 1}, {"filter-v1-b4-f16-seg3.bin", 4, 16, false, 3}} {
		path := filepath.Join("testdata", tc.file)
		more := []cuckoo.Option{cuckoo.WithSegments(tc.segments)}
		if tc.semi {
			more = append(more, cuckoo.WithSemiSorting())
		}
		want := mustMarshal(t, sample(t, tc.b, tc.bits, more...))
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		g := checkGoldenFilter(t, tc.file, data)
		if g.Segments() != tc.segments {
			t.Fatalf("%s: %d segments, want %d", tc.file, g.Segments(), tc.segments)
		}
	}
}

// checkGoldenFilter decodes a golden file of sample's filter, checks what
// it holds, that it re-encodes to itself and goes on taking keys, and
// returns it.
func checkGoldenFilter(t *testing.T, file string, data []byte) *cuckoo.Filter {
	t.Helper()
	var g cuckoo.Filter
	if err := g.UnmarshalBinary(data); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for i := uint64(0); i < 150; i++ {
		if !g.Contains(key(0, i)) {
			t.Fatalf("%s: key %d missing", file, i)
		}
	}
	if g.CountString("hot") < 10 || g.Len() != 170 {
		t.Fatalf("%s: hot count %d, len %d", file, g.CountString("hot"), g.Len())
	}
	// A decoded file re-encodes to itself. (The bytes today's code
	// writes for the same operations may differ from the file's: where
	// an insert puts a fingerprint is up to the insertion algorithm, not
	// the format. TestEncodingIsDeterministic pins determinism.)
	if !bytes.Equal(mustMarshal(t, &g), data) {
		t.Fatalf("%s: decoding and re-encoding changed the bytes", file)
	}
	// And it goes on working: today's code can add the rest.
	for i := uint64(150); i < 160; i++ {
		if err := g.Add(key(0, i)); err != nil || !g.Contains(key(0, i)) {
			t.Fatalf("%s: adding to a decoded golden filter: %v", file, err)
		}
	}
	return &g
}

// TestDecodersRefusePreFormat1Files: files written before format 1 was frozen carry
// the same version number but a retired hash (the hash byte is 0); every
// decoder refuses them with an error that says so.
func TestDecodersRefusePreFormat1Files(t *testing.T) {
	for _, file := range []string{"pre-v1-filter.bin", "pre-v1-scalable.bin"} {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		for name, decode := range map[string]func([]byte) error{
			"Filter":     new(cuckoo.Filter).UnmarshalBinary,
			"Scalable":   new(cuckoo.Scalable).UnmarshalBinary,
			"Concurrent": new(cuckoo.Concurrent).UnmarshalBinary,
			"Filter.ReadFrom": func(p []byte) error {
				_, err := new(cuckoo.Filter).ReadFrom(bytes.NewReader(p))
				return err
			},
			"Scalable.ReadFrom": func(p []byte) error {
				_, err := new(cuckoo.Scalable).ReadFrom(bytes.NewReader(p))
				return err
			},
			"Concurrent.ReadFrom": func(p []byte) error {
				_, err := new(cuckoo.Concurrent).ReadFrom(bytes.NewReader(p))
				return err
			},
		} {
			err := decode(data)
			if !errors.Is(err, cuckoo.ErrCorrupt) || !strings.Contains(err.Error(), "before format 1.0") {
				t.Errorf("%s of %s: %v; want ErrCorrupt saying it was written before format 1.0", name, file, err)
			}
		}
	}
}

// TestDecodersRefuseCountersPastTheItemBound: an encoding whose counters add up past the
// bound on items (here a duplicate counter of 2^62 with the item count to
// match, and a Scalable overflow counter of 2^63, both re-signed) is
// refused: loaded, Len would overflow on later Adds.
func TestDecodersRefuseCountersPastTheItemBound(t *testing.T) {
	f := sample(t, 4, 12)
	data := mustMarshal(t, f)
	// The last duplicate counter's copies are the 8 bytes before the CRC.
	n := len(data)
	last := binary.LittleEndian.Uint64(data[n-12:])
	p := bytes.Clone(data)
	binary.LittleEndian.PutUint64(p[n-12:], 1<<62)
	binary.LittleEndian.PutUint64(p[40:], f.Len()-last+1<<62)
	if err := new(cuckoo.Filter).UnmarshalBinary(reseal(p)); !errors.Is(err, cuckoo.ErrCorrupt) {
		t.Fatalf("Filter with a duplicate counter of 2^62: %v", err)
	}

	s := sampleScalable(t, layout{4, false}, 12)
	if s.OverflowCopies() == 0 {
		t.Fatal("the sample has no overflow counters")
	}
	data = mustMarshal(t, s)
	n = len(data)
	for _, c := range []uint64{1 << 63, 1<<64 - 1, 1<<62 + 1} {
		p := bytes.Clone(data)
		binary.LittleEndian.PutUint64(p[n-12:], c)
		p = reseal(p)
		if err := new(cuckoo.Scalable).UnmarshalBinary(p); !errors.Is(err, cuckoo.ErrCorrupt) {
			t.Errorf("Scalable with an overflow counter of %#x: %v", c, err)
		}
		if err := new(cuckoo.Concurrent).UnmarshalBinary(p); !errors.Is(err, cuckoo.ErrCorrupt) {
			t.Errorf("Concurrent from a Scalable with an overflow counter of %#x: %v", c, err)
		}
	}
}
