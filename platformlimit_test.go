package cuckoo_test

// A table is one Go slice: on a 32-bit platform it cannot pass 2 GiB. The
// constructors refuse such a table (TestConstructorsRefuseTableLargerThanPlatformSlice);
// these tests hold the rest to the same rule without a panic: a growing
// filter whose next table would pass the bound fails the insert that needs
// it with ErrFull, as a full Filter does, and a decoder refuses such a
// table from its header, before allocating it, with ErrInvalidParameter.
// Lowering the bound (SetMaxTableBytes) takes small tables down the paths
// a 32-bit platform takes past 2 GiB, on any platform; the tests with
// tables of more than 2 GiB ask the real bound.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strconv"
	"sync"
	"testing"

	"github.com/dedupkit/cuckoo"
)

// withMaxTableBytes lowers the bound on a table's bytes for the rest of
// the test.
func withMaxTableBytes(t *testing.T, n uint64) {
	old := cuckoo.SetMaxTableBytes(n)
	t.Cleanup(func() { cuckoo.SetMaxTableBytes(old) })
}

// growable is what the tests of a growing filter that cannot grow use.
type growable interface {
	decodable
	AddUnique([]byte) (bool, error)
	AddBatch([][]byte) (int, error)
	AddUniqueBatch([][]byte, []bool) (int, error)
	AddHashBatch([]uint64) (int, error)
	AddUniqueHashBatch([]uint64, []bool) (int, error)
	Count([]byte) uint64
	Delete([]byte) bool
	Len() uint64
	NumTables() int
	NextTableBytes() uint64
}

// fillUntilRefused adds key(0, i) for i from *next on until an Add fails,
// and returns its error; *next is then the refused key's number. It stops
// the test if none fails within limit keys.
func fillUntilRefused(t *testing.T, f growable, next *uint64, limit uint64) error {
	t.Helper()
	for ; *next < limit; *next++ {
		if err := f.Add(key(0, *next)); err != nil {
			return err
		}
	}
	t.Fatalf("%d keys added and none refused", limit)
	return nil
}

