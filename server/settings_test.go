package server

import (
	"fmt"
	"strings"
	"testing"
)

// TestFullFilterReplies: a fixed cuckoo filter with no room answers as
// RedisBloom 8 does: CF.ADD the error "Filter is full", CF.INSERT -1 in
// RESP2 and false in RESP3, CF.INSERTNX -1 in both; and it keeps every
// item it held.
func TestFullFilterReplies(t *testing.T) {
	parallel(t)
	_, addr := startServer(t, testConfig(t))
	for _, proto := range []string{"2", "3"} {
		c := dial(t, addr)
		c.do("HELLO", proto)
		key := "full" + proto
		c.do("CF.RESERVE", key, "2", "BUCKETSIZE", "1", "EXPANSION", "0", "SEED", "3")
		var held []string
		refused := ""
		for i := range 10_000 {
			item := fmt.Sprint("item", i)
			got := c.do("CF.INSERT", key, "ITEMS", item)
			switch {
			case got == "*1\r\n:1\r\n" && proto == "2", got == "*1\r\n#t\r\n" && proto == "3":
				held = append(held, item)
				continue
			case got == "*1\r\n:-1\r\n" && proto == "2", got == "*1\r\n#f\r\n" && proto == "3":
				refused = item
			default:
				t.Fatalf("RESP%s: CF.INSERT %s: %q", proto, item, got)
			}
			break
		}
		if refused == "" {
			t.Fatalf("RESP%s: a filter of capacity 2 took 10,000 items", proto)
		}
		if got := c.do("CF.INSERTNX", key, "ITEMS", refused); got != "*1\r\n:-1\r\n" {
			t.Errorf("RESP%s: CF.INSERTNX into a full filter: %q", proto, got)
		}
		if got := c.do("CF.ADD", key, refused); got != "-Filter is full\r\n" {
			t.Errorf("RESP%s: CF.ADD into a full filter: %q", proto, got)
		}
		yes := map[string]string{"2": ":1\r\n", "3": "#t\r\n"}[proto]
		for _, item := range held {
			if got := c.do("CF.EXISTS", key, item); got != yes {
				t.Fatalf("RESP%s: %s lost after the filter filled: %q", proto, item, got)
			}
		}
	}
}

