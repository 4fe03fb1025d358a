package dedup

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// splitAll reads every line of r with a LineReader of the given buffer
// size, copying each (the slices are only valid until the next call).
func splitAll(t testing.TB, r io.Reader, size int) ([][]byte, error) {
	t.Helper()
	l := NewLineReader(r, size)
	var out [][]byte
	for {
		line, ok := l.Next()
		if !ok {
			return out, l.Err()
		}
		if len(line) == 0 {
			t.Fatal("Next returned an empty line")
		}
		out = append(out, bytes.Clone(line))
	}
}

// reference splits data as LineReader must: after each '\n', with a last
// line without one if data does not end in '\n'.
func reference(data []byte) [][]byte {
	if len(data) == 0 {
		return nil
	}
	parts := bytes.SplitAfter(data, []byte{'\n'})
	if len(parts[len(parts)-1]) == 0 {
		parts = parts[:len(parts)-1]
	}
	return parts
}

func checkLines(t *testing.T, data []byte, got [][]byte) {
	t.Helper()
	want := reference(data)
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("line %d = %q, want %q", i, trunc(got[i]), trunc(want[i]))
		}
	}
}

func trunc(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…(" + strconv.Itoa(len(b)) + " bytes)"
	}
	return string(b)
}

func TestLineReader(t *testing.T) {
	huge := bytes.Repeat([]byte("0123456789abcdef"), 5<<20/16) // 5 MiB, no newline
	cases := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"one-newline", []byte("\n")},
		{"blank-lines", []byte("\n\n\n")},
		{"no-final-newline", []byte("a\nb")},
		{"single-unterminated", []byte("abc")},
		{"crlf", []byte("a\r\nb\r\n\r\nc\r")},
		{"binary", []byte("\x00\xff\xfe\n\x00\n\x80abc\x00")},
		{"huge-line-middle", append(append([]byte("x\n"), huge...), "\ny\n"...)},
		{"huge-line-last-unterminated", append([]byte("x\n"), huge...)},
		{"many-short", bytes.Repeat([]byte("ab\n"), 100_000)},
	}
	for _, c := range cases {
		sizes := []int{1, 2, 7, 64, 4096, 0}
		if len(c.data) > 64<<10 {
			sizes = sizes[3:] // tiny buffers on megabytes only cost time
		}
		for _, size := range sizes {
			t.Run("case="+c.name+"/buf="+strconv.Itoa(size), func(t *testing.T) {
				got, err := splitAll(t, bytes.NewReader(c.data), size)
				if err != nil {
					t.Fatal(err)
				}
				checkLines(t, c.data, got)
				if size <= 64 && len(c.data) < 1<<20 {
					// Also one byte per Read, and data with io.EOF.
					got, err = splitAll(t, iotest.OneByteReader(bytes.NewReader(c.data)), size)
					if err != nil {
						t.Fatal(err)
					}
					checkLines(t, c.data, got)
					got, err = splitAll(t, iotest.DataErrReader(bytes.NewReader(c.data)), size)
					if err != nil {
						t.Fatal(err)
					}
					checkLines(t, c.data, got)
				}
			})
		}
	}
}

// TestLineReaderError checks that a read error ends the stream and is
// reported, after the complete lines read before it.
func TestLineReaderError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("a\nb\npartial"), iotest.ErrReader(boom))
	got, err := splitAll(t, r, 4)
	if !errors.Is(err, boom) {
		t.Fatalf("Err() = %v, want boom", err)
	}
	if len(got) < 2 || string(got[0]) != "a\n" || string(got[1]) != "b\n" {
		t.Fatalf("lines before the error: %q", got)
	}
}

// stuckReader returns 0, nil forever: a broken reader.
type stuckReader struct{}

func (stuckReader) Read([]byte) (int, error) { return 0, nil }

func TestLineReaderNoProgress(t *testing.T) {
	_, err := splitAll(t, stuckReader{}, 16)
	if !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("Err() = %v, want io.ErrNoProgress", err)
	}
}

func TestLineReaderReset(t *testing.T) {
	l := NewLineReader(strings.NewReader("a\nb"), 8)
	var got []string
	for line, ok := l.Next(); ok; line, ok = l.Next() {
		got = append(got, string(line))
	}
	l.Reset(strings.NewReader("c\n"))
	for line, ok := l.Next(); ok; line, ok = l.Next() {
		got = append(got, string(line))
	}
	if strings.Join(got, "|") != "a\n|b|c\n" {
		t.Fatalf("lines across Reset: %q (a line must not span two streams)", got)
	}
	if l.BytesRead() != 2 {
		t.Fatalf("BytesRead after Reset = %d, want 2", l.BytesRead())
	}
}

// TestLineReaderLongBufferReleased checks that memory returns to the
// buffer size after a huge line (at the next buffer fill).
func TestLineReaderLongBufferReleased(t *testing.T) {
	data := append(bytes.Repeat([]byte("z"), maxKeptLong+10), "\nshort\nlines\n"...)
	l := NewLineReader(bytes.NewReader(data), 1024)
	for _, ok := l.Next(); ok; _, ok = l.Next() {
	}
	if cap(l.long) > maxKeptLong {
		t.Fatalf("long-line buffer of %d bytes kept after the huge line", cap(l.long))
	}
}

func TestLineReaderAllocs(t *testing.T) {
	data := bytes.Repeat([]byte("https://example.com/some/path?id=12345\n"), 1000)
	r := bytes.NewReader(data)
	l := NewLineReader(r, 4096)
	allocs := testing.AllocsPerRun(10, func() {
		r.Reset(data)
		l.Reset(r)
		for _, ok := l.Next(); ok; _, ok = l.Next() {
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per pass over 1000 lines, want 0", allocs)
	}
}

func TestContent(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""}, {"\n", ""}, {"\r\n", ""}, {"a\n", "a"}, {"a\r\n", "a"}, {"a", "a"}, {"a\r", "a"},
		{"a\rb\n", "a\rb"}, {"a\r\r\n", "a\r"},
	} {
		if got := string(Content([]byte(c.in))); got != c.want {
			t.Errorf("Content(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzLineReader splits arbitrary data with an arbitrary buffer size and
// checks the lines against bytes.SplitAfter.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nb\r\nc"), uint16(1))
	f.Add([]byte("\n\n\x00\n"), uint16(3))
	f.Add(bytes.Repeat([]byte("long line without end "), 20), uint16(5))
	f.Fuzz(func(t *testing.T, data []byte, size uint16) {
		got, err := splitAll(t, bytes.NewReader(data), int(size%512)+1)
		if err != nil {
			t.Fatal(err)
		}
		checkLines(t, data, got)
	})
}