// checkCannotGrow checks a growing filter that refused key number added
// with err, its next table too large for the bound: the inserts that need
// a table fail with ErrFull and leave the filter byte for byte as it was,
// the batches stop at such a key, copies of keys it holds still go in, and
// nothing stored is lost. (As in a full Filter, a new key may still find a
// slot: the keys refused are looked for.)
func checkCannotGrow(t *testing.T, f growable, err error, added uint64) {
	t.Helper()
	if !errors.Is(err, cuckoo.ErrFull) {
		t.Fatalf("Add of key %d: %v, want ErrFull", added, err)
	}
	tables := f.NumTables()
	for i := uint64(0); i < added; i++ {
		if !f.Contains(key(0, i)) {
			t.Fatalf("key %d lost", i)
		}
	}
	// Fresh keys and hashes until 4 in a row are refused: from then on the
	// state is fixed, and each of them is refused in it.
	var keys [][]byte
	var hashes []uint64
	for i := uint64(0); len(keys) < 4 || len(hashes) < 4; i++ {
		if i > 100_000 {
			t.Fatal("no run of refused keys")
		}
		before := mustMarshal(t, f)
		k := key(1, i)
		h := uint64(i)*0x9e3779b97f4a7c15 + 1
		var err error
		if len(keys) < 4 {
			if f.Contains(k) {
				continue
			}
			err = f.Add(k)
		} else {
			_, err = f.AddHashBatch([]uint64{h})
		}
		switch {
		case err == nil:
			keys, hashes = keys[:0], hashes[:0]
			added++
			continue
		case !errors.Is(err, cuckoo.ErrFull):
			t.Fatalf("refused insert: %v, want ErrFull", err)
		case !bytes.Equal(mustMarshal(t, f), before):
			t.Fatal("a refused insert changed the filter")
		}
		if len(keys) < 4 {
			keys = append(keys, k)
		} else {
			hashes = append(hashes, h)
		}
	}
	if f.Len() != added {
		t.Fatalf("Len %d after %d keys added", f.Len(), added)
	}
	held := key(0, 0)
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, cuckoo.ErrFull) {
			t.Fatalf("%s: %v, want ErrFull", what, err)
		}
	}
	before := mustMarshal(t, f)
	unchanged := func(what string) {
		t.Helper()
		if !bytes.Equal(mustMarshal(t, f), before) {
			t.Fatalf("%s: a refused insert changed the filter", what)
		}
	}
	refused("Add", f.Add(keys[0]))
	unchanged("Add")
	if a, err := f.AddUnique(keys[0]); a || !errors.Is(err, cuckoo.ErrFull) {
		t.Fatalf("AddUnique of a refused key = %v, %v; want false, ErrFull", a, err)
	}
	unchanged("AddUnique")
	if a, err := f.AddUnique(held); a || err != nil {
		t.Fatalf("AddUnique of a key held = %v, %v; want false, nil", a, err)
	}
	if n, err := f.AddBatch([][]byte{keys[1], held}); n != 0 {
		t.Fatalf("AddBatch = %d, %v; want 0, ErrFull", n, err)
	} else {
		refused("AddBatch", err)
	}
	unchanged("AddBatch")
	out := []bool{true, true, true}
	if n, err := f.AddUniqueBatch([][]byte{held, keys[2], keys[3]}, out); n != 1 || out[0] || !out[1] || !out[2] {
		t.Fatalf("AddUniqueBatch = %d, %v, %v; want 1, ErrFull, [false true true]", n, err, out)
	} else {
		refused("AddUniqueBatch", err)
	}
	unchanged("AddUniqueBatch")
	if n, err := f.AddHashBatch([]uint64{hashes[0], hashes[1]}); n != 0 {
		t.Fatalf("AddHashBatch = %d, %v; want 0, ErrFull", n, err)
	} else {
		refused("AddHashBatch", err)
	}
	unchanged("AddHashBatch")
	out = []bool{true, true}
	if n, err := f.AddUniqueHashBatch([]uint64{hashes[2], hashes[3]}, out); n != 0 || !out[0] {
		t.Fatalf("AddUniqueHashBatch = %d, %v, %v; want 0, ErrFull", n, err, out)
	} else {
		refused("AddUniqueHashBatch", err)
	}
	unchanged("AddUniqueHashBatch")
	if f.NumTables() != tables {
		t.Fatalf("%d tables after refused inserts, were %d", f.NumTables(), tables)
	}
	// A copy of a key held goes beside it: it needs no new table.
	if err := f.Add(held); err != nil || f.Count(held) < 2 {
		t.Fatalf("Add of a key held = %v, count %d", err, f.Count(held))
	}
	if f.Len() != added+1 {
		t.Fatalf("Len %d, want %d", f.Len(), added+1)
	}
	if err := f.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestScalableThatCannotMakeItsNextTableFailsAddWithErrFull: a Scalable
// whose next table would pass the bound (on a 32-bit platform, 2 GiB;
// the insert panicked in the allocation) returns ErrFull from the insert
// that needs it, when its first table is full and when a later, grown in
// place, is, and grows again once the bound allows.
func TestScalableThatCannotMakeItsNextTableFailsAddWithErrFull(t *testing.T) {
	for _, tables := range []int{1, 2} {
		s, err := cuckoo.NewScalable(500, cuckoo.WithSeed(3))
		if err != nil {
			t.Fatal(err)
		}
		var next uint64
		if tables == 2 {
			// The second table may grow to its full size; the third not.
			withMaxTableBytes(t, s.NextTableBytes())
			for s.NumTables() < 2 {
				if err := s.Add(key(0, next)); err != nil {
					t.Fatalf("tables %d: Add of key %d: %v", tables, next, err)
				}
				next++
			}
		} else {
			withMaxTableBytes(t, s.NextTableBytes()-1)
		}
		err = fillUntilRefused(t, s, &next, 100_000)
		if s.NumTables() != tables {
			t.Fatalf("refused with %d tables, want %d", s.NumTables(), tables)
		}
		checkCannotGrow(t, s, err, next)
		cuckoo.SetMaxTableBytes(cuckoo.PlatformTableBytes())
		if err := s.Add(freshKey(s)); err != nil || s.NumTables() != tables+1 {
			t.Fatalf("with the bound raised: Add = %v, %d tables", err, s.NumTables())
		}
	}
}

