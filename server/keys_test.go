package server

import (
	"strconv"
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"a*", "abc", true},
		{"a*", "ba", false},
		{"*c", "abc", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
		{"?", "a", true},
		{"?", "", false},
		{"h?llo", "hello", true},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-c]llo", "hbllo", true},
		{"h[c-a]llo", "hbllo", true},
		{"h[a-c]llo", "hdllo", false},
		{`h\*llo`, "h*llo", true},
		{`h\*llo`, "hello", false},
		{`a\`, `a\`, true},
		{"[abc", "a", true},
		{"**a", "xa", true},
		{"a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
	} {
		if got := globMatch([]byte(tc.pattern), []byte(tc.s)); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

// TestScanAll: SCAN returns every key exactly once, whatever COUNT.
func TestScanAll(t *testing.T) {
	parallel(t)
	_, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	const n = 3000
	for i := range n {
		c.send(encode("BF.ADD", "key"+strconv.Itoa(i), "x"))
	}
	for range n {
		c.reply()
	}
	for _, count := range []string{"1", "10", "100000"} {
		seen := map[string]int{}
		cursor := "0"
		for {
			raw := c.do("SCAN", cursor, "COUNT", count)
			lines := splitLines(render(raw))
			cursor = unquote(lines[0][3:])
			for _, l := range lines[1:] {
				if i := strings.IndexByte(l, '"'); i >= 0 {
					seen[unquote(l[i:])]++
				}
			}
			if cursor == "0" {
				break
			}
		}
		if len(seen) != n {
			t.Fatalf("COUNT %s: %d keys, want %d", count, len(seen), n)
		}
		for k, times := range seen {
			if times != 1 {
				t.Fatalf("COUNT %s: %s returned %d times", count, k, times)
			}
		}
	}
}
