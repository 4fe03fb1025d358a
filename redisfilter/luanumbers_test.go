package redisfilter_test

import (
	"context"
	"encoding/binary"
	"math/bits"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// TestFunctionsWriteIntegersInFull holds the Lua functions to servers
// that turn a Lua number passed to a command into text with fpconv_dtoa
// (Redis 7.2.0 to 7.2.4 at least), which writes an integer with eight or
// more trailing zeros in scientific notation ("1e+08"): BITFIELD,
// GETRANGE and SETRANGE refuse such an offset or value as not an
// integer. A slot of 32 bits that starts a byte is written as one u32
// field, whose value is its bytes read most significant first (the
// fingerprint's bytes reversed), so a fingerprint whose bytes reversed
// make 100000000 made the call fail on those servers, and so did a
// bucket at bit 10^8, 2·10^8, ... (its offset). The test loads the
// library with its commands' numbers turned into text that way
// (LoadDtoaNumbersLibrary) on a server of its own: every insert and
// delete must succeed and leave the slot as asked.
func TestFunctionsWriteIntegersInFull(t *testing.T) {
	skipWithoutRedis(t)
	t.Parallel()
	ctx := ctxOf(t)
	rdb := serverWithLibrary(t, redisfilter.LoadDtoaNumbersLibrary)
	// One segment of 32-bit slots, one a bucket, past bit 2·10^8: a 25 MB
	// string.
	f, err := redisfilter.New(ctx, rdb, uniqueName(t), 4_000_000, redisfilter.WithSegments(1),
		redisfilter.WithBucketSize(1), redisfilter.WithFingerprintBits(32))
	if err != nil {
		t.Fatal(err)
	}
	const bucketBits = 32
	if f.NumBuckets()*bucketBits <= 2e8 {
		t.Fatalf("a table of %d bits: too short to reach bit 2·10^8", f.NumBuckets()*bucketBits)
	}
	table, counters := f.Keys()[1], f.Keys()[2]
	// slot returns the slot of bucket i, read from the table's bytes.
	slot := func(i uint64) uint64 {
		b, err := rdb.GetRange(ctx, table, int64(4*i), int64(4*i+3)).Bytes()
		if err != nil || len(b) != 4 {
			t.Fatalf("bucket %d: %q, %v", i, b, err)
		}
		return uint64(binary.LittleEndian.Uint32(b))
	}
	cases := []struct {
		what       string
		bucket, fp uint64
	}{
		{"a field of 10^8", 0, reversed(1e8)},
		{"a field of 42·10^8", 7, reversed(42e8)},
		{"a bucket at bit 10^8", 1e8 / bucketBits, 12345},
		{"a field of 2·10^8 at bit 2·10^8", 2e8 / bucketBits, reversed(2e8)},
	}
	for _, c := range cases {
		codes, err := redisfilter.CallAdd(ctx, f, 0, false, c.bucket, c.fp)
		if err != nil || len(codes) != 1 || codes[0] != 1 {
			t.Fatalf("%s: add: codes %v, %v", c.what, codes, err)
		}
		// Both buckets were empty: the fingerprint takes the first.
		alt := redisfilter.Alt(f, c.bucket, c.fp)
		if got := slot(c.bucket); got != c.fp {
			t.Fatalf("%s: bucket %d holds %d (its other bucket %d: %d), want %d", c.what, c.bucket, got, alt, slot(alt), c.fp)
		}
		codes, err = redisfilter.CallDel(ctx, f, 0, c.bucket, c.fp)
		if err != nil || len(codes) != 1 || codes[0] != 1 {
			t.Fatalf("%s: delete: codes %v, %v", c.what, codes, err)
		}
		n, err := rdb.HGet(ctx, counters, "n").Result()
		if got := slot(c.bucket); got != 0 || n != "0" || err != nil {
			t.Fatalf("%s: after the delete, bucket %d holds %d, items %q (%v)", c.what, c.bucket, got, n, err)
		}
	}
}

// reversed returns the 32-bit slot that a u32 field of value v writes.
func reversed(v uint32) uint64 { return uint64(bits.ReverseBytes32(v)) }

// TestFunctionsPassLargeNumbersAsText runs inserts, deletes and lookups of
// filters and windows (their epoch passes too) on a library whose
// commands refuse a Lua number of 10^8 or more as an argument
// (LoadLargeNumbersRefusedLibrary): every such number must reach Redis as
// text, whatever its digits, so that no server turns it into text of its
// own. Slots of 4 bytes and more make field values that large at nearly
// every write, and a window's next epoch starts at a nanosecond count
// that large.
func TestFunctionsPassLargeNumbersAsText(t *testing.T) {
	skipWithoutRedis(t)
	t.Parallel()
	ctx := ctxOf(t)
	rdb := serverWithLibrary(t, redisfilter.LoadLargeNumbersRefusedLibrary)
	ks := keys("large-", 1000)
	errs := make([]error, len(ks))
	done := make([]bool, len(ks))
	for _, fb := range []int{32, 28, 13} {
		f, err := redisfilter.New(ctx, rdb, uniqueName(t), uint64(len(ks)), redisfilter.WithFingerprintBits(fb), redisfilter.WithSegments(1))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.AddBatch(ctx, ks, errs); err != nil {
			t.Fatalf("%d bits: AddBatch: %v", fb, err)
		}
		if err := f.DeleteBatch(ctx, ks[:len(ks)/2], done, errs); err != nil {
			t.Fatalf("%d bits: DeleteBatch: %v", fb, err)
		}
		if _, err := f.Count(ctx, ks[len(ks)-1]); err != nil {
			t.Fatalf("%d bits: Count: %v", fb, err)
		}
		w, err := redisfilter.NewWindow(ctx, rdb, uniqueName(t), uint64(len(ks)), time.Second,
			redisfilter.WithFingerprintBits(min(fb, cuckoo.MaxWindowFingerprintBits)), redisfilter.WithSegments(1))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AddBatch(ctx, ks, errs); err != nil {
			t.Fatalf("%d bits: window AddBatch: %v", fb, err)
		}
		// Event times 10 ms apart from a fixed time: the sweep, passes
		// of one epoch and more, and a leap that clears the segment.
		at := make([]time.Time, len(ks))
		base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		for i := range at {
			at[i] = base.Add(time.Duration(i) * 10 * time.Millisecond)
		}
		at[len(at)-1] = at[len(at)-2].Add(time.Hour)
		if err := w.TouchBatchAt(ctx, ks, at, done, errs); err != nil {
			t.Fatalf("%d bits: window TouchBatchAt: %v", fb, err)
		}
		if err := w.DeleteBatch(ctx, ks[:len(ks)/2], done, errs); err != nil {
			t.Fatalf("%d bits: window DeleteBatch: %v", fb, err)
		}
		if _, err := w.Len(ctx); err != nil {
			t.Fatalf("%d bits: window Len: %v", fb, err)
		}
	}
}

// serverWithLibrary starts a server of the test's own (its functions are
// not the package's) and loads the functions into it with load.
func serverWithLibrary(t *testing.T, load func(context.Context, redis.UniversalClient) error) redis.UniversalClient {
	t.Helper()
	srv, err := redistest.Start(redistest.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	rdb := clientOf(t, srv)
	if err := load(ctxOf(t), rdb); err != nil {
		t.Fatal(err)
	}
	return rdb
}