// TestScalableThatCannotMakeItsNextTableTakesKeysAfterDeletes: the
// refusal is that of a full table, not a broken filter: deletes make room
// for new keys again.
func TestScalableThatCannotMakeItsNextTableTakesKeysAfterDeletes(t *testing.T) {
	s, err := cuckoo.NewScalable(500, cuckoo.WithSeed(4))
	if err != nil {
		t.Fatal(err)
	}
	withMaxTableBytes(t, s.NextTableBytes()-1)
	var next uint64
	if err := fillUntilRefused(t, s, &next, 100_000); !errors.Is(err, cuckoo.ErrFull) {
		t.Fatal(err)
	}
	for i := uint64(0); i < 50; i++ {
		s.Delete(key(0, i))
	}
	for i := uint64(0); i < 25; i++ {
		if err := s.Add(key(2, i)); err != nil {
			t.Fatalf("Add after deletes: %v", err)
		}
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestGrowingConcurrentThatCannotMakeItsNextTableFailsAddWithErrFull is
// the Scalable test for a Concurrent with WithGrowth ("a growing filter
// adds a table instead and never fails" held on 64-bit platforms only).
func TestGrowingConcurrentThatCannotMakeItsNextTableFailsAddWithErrFull(t *testing.T) {
	c, err := cuckoo.NewConcurrent(500, cuckoo.WithGrowth(2), cuckoo.WithSeed(3))
	if err != nil {
		t.Fatal(err)
	}
	withMaxTableBytes(t, c.NextTableBytes()-1)
	var next uint64
	err = fillUntilRefused(t, c, &next, 100_000)
	if c.NumTables() != 1 {
		t.Fatalf("refused with %d tables", c.NumTables())
	}
	checkCannotGrow(t, c, err, next)
	cuckoo.SetMaxTableBytes(cuckoo.PlatformTableBytes())
	if err := c.Add(freshKey(c)); err != nil || c.NumTables() != 2 {
		t.Fatalf("with the bound raised: Add = %v, %d tables", err, c.NumTables())
	}
}

// TestGrowingConcurrentThatCannotMakeItsNextTableRefusesEveryWriter:
// writers racing for the last room all end with ErrFull, none panics or
// waits forever, and every key whose Add succeeded is found.
func TestGrowingConcurrentThatCannotMakeItsNextTableRefusesEveryWriter(t *testing.T) {
	c, err := cuckoo.NewConcurrent(2000, cuckoo.WithGrowth(2), cuckoo.WithSeed(5))
	if err != nil {
		t.Fatal(err)
	}
	withMaxTableBytes(t, c.NextTableBytes()-1)
	const writers = 4
	var wg sync.WaitGroup
	added := make([][]uint64, writers)
	errs := make([]error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(0); i < 100_000; i++ {
				k := i*writers + uint64(w)
				var err error
				if i%2 == 0 {
					err = c.Add(key(0, k))
				} else {
					_, err = c.AddUnique(key(0, k))
				}
				if err != nil {
					errs[w] = err
					return
				}
				added[w] = append(added[w], k)
			}
		}()
	}
	wg.Wait()
	var n uint64
	for w := range writers {
		if !errors.Is(errs[w], cuckoo.ErrFull) {
			t.Fatalf("writer %d: %v, want ErrFull", w, errs[w])
		}
		for _, k := range added[w] {
			if !c.Contains(key(0, k)) {
				t.Fatalf("key %d lost", k)
			}
		}
		n += uint64(len(added[w]))
	}
	if c.NumTables() != 1 || c.Len() > n {
		t.Fatalf("%d tables, Len %d after %d successful inserts", c.NumTables(), c.Len(), n)
	}
	if err := c.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// hugeFilterHeader returns the header of a Filter encoding whose table
// takes 32 GiB (2^32 buckets of 4 16-bit slots), sound but for the table
// that does not follow.
func hugeFilterHeader(t testing.TB) []byte {
	data := mustMarshal(t, sample(t, 4, 16))
	h := bytes.Clone(data[:filterHeader])
	binary.LittleEndian.PutUint64(h[24:], 1<<33)           // capacity
	binary.LittleEndian.PutUint64(h[32:], 1<<32)           // buckets
	binary.LittleEndian.PutUint64(h[48:], (1<<32)*4*16/64) // words
	binary.LittleEndian.PutUint64(h[40:], 0)               // items
	binary.LittleEndian.PutUint64(h[56:], 0)               // counters
	return h
}

// hugeScalableHead returns the start of a Scalable encoding whose first
// table is hugeFilterHeader's: the chain's header, the table's length and
// its header.
func hugeScalableHead(t testing.TB) []byte {
	data := mustMarshal(t, sampleScalable(t, layout{4, false}, 16))
	const chainHeader = 64
	head := bytes.Clone(data[:chainHeader])
	binary.LittleEndian.PutUint32(head[52:], 1) // one table
	binary.LittleEndian.PutUint64(head[56:], 0) // no overflow counters
	table := hugeFilterHeader(t)
	head = binary.LittleEndian.AppendUint64(head, filterHeader+(1<<32)*8+4)
	return append(head, table...)
}

// hugeWindowHeader returns the header of a Window encoding whose table
// takes 32 GiB (2^32 buckets of 4 12-bit slots and their stamps).
func hugeWindowHeader(t testing.TB) []byte {
	w, _ := windowSample(t)
	data := mustMarshal(t, w)
	const windowHeader = 80
	h := bytes.Clone(data[:windowHeader])
	b, f := uint64(h[8]), uint64(h[9])
	m := uint64(1) << 32
	binary.LittleEndian.PutUint64(h[56:], 0) // cursor
	binary.LittleEndian.PutUint64(h[64:], m)
	binary.LittleEndian.PutUint64(h[72:], (m*b*(f+4)+63)/64)
	return h
}

// streamOf is a stream of head, then zeros up to a MiB, then an error:
// the payload a decoder reads of a table it did not refuse.
func streamOf(head []byte) io.Reader {
	return io.MultiReader(bytes.NewReader(head), io.LimitReader(zeros{}, 1<<20), errReader{errStreamEnd})
}

var errStreamEnd = errors.New("end of the test stream")

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// decoder is a receiver of encodings.
type decoder interface {
	UnmarshalBinary([]byte) error
	ReadFrom(io.Reader) (int64, error)
}

// decoders make a fresh receiver of each kind.
var decoders = map[string]func() decoder{
	"Filter":     func() decoder { return new(cuckoo.Filter) },
	"Scalable":   func() decoder { return new(cuckoo.Scalable) },
	"Concurrent": func() decoder { return new(cuckoo.Concurrent) },
	"Window":     func() decoder { return new(cuckoo.Window) },
}

// TestReadFromRefusesTableLargerThanPlatformSliceBeforeReadingIt: on a
// 32-bit platform a stream whose header declares a table of more than
// 2 GiB is refused with ErrInvalidParameter after the header, with no
// byte of the table read (ReadFrom grew the table with the stream until
// the runtime panicked). A 64-bit platform reads on, and meets the end of
// the test's stream. From a byte slice, which on a 32-bit platform cannot
// hold such a table, it is truncated data: ErrCorrupt.
func TestReadFromRefusesTableLargerThanPlatformSliceBeforeReadingIt(t *testing.T) {
	for name, tc := range map[string]struct {
		head   []byte
		decode string
	}{
		"Filter":              {hugeFilterHeader(t), "Filter"},
		"Concurrent, Filter":  {hugeFilterHeader(t), "Concurrent"},
		"Scalable":            {hugeScalableHead(t), "Scalable"},
		"Concurrent, growing": {hugeScalableHead(t), "Concurrent"},
		"Window":              {hugeWindowHeader(t), "Window"},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: decoding panics: %v", name, r)
				}
			}()
			n, err := decoders[tc.decode]().ReadFrom(streamOf(tc.head))
			if strconv.IntSize == 64 {
				if !errors.Is(err, errStreamEnd) {
					t.Errorf("%s: ReadFrom = %d, %v; want the stream's end", name, n, err)
				}
			} else if !errors.Is(err, cuckoo.ErrInvalidParameter) || errors.Is(err, cuckoo.ErrCorrupt) || n != int64(len(tc.head)) {
				t.Errorf("%s: ReadFrom on a 32-bit platform = %d, %v; want %d (the header), ErrInvalidParameter", name, n, err, len(tc.head))
			}
			if err := decoders[tc.decode]().UnmarshalBinary(tc.head); !errors.Is(err, cuckoo.ErrCorrupt) {
				t.Errorf("%s: UnmarshalBinary of the header alone = %v, want ErrCorrupt", name, err)
			}
		}()
	}
}

