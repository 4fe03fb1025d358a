package redisfilter_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// libraryFilter builds a library filter with duplicates and deletes: keys
// p0..p(n-1) minus every fifth, "hot" 50 times, "warm" 3 times.
func libraryFilter(t *testing.T, n int, opts ...cuckoo.Option) *cuckoo.Filter {
	t.Helper()
	f, err := cuckoo.New(uint64(n), opts...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n * 3 / 4 {
		if err := f.Add(key("p", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n*3/4; i += 5 {
		if !f.Delete(key("p", i)) {
			t.Fatal("delete failed")
		}
	}
	for range 50 {
		f.Add([]byte("hot"))
	}
	for range 3 {
		f.Add([]byte("warm"))
	}
	return f
}

// sameAnswers checks that f answers Contains and Count as lib does for the
// keys p0..p(n-1), near misses of them, and the hot keys.
func sameAnswers(t *testing.T, f *redisfilter.Filter, lib *cuckoo.Filter, n int) {
	t.Helper()
	ctx := ctxOf(t)
	probe := append(keys("p", n), keys("q", n)...)
	probe = append(probe, []byte("hot"), []byte("warm"), []byte("cold"))
	found := make([]bool, len(probe))
	if err := f.ContainsBatch(ctx, probe, found, make([]error, len(found))); err != nil {
		t.Fatal(err)
	}
	for i, k := range probe {
		if found[i] != lib.Contains(k) {
			t.Fatalf("%s: Redis Contains %v, library %v", k, found[i], lib.Contains(k))
		}
	}
	for i := 0; i < len(probe); i += 1 + len(probe)/500 {
		got, err := f.Count(ctx, probe[i])
		if err != nil {
			t.Fatal(err)
		}
		if want := lib.Count(probe[i]); got != want {
			t.Fatalf("%s: Redis Count %d, library %d", probe[i], got, want)
		}
	}
	for _, k := range []string{"hot", "warm"} {
		got, _ := f.Count(ctx, []byte(k))
		if got != lib.Count([]byte(k)) {
			t.Fatalf("%s: Redis Count %d, library %d", k, got, lib.Count([]byte(k)))
		}
	}
	if got, err := f.Len(ctx); err != nil || got != lib.Len() {
		t.Fatalf("Len %d, %v; library %d", got, err, lib.Len())
	}
}

// TestPushThenPull pushes library filters (several shapes, one segment
// and several) and checks that Redis answers exactly as the file's filter
// does, and that the snapshot encodes to the same bytes as the file: of
// 5,000 keys (20,000 with CUCKOO_LONG=1).
func TestPushThenPull(t *testing.T) {
	testlong.SkipQuickRun(t)
	topologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxOf(t)
		rng := testseed.Rand(t)
		n := 5000
		if testlong.Enabled() {
			n = 20000
		}
		for _, s := range []struct{ b, f, segments int }{{4, 12, 4}, {2, 16, 1}, {8, 9, 2}, {4, 16, 7}, {3, 11, 2}} {
			t.Run(fmt.Sprintf("b=%d/f=%d/segments=%d", s.b, s.f, s.segments), func(t *testing.T) {
				lib := libraryFilter(t, n, cuckoo.WithBucketSize(s.b), cuckoo.WithFingerprintBits(s.f),
					cuckoo.WithSegments(s.segments), cuckoo.WithSeed(rng.Uint64()))
				file, _ := lib.MarshalBinary()
				name := uniqueName(t)
				f, err := redisfilter.Push(ctx, rdb, name, lib, false)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Drop(ctx)
				if f.Segments() != s.segments || f.Seed() != lib.Seed() || f.NumBuckets() != lib.NumBuckets() {
					t.Fatalf("pushed: %d segments, seed %d, %d buckets", f.Segments(), f.Seed(), f.NumBuckets())
				}
				sameAnswers(t, f, lib, n)
				snap, err := f.Snapshot(ctx)
				if err != nil {
					t.Fatal(err)
				}
				back, _ := snap.MarshalBinary()
				if !bytes.Equal(back, file) {
					t.Fatalf("the pulled file differs from the pushed one (%d and %d bytes)", len(back), len(file))
				}
				// The pushed filter opens like any other, and New with its
				// parameters opens it too.
				g, err := redisfilter.Open(ctx, rdb, name)
				if err != nil || g.Capacity() != lib.Capacity() {
					t.Fatal(err)
				}
				if _, err := redisfilter.Push(ctx, rdb, name, lib, false); !errors.Is(err, redisfilter.ErrExists) {
					t.Fatalf("second push: %v, want ErrExists", err)
				}
				if f, err = redisfilter.Push(ctx, rdb, name, lib, true); err != nil {
					t.Fatal(err)
				}
				sameAnswers(t, f, lib, n)
			})
		}
	})
}

// TestPullThenPush builds a filter in Redis (with duplicates and deletes),
// pulls it, and checks the library filter answers as Redis does; pushing
// the pulled filter under another name gives the same bytes again. The
// filter holds 5,000 keys (15,000 with CUCKOO_LONG=1) less every fifth.
func TestPullThenPush(t *testing.T) {
	topologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxOf(t)
		// A fixed seed: Count may exceed the true count when another key
		// shares "hot"'s fingerprint in one of its buckets, and with a
		// random seed that happens in about one run in a thousand.
		f, err := redisfilter.New(ctx, rdb, uniqueName(t), 20000, redisfilter.WithFalsePositiveRate(0.001), redisfilter.WithSegments(3), redisfilter.WithSeed(0x5eed))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Drop(ctx)
		in := keys("p", 5000)
		if testlong.Enabled() {
			in = keys("p", 15000)
		}
		errs := make([]error, len(in))
		if err := f.AddBatch(ctx, in, errs); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(in); i += 5 {
			if ok, err := f.Delete(ctx, in[i]); err != nil || !ok {
				t.Fatal(ok, err)
			}
		}
		for range 50 {
			f.Add(ctx, []byte("hot"))
		}
		for range 3 {
			f.Add(ctx, []byte("warm"))
		}
		lib, err := f.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		inRedis, err := f.Count(ctx, []byte("hot"))
		if err != nil {
			t.Fatal(err)
		}
		if lib.Segments() != 3 || lib.Count([]byte("hot")) != inRedis || inRedis < 50 {
			t.Fatalf("snapshot: %d segments, hot counts %d (%d in Redis, 50 added)", lib.Segments(), lib.Count([]byte("hot")), inRedis)
		}
		sameAnswers(t, f, lib, 20000)
		file, _ := lib.MarshalBinary()
		var decoded cuckoo.Filter
		if err := decoded.UnmarshalBinary(file); err != nil {
			t.Fatal(err)
		}
		g, err := redisfilter.Push(ctx, rdb, uniqueName(t), &decoded, false)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Drop(ctx)
		snap, err := g.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := snap.MarshalBinary(); !bytes.Equal(again, file) {
			t.Fatal("push of a pulled file, pulled again, differs")
		}
	})
}

