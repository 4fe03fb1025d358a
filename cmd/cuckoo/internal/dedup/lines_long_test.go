package dedup

import (
	"bytes"
	"runtime"
	"testing"
)

// TestLineReaderLongLineCostsItsSizeTwice: a line longer than the read
// buffer is read into pieces and joined once, so reading it allocates
// its size twice (the pieces, the joined line), not the many copies a
// slice grown by appending makes (each growth copies the line so far,
// and holds the old and the new slice at once: a line of 100 MiB cost
// `dedup --redis` and `--exact-dir` several times its size). Keep hands
// the joined line to the caller, which holds it past the next lines.
func TestLineReaderLongLineCostsItsSizeTwice(t *testing.T) {
	const n, size = 8 << 20, 64 << 10
	long := append(bytes.Repeat([]byte("x"), n), '\n')
	input := append(append([]byte("a\n"), long...), "b\nc"...)
	l := NewLineReader(bytes.NewReader(input), size)
	if line, ok := l.Next(); !ok || string(line) != "a\n" {
		t.Fatalf("first line %q, %v", line, ok)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	line, ok := l.Next()
	runtime.ReadMemStats(&after)
	if !ok || !bytes.Equal(line, long) {
		t.Fatalf("the long line: %d bytes, %v; want %d", len(line), ok, len(long))
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 2*n+n/8 {
		t.Errorf("reading a line of %d MiB allocated %.1f MiB, over twice its size", n>>20, float64(got)/(1<<20))
	}
	if !l.Keep(line) {
		t.Fatal("Keep refuses the long line")
	}
	for _, want := range []string{"b\n", "c"} {
		short, ok := l.Next()
		if !ok || string(short) != want {
			t.Fatalf("line %q, %v; want %q", short, ok, want)
		}
		if l.Keep(short) {
			t.Fatalf("Keep takes %q, a line in the read buffer", short)
		}
	}
	if !bytes.Equal(line, long) {
		t.Fatal("the long line kept changed as the reader read on")
	}
	if _, ok := l.Next(); ok || l.Err() != nil {
		t.Fatalf("past the end: %v, %v", ok, l.Err())
	}
}
