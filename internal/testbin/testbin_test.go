package testbin

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBuild builds a small command of the module (examples/dedup) twice:
// the path is the same, and the file runs.
func TestBuild(t *testing.T) {
	first, err := Build("../..", "./examples/dedup")
	if err != nil {
		t.Fatal(err)
	}
	second, err := Build("../..", "./examples/dedup")
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Errorf("two builds of one version: %s and %s", first, second)
	}
	cmd := exec.Command(first, "-capacity", "100")
	cmd.Stdin = strings.NewReader("a\nb\na\n")
	if out, err := cmd.Output(); err != nil || string(out) != "a\nb\n" {
		t.Fatalf("%s: %q, %v", first, out, err)
	}
	if _, err := Build("../..", "./nothing"); err == nil {
		t.Error("a package not there: no error")
	}
}
