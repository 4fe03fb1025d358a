package resp_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/dedupkit/cuckoo/server/resp"
)

// readAll parses every command of input, copying the arguments, and
// returns them with the error that ended the stream (nil for a clean EOF).
func readAll(rd *resp.Reader) ([][]string, error) {
	var cmds [][]string
	for {
		args, err := rd.ReadCommand()
		if err == io.EOF {
			return cmds, nil
		}
		if err != nil {
			return cmds, err
		}
		cmd := make([]string, len(args))
		for i, a := range args {
			cmd[i] = string(a)
		}
		cmds = append(cmds, cmd)
	}
}

func fmtCmds(cmds [][]string) string {
	var b strings.Builder
	for _, c := range cmds {
		fmt.Fprintf(&b, "%q;", c)
	}
	return b.String()
}

func TestReaderParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // the commands, as fmtCmds prints them
		err  string // the protocol error's reason, or "EOF" for io.ErrUnexpectedEOF
	}{
		{in: "*1\r\n$4\r\nPING\r\n", want: `["PING"];`},
		{in: "*3\r\n$6\r\nCF.ADD\r\n$1\r\nk\r\n$0\r\n\r\n", want: `["CF.ADD" "k" ""];`},
		{in: "*1\r\n$4\r\nping\r\n*2\r\n$4\r\necho\r\n$2\r\nhi\r\n", want: `["ping"];["echo" "hi"];`},
		{in: "*0\r\n*-1\r\n*1\r\n$4\r\nping\r\n", want: `["ping"];`},
		{in: "ping\r\n", want: `["ping"];`},
		{in: "ping\n", want: `["ping"];`},
		{in: "\r\n\r\n  \r\nping  a\tb \r\n", want: `["ping" "a" "b"];`},
		{in: `ECHO "a b" 'c d'` + "\r\n", want: `["ECHO" "a b" "c d"];`},
		{in: `ECHO "\x41\n\t\"\\" 'it\'s' "\xZZ"` + "\r\n", want: `["ECHO" "A\n\t\"\\" "it's" "xZZ"];`},
		{in: `ECHO a"b c"` + "\r\n", want: `["ECHO" "ab c"];`},
		{in: `ECHO "a` + "\r\n", err: "unbalanced quotes in request"},
		{in: `ECHO "a"b` + "\r\n", err: "unbalanced quotes in request"},
		{in: `ECHO 'a'b` + "\r\n", err: "unbalanced quotes in request"},
		{in: "$4\r\nping\r\n", want: `["$4"];["ping"];`},
		{in: "*1\r\n$-2\r\n", err: "invalid bulk length"},
		{in: "*1\r\n$-1\r\n", err: "invalid bulk length"},
		{in: "*1\r\n$x\r\n", err: "invalid bulk length"},
		{in: "*1\r\n$\r\n", err: "invalid bulk length"},
		{in: "*1\r\n$ 4\r\nping\r\n", err: "invalid bulk length"},
		{in: "*1\r\n$04\r\nping\r\n", err: "invalid bulk length"},
		{in: "*1\r\n$4\nping\r\n", err: "invalid bulk length"},
		{in: "*1\r\n$1073741824\r\n", err: "invalid bulk length"},
		{in: "*1\r\n$536870913\r\n", err: "invalid bulk length"},
		{in: "*1\r\n$99999999999999999999\r\n", err: "invalid bulk length"},
		{in: "*x\r\n", err: "invalid multibulk length"},
		{in: "*+1\r\n", err: "invalid multibulk length"},
		{in: "*01\r\n", err: "invalid multibulk length"},
		{in: "*1\n", err: "invalid multibulk length"},
		{in: "*1048577\r\n", err: "invalid multibulk length"},
		{in: "*2\r\n+a\r\n", err: "expected '$', got '+'"},
		{in: "*1\r\n$4\r\nPINGxx\r\n", err: "expected CRLF after bulk data"},
		{in: "*1\r\n$4\r\nPI", err: "EOF"},
		{in: "*2\r\n$4\r\nPING\r\n", err: "EOF"},
		{in: "*2\r\n", err: "EOF"},
		{in: "ping", err: "EOF"},
		{in: "*1\r\n$4\r\nping\r\n*1\r\n$x\r\n", want: `["ping"];`, err: "invalid bulk length"},
	} {
		t.Run(fmt.Sprintf("in=%q", tc.in), func(t *testing.T) {
			for _, split := range []int{0, 1, 3} {
				var src io.Reader = strings.NewReader(tc.in)
				if split > 0 {
					src = &chunkReader{data: []byte(tc.in), n: split}
				}
				cmds, err := readAll(resp.NewReader(src, resp.Limits{}))
				if got := fmtCmds(cmds); got != tc.want {
					t.Errorf("split=%d: commands %s, want %s", split, got, tc.want)
				}
				switch {
				case tc.err == "" && err != nil:
					t.Errorf("split=%d: error %v, want none", split, err)
				case tc.err == "EOF" && err != io.ErrUnexpectedEOF:
					t.Errorf("split=%d: error %v, want io.ErrUnexpectedEOF", split, err)
				case tc.err != "" && tc.err != "EOF":
					var pe *resp.ProtocolError
					if !errors.As(err, &pe) || pe.Reason != tc.err || !errors.Is(err, resp.ErrProtocol) {
						t.Errorf("split=%d: error %v, want protocol error %q", split, err, tc.err)
					}
				}
			}
		})
	}
}