// TestDecodersRefuseTableLargerThanBoundBeforeReadingIt: with the bound
// lowered below a sound encoding's table, ReadFrom refuses it after the
// header with ErrInvalidParameter, reading none of the table, and
// UnmarshalBinary refuses it too. Cut short, the same bytes are
// ErrCorrupt: the input is checked first.
func TestDecodersRefuseTableLargerThanBoundBeforeReadingIt(t *testing.T) {
	w, _ := windowSample(t)
	encodings := map[string]struct {
		data       []byte
		headerSize int
		decode     []string
	}{
		"Filter": {mustMarshal(t, sample(t, 4, 16)), filterHeader, []string{"Filter", "Concurrent"}},
		"Window": {mustMarshal(t, w), 80, []string{"Window"}},
	}
	for name, e := range encodings {
		// The header's word count W, just before the table: the table takes
		// W words and a padding word, one word more than the bound.
		words := binary.LittleEndian.Uint64(e.data[e.headerSize-8:])
		if name == "Filter" {
			words = binary.LittleEndian.Uint64(e.data[48:])
		}
		withMaxTableBytes(t, 8*words)
		for _, d := range e.decode {
			if n, err := decoders[d]().ReadFrom(bytes.NewReader(e.data)); !errors.Is(err, cuckoo.ErrInvalidParameter) || n != int64(e.headerSize) {
				t.Errorf("%s into %s: ReadFrom = %d, %v; want %d (the header), ErrInvalidParameter", name, d, n, err, e.headerSize)
			}
			if err := decoders[d]().UnmarshalBinary(e.data); !errors.Is(err, cuckoo.ErrInvalidParameter) {
				t.Errorf("%s into %s: UnmarshalBinary = %v, want ErrInvalidParameter", name, d, err)
			}
			if err := decoders[d]().UnmarshalBinary(e.data[:len(e.data)/2]); !errors.Is(err, cuckoo.ErrCorrupt) {
				t.Errorf("%s into %s: UnmarshalBinary cut short = %v, want ErrCorrupt", name, d, err)
			}
		}
		cuckoo.SetMaxTableBytes(cuckoo.PlatformTableBytes())
		for _, d := range e.decode {
			if err := decoders[d]().UnmarshalBinary(e.data); err != nil {
				t.Errorf("%s into %s with the bound raised: %v", name, d, err)
			}
		}
	}
}

