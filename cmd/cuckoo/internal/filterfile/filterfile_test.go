package filterfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/bloom"
	"github.com/dedupkit/cuckoo/internal/hash"
)

func key(i int) []byte { return []byte(fmt.Sprintf("key-%d", i)) }

// kinds are the kinds this build supports, with a Spec for each.
func specs() []Spec {
	var out []Spec
	for k := Cuckoo; k <= CuckooWindow; k++ {
		out = append(out, Spec{Kind: k, Capacity: 1000, FPR: 0.001, Seed: 7, SeedSet: true, Window: time.Hour})
	}
	return out
}

func TestSniff(t *testing.T) {
	hdr := func(magic string, version uint16, kind byte) []byte {
		b := append([]byte(magic), 0, 0, kind, 0)
		binary.LittleEndian.PutUint16(b[4:], version)
		return b
	}
	for _, c := range []struct {
		name string
		head []byte
		want Kind
		ok   bool
	}{
		{"cuckoo", hdr("CKOO", 1, 1), Cuckoo, true},
		{"cuckoo-scalable", hdr("CKOO", 1, 2), CuckooScalable, true},
		{"cuckoo-window", hdr("CKOO", 1, 3), CuckooWindow, true},
		{"cuckoo-unknown-kind", hdr("CKOO", 1, 9), 0, false},
		{"bloom-version-9", hdr("BLMF", 9, 1), BloomBlocked, true},
		{"bloom-blocked", hdr("BLMF", 1, 1), BloomBlocked, true},
		{"bloom-classic", hdr("BLMF", 1, 2), BloomClassic, true},
		{"bloom-counting", hdr("BLMF", 1, 3), BloomCounting, true},
		{"bloom-scalable", hdr("BLMF", 1, 4), BloomScalable, true},
		{"bloom-unknown-kind", hdr("BLMF", 1, 0), 0, false},
		{"png", []byte("\x89PNG\r\n\x1a\n"), 0, false},
		{"short", []byte("CKOO"), 0, false},
	} {
		t.Run("case="+c.name, func(t *testing.T) {
			k, _, err := Sniff(c.head)
			if c.ok != (err == nil) || k != c.want {
				t.Fatalf("Sniff = %v, %v; want %v, ok=%v", k, err, c.want, c.ok)
			}
			if err != nil && !errors.Is(err, ErrNotFilter) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("error %v wraps neither ErrNotFilter nor ErrUnsupported", err)
			}
		})
	}
}

func TestKindNames(t *testing.T) {
	for k := Cuckoo; k <= CuckooWindow; k++ {
		got, ok := ParseKind(k.String())
		if !ok || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k.String(), got, ok)
		}
		if k.Description() == "" {
			t.Errorf("%v has no description", k)
		}
	}
	if _, ok := ParseKind("nope"); ok {
		t.Error("ParseKind accepted an unknown name")
	}
}

