// Package datatest runs script tests: text files of cases, each a command
// line, its input, and the output expected, in the file format of
// cockroachdb's datadriven package:
//
//	# A comment.
//	run resp=3
//	CF.ADD seen https://a.com/
//	CF.EXISTS seen https://a.com/
//	----
//	(integer) 1
//	(integer) 1
//
// A case is a directive line (a command name and arguments, "key=value"
// or bare), input lines up to "----", then the expected output up to a
// blank line. An expected output with blank lines in it is written between
// two "----" lines:
//
//	----
//	----
//	first paragraph
//
//	second paragraph
//	----
//	----
//
// Run the tests with -update to replace each expected output with what
// the test produced; review the diff before committing it.
package datatest

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("update", false, "rewrite the expected outputs of script tests (review the diff)")

// Case is one case of a script file.
type Case struct {
	Pos   string // file:line of the directive, for messages
	Cmd   string
	Args  map[string]string // key=value arguments; bare ones map to ""
	Input string            // the lines between the directive and "----"
	Want  string

	first, last int // the lines of the expected output, for rewriting
}

// Arg returns the value of a key=value argument, or def when it is absent.
func (c *Case) Arg(key, def string) string {
	if v, ok := c.Args[key]; ok {
		return v
	}
	return def
}

// RunFile runs the cases of the file at path, in order, with run, and
// fails the test where run's output differs from the expected one.
func RunFile(t *testing.T, path string, run func(t *testing.T, c *Case) string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	cases, err := parse(filepath.Base(path), lines)
	if err != nil {
		t.Fatal(err)
	}
	type edit struct {
		c   *Case
		got string
	}
	var edits []edit
	for _, c := range cases {
		got := run(t, c)
		if got != "" && !strings.HasSuffix(got, "\n") {
			got += "\n"
		}
		if *rewrite {
			edits = append(edits, edit{c, got})
			continue
		}
		if got != c.Want {
			t.Errorf("%s: %s\n%s\ngot:\n%s\nwant:\n%s", c.Pos, c.Cmd, c.Input, got, c.Want)
		}
	}
	if !*rewrite {
		return
	}
	var out []string
	next := 0
	for _, e := range edits {
		out = append(out, lines[next:e.c.first]...)
		body := strings.TrimSuffix(e.got, "\n")
		if strings.Contains(body, "\n\n") {
			out = append(out, "----", body, "----", "----")
		} else if body != "" {
			out = append(out, body)
		}
		next = e.c.last
	}
	out = append(out, lines[next:]...)
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// parse splits a script into cases.
func parse(name string, lines []string) ([]*Case, error) {
	var cases []*Case
	i := 0
	for i < len(lines) {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			i++
			continue
		}
		c := &Case{Pos: fmt.Sprintf("%s:%d", name, i+1), Args: map[string]string{}}
		fields := strings.Fields(line)
		c.Cmd = fields[0]
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			c.Args[k] = v
		}
		i++
		var input []string
		for i < len(lines) && lines[i] != "----" {
			input = append(input, lines[i])
			i++
		}
		if i == len(lines) {
			return nil, fmt.Errorf("%s: no ---- after the input", c.Pos)
		}
		c.Input = strings.Join(input, "\n")
		i++ // the ----
		c.first = i
		var want []string
		if i < len(lines) && lines[i] == "----" {
			// A block with blank lines, closed by "----" twice.
			i++
			for i+1 < len(lines) && !(lines[i] == "----" && lines[i+1] == "----") {
				want = append(want, lines[i])
				i++
			}
			if i+1 >= len(lines) {
				return nil, fmt.Errorf("%s: no closing ---- ----", c.Pos)
			}
			i += 2
		} else {
			for i < len(lines) && lines[i] != "" {
				want = append(want, lines[i])
				i++
			}
		}
		c.last = i
		if len(want) > 0 {
			c.Want = strings.Join(want, "\n") + "\n"
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// Scanner returns a line scanner over a case's input.
func (c *Case) Scanner() *bufio.Scanner {
	return bufio.NewScanner(strings.NewReader(c.Input))
}
