package datatest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const script = `# comment
run a=1 b
x
y
----
out 1

run
----
----
p1

p2
----
----

run
z
----
`

func TestParse(t *testing.T) {
	cases, err := parse("s", strings.Split(script, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 3 {
		t.Fatalf("%d cases, want 3", len(cases))
	}
	c := cases[0]
	if c.Cmd != "run" || c.Arg("a", "") != "1" || c.Arg("b", "?") != "" || c.Arg("c", "def") != "def" ||
		c.Input != "x\ny" || c.Want != "out 1\n" || c.Pos != "s:2" {
		t.Errorf("case 1: %+v", c)
	}
	if cases[1].Want != "p1\n\np2\n" || cases[1].Input != "" {
		t.Errorf("case 2: %+v", cases[1])
	}
	if cases[2].Want != "" || cases[2].Input != "z" {
		t.Errorf("case 3: %+v", cases[2])
	}
}

func TestParseErrors(t *testing.T) {
	for _, s := range []string{"run\nx\n", "run\n----\n----\na\n----\n"} {
		if _, err := parse("s", strings.Split(s, "\n")); err == nil {
			t.Errorf("%q parsed without error", s)
		}
	}
}

func TestRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	*rewrite = true
	defer func() { *rewrite = false }()
	outputs := []string{"new 1", "q1\n\nq2", "late"}
	i := 0
	RunFile(t, path, func(t *testing.T, c *Case) string { i++; return outputs[i-1] })
	*rewrite = false
	var got []string
	RunFile(t, path, func(t *testing.T, c *Case) string { got = append(got, c.Want); return c.Want })
	want := []string{"new 1\n", "q1\n\nq2\n", "late\n"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("after rewrite the expected outputs are %q, want %q", got, want)
	}
}