// TestRoundTrip builds each kind, saves it, loads it, and checks that no
// key is lost and the bytes are the same.
func TestRoundTrip(t *testing.T) {
	for _, s := range specs() {
		t.Run("kind="+s.Kind.String(), func(t *testing.T) {
			f, err := New(s)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 500 {
				if err := f.Add(key(i)); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(t.TempDir(), "f")
			if err := f.Save(path); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(path)
			if int64(len(data)) != f.EncodedSize() {
				t.Fatalf("file of %d bytes, EncodedSize %d", len(data), f.EncodedSize())
			}
			g, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if g.Kind() != s.Kind || g.FormatVersion() != 1 {
				t.Fatalf("loaded kind %v version %d", g.Kind(), g.FormatVersion())
			}
			for i := range 500 {
				if !g.Contains(key(i)) {
					t.Fatalf("key %d lost in the round trip", i)
				}
			}
			var b bytes.Buffer
			g.WriteTo(&b)
			if !bytes.Equal(b.Bytes(), data) {
				t.Fatal("loaded filter encodes to other bytes")
			}
			if g.Len() != f.Len() || g.Capacity() != f.Capacity() || g.Seed() != 7 {
				t.Fatalf("Len %d/%d Capacity %d/%d Seed %d", g.Len(), f.Len(), g.Capacity(), f.Capacity(), g.Seed())
			}
			if r := g.FalsePositiveRate(); !(r > 0 && r < 0.01) {
				t.Fatalf("FalsePositiveRate %v", r)
			}
			info := g.Info()
			seen := map[string]bool{}
			for _, fl := range info {
				seen[fl.Key] = true
				if fl.Text == "" {
					t.Errorf("field %s has no text", fl.Key)
				}
			}
			for _, k := range []string{"kind", "format_version", "items", "capacity", "fpr", "seed", "memory_bytes", "file_bytes"} {
				if !seen[k] {
					t.Errorf("Info lacks %s", k)
				}
			}
			if _, err := info.MarshalJSON(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	f, _ := New(Spec{Kind: Cuckoo, Capacity: 100, Seed: 1, SeedSet: true})
	f.Add([]byte("x"))
	var b bytes.Buffer
	f.WriteTo(&b)
	good := b.Bytes()
	flip := bytes.Clone(good)
	flip[len(flip)/2] ^= 0x10
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrNotFilter},
		{"junk", []byte("hello, world, this is not a filter"), ErrNotFilter},
		{"truncated", good[:len(good)-10], ErrDamaged},
		{"header-only", good[:20], ErrDamaged},
		{"bit-flip", flip, ErrDamaged},
		{"trailing", append(bytes.Clone(good), 0), ErrDamaged},
		{"newer-version", append([]byte("CKOO\x02\x00\x01\x00"), good[8:]...), ErrUnsupported},
		{"newer-kind", append([]byte("CKOO\x01\x00\x07\x00"), good[8:]...), ErrUnsupported},
	} {
		t.Run("case="+c.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(c.data))
			if !errors.Is(err, c.want) {
				t.Fatalf("Read: %v, want %v", err, c.want)
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load of a missing file: %v", err)
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Fatal("Load of a directory succeeded")
	}
}

func TestDelete(t *testing.T) {
	for _, s := range specs() {
		t.Run("kind="+s.Kind.String(), func(t *testing.T) {
			f, _ := New(s)
			f.Add([]byte("a"))
			ok, err := f.Delete([]byte("a"))
			if s.Kind.CanDelete() {
				if err != nil || !ok || f.Contains([]byte("a")) {
					t.Fatalf("Delete = %v, %v; still present: %v", ok, err, f.Contains([]byte("a")))
				}
				return
			}
			if !errors.Is(err, ErrNoDelete) || ok || !f.Contains([]byte("a")) {
				t.Fatalf("Delete on %v = %v, %v; want ErrNoDelete and the key kept", s.Kind, ok, err)
			}
		})
	}
}

// TestFull checks that a full fixed filter says ErrFull (wrapping the
// cuckoo package's) and keeps every key it took.
func TestFull(t *testing.T) {
	f, err := New(Spec{Kind: Cuckoo, Capacity: 100, FingerprintBits: 16, Seed: 3, SeedSet: true})
	if err != nil {
		t.Fatal(err)
	}
	var added []int
	var fullErr error
	for i := range 10_000 {
		if err := f.Add(key(i)); err != nil {
			fullErr = err
			break
		}
		added = append(added, i)
	}
	if !errors.Is(fullErr, ErrFull) || !errors.Is(fullErr, cuckoo.ErrFull) {
		t.Fatalf("error %v: want ErrFull wrapping cuckoo.ErrFull", fullErr)
	}
	n := f.Len()
	if _, err := f.AddUnique([]byte("one more, never seen")); err != nil && !errors.Is(err, ErrFull) {
		t.Fatal(err)
	}
	for _, i := range added {
		if !f.Contains(key(i)) {
			t.Fatalf("key %d lost after ErrFull", i)
		}
	}
	if f.Len() < n {
		t.Fatalf("Len fell from %d to %d", n, f.Len())
	}
}

// TestAddUniqueBatch checks the batch against one AddUnique at a time,
// with repeats inside a batch, for every kind.
func TestAddUniqueBatch(t *testing.T) {
	for _, s := range specs() {
		t.Run("kind="+s.Kind.String(), func(t *testing.T) {
			a, _ := New(s)
			b, _ := New(s)
			keys := [][]byte{[]byte("x"), []byte("y"), []byte("x"), []byte("z"), []byte("y"), []byte("w")}
			added := make([]bool, len(keys))
			n, err := b.AddUniqueBatch(keys, added)
			if err != nil || n != len(keys) {
				t.Fatalf("AddUniqueBatch = %d, %v", n, err)
			}
			for i, k := range keys {
				want, _ := a.AddUnique(k)
				if added[i] != want {
					t.Fatalf("key %d (%s): batch says %v, one at a time %v", i, k, added[i], want)
				}
			}
			if a.Len() != b.Len() {
				t.Fatalf("Len %d vs %d", a.Len(), b.Len())
			}
		})
	}
}

// TestAddUniqueHashBatch: for the kinds whose HashSeed says so, adding
// keys by their hashes (hash.Sum64 with that seed) gives the answers and
// the filter, byte for byte, that adding the keys gives; up to full,
// for a fixed-size filter, where both stop at the same key.
func TestAddUniqueHashBatch(t *testing.T) {
	for _, s := range specs() {
		s.Capacity = 3000
		t.Run("kind="+s.Kind.String(), func(t *testing.T) {
			byKey, _ := New(s)
			byHash, _ := New(s)
			seed, ok := byHash.HashSeed()
			if want := s.Kind == Cuckoo || s.Kind == CuckooScalable; ok != want {
				t.Fatalf("HashSeed ok %v, want %v", ok, want)
			}
			if !ok {
				defer func() {
					if recover() == nil {
						t.Fatal("AddUniqueHashBatch did not panic for a kind without HashSeed")
					}
				}()
				byHash.AddUniqueHashBatch([]uint64{1}, make([]bool, 1))
				return
			}
			if seed != byHash.Seed() {
				t.Fatalf("HashSeed %d, Seed %d", seed, byHash.Seed())
			}
			var keys [][]byte
			var hs []uint64
			for i := range 5000 { // repeats, and past a fixed filter's capacity
				keys = append(keys, key(i%4000))
				hs = append(hs, hash.Sum64(keys[i], seed))
			}
			a, b := make([]bool, len(keys)), make([]bool, len(keys))
			na, erra := byKey.AddUniqueBatch(keys, a)
			nb, errb := byHash.AddUniqueHashBatch(hs, b)
			if na != nb || (erra == nil) != (errb == nil) || errb != nil && !errors.Is(errb, ErrFull) {
				t.Fatalf("by key %d, %v; by hash %d, %v", na, erra, nb, errb)
			}
			for i := range na {
				if a[i] != b[i] {
					t.Fatalf("key %d: by key %v, by hash %v", i, a[i], b[i])
				}
			}
			var ea, eb bytes.Buffer
			byKey.WriteTo(&ea)
			byHash.WriteTo(&eb)
			if !bytes.Equal(ea.Bytes(), eb.Bytes()) {
				t.Fatal("the filters differ")
			}
		})
	}
}

func TestContainsBatch(t *testing.T) {
	for _, s := range specs() {
		t.Run("kind="+s.Kind.String(), func(t *testing.T) {
			f, _ := New(s)
			var keys [][]byte
			for i := range 200 {
				if i%2 == 0 {
					f.Add(key(i))
				}
				keys = append(keys, key(i))
			}
			found := make([]bool, len(keys))
			f.ContainsBatch(keys, found)
			for i, k := range keys {
				if found[i] != f.Contains(k) {
					t.Fatalf("key %d: batch %v, Contains %v", i, found[i], f.Contains(k))
				}
				if i%2 == 0 && !found[i] {
					t.Fatalf("key %d added but not found", i)
				}
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	for _, s := range []Spec{
		{Kind: Cuckoo, Capacity: 0},
		{Kind: Cuckoo, Capacity: 10, BucketSize: 300},
		{Kind: BloomBlocked, Capacity: 10, FPR: 0.01, BucketSize: 4},
		{Kind: BloomClassic, Capacity: 0, FPR: 0.01},
		{Kind: Kind(99), Capacity: 10},
	} {
		if f, err := New(s); err == nil {
			t.Errorf("New(%+v) = %v, want an error", s, f.Kind())
		}
	}
	if _, err := New(Spec{Kind: BloomBlocked, Capacity: 10, FPR: 0.01, BucketSize: 4}); !errors.Is(err, bloom.ErrInvalidParameter) {
		t.Errorf("Bloom with a bucket size: %v, want bloom.ErrInvalidParameter", err)
	}
}

// FuzzRead feeds arbitrary bytes to Read: it must never panic, must wrap
// ErrNotFilter or ErrDamaged, and what it accepts must re-encode to the
// same bytes.
func FuzzRead(f *testing.F) {
	for _, s := range specs() {
		s.Capacity = 8 // small seeds: the fuzzer minimizes faster
		g, _ := New(s)
		g.Add([]byte("seed"))
		var b bytes.Buffer
		g.WriteTo(&b)
		f.Add(b.Bytes())
		f.Add(b.Bytes()[:b.Len()/2])
	}
	f.Add([]byte("CKOO\x01\x00\x01\x00"))
	f.Add([]byte("BLMF\x01\x00\x04\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Read(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrNotFilter) && !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("error %v wraps none of ErrNotFilter, ErrDamaged, ErrUnsupported", err)
			}
			return
		}
		var b bytes.Buffer
		if _, err := g.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), data) {
			t.Fatal("accepted input re-encodes differently")
		}
		g.Info()
	})
}

// TestBloomFull: a Bloom filter of fixed size takes its capacity of new
// keys and refuses the next with ErrFull, unchanged, as a full cuckoo
// filter does (issue 16: past its capacity it used to take every key, its
// rate rising to 100 %); keys it reports present are still taken; a
// scalable one never refuses.
func TestBloomFull(t *testing.T) {
	for _, kind := range []Kind{BloomBlocked, BloomClassic, BloomCounting, BloomScalable} {
		t.Run("kind="+kind.String(), func(t *testing.T) {
			const capacity = 100
			f, err := New(Spec{Kind: kind, Capacity: capacity, FPR: 0.01, Seed: 5, SeedSet: true})
			if err != nil {
				t.Fatal(err)
			}
			var taken []int
			var fullErr error
			i := 0
			for ; i < 100*capacity; i++ {
				if err := f.Add(key(i)); err != nil {
					fullErr = err
					break
				}
				taken = append(taken, i)
			}
			if kind == BloomScalable {
				if fullErr != nil {
					t.Fatalf("a scalable Bloom filter refused key %d: %v", i, fullErr)
				}
				return
			}
			if !errors.Is(fullErr, ErrFull) || f.Len() != capacity {
				t.Fatalf("after %d keys: error %v, Len %d; want ErrFull at Len %d", i, fullErr, f.Len(), capacity)
			}
			if r, p, far := f.FarAboveTarget(); r > 1.5*p || far {
				t.Fatalf("rate %g when full, target %g", r, p)
			}
			var before bytes.Buffer
			f.WriteTo(&before)
			if added, err := f.AddUnique(key(i)); added || !errors.Is(err, ErrFull) {
				t.Fatalf("AddUnique of a new key when full: %v, %v", added, err)
			}
			keys := [][]byte{key(taken[0]), key(i), key(taken[1])}
			added := make([]bool, len(keys))
			if n, err := f.AddUniqueBatch(keys, added); n != 1 || !errors.Is(err, ErrFull) || added[0] {
				t.Fatalf("AddUniqueBatch when full: %d, %v, %v", n, err, added)
			}
			if added, err := f.AddUnique(key(taken[0])); added || err != nil {
				t.Fatalf("AddUnique of a present key when full: %v, %v", added, err)
			}
			if kind != BloomCounting {
				// A key present changes nothing; for a counting filter it is a copy.
				if err := f.Add(key(taken[0])); err != nil {
					t.Fatalf("Add of a present key when full: %v", err)
				}
			}
			var after bytes.Buffer
			f.WriteTo(&after)
			if !bytes.Equal(before.Bytes(), after.Bytes()) {
				t.Fatal("a refused key changed the filter")
			}
			for _, j := range taken {
				if !f.Contains(key(j)) {
					t.Fatalf("key %d lost", j)
				}
			}
		})
	}
}

// TestFarAboveTarget: a Bloom filter filled far past its capacity by the
// library (the command refuses to) is reported far above its target once
// loaded; filters filled to capacity are not.
func TestFarAboveTarget(t *testing.T) {
	over, _ := bloom.New(100, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(1))
	for i := range 10_000 {
		over.Add(key(i))
	}
	b, _ := over.MarshalBinary()
	f, err := Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if rate, target, far := f.FarAboveTarget(); !far || target != 0.01 || rate < 0.5 {
		t.Fatalf("overfilled Bloom filter: rate %g, target %g, far %v", rate, target, far)
	}
	for _, s := range specs() {
		g, _ := New(s)
		for i := range int(s.Capacity) {
			g.Add(key(i))
		}
		if rate, target, far := g.FarAboveTarget(); far || !(target > 0 && target <= s.FPR) {
			t.Errorf("%s at capacity: rate %g, target %g, far %v", s.Kind, rate, target, far)
		}
	}
}

func TestCheckRate(t *testing.T) {
	for _, c := range []struct {
		spec Spec
		ok   bool
	}{
		{Spec{Kind: Cuckoo, FPR: 1e-8}, true},
		{Spec{Kind: Cuckoo, FPR: 1e-10}, false},
		{Spec{Kind: CuckooScalable, FPR: 1e-10}, false},
		{Spec{Kind: Cuckoo, FPR: 1e-10, FingerprintBits: 8}, true},
		{Spec{Kind: BloomBlocked, FPR: 1e-10}, true},
		{Spec{Kind: BloomScalable, FPR: 1e-16}, false},
	} {
		err := CheckRate(c.spec)
		if (err == nil) != c.ok {
			t.Errorf("CheckRate(%+v) = %v", c.spec, err)
		}
		if err == nil && c.ok && c.spec.FingerprintBits == 0 {
			c.spec.Capacity = 10
			if _, err := New(c.spec); err != nil {
				t.Errorf("CheckRate accepts %+v, New refuses it: %v", c.spec, err)
			}
		}
		if err != nil && !c.ok {
			c.spec.Capacity = 10
			if _, nerr := New(c.spec); nerr == nil {
				t.Errorf("CheckRate refuses %+v (%v), New accepts it", c.spec, err)
			}
		}
	}
}

// TestTargetRate: the target rate info shows is the one the filter was
// built with, for every Bloom kind, and the bound given for a growing
// cuckoo filter.
func TestTargetRate(t *testing.T) {
	for _, s := range specs() {
		s.FPR = 0.00123
		f, _ := New(s)
		var b bytes.Buffer
		f.WriteTo(&b)
		g, err := Read(&b)
		if err != nil {
			t.Fatal(err)
		}
		for _, fl := range g.Info() {
			if (fl.Key == "fpr_target" || fl.Key == "fpr_bound") && fl.Value != 0.00123 {
				t.Errorf("%s: %s = %v, want 0.00123", s.Kind, fl.Key, fl.Value)
			}
		}
	}
}

// TestBloomFullInBatch: a fixed-size Bloom filter filled by batches (as
// dedup fills it) stops at the key that finds it full, mid-batch, and
// has taken exactly its capacity of new keys.
func TestBloomFullInBatch(t *testing.T) {
	for _, kind := range []Kind{BloomBlocked, BloomClassic, BloomCounting} {
		f, _ := New(Spec{Kind: kind, Capacity: 100, FPR: 0.001, Seed: 9, SeedSet: true})
		keys := make([][]byte, 64)
		added := make([]bool, 64)
		next, took := 0, 0
		for {
			for j := range keys {
				keys[j] = key(next + j)
			}
			n, err := f.AddUniqueBatch(keys, added)
			for _, a := range added[:n] {
				if a {
					took++
				}
			}
			next += n
			if err != nil {
				if !errors.Is(err, ErrFull) || n == len(keys) {
					t.Fatalf("%s: batch error %v after %d of %d keys", kind, err, n, len(keys))
				}
				break
			}
		}
		if f.Len() != 100 || took != 100 {
			t.Fatalf("%s: Len %d, %d keys added, want the capacity, 100", kind, f.Len(), took)
		}
	}
}
