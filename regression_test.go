package cuckoo_test

// Regression tests and fuzz targets from the review of the one-engine
// restructuring: a Concurrent that saves a segmented table, a growing
// table with bits past its last bucket, and decoder fuzzing that reseals
// the checksums so that mutations reach the structural checks.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo"

	"github.com/dedupkit/cuckoo/internal/testlong"
)

// A Concurrent loaded from a segmented Filter must round-trip without losing keys.
func TestConcurrentSegmentedSnapshot(t *testing.T) {
	const n = 20000
	f, err := cuckoo.New(n, cuckoo.WithSegments(4), cuckoo.WithSeed(7))
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(0); i < n; i++ {
		if err := f.Add(key(0, i)); err != nil {
			t.Fatal(err)
		}
	}
	var c cuckoo.Concurrent
	if err := c.UnmarshalBinary(mustMarshal(t, f)); err != nil {
		return // refusing segmented encodings is a valid fix
	}
	var g cuckoo.Filter
	if err := g.UnmarshalBinary(mustMarshal(t, &c)); err != nil {
		t.Fatalf("snapshot of the Concurrent does not decode: %v", err)
	}
	lost := 0
	for i := uint64(0); i < n; i++ {
		if !g.Contains(key(0, i)) {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d keys lost: Filter (%d segments) -> Concurrent -> MarshalBinary -> Filter (%d segments)", lost, n, f.Segments(), g.Segments())
	}
}

// The decoding fuzz targets' own check, on a segmented Filter's encoding
// loaded by a Concurrent (FuzzDecodeConcurrent has no segmented seed).
func TestConcurrentDecodeSegmented(t *testing.T) {
	f, _ := cuckoo.New(1000, cuckoo.WithSegments(2), cuckoo.WithSeed(3))
	for i := uint64(0); i < 900; i++ {
		f.Add(key(0, i))
	}
	checkDecode(t, mustMarshal(t, f), func() decodable { return new(cuckoo.Concurrent) }, cuckoo.ErrCorrupt, cuckoo.ErrInvalidParameter)
}

// TestOverfillLosesNothing for segmented tables, and for a fixed Concurrent:
// up to four times the capacity added, until 2,000 adds have failed. The
// long checks (CUCKOO_LONG=1) compare the bytes around every failed Add of
// filters of 3,000 keys; the quick run the first 200 failures of each
// filter, of filters of 1,000 keys, and the adds stop at the 400th
// failure (each failure walks its whole kick path and back).
func TestOverfillSegmentsAndConcurrent(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	for _, segs := range []int{2, 5} {
		for _, b := range []int{2, 4, 8} {
			n := uint64(sized(3000, 1000, 1000, 1000))
			f, err := cuckoo.New(n, cuckoo.WithSegments(segs), cuckoo.WithBucketSize(b), cuckoo.WithFingerprintBits(8), cuckoo.WithSeed(uint64(segs*10+b)))
			if err != nil {
				t.Fatal(err)
			}
			var ok []uint64
			fails := 0
			maxFails := sized(2000, 400, 400, 400)
			for i := uint64(0); i < 4*n && fails < maxFails; i++ {
				var before []byte
				if fails < 200 || longRun() { // comparing bytes is slow
					before = mustMarshal(t, f)
				}
				if f.Add(key(0, i)) == nil {
					ok = append(ok, i)
					continue
				}
				fails++
				if before == nil {
					continue
				}
				if after := mustMarshal(t, f); !bytes.Equal(before, after) {
					t.Fatalf("segs=%d b=%d: failed Add changed the filter", segs, b)
				}
			}
			if fails == 0 {
				t.Fatalf("segs=%d b=%d: never full", segs, b)
			}
			for _, i := range ok {
				if !f.Contains(key(0, i)) {
					t.Fatalf("segs=%d b=%d: key %d lost", segs, b, i)
				}
			}
			if err := f.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, b := range []int{2, 4, 8} {
		c, _ := cuckoo.NewConcurrent(2000, cuckoo.WithBucketSize(b), cuckoo.WithFingerprintBits(8), cuckoo.WithSeed(uint64(b)))
		var ok []uint64
		for i := uint64(0); i < 4000; i++ {
			if c.Add(key(0, i)) == nil {
				ok = append(ok, i)
			}
		}
		for _, i := range ok {
			if !c.Contains(key(0, i)) {
				t.Fatalf("Concurrent b=%d: key %d lost", b, i)
			}
		}
		if c.Len() != uint64(len(ok)) {
			t.Fatalf("Concurrent b=%d: Len %d, want %d", b, c.Len(), len(ok))
		}
		if err := c.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	}
}

// resealScalable recomputes the checksum of every nested table of a
// Scalable encoding, then the outer one, so that edits reach the structural
// checks behind both.
func resealScalable(data []byte) []byte {
	if len(data) < 64+4 {
		return data
	}
	n := int(binary.LittleEndian.Uint32(data[52:]))
	off := 64
	for k := 0; k < n && off+8 <= len(data); k++ {
		l := binary.LittleEndian.Uint64(data[off:])
		off += 8
		if l < 4 || uint64(len(data)-off) < l {
			break
		}
		end := off + int(l)
		binary.LittleEndian.PutUint32(data[end-4:], crc32c(data[off:end-4]))
		off = end
	}
	return reseal(data)
}

// A growing table whose last word has bits set past its last bucket must be
// refused: no operation sets them, and the next split turns them into
// misplaced tags, after which the filter's own encoding is refused.
func TestGrowingTableBitsPastEnd(t *testing.T) {
	s, _ := cuckoo.NewScalable(40, cuckoo.WithBucketSize(2), cuckoo.WithFingerprintBits(9), cuckoo.WithSeed(42))
	for i := uint64(0); i < 300; i++ {
		s.Add(key(0, i))
	}
	if !s.NewestGrowing() {
		t.Fatal("newest table not growing")
	}
	data := mustMarshal(t, s)
	n := int(binary.LittleEndian.Uint32(data[52:]))
	off := 64
	for k := 0; k < n-1; k++ {
		off += 8 + int(binary.LittleEndian.Uint64(data[off:]))
	}
	off += 8 // the newest table's Filter encoding
	slots, bits := uint64(data[off+8]), uint64(data[off+9])
	used := binary.LittleEndian.Uint64(data[off+32:]) * slots * bits
	if used%64 == 0 {
		t.Skip("no spare bits in the last word")
	}
	bit := used + 1
	data[off+72+int(bit/8)] |= 1 << (bit % 8)
	data = resealScalable(data)
	var d cuckoo.Scalable
	if d.UnmarshalBinary(data) != nil {
		return
	}
	t.Errorf("decoder accepted a growing table with bits set past its last bucket")
	for i := uint64(1000); i < 2000; i++ {
		d.Add(key(0, i))
	}
	if err := d.CheckInvariants(); err != nil {
		t.Errorf("after growing on: %v", err)
	}
	var e cuckoo.Scalable
	if err := e.UnmarshalBinary(mustMarshal(t, &d)); err != nil {
		t.Errorf("after growing on, the filter's own encoding is refused: %v", err)
	}
}

// FuzzDecodeResealed is FuzzDecode and FuzzDecodeConcurrent with the
// checksum recomputed, so that mutations reach the structural checks.
// (Segmented encodings are left out of the Concurrent check: see
// TestConcurrentDecodeSegmented.)
func FuzzDecodeResealed(f *testing.F) {
	for _, shape := range []struct{ b, bits int }{{4, 12}, {2, 7}, {8, 32}, {4, 16}} {
		f.Add(mustMarshal(f, sample(f, shape.b, shape.bits)))
	}
	f.Add(mustMarshal(f, sample(f, 4, 13, cuckoo.WithSemiSorting())))
	g, _ := cuckoo.New(300, cuckoo.WithSegments(2), cuckoo.WithSeed(3), cuckoo.WithFingerprintBits(8))
	for i := uint64(0); i < 100; i++ {
		g.Add(key(0, i%40))
	}
	f.Add(mustMarshal(f, g))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 72 {
			return
		}
		data = reseal(data)
		checkDecode(t, data, func() decodable { return new(cuckoo.Filter) }, cuckoo.ErrCorrupt)
		if data[7]&1 == 0 && data[64] == 1 && data[65] == 0 {
			checkDecode(t, data, func() decodable { return new(cuckoo.Concurrent) }, cuckoo.ErrCorrupt, cuckoo.ErrInvalidParameter)
		}
	})
}

// FuzzDecodeScalableDeep flips bytes anywhere in valid Scalable
// encodings (growing newest table included) and reseals every nested
// table, so that mutations inside the tables reach the table checks.
func FuzzDecodeScalableDeep(f *testing.F) {
	var seeds [][]byte
	for _, l := range []layout{{4, false}, {2, false}, {4, true}} {
		seeds = append(seeds, mustMarshal(f, sampleScalable(f, l, 9)))
	}
	s, _ := cuckoo.NewScalable(4, cuckoo.WithSeed(5), cuckoo.WithFingerprintBits(8))
	for i := uint64(0); i < 40; i++ {
		s.Add(key(0, i%25))
	}
	seeds = append(seeds, mustMarshal(f, s))
	f.Add(uint8(0), []byte{70, 0, 1})
	f.Add(uint8(3), []byte{100, 0, 0xff, 120, 0, 3})
	f.Fuzz(func(t *testing.T, which uint8, muts []byte) {
		data := bytes.Clone(seeds[int(which)%len(seeds)])
		for i := 0; i+2 < len(muts); i += 3 {
			pos := int(binary.LittleEndian.Uint16(muts[i:])) % len(data)
			data[pos] ^= muts[i+2]
		}
		data = resealScalable(data)
		checkScalableDecode(t, data)
		checkDecode(t, data, func() decodable { return new(cuckoo.Concurrent) }, cuckoo.ErrCorrupt, cuckoo.ErrInvalidParameter)
	})
}

// A Filter's bucket count must back its capacity (the capacity guarantee):
// a header claiming more capacity than New would give those buckets is
// refused, one claiming less loads.
func TestFilterCapacityBackedByBuckets(t *testing.T) {
	f, err := cuckoo.New(1000, cuckoo.WithSeed(7))
	if err != nil {
		t.Fatal(err)
	}
	data := mustMarshal(t, f)
	for _, c := range []struct {
		capacity uint64
		ok       bool
	}{{1000, true}, {1, true}, {f.Capacity() * 3 / 2, false}, {1 << 40, false}} {
		edited := bytes.Clone(data)
		binary.LittleEndian.PutUint64(edited[24:], c.capacity)
		var d cuckoo.Filter
		err := d.UnmarshalBinary(reseal(edited))
		if c.ok && err != nil || !c.ok && !errors.Is(err, cuckoo.ErrCorrupt) {
			t.Errorf("capacity %d over %d buckets: %v", c.capacity, f.NumBuckets(), err)
		}
	}
}

// On a 32-bit platform a table of more than 2 GiB cannot be one Go slice:
// the constructors refuse such a capacity with ErrInvalidParameter instead
// of panicking in the allocation (New(2^31) did, with "makeslice: len out
// of range"). Plans, which allocate nothing, describe the table on every
// platform. (On a 64-bit platform the tables are not built here:
// gigabytes.)
func TestConstructorsRefuseTableLargerThanPlatformSlice(t *testing.T) {
	const capacity = 1 << 31 // a table of about 4.5 GB at the default shape
	if _, err := cuckoo.NewPlan(capacity); err != nil {
		t.Errorf("NewPlan(2^31): %v", err)
	}
	if _, err := cuckoo.NewWindowPlan(capacity); err != nil {
		t.Errorf("NewWindowPlan(2^31): %v", err)
	}
	if strconv.IntSize == 64 {
		return
	}
	for name, build := range map[string]func() error{
		"New":           func() error { _, err := cuckoo.New(capacity); return err },
		"NewConcurrent": func() error { _, err := cuckoo.NewConcurrent(capacity); return err },
		"NewScalable":   func() error { _, err := cuckoo.NewScalable(capacity); return err },
		"NewConcurrent growing": func() error {
			_, err := cuckoo.NewConcurrent(capacity, cuckoo.WithGrowth(2))
			return err
		},
		"NewWindow": func() error { _, err := cuckoo.NewWindow(capacity, time.Hour); return err },
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s(2^31) on a 32-bit platform panics: %v", name, r)
				}
			}()
			if err := build(); !errors.Is(err, cuckoo.ErrInvalidParameter) {
				t.Errorf("%s(2^31) on a 32-bit platform: %v, want ErrInvalidParameter", name, err)
			}
		}()
	}
}
