package redisfilter_test

import (
	"errors"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// TestCheckedLookupsTellGoneFromAbsent: ContainsChecked and
// ContainsBatchChecked answer as Contains and ContainsBatch while the
// filter is there, and fail with ErrNotFound for the keys of a segment
// whose table or hash is gone (where Contains says "absent"), with
// ErrCorrupt for a table of the wrong length, and for every key once the
// filter is dropped, or dropped and created again under its name. The
// batch spans several rounds (20,000 keys); ContainsChecked is held to
// the batch on every 100th key (every 20th with CUCKOO_LONG=1).
func TestCheckedLookupsTellGoneFromAbsent(t *testing.T) {
	testlong.SkipQuickRun(t)
	topologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxOf(t)
		name := uniqueName(t)
		const n = 20000
		singleEvery := 100
		if testlong.Enabled() {
			singleEvery = 20
		}
		f, err := redisfilter.New(ctx, rdb, name, n, redisfilter.WithSegments(4), redisfilter.WithFalsePositiveRate(0.01))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Drop(ctx) })
		in, out := keys("in", n/2), keys("out", n/2)
		addAll(t, ctx, f, in)
		all := append(append([][]byte(nil), in...), out...)

		// lookups returns each key's answer by ContainsChecked and
		// ContainsBatchChecked, checking that the two agree.
		lookups := func() ([]bool, []error) {
			t.Helper()
			found, errs := make([]bool, len(all)), make([]error, len(all))
			batchErr := f.ContainsBatchChecked(ctx, all, found, errs)
			var first error
			for i, k := range all {
				if first == nil {
					first = errs[i]
				}
				if i%singleEvery != 0 {
					continue
				}
				ok, err := f.ContainsChecked(ctx, k)
				if ok != found[i] || (err == nil) != (errs[i] == nil) {
					t.Fatalf("%s: ContainsChecked %v, %v; ContainsBatchChecked %v, %v", k, ok, err, found[i], errs[i])
				}
			}
			if (first == nil) != (batchErr == nil) {
				t.Fatalf("ContainsBatchChecked returned %v, its first key error is %v", batchErr, first)
			}
			return found, errs
		}

		// While the filter is there: the answers of the unchecked lookups.
		want := make([]bool, len(all))
		if err := f.ContainsBatch(ctx, all, want, make([]error, len(all))); err != nil {
			t.Fatal(err)
		}
		found, errs := lookups()
		for i, k := range all {
			if errs[i] != nil || found[i] != want[i] {
				t.Fatalf("%s: checked %v, %v; unchecked %v", k, found[i], errs[i], want[i])
			}
		}

		// A segment's table or hash gone, or its table cut short: its keys
		// fail (Contains says absent), the others answer as before.
		keysOf := f.Keys() // metadata, then each segment's table and hash
		for _, c := range []struct {
			segment   int
			damage    []string
			wantErr   error
			tableGone bool
		}{
			{0, []string{"del", keysOf[1]}, redisfilter.ErrNotFound, true},
			{1, []string{"del", keysOf[4]}, redisfilter.ErrNotFound, false},
			{2, []string{"set", keysOf[5], "short"}, redisfilter.ErrCorrupt, false},
		} {
			args := make([]any, len(c.damage))
			for i, a := range c.damage {
				args[i] = a
			}
			if err := rdb.Do(ctx, args...).Err(); err != nil {
				t.Fatal(err)
			}
			found, errs := lookups()
			failed := 0
			for i, k := range all {
				s, _, _, _ := redisfilter.Locate(f, k)
				switch {
				case s <= c.segment && !errors.Is(errs[i], redisfilter.ErrNotFound) && !errors.Is(errs[i], redisfilter.ErrCorrupt):
					t.Fatalf("after %q: %s of a damaged segment %d: %v, %v", c.damage, k, s, found[i], errs[i])
				case s == c.segment && !errors.Is(errs[i], c.wantErr):
					t.Fatalf("after %q: %s: %v, want %v", c.damage, k, errs[i], c.wantErr)
				case s > c.segment && (errs[i] != nil || found[i] != want[i]):
					t.Fatalf("after %q: %s of an intact segment %d: %v, %v, want %v", c.damage, k, s, found[i], errs[i], want[i])
				}
				if s == c.segment {
					failed++
					if ok, err := f.Contains(ctx, k); c.tableGone && i < n/2 && (err != nil || ok) {
						t.Fatalf("Contains of %s in a segment whose table is gone: %v, %v; want the silent false this test is about", k, ok, err)
					}
				}
			}
			if failed == 0 {
				t.Fatalf("no key in segment %d", c.segment)
			}
		}

		// Dropped, then created again under the name: every key fails
		// through the old handle, the new one answers.
		if err := f.Drop(ctx); err != nil {
			t.Fatal(err)
		}
		for _, again := range []bool{false, true} {
			if again {
				g, err := redisfilter.New(ctx, rdb, name, n, redisfilter.WithSegments(4), redisfilter.WithFalsePositiveRate(0.01), redisfilter.WithSeed(f.Seed()))
				if err != nil {
					t.Fatal(err)
				}
				if ok, err := g.ContainsChecked(ctx, in[0]); ok || err != nil {
					t.Fatalf("the new filter: %v, %v", ok, err)
				}
			}
			_, errs := lookups()
			for i, k := range all {
				if !errors.Is(errs[i], redisfilter.ErrNotFound) {
					t.Fatalf("dropped (created again: %v): %s: %v", again, k, errs[i])
				}
			}
		}
	})
}
