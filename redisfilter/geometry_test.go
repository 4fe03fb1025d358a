package redisfilter

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/testseed"
)

// bitfieldGet is what Redis's BITFIELD GET replies for a field of type
// typ at bit offset off of the string s: the bits read most significant
// first (bit 0 of the string is the top bit of its first byte), zeros past
// its end, signed when typ is iN.
func bitfieldGet(s []byte, typ string, off int64) int64 {
	width := 0
	for _, c := range typ[1:] {
		width = width*10 + int(c-'0')
	}
	var v uint64
	for k := range int64(width) {
		bit := off + k
		var b uint64
		if byteIdx := bit / 8; byteIdx < int64(len(s)) {
			b = uint64(s[byteIdx]>>(7-bit%8)) & 1
		}
		v = v<<1 | b
	}
	if typ[0] == 'i' && width < 64 && v>>(width-1) == 1 {
		v |= ^uint64(0) << width
	}
	return int64(v)
}

// refSlot reads slot j of bucket i straight from the bits: bit k of the
// segment is bit k%8 of byte k/8 (the format's little-endian words).
func refSlot(g *geometry, s []byte, i, j uint64) uint64 {
	var v uint64
	start := i*g.bucketBits + j*g.f
	for k := range g.f {
		bit := start + k
		v |= uint64(s[bit/8]>>(bit%8)&1) << k
	}
	return v
}

// checkCodec compares the lookup path's decoding of bucket i (fields,
// replies as BITFIELD gives them, bytes, slots) with refSlot.
func checkCodec(t *testing.T, g *geometry, segment []byte, i uint64) {
	t.Helper()
	args := g.appendFields(nil, i)
	if len(args) != 3*g.fields(i) {
		t.Fatalf("bucket %d: %d args for %d fields", i, len(args), g.fields(i))
	}
	var vals []int64
	for k := 0; k < len(args); k += 3 {
		off := args[k+2].(int64)
		if off%8 != 0 {
			t.Fatalf("field at bit %d: not byte-aligned", off)
		}
		vals = append(vals, bitfieldGet(segment, args[k+1].(string), off))
	}
	var buf [maxBucketBytes]byte
	bb, sh, rest := g.bucketBytes(buf[:], vals, i)
	if len(rest) != 0 {
		t.Fatalf("bucket %d: %d replies left over", i, len(rest))
	}
	for j := range g.b {
		if got, want := g.slot(bb, sh, j), refSlot(g, segment, i, j); got != want {
			t.Fatalf("b=%d f=%d bucket %d slot %d: decoded %#x, bits say %#x", g.b, g.f, i, j, got, want)
		}
	}
}

func testGeometry(b, f, perSegment uint64) geometry {
	m := meta{kind: "cuckoo", b: int(b), f: int(f), buckets: perSegment * 3, segments: 3}
	return newGeometry(&m)
}