// TestPushRefusesSemiSorted: the Lua side knows only plain buckets.
func TestPushRefusesSemiSorted(t *testing.T) {
	t.Parallel()
	ctx := ctxOf(t)
	lib, _ := cuckoo.New(1000, cuckoo.WithSemiSorting())
	if _, err := redisfilter.Push(ctx, singleClient(t), uniqueName(t), lib, false); !errors.Is(err, redisfilter.ErrUnsupported) {
		t.Fatalf("push of a semi-sorted filter: %v, want ErrUnsupported", err)
	}
}

// TestAnyBucketSize: New takes every bucket size the library does (1 to
// cuckoo.MaxBucketSize) and refuses others; a filter of odd or wide
// buckets pushed from the library answers as the library does, and comes
// back bit for bit. (TestLuaMatchesEngine holds the inserts and deletes of
// odd sizes to the engine.) The quick run tries buckets of 1, 5 and
// MaxBucketSize slots; the long checks (CUCKOO_LONG=1) 3 and 16 too.
func TestAnyBucketSize(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	ctx := ctxOf(t)
	rdb := singleClient(t)
	rng := testseed.Rand(t)
	for _, b := range []int{0, -1, cuckoo.MaxBucketSize + 1} {
		if _, err := redisfilter.New(ctx, rdb, uniqueName(t), 1000, redisfilter.WithBucketSize(b)); !errors.Is(err, redisfilter.ErrInvalidParameter) {
			t.Errorf("New with %d-slot buckets: %v, want ErrInvalidParameter", b, err)
		}
	}
	shapes := []struct{ b, f int }{{1, 16}, {5, 9}, {cuckoo.MaxBucketSize, 32}}
	if testlong.Enabled() {
		shapes = append(shapes, struct{ b, f int }{3, 12}, struct{ b, f int }{16, 20})
	}
	for _, s := range shapes {
		f, err := redisfilter.New(ctx, rdb, uniqueName(t), 500, redisfilter.WithBucketSize(s.b), redisfilter.WithFingerprintBits(s.f))
		if err != nil {
			t.Fatalf("New with %d-slot buckets of %d bits: %v", s.b, s.f, err)
		}
		addAll(t, ctx, f, keys("any", 500))
		if ok, err := f.Contains(ctx, key("any", 499)); !ok || err != nil || f.BucketSize() != s.b {
			t.Fatalf("b=%d: Contains of a key added: %v, %v", s.b, ok, err)
		}
		f.Drop(ctx)
		lib := libraryFilter(t, 1000, cuckoo.WithBucketSize(s.b), cuckoo.WithFingerprintBits(s.f),
			cuckoo.WithSegments(2), cuckoo.WithSeed(rng.Uint64()))
		file, _ := lib.MarshalBinary()
		if f, err = redisfilter.Push(ctx, rdb, uniqueName(t), lib, false); err != nil {
			t.Fatalf("Push of %d-slot buckets: %v", s.b, err)
		}
		sameAnswers(t, f, lib, 1000)
		snap, err := f.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if back, _ := snap.MarshalBinary(); !bytes.Equal(back, file) {
			t.Fatalf("b=%d: the pulled file differs from the pushed one", s.b)
		}
		f.Drop(ctx)
	}
}

