package store

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/dedupkit/cuckoo/internal/hash"
)

// The stash fills only when inserts find no room in a table that is not
// yet full, which random keys almost never make happen; and a refresh
// comes at 2.4·10^5 keys. The tests below make both happen at once with
// a small index given the geometry of one about to be refreshed, and keys
// whose two buckets are one bucket: the ninth such key finds no room, and
// each after it goes to the stash.

// setIndexBeforeRefresh gives s's index, which must be empty, the
// geometry of an index whose next split refreshes it, as one of 2.4·10^5
// keys has before its first refresh: its level's last split to come, and
// the narrowest fragments the level allows.
func (s *Store) setIndexBeforeRefresh(t *testing.T) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	ix := s.mu.ix
	if ix.count != 0 {
		t.Fatalf("the index holds %d entries", ix.count)
	}
	ix.top = ix.level + 1 + minFrag
	ix.setMask()
	ix.split = 1<<ix.level - 1
	if !ix.splitNeedsRefresh() || ix.check() != nil {
		t.Fatalf("index level %d, split %d, top %d: no refresh at the next split (%v)", ix.level, ix.split, ix.top, ix.check())
	}
}

// oneBucket returns the first n numbers i from 0 on whose hashes
// x = hashOf(i) ix addresses to one bucket both ways: addr(x) ==
// addr(alt(x)), the same bucket for all; and for which keep(x), if
// given, holds.
func oneBucket(t *testing.T, ix *index, n int, hashOf func(i uint64) uint64, keep func(x uint64) bool) []uint64 {
	var is []uint64
	bucket := ^uint64(0)
	for i := uint64(0); len(is) < n; i++ {
		if i > 1<<26 {
			t.Fatalf("found %d of %d hashes of one bucket", len(is), n)
		}
		x := hashOf(i)
		j := ix.addr(x)
		if j != ix.addr(ix.alt(x)) || bucket != ^uint64(0) && j != bucket || keep != nil && !keep(x) {
			continue
		}
		bucket = j
		is = append(is, i)
	}
	return is
}

