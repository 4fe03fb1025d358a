package main

import (
	"strings"
	"testing"
)

// TestClosestSuggestsOnlyANearName: a slip of one edit (a swap counts
// one) is matched, a name far from every candidate or equally near two
// is not, and short names get no guess.
func TestClosestSuggestsOnlyANearName(t *testing.T) {
	names := []string{"exact", "exact-dir", "fpr", "capacity", "window", "key", "keys", "q"}
	for _, c := range []struct{ typed, want string }{
		{"exatc", "exact"},      // swap
		{"fpt", "fpr"},          // substitution
		{"capacty", "capacity"}, // deletion
		{"windoww", "window"},   // insertion
		{"exact-dri", "exact-dir"},
		{"kez", "key"}, // key is one edit away, keys two
		{"zzz", ""},    // far from all
		{"p", ""},      // too short to guess
		{"exact", ""},  // not a slip
		{"capcaity", "capacity"},
	} {
		got := closest(c.typed, names)
		if got != c.want {
			t.Errorf("closest(%q) = %q, want %q", c.typed, got, c.want)
		}
	}
	if got := closest("ab", []string{"abc", "abd"}); got != "" {
		t.Errorf("a tie: %q", got)
	}
	if got := closest("kex", []string{"key", "kea"}); got != "" {
		t.Errorf("a tie of two names one edit away: %q", got)
	}
}

// TestMisspellingsGetASuggestion: an unknown command or flag near a real
// one names it, still status 2.
func TestMisspellingsGetASuggestion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		args []string
		cmd  string
		want string
	}{
		{[]string{"dedpu"}, "cuckoo", `unknown command "dedpu" (did you mean 'cuckoo dedup'?)`},
		{[]string{"help", "biuld"}, "help", `(did you mean 'cuckoo help build'?)`},
		{[]string{"dedup", "--exatc"}, "dedup", "unknown flag --exatc (did you mean --exact?)"},
		{[]string{"build", "--capacty", "3"}, "build", "unknown flag --capacty (did you mean --capacity?)"},
		{[]string{"dedup", "--zzz"}, "dedup", "unknown flag --zzz; see"},
	} {
		r := e.run("", c.args...)
		r.wantIn(t, exitUsage, c.cmd, c.want)
		if strings.Count(r.stderr, "did you mean") > 1 {
			t.Errorf("%v: %q", c.args, r.stderr)
		}
	}
}