// TestNewOpenDrop checks the life cycle: Open of an absent name, New of an
// existing name with the same and with other parameters, Drop.
func TestNewOpenDrop(t *testing.T) {
	t.Parallel()
	ctx := ctxOf(t)
	rdb := singleClient(t)
	name := uniqueName(t)
	if _, err := redisfilter.Open(ctx, rdb, name); !errors.Is(err, redisfilter.ErrNotFound) {
		t.Fatalf("Open of an absent filter: %v", err)
	}
	f, err := redisfilter.New(ctx, rdb, name, 5000, redisfilter.WithFingerprintBits(12))
	if err != nil {
		t.Fatal(err)
	}
	f.Add(ctx, []byte("x"))
	// The same parameters (another random seed): the existing filter.
	g, err := redisfilter.New(ctx, rdb, name, 5000, redisfilter.WithFingerprintBits(12))
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := g.Contains(ctx, []byte("x")); !ok || g.Seed() != f.Seed() {
		t.Fatal("New of the same parameters did not open the filter")
	}
	for _, opts := range [][]redisfilter.Option{
		{redisfilter.WithFingerprintBits(16)},
		{redisfilter.WithFingerprintBits(12), redisfilter.WithSeed(f.Seed() + 1)},
		{redisfilter.WithFingerprintBits(12), redisfilter.WithSegments(2)},
		{redisfilter.WithFingerprintBits(12), redisfilter.WithBucketSize(8)},
	} {
		if _, err := redisfilter.New(ctx, rdb, name, 5000, opts...); !errors.Is(err, redisfilter.ErrMismatch) {
			t.Fatalf("New with other parameters: %v, want ErrMismatch", err)
		}
	}
	if h, err := redisfilter.New(ctx, rdb, name, 5000, redisfilter.WithFingerprintBits(12), redisfilter.WithSegments(f.Segments())); err != nil || h.Seed() != f.Seed() {
		t.Fatalf("New with the filter's own segment count: %v", err)
	}
	if _, err := redisfilter.New(ctx, rdb, name, 6000, redisfilter.WithFingerprintBits(12)); !errors.Is(err, redisfilter.ErrMismatch) {
		t.Fatalf("New with another capacity: %v", err)
	} else {
		t.Log(err)
	}
	if err := f.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := redisfilter.Open(ctx, rdb, name); !errors.Is(err, redisfilter.ErrNotFound) {
		t.Fatalf("Open after Drop: %v", err)
	}
	if err := g.Add(ctx, []byte("y")); !errors.Is(err, redisfilter.ErrNotFound) {
		t.Fatalf("Add after Drop: %v", err)
	}
	// Dropped and created again: the old handle must not write into the
	// new filter.
	if _, err := redisfilter.New(ctx, rdb, name, 5000, redisfilter.WithFingerprintBits(12)); err != nil {
		t.Fatal(err)
	}
	if err := g.Add(ctx, []byte("y")); !errors.Is(err, redisfilter.ErrNotFound) {
		t.Fatalf("Add through a handle of the dropped filter: %v", err)
	}
	if _, err := g.Len(ctx); !errors.Is(err, redisfilter.ErrNotFound) {
		t.Fatalf("Len through a handle of the dropped filter: %v", err)
	}
}