// TestPutFillingStashAtRefresh: a Put of a new key whose entry fills the
// stash when the split that must follow needs a refresh. The refresh
// reads every entry's key from the log, the new key's included, whose
// record must be readable then: the previous version refreshed before
// the record was in the write buffer (or, with SyncAlways, before the
// log file's size covered it), and the Put failed with ErrCorrupt
// ("the index points past the end of the log file").
func TestPutFillingStashAtRefresh(t *testing.T) {
	t.Parallel()
	for _, policy := range []SyncPolicy{SyncNever, SyncAlways, SyncEverySecond} {
		t.Run(policy.String(), func(t *testing.T) {
			t.Parallel()
			fs := NewMemFS()
			s, err := Open("d", WithFS(fs), WithSeed(7), WithSync(policy))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.setIndexBeforeRefresh(t)
			// 8 fill the bucket, maxStash go to the stash: the last fills it.
			n := slotsPerBucket + maxStash
			key := func(i uint64) []byte { return fmt.Appendf(nil, "key-%d", i) }
			var keys [][]byte
			for _, i := range oneBucket(t, s.mu.ix, n, func(i uint64) uint64 { return s.hash(key(i)) }, nil) {
				keys = append(keys, key(i))
			}
			level, _, top := s.IndexGeometry()
			for i, k := range keys {
				if err := s.Put(k, append([]byte("value of "), k...)); err != nil {
					t.Fatalf("Put of key %d of %d: %v", i+1, len(keys), err)
				}
			}
			if l, _, tp := s.IndexGeometry(); l != level+1 || tp == top {
				t.Fatalf("index level %d, top %d after the Puts, %d and %d before: no refresh", l, tp, level, top)
			}
			if err := s.CheckIndex(); err != nil {
				t.Fatal(err)
			}
			check := func(s *Store) {
				t.Helper()
				if s.Len() != uint64(len(keys)) {
					t.Fatalf("%d keys, %d put", s.Len(), len(keys))
				}
				for _, k := range keys {
					if v, err := s.Get(k); err != nil || !bytes.Equal(v, append([]byte("value of "), k...)) {
						t.Fatalf("Get(%q) = %q, %v", k, v, err)
					}
				}
			}
			check(s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = Open("d", WithFS(fs))
			if err != nil {
				t.Fatal(err)
			}
			check(s)
		})
	}
}

// TestPutFailingRefreshChangesNothing: a Put whose refresh (as in
// TestPutFillingStashAtRefresh) finds another record damaged fails with
// ErrCorrupt and leaves no entry for its key. The previous version left
// one, pointing where the next record went.
func TestPutFailingRefreshChangesNothing(t *testing.T) {
	t.Parallel()
	fs := NewMemFS()
	s, err := Open("d", WithFS(fs), WithSeed(7), WithSync(SyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.setIndexBeforeRefresh(t)
	key := func(i uint64) []byte { return fmt.Appendf(nil, "key-%d", i) }
	is := oneBucket(t, s.mu.ix, slotsPerBucket+maxStash, func(i uint64) uint64 { return s.hash(key(i)) }, nil)
	for _, i := range is[:len(is)-1] {
		if err := s.Put(key(i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	// The first record's size field, zeroed: a record no Store writes.
	f, err := fs.Open("d/0000000000000000.log")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 4), logHeaderSize+4); err != nil {
		t.Fatal(err)
	}
	f.Close()
	last := key(is[len(is)-1])
	if err := s.Put(last, []byte("v")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Put with a damaged record to refresh: %v, want ErrCorrupt", err)
	}
	if n := s.Len(); n != uint64(len(is)-1) {
		t.Errorf("%d keys after the failed Put of a new key, %d before", n, len(is)-1)
	}
	if err := s.mu.ix.check(); err != nil {
		t.Error(err)
	}
	if ok, err := s.Has(last); ok || err != nil {
		t.Errorf("Has of the key of the failed Put: %v, %v", ok, err)
	}
}

// TestRefreshFillingStash: a refresh whose new table fills its stash
// splits a bucket and goes on, each entry placed once. The previous
// version inserted the entry that filled the stash again after each
// split (one key, two entries: a Delete left the other, and the key
// came back).
func TestRefreshFillingStash(t *testing.T) {
	t.Parallel()
	const seed = 7
	ix := newIndex(seed)
	ix.top = ix.level + 1 + minFrag
	ix.setMask()
	ix.split = 1<<ix.level - 1
	// The hashes that the refreshed table, with its wider fragments
	// (another D), puts in one bucket both ways, and in two once it has
	// split that bucket: the split makes room for all but 8 of the 24,
	// so that the previous version, which then placed the last one
	// again, ended.
	wide := &index{level: ix.level, split: ix.split, top: ix.level + fragBits, disp: ix.disp}
	wide.setMask()
	split := *wide
	split.level, split.split = wide.level+1, 0
	x := func(i uint64) uint64 { return hash.Mix64(i ^ seed) }
	is := oneBucket(t, wide, slotsPerBucket+maxStash, x, func(x uint64) bool { return split.addr(x) != split.addr(split.alt(x)) })
	hashOf := map[uint64]uint64{}
	for n, i := range is {
		loc, x := uint64(n+1), x(i)
		hashOf[loc] = x
		if ix.add(x, loc) {
			t.Fatalf("the stash of the table to refresh filled at entry %d", loc)
		}
	}
	nx, err := ix.rebuilt(ix.disp, func(loc uint64) (uint64, error) { return hashOf[loc], nil })
	if err != nil {
		t.Fatal(err)
	}
	if nx.level == ix.level && nx.split == ix.split {
		t.Fatal("the refreshed table split no bucket: its stash did not fill")
	}
	if err := nx.check(); err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]int{}
	nx.each(func(r slotRef) error { seen[r.loc]++; return nil })
	for loc := range hashOf {
		if seen[loc] != 1 {
			t.Errorf("entry %d is in the refreshed table %d times", loc, seen[loc])
		}
	}
	if nx.count != uint64(len(is)) {
		t.Errorf("the refreshed table counts %d entries of %d", nx.count, len(is))
	}
}
