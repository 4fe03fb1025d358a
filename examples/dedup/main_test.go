package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	long := strings.Repeat("x", 3<<20)
	in := "a\nb\na\n" + long + "\nc\n" + long + "\nb\nlast-without-newline"
	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out, 1000, 1e-6); err != nil {
		t.Fatal(err)
	}
	want := "a\nb\n" + long + "\nc\nlast-without-newline"
	if out.String() != want {
		t.Fatalf("got %d bytes %.40q, want %d bytes", out.Len(), out.String(), len(want))
	}
}

func TestRunFull(t *testing.T) {
	var in strings.Builder
	for i := 0; i < 1000; i++ {
		in.WriteString(strings.Repeat("k", i%50) + string(rune('a'+i%26)) + "\n")
		in.WriteString(string(rune(i)) + "\n")
	}
	err := run(strings.NewReader(in.String()), &bytes.Buffer{}, 10, 0.01)
	if err == nil || !strings.Contains(err.Error(), "-capacity") {
		t.Fatalf("over-full filter: %v", err)
	}
}
