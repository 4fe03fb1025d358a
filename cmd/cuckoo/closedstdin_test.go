//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClosedStdinIsAnError: every command that reads lines from standard
// input fails on a closed one ('<&-'), status 3 and one line saying so,
// before it reads or writes anything, as cat and sort do ("-: Bad file
// descriptor"), and as store put does: it read as an empty input, status
// 0 (build wrote an empty filter, dedup --state saved one). /dev/null is
// an empty input.
func TestClosedStdinIsAnError(t *testing.T) {
	t.Parallel()
	e := newUnixEnv(t, "needs sh")
	e.write("keys.txt", "a\nb\n")
	e.run("", "build", "-o", "f.ckoo", "keys.txt").want(t, exitOK, "build")
	filter := e.read("f.ckoo")
	for _, args := range []string{
		"dedup",
		"dedup -",
		"dedup keys.txt -",
		"dedup --state seen.ckoo",
		"dedup --exact",
		"dedup --window 1h",
		"build -o new.ckoo",
		"query f.ckoo",
		"add f.ckoo",
		"delete f.ckoo",
	} {
		cmd := strings.Fields(args)[0]
		r := e.sh(`exec "$0" ` + args + ` <&-`)
		r.wantIn(t, exitData, cmd, "reading standard input: it is closed")
		if r.stdout != "" {
			t.Errorf("%s <&-: stdout %q", args, r.stdout)
		}
		for _, name := range []string{"seen.ckoo", "new.ckoo"} {
			if _, err := os.Stat(filepath.Join(e.dir, name)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s <&- wrote %s", args, name)
			}
		}
		if !bytes.Equal(e.read("f.ckoo"), filter) {
			t.Fatalf("%s <&- changed f.ckoo", args)
		}
	}
	// No standard input read: a closed one is no matter.
	if r := e.sh(`exec "$0" dedup keys.txt <&-`); r.code != exitOK || r.stdout != "a\nb\n" {
		t.Fatalf("dedup keys.txt <&-: %+v", r)
	}
	if r := e.sh(`exec "$0" dedup </dev/null`); r.code != exitOK || r.stdout != "" {
		t.Fatalf("dedup </dev/null: %+v", r)
	}
}