// TestConfigSettings: CONFIG GET and SET read and change Redis 8's bf-*
// and cf-* settings, with Redis's error texts, and the commands that
// create filters follow them.
func TestConfigSettings(t *testing.T) {
	parallel(t)
	_, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	want := "*16\r\n$13\r\nbf-error-rate\r\n$4\r\n0.01\r\n$15\r\nbf-initial-size\r\n$3\r\n100\r\n" +
		"$19\r\nbf-expansion-factor\r\n$1\r\n2\r\n$14\r\ncf-bucket-size\r\n$1\r\n4\r\n$15\r\ncf-initial-size\r\n$4\r\n1024\r\n" +
		"$17\r\ncf-max-iterations\r\n$3\r\n500\r\n$19\r\ncf-expansion-factor\r\n$1\r\n2\r\n$17\r\ncf-max-expansions\r\n$2\r\n32\r\n"
	if got := c.do("CONFIG", "GET", "bf-*", "cf-*"); got != want {
		t.Fatalf("CONFIG GET: %q\nwant %q", got, want)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cf-bucket-size", "0"}, "-ERR CONFIG SET failed (possibly related to argument 'cf-bucket-size') - Value for `cf-bucket-size` must be in the range [1, 255]\r\n"},
		{[]string{"cf-bucket-size", "x"}, "-ERR CONFIG SET failed (possibly related to argument 'cf-bucket-size') - Invalid value for `cf-bucket-size`\r\n"},
		{[]string{"cf-initial-size", "7"}, "-ERR CONFIG SET failed (possibly related to argument 'cf-initial-size') - Value for `cf-initial-size` must be in the range [8, 9223372036854775807]\r\n"},
		{[]string{"bf-error-rate", "1"}, "-ERR CONFIG SET failed (possibly related to argument 'bf-error-rate') - Value for `bf-error-rate` must be in the range (0.000000, 1.000000)\r\n"},
		{[]string{"cf-max-iterations", "20", "cf-max-iterations", "30"}, "-ERR CONFIG SET failed (possibly related to argument 'cf-max-iterations') - duplicate parameter\r\n"},
		{[]string{"cf-max-iterations", "20", "port", "1"}, "-ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable config\r\n"},
		{[]string{"cf-max-iterations", "20", "nosuch", "1"}, "-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\r\n"},
		{[]string{"cf-max-iterations", "20", "cf-bucket-size"}, "-ERR syntax error\r\n"},
		// Refused as a whole: cf-max-iterations is still 500 below.
		{[]string{"cf-max-iterations", "20", "cf-bucket-size", "256"}, "-ERR CONFIG SET failed (possibly related to argument 'cf-bucket-size') - Value for `cf-bucket-size` must be in the range [1, 255]\r\n"},
	} {
		if got := c.do(append([]string{"CONFIG", "SET"}, tc.args...)...); got != tc.want {
			t.Errorf("CONFIG SET %q: %q\nwant %q", tc.args, got, tc.want)
		}
	}
	if got := c.do("CONFIG", "GET", "cf-max-iterations"); got != "*2\r\n$17\r\ncf-max-iterations\r\n$3\r\n500\r\n" {
		t.Fatalf("a refused CONFIG SET changed a setting: %q", got)
	}

	// RedisBloom's defaults, set as docs/server.md says: CF.INFO reads as
	// RedisBloom's would for a filter CF.ADD creates.
	if got := c.do("CONFIG", "SET", "cf-bucket-size", "2", "cf-expansion-factor", "1", "cf-max-iterations", "20"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	c.do("CF.ADD", "auto", "x")
	info := c.do("CF.INFO", "auto")
	for _, field := range []string{"+Bucket size\r\n:2\r\n", "+Expansion rate\r\n:1\r\n", "+Max iterations\r\n:20\r\n", "+Number of items inserted\r\n:1\r\n"} {
		if !strings.Contains(info, field) {
			t.Errorf("CF.INFO of a filter made with RedisBloom's settings lacks %q: %q", field, info)
		}
	}
	if got := c.do("CF.RESERVE", "reserved", "1000"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if info := c.do("CF.INFO", "reserved"); !strings.Contains(info, "+Bucket size\r\n:2\r\n") || !strings.Contains(info, "+Max iterations\r\n:20\r\n") {
		t.Errorf("CF.RESERVE without options does not take the settings: %q", info)
	}

	// cf-expansion-factor 0: fixed filters; bf-expansion-factor 0:
	// NONSCALING ones; bf-error-rate above 0.25 is taken as 0.25.
	c.do("CONFIG", "SET", "cf-expansion-factor", "0", "bf-expansion-factor", "0", "bf-initial-size", "7", "bf-error-rate", "0.5")
	c.do("CF.ADD", "fixed", "x")
	if info := c.do("CF.INFO", "fixed"); !strings.Contains(info, "+Expansion rate\r\n:0\r\n") {
		t.Errorf("cf-expansion-factor 0: %q", info)
	}
	c.do("BF.ADD", "bloom", "x")
	if got := c.do("BF.INFO", "bloom", "EXPANSION"); got != "*1\r\n$-1\r\n" {
		t.Errorf("bf-expansion-factor 0: BF.INFO EXPANSION %q", got)
	}
	if got := c.do("BF.INFO", "bloom", "CAPACITY"); got != "*1\r\n:7\r\n" {
		t.Errorf("bf-initial-size 7: BF.INFO CAPACITY %q", got)
	}
	if got := c.do("CONFIG", "GET", "bf-error-rate"); got != "*2\r\n$13\r\nbf-error-rate\r\n$4\r\n0.25\r\n" {
		t.Errorf("bf-error-rate 0.5: %q", got)
	}
	if got := c.do("BF.RESERVE", "b2", "0.01", "100", "EXPANSION", "2"); got != "-Nonscaling filters cannot expand\r\n" {
		t.Errorf("BF.RESERVE EXPANSION 2 with bf-expansion-factor 0: %q", got)
	}
}

// TestMaxExpansions: a growing cuckoo filter of cf-max-expansions tables
// refuses adds with RedisBloom's text, and a restart replays what was
// accepted whatever the setting is then.
func TestMaxExpansions(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	c.do("CONFIG", "SET", "cf-max-expansions", "2")
	c.do("CF.RESERVE", "k", "8", "EXPANSION", "1")
	added := 0
	for i := range 100_000 {
		got := c.do("CF.ADD", "k", fmt.Sprint(i))
		if got == "-Maximum expansions reached\r\n" {
			break
		}
		if got != ":1\r\n" {
			t.Fatalf("CF.ADD %d: %q", i, got)
		}
		added++
	}
	if info := c.do("CF.INFO", "k"); !strings.Contains(info, "+Number of filters\r\n:2\r\n") {
		t.Fatalf("refused with other than 2 tables: %q", info)
	}
	if got := c.do("CF.INSERT", "k", "ITEMS", "x"); got != "-Maximum expansions reached\r\n" {
		t.Errorf("CF.INSERT: %q", got)
	}
	// A restart has the default setting (32): the replay keeps every item.
	stopServer(t, s)
	_, addr = startServer(t, cfg)
	c = dial(t, addr)
	for i := range added {
		if got := c.do("CF.EXISTS", "k", fmt.Sprint(i)); got != ":1\r\n" {
			t.Fatalf("item %d lost over a restart: %q", i, got)
		}
	}
	if got := c.do("CF.ADD", "k", "more"); got != ":1\r\n" {
		t.Errorf("after a restart with cf-max-expansions 32: %q", got)
	}
}

// TestNewRefusesBadSettings: New checks Config.Filters as CONFIG SET
// does.
func TestNewRefusesBadSettings(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	cfg.Filters.CFBucketSize = 300
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "cf-bucket-size") {
		t.Fatalf("New with cf-bucket-size 300: %v", err)
	}
	cfg.Filters = FilterSettings{}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := *s.filters.Load(); got != DefaultFilterSettings() {
		t.Fatalf("zero settings: %+v", got)
	}
}