// TestScalableDecodersRefuseGrowingTableThatWouldPassTheBound: a
// Scalable's newest table, growing in place, must be able to reach its
// full size: a bound below what it will hold refuses the encoding
// (ErrInvalidParameter), though the table as encoded fits.
func TestScalableDecodersRefuseGrowingTableThatWouldPassTheBound(t *testing.T) {
	s, err := cuckoo.NewScalable(500, cuckoo.WithSeed(6))
	if err != nil {
		t.Fatal(err)
	}
	most := s.NextTableBytes()
	for i := uint64(0); s.NumTables() < 2; i++ {
		s.Add(key(0, i))
	}
	if !s.NewestGrowing() {
		t.Fatal("the second table does not grow in place")
	}
	data := mustMarshal(t, s)
	var g cuckoo.Scalable
	g.AddString("keep")
	before := mustMarshal(t, &g)
	withMaxTableBytes(t, most-8)
	if err := g.UnmarshalBinary(data); !errors.Is(err, cuckoo.ErrInvalidParameter) {
		t.Errorf("UnmarshalBinary = %v, want ErrInvalidParameter", err)
	}
	if _, err := g.ReadFrom(bytes.NewReader(data)); !errors.Is(err, cuckoo.ErrInvalidParameter) {
		t.Errorf("ReadFrom = %v, want ErrInvalidParameter", err)
	}
	if !bytes.Equal(mustMarshal(t, &g), before) {
		t.Error("a refused decode changed the filter")
	}
	var c cuckoo.Concurrent
	if err := c.UnmarshalBinary(data); !errors.Is(err, cuckoo.ErrInvalidParameter) {
		t.Errorf("Concurrent.UnmarshalBinary = %v, want ErrInvalidParameter", err)
	}
	cuckoo.SetMaxTableBytes(most)
	if err := g.UnmarshalBinary(data); err != nil {
		t.Errorf("with the bound at the table's most: %v", err)
	}
}