// chunkReader returns at most n bytes per Read.
type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := min(c.n, len(p), len(c.data))
	copy(p, c.data[:k])
	c.data = c.data[k:]
	return k, nil
}

func TestReaderLimits(t *testing.T) {
	lim := resp.Limits{MaxBulk: 10, MaxArray: 3, MaxInline: 16, MaxCommand: 40}
	for _, tc := range []struct{ in, err string }{
		{"*1\r\n$10\r\n0123456789\r\n", ""},
		{"*1\r\n$11\r\n", "invalid bulk length"},
		{"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", ""},
		{"*4\r\n", "invalid multibulk length"},
		{"a b c\r\n", ""},
		{"a b c d\r\n", "invalid multibulk length"},
		{strings.Repeat("a", 16) + "\r\n", ""},
		{strings.Repeat("a", 17) + "\r\n", "too big inline request"},
		{strings.Repeat("a", 17), "too big inline request"},
		{"*" + strings.Repeat("1", 17), "too big mbulk count string"},
		{"*1\r\n$" + strings.Repeat("1", 17), "too big bulk count string"},
		{"*3\r\n$10\r\n0123456789\r\n$10\r\n0123456789\r\n$10\r\n", "command larger than the query buffer limit"},
	} {
		t.Run(fmt.Sprintf("in=%q", tc.in), func(t *testing.T) {
			_, err := readAll(resp.NewReader(strings.NewReader(tc.in), lim))
			if tc.err == "" {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			var pe *resp.ProtocolError
			if !errors.As(err, &pe) || pe.Reason != tc.err {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
		})
	}
}

// TestReaderHugeHeader: a header announcing 500 MB with no data behind it
// must not make the Reader allocate for it.
func TestReaderHugeHeader(t *testing.T) {
	in := []byte("*2\r\n$5\r\nhello\r\n$500000000\r\nabc")
	rd := resp.NewReader(bytes.NewReader(in), resp.Limits{})
	var ms1, ms2 runtimeMem
	ms1.read()
	_, err := rd.ReadCommand()
	ms2.read()
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("error %v, want io.ErrUnexpectedEOF", err)
	}
	if grew := ms2.total - ms1.total; grew > 1<<20 {
		t.Fatalf("reading a 500 MB header with 3 bytes of data allocated %d bytes", grew)
	}
}

// countingMemory is a resp.Memory that counts the bytes it has given out,
// and fails once it would pass limit (0: never).
type countingMemory struct {
	held, peak, limit int
}

func (m *countingMemory) Resize(buf []byte, keep, size int) ([]byte, error) {
	if m.limit > 0 && m.held-len(buf)+size > m.limit {
		return nil, errors.New("out of memory")
	}
	var nb []byte
	if size > 0 {
		nb = make([]byte, size)
		copy(nb, buf[:keep])
	}
	m.held += size - len(buf)
	m.peak = max(m.peak, m.held)
	return nb, nil
}

// TestReaderBigCommand reads one 3 MiB bulk string delivered a byte at a
// time in places: the buffer grows to about the command, no more, and
// shrinks back once it has been read; Release gives back the rest.
func TestReaderBigCommand(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 3<<20)
	var in bytes.Buffer
	fmt.Fprintf(&in, "*2\r\n$4\r\nECHO\r\n$%d\r\n", len(big))
	in.Write(big)
	in.WriteString("\r\n*1\r\n$4\r\nPING\r\n")
	rd := resp.NewReader(iotest.HalfReader(&in), resp.Limits{})
	var mem countingMemory
	rd.SetMemory(&mem)
	args, err := rd.ReadCommand()
	if err != nil || len(args) != 2 || !bytes.Equal(args[1], big) {
		t.Fatalf("first command: %d args, err %v", len(args), err)
	}
	if mem.peak > len(big)+64<<10 {
		t.Fatalf("reading a command of %d bytes held %d", len(big), mem.peak)
	}
	args, err = rd.ReadCommand()
	if err != nil || len(args) != 1 || string(args[0]) != "PING" {
		t.Fatalf("second command: %q, %v", args, err)
	}
	if _, err := rd.ReadCommand(); err != io.EOF {
		t.Fatalf("end: %v, want io.EOF", err)
	}
	if mem.held > 64<<10 {
		t.Fatalf("%d bytes held after the big command was read", mem.held)
	}
	rd.Release()
	if mem.held != 0 {
		t.Fatalf("%d bytes held after Release", mem.held)
	}
	if _, err := rd.ReadCommand(); err == nil {
		t.Fatal("a released Reader read on")
	}
}

