package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayKeepsBucketCounts: the log records the bucket count of a
// fixed cuckoo filter, so that a replay builds the table the clients
// wrote to even if the library would now plan another count; a record
// written before the log held counts replays at the count planned then
// (the least one); and a client cannot give a count itself. Capacity
// 452,024 with 4-slot buckets of 5-bit fingerprints is a case where the
// planned count (127,008) is above the least one (127,006).
func TestReplayKeepsBucketCounts(t *testing.T) {
	parallel(t)
	const reserve = "CF.RESERVE|%s|452024|BUCKETSIZE|4|FINGERPRINT|5|EXPANSION|0|SEED|1"
	cmd := func(key string) []string { return strings.Split(strings.Replace(reserve, "%s", key, 1), "|") }
	buckets := func(c *conn, key string) string {
		info := c.do("CF.INFO", key)
		i := strings.Index(info, "Number of buckets")
		if i < 0 {
			t.Fatalf("CF.INFO %s: %q", key, info)
		}
		return strings.Fields(info[i+len("Number of buckets"):])[0]
	}

	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	if r := c.do(cmd("new")...); !strings.Contains(r, "OK") {
		t.Fatalf("CF.RESERVE: %q", r)
	}
	c.do("CF.ADD", "new", "x")
	planned := buckets(c, "new")
	if !strings.Contains(planned, "127008") {
		t.Fatalf("planned buckets %q, want 127008", planned)
	}
	if r := c.do(append(cmd("client"), "BUCKETS", "127006")...); !strings.HasPrefix(r, "-") {
		t.Fatalf("CF.RESERVE with BUCKETS from a client: %q", r)
	}
	stopServer(t, s)
	data, err := os.ReadFile(filepath.Join(cfg.Dir, logName(0)))
	if err != nil || !strings.Contains(string(data), "BUCKETS") {
		t.Fatalf("the log does not record the bucket count (%v)", err)
	}
	_, addr = startServer(t, cfg)
	c = dial(t, addr)
	if got := buckets(c, "new"); got != planned || !strings.Contains(c.do("CF.EXISTS", "new", "x"), "1") {
		t.Fatalf("after the replay: %s buckets (want %s), or x lost", got, planned)
	}

	old := testConfig(t)
	rec := encodeRecordForTest(0, cmd("old")...)
	rec = append(rec, encodeRecordForTest(0, "CF.ADD", "old", "x")...)
	if err := os.WriteFile(filepath.Join(old.Dir, logName(0)), rec, 0o640); err != nil {
		t.Fatal(err)
	}
	_, addr = startServer(t, old)
	c = dial(t, addr)
	if got := buckets(c, "old"); !strings.Contains(got, "127006") || !strings.Contains(c.do("CF.EXISTS", "old", "x"), "1") {
		t.Fatalf("an old record replays at %s buckets (want 127006), or x lost", got)
	}
}

// TestReplayTakesCFInsertCapacityOfItsTime: a CF.INSERT whose CAPACITY
// was in range for the bucket size in force (4 by default, 8 after CONFIG
// SET) replays, although the capacity is beyond what 1-slot buckets can
// plan: a restart from the log alone gives back every item, and the
// writes after it.
func TestReplayTakesCFInsertCapacityOfItsTime(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	for _, cmd := range [][]string{
		{"CF.RESERVE", "k", "1000"},
		{"CF.INSERT", "k", "CAPACITY", "100000000", "ITEMS", "a", "b"},
		{"CF.INSERTNX", "k", "CAPACITY", "200000000", "ITEMS", "c"},
		{"CONFIG", "SET", "cf-bucket-size", "8"},
		{"CF.INSERT", "k", "CAPACITY", "1000000000", "ITEMS", "d"},
		{"CF.ADD", "k", "e"},
	} {
		if r := c.do(cmd...); strings.HasPrefix(r, "-") {
			t.Fatalf("%q: %q", cmd, r)
		}
	}
	s.Close() // no snapshot: the log alone
	_, addr = startServer(t, cfg)
	c = dial(t, addr)
	if got, want := c.do("CF.MEXISTS", "k", "a", "b", "c", "d", "e"), "*5\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n"; got != want {
		t.Fatalf("after the replay: CF.MEXISTS %q, want %q", got, want)
	}
}