// freshKey returns a key f does not report: one that needs room.
func freshKey(f interface{ Contains([]byte) bool }) []byte {
	for i := uint64(1 << 40); ; i++ {
		if k := key(1, i); !f.Contains(k) {
			return k
		}
	}
}

// TestMarshalBinaryLargerThanPlatformSliceIsAnError: on a 32-bit platform
// a growing filter's tables may add up to more than one []byte holds
// (2 GiB), which bytes.Buffer.Grow(int(size)) turned into a panic.
// MarshalBinary returns an error instead, and WriteTo writes the encoding.
func TestMarshalBinaryLargerThanPlatformSliceIsAnError(t *testing.T) {
	s := sampleScalable(t, layout{4, false}, 12)
	c, err := cuckoo.NewConcurrent(40, cuckoo.WithGrowth(2), cuckoo.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(0); i < 300; i++ {
		c.Add(key(0, i))
	}
	for name, f := range map[string]interface {
		MarshalBinary() ([]byte, error)
		WriteTo(io.Writer) (int64, error)
	}{"Scalable": s, "Concurrent": c, "Filter": sample(t, 4, 12)} {
		want := mustMarshal(t, f)
		old := cuckoo.SetMaxEncodingBytes(uint64(len(want)) - 1)
		func() {
			defer cuckoo.SetMaxEncodingBytes(old)
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: MarshalBinary panics: %v", name, r)
				}
			}()
			if data, err := f.MarshalBinary(); err == nil || data != nil {
				t.Errorf("%s: MarshalBinary of %d bytes past the bound = %d bytes, %v; want an error", name, len(want), len(data), err)
			}
			var buf bytes.Buffer
			if n, err := f.WriteTo(&buf); err != nil || n != int64(len(want)) || !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s: WriteTo = %d, %v; want the %d bytes of the encoding", name, n, err, len(want))
			}
		}()
	}
}