// TestReaderMemoryRefused: a Memory that refuses to grow the buffer fails
// the read, for good, and the Reader holds what it held.
func TestReaderMemoryRefused(t *testing.T) {
	var in bytes.Buffer
	fmt.Fprintf(&in, "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\n", 1<<20, bytes.Repeat([]byte("y"), 1<<20))
	rd := resp.NewReader(&in, resp.Limits{})
	mem := countingMemory{limit: 256 << 10}
	rd.SetMemory(&mem)
	if args, err := rd.ReadCommand(); err != nil || string(args[0]) != "PING" {
		t.Fatalf("the first command: %q, %v", args, err)
	}
	_, err := rd.ReadCommand()
	if err == nil || err.Error() != "out of memory" {
		t.Fatalf("a command the memory cannot hold: %v", err)
	}
	if _, again := rd.ReadCommand(); again != err {
		t.Fatalf("then %v, want the same error", again)
	}
	if mem.held == 0 || mem.held > mem.limit {
		t.Fatalf("%d bytes held after the refusal", mem.held)
	}
}

// TestReaderPipeline: 100,000 pipelined commands come back in order, each
// with the arguments sent.
func TestReaderPipeline(t *testing.T) {
	var in bytes.Buffer
	const n = 100_000
	for i := range n {
		k := fmt.Sprint(i)
		fmt.Fprintf(&in, "*3\r\n$6\r\nCF.ADD\r\n$1\r\nk\r\n$%d\r\n%s\r\n", len(k), k)
	}
	rd := resp.NewReader(&in, resp.Limits{})
	for i := range n {
		args, err := rd.ReadCommand()
		if err != nil || len(args) != 3 || string(args[2]) != fmt.Sprint(i) {
			t.Fatalf("command %d: %q, %v", i, args, err)
		}
	}
}

// TestReaderStickyError: after a protocol error, every call returns it.
func TestReaderStickyError(t *testing.T) {
	rd := resp.NewReader(strings.NewReader("*x\r\n*1\r\n$4\r\nPING\r\n"), resp.Limits{})
	_, err1 := rd.ReadCommand()
	_, err2 := rd.ReadCommand()
	if err1 == nil || err1 != err2 || rd.Fill() != err1 {
		t.Fatalf("errors %v, %v: want the same protocol error", err1, err2)
	}
}
