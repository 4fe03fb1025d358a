package redisfilter

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/internal/redistest"
)

// FuzzParseMeta: parsing never panics, and whatever parses encodes to a
// string that parses to the same metadata.
func FuzzParseMeta(f *testing.F) {
	c := meta{kind: "cuckoo", b: 4, f: 13, buckets: 640, segments: 5, seed: 42, kicks: 500, capacity: 1000, id: "ab12", state: stateReady}
	b := meta{kind: "bloom", k: 10, blocks: 40, segments: 4, seed: 7, capacity: 1000, fpr: 0.001, id: "cd", state: stateCreating}
	f.Add(c.encode(), "cuckoo")
	f.Add(b.encode(), "bloom")
	f.Add("format=1 kind=cuckoo hash=xxh3 b=4 f=99", "cuckoo")
	f.Add("format=2", "bloom")
	f.Fuzz(func(t *testing.T, s, kind string) {
		m, err := parseMeta(s, kind)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := parseMeta(m.encode(), kind)
		if err != nil || again != m {
			t.Fatalf("%q parsed to %+v, which encodes to %q, which parses to %+v, %v", s, m, m.encode(), again, err)
		}
	})
}

func TestParseMetaRejects(t *testing.T) {
	good := "format=1 kind=cuckoo hash=xxh3 b=4 f=13 buckets=640 segments=5 seed=42 kicks=500 capacity=1000 id=ab state=ready"
	if _, err := parseMeta(good, "cuckoo"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		strings.Replace(good, "format=1", "format=2", 1),
		strings.Replace(good, "hash=xxh3", "hash=murmur", 1),
		strings.Replace(good, "b=4", "b=0", 1),
		strings.Replace(good, "b=4", "b=256", 1),
		strings.Replace(good, "f=13", "f=33", 1),
		strings.Replace(good, "buckets=640", "buckets=641", 1),
		strings.Replace(good, "buckets=640", "buckets=600", 1), // not 5 segments of whole 64-bucket groups
		strings.Replace(good, "capacity=1000", "capacity=3000", 1),
		strings.Replace(good, "state=ready", "state=odd", 1),
		strings.Replace(good, "id=ab", "id=", 1),
		strings.Replace(good, "segments=5", "segments=0", 1),
		good + " junk",
	} {
		if _, err := parseMeta(bad, "cuckoo"); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%q: %v, want ErrCorrupt", bad, err)
		}
	}
	if _, err := parseMeta(good, "bloom"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("cuckoo metadata read as bloom: %v", err)
	}
}

// TestCRC16 checks the slot hash against Redis Cluster's specification
// vector, and every slot's tag against the server's CLUSTER KEYSLOT.
func TestCRC16(t *testing.T) {
	if got := crc16([]byte("123456789")); got != 0x31c3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3", got)
	}
	if _, _, err := redistest.Binaries(); err != nil {
		t.Skipf("no redis-server for CLUSTER KEYSLOT: install it with '%s'", redistest.Install)
	}
	s := redistest.NewServer(t, redistest.Config{Cluster: true})
	for slot := 0; slot < numSlots; slot += 1 + slot%97 {
		tag := slotTag(slot)
		got, err := s.Do("CLUSTER", "KEYSLOT", "ckf:{"+tag+"}:t:0:name{x}")
		if err != nil {
			t.Fatal(err)
		}
		if got != strconv.Itoa(slot) {
			t.Fatalf("tag %q: the server puts it in slot %s, we in %d", tag, got, slot)
		}
	}
}

// TestSegmentsSpread checks that the segments of a filter sit at equal
// distances around the slots, so three masters of equal ranges hold
// equal shares (within one), for every segment count.
func TestSegmentsSpread(t *testing.T) {
	for n := 1; n <= 300; n++ {
		name := fmt.Sprintf("filter-%d", n)
		var per [3]int
		seen := map[string]bool{}
		for s := range n {
			slot := segmentSlot(name, s, n)
			per[slot*3/numSlots]++
			k := segmentKey(cuckooPrefix, "t", name, s, n)
			if seen[k] {
				t.Fatalf("n=%d: key %s twice", n, k)
			}
			seen[k] = true
			if got := int(crc16([]byte(slotTag(slot)))) % numSlots; got != slot {
				t.Fatalf("tag of slot %d hashes to %d", slot, got)
			}
		}
		for _, c := range per {
			if c < n/3-1 || c > (n+2)/3+1 {
				t.Fatalf("n=%d: masters hold %v segments", n, per)
			}
		}
	}
}

// TestDiffIgnoresBucketCount: a cuckoo filter made with the same
// parameters matches whatever bucket count the library plans for them
// today (a newer plan may add a few buckets); a parameter that differs
// still does not match.
func TestDiffIgnoresBucketCount(t *testing.T) {
	have := meta{kind: "cuckoo", b: 4, f: 13, buckets: 640, segments: 5, seed: 42, kicks: 500, capacity: 1000}
	want := have
	want.buckets = 960
	if d := have.diff(&want, true, true); d != "" {
		t.Errorf("bucket counts 640 and 960 differ in %s", d)
	}
	want.f = 12
	if d := have.diff(&want, true, true); !strings.Contains(d, "fingerprint bits") {
		t.Errorf("fingerprint bits 13 and 12: diff %q", d)
	}
}
