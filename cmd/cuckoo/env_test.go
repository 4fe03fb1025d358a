package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestInterruptTellsTheTruth: the message of an interrupt names as written
// the files the run replaced, including one whose replacement took effect
// just before the interrupt (it used to be reported "left unchanged"),
// and as unchanged only those still being written, whose targets it keeps
// as they were; one still being written that did not exist before is
// "not written". No temporary or lock file is left.
func TestInterruptTellsTheTruth(t *testing.T) {
	dir := t.TempDir()
	e := &env{stdout: io.Discard, stderr: io.Discard, cmd: "dedup"}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("old.ckoo", "old")
	write("seen.ckoo", "seen before")
	start := func(name, data string) *outputFile {
		o, err := e.createOutput(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(o, data)
		return o
	}
	// Written and committed earlier in the run.
	if err := start("out.txt", "lines").commit(); err != nil {
		t.Fatal(err)
	}
	// Replaced, the interrupt arriving before the command took note.
	if err := start("old.ckoo", "new").f.Commit(); err != nil {
		t.Fatal(err)
	}
	// Still being written.
	start("seen.ckoo", "half a fil")
	start("new.ckoo", "a file that did not exi")

	msg := e.interrupt()
	p := func(name string) string { return filepath.Join(dir, name) }
	want := "interrupted; " + p("old.ckoo") + ", " + p("out.txt") + " written; " + p("seen.ckoo") + " left unchanged; " + p("new.ckoo") + " not written"
	if msg != want {
		t.Fatalf("message %q\nwant    %q", msg, want)
	}
	for name, data := range map[string]string{"out.txt": "lines", "old.ckoo": "new", "seen.ckoo": "seen before"} {
		if b, _ := os.ReadFile(p(name)); string(b) != data {
			t.Errorf("%s holds %q, want %q", name, b, data)
		}
	}
	if es, _ := os.ReadDir(dir); len(es) != 3 {
		var names []string
		for _, x := range es {
			names = append(names, x.Name())
		}
		t.Fatalf("files left: %v", names)
	}
}