// FuzzBucketCodec decodes random segment bytes, for every shape, through the
// BITFIELD fields and checks each slot against the bits.
func FuzzBucketCodec(f *testing.F) {
	f.Add(uint8(4), uint8(16), uint16(3), []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"))
	f.Add(uint8(8), uint8(32), uint16(1), []byte{0xff, 0, 0xff, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add(uint8(2), uint8(13), uint16(63), []byte{0x80, 0x01})
	f.Fuzz(func(t *testing.T, bsel, fbits uint8, bucket uint16, data []byte) {
		// bsel 0, 1 and 2 pick the common sizes (as the seeds were
		// written), the others any size from 1 to 253.
		b := uint64(bsel) - 2
		if bsel < 3 {
			b = []uint64{2, 4, 8}[bsel]
		}
		fb := 4 + uint64(fbits)%29
		g := testGeometry(b, fb, 64)
		segment := make([]byte, g.segmentBytes)
		copy(segment, data)
		checkCodec(t, &g, segment, uint64(bucket)%g.perSegment)
	})
}

// TestBucketCodecAllShapes runs the codec check over every bucket of
// random segments of every shape (with -short, every third fingerprint
// width: the race detector adds nothing to this single goroutine's work).
func TestBucketCodecAllShapes(t *testing.T) {
	t.Parallel()
	rng := testseed.Rand(t)
	widthStep := uint64(1)
	if testing.Short() {
		widthStep = 3
	}
	for _, b := range []uint64{1, 2, 3, 4, 5, 8, 13, 16, cuckoo.MaxBucketSize} {
		for fb := uint64(4); fb <= 32; fb += widthStep {
			g := testGeometry(b, fb, 128)
			segment := make([]byte, g.segmentBytes)
			for i := range segment {
				segment[i] = byte(rng.Uint32())
			}
			for i := range g.perSegment {
				checkCodec(t, &g, segment, i)
			}
		}
	}
}

// TestLocateMatchesLibrary checks the whole lookup path against the
// library on the library's own table: for filters built with segments, the
// segment bytes taken from the encoding, the key's segment, buckets and
// fingerprint from locate, and the slots from the codec give Contains and
// Count exactly as the library does, for keys added and keys not.
func TestLocateMatchesLibrary(t *testing.T) {
	t.Parallel()
	rng := testseed.Rand(t)
	for _, s := range []struct{ b, f, segments int }{{4, 16, 5}, {2, 12, 1}, {8, 7, 3}, {4, 13, 2}} {
		lib, err := cuckoo.New(30000, cuckoo.WithBucketSize(s.b), cuckoo.WithFingerprintBits(s.f),
			cuckoo.WithSegments(s.segments), cuckoo.WithSeed(rng.Uint64()))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 25000 {
			lib.AddUint64(uint64(i))
		}
		enc, _ := lib.MarshalBinary()
		m := meta{kind: "cuckoo", b: s.b, f: s.f, buckets: lib.NumBuckets(), segments: s.segments, seed: lib.Seed()}
		g := newGeometry(&m)
		le := binary.LittleEndian
		table := fileTable(enc)
		if words := uint64(len(table)) / 8; words*8 != g.segmentBytes*g.segments {
			t.Fatalf("file has %d words, segments %d bytes", words, g.segmentBytes*g.segments)
		}
		var key [8]byte
		for i := range 60000 {
			k := uint64(i) // the keys added, then others
			if i >= 25000 {
				k = rng.Uint64() | 1<<63
			}
			le.PutUint64(key[:], k)
			segment, i1, i2, fp := g.locateKey(key[:])
			part := table[uint64(segment)*g.segmentBytes : uint64(segment+1)*g.segmentBytes]
			var n uint64
			for _, bi := range []uint64{i1, i2} {
				lo, c, sh := g.span(bi)
				n += g.count(part[lo:lo+c], sh, fp)
			}
			if (n > 0) != lib.Contains(key[:]) {
				t.Fatalf("key %x: %d slot copies, library Contains %v", key, n, lib.Contains(key[:]))
			}
			if n > lib.Count(key[:]) {
				t.Fatalf("key %x: %d slot copies, library Count %d", key, n, lib.Count(key[:]))
			}
		}
	}
}

// TestLocateMatchesEngine checks locate against the library's own
// addressing over many shapes, sizes, segment counts and seeds: a hash
// added twice to an empty library filter puts its fingerprint in its
// first bucket, then in its other one (the placement rule takes the
// bucket with more empty slots, the first on a tie), and those must be
// the slots locate names, counted from the start of the table.
func TestLocateMatchesEngine(t *testing.T) {
	t.Parallel()
	rng := testseed.Rand(t)
	filters := 150
	if testing.Short() {
		filters = 40 // the race detector adds nothing to this single goroutine's work
	}
	for range filters {
		b := 1 + rng.IntN(8)
		fb := 4 + rng.IntN(29)
		segments := 1 + rng.IntN(6)
		lib, err := cuckoo.New(uint64(1+rng.IntN(4000)), cuckoo.WithBucketSize(b), cuckoo.WithFingerprintBits(fb),
			cuckoo.WithSegments(segments), cuckoo.WithSeed(rng.Uint64()))
		if errors.Is(err, cuckoo.ErrInvalidParameter) && b == 1 {
			continue // narrow fingerprints in buckets of one slot
		}
		if err != nil {
			t.Fatal(err)
		}
		m := meta{kind: "cuckoo", b: b, f: fb, buckets: lib.NumBuckets(), segments: segments, seed: lib.Seed()}
		g := newGeometry(&m)
		for range 8 {
			h := rng.Uint64()
			segment, i1, i2, fp := g.locate(h)
			if i1 >= g.perSegment || i2 >= g.perSegment || i1 == i2 || g.alt(i2, fp) != i1 || fp == 0 || fp > g.fpMax {
				t.Fatalf("b=%d f=%d %d buckets in %d segments, hash %#x: locate gives %d, %d, fp %#x", b, fb, g.buckets, segments, h, i1, i2, fp)
			}
			lib.AddHash(h)
			lib.AddHash(h)
			enc, _ := lib.MarshalBinary()
			table := fileTable(enc)
			want := map[uint64]uint64{uint64(segment)*g.perSegment + i1: fp, uint64(segment)*g.perSegment + i2: fp}
			for i := range g.buckets {
				lo, n, sh := g.span(i)
				for j := range g.b {
					v := g.slot(table[lo:lo+n], sh, j)
					if v != 0 && (want[i] != v || j != 0) || v == 0 && j == 0 && want[i] != 0 {
						t.Fatalf("b=%d f=%d %d buckets in %d segments, hash %#x: bucket %d slot %d holds %#x; locate gives segment %d, buckets %d and %d, fp %#x",
							b, fb, g.buckets, segments, h, i, j, v, segment, i1, i2, fp)
					}
				}
			}
			lib.DeleteHash(h)
			lib.DeleteHash(h)
		}
	}
}
