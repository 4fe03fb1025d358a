package resp_test

import (
	"math"
	"strconv"
	"testing"

	"github.com/dedupkit/cuckoo/server/resp"
)

// TestAppendSpecExamples encodes the examples of the RESP specification
// (redis.io/docs/latest/develop/reference/protocol-spec: RESP2's five
// types, RESP3's null, boolean, double, verbatim string and map), with a
// negative integer and a set of our own, and compares them with the bytes
// it shows.
func TestAppendSpecExamples(t *testing.T) {
	for _, tc := range []struct {
		name   string
		encode func(dst []byte) []byte
		want   string
	}{
		{"simple string", func(b []byte) []byte { return resp.AppendSimple(b, "OK") }, "+OK\r\n"},
		{"simple error", func(b []byte) []byte { return resp.AppendError(b, "Error message") }, "-Error message\r\n"},
		{"error with a code", func(b []byte) []byte { return resp.AppendError(b, "ERR unknown command 'asdf'") }, "-ERR unknown command 'asdf'\r\n"},
		{"WRONGTYPE error", func(b []byte) []byte {
			return resp.AppendError(b, "WRONGTYPE Operation against a key holding the wrong kind of value")
		}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{"integer 0", func(b []byte) []byte { return resp.AppendInt(b, 0) }, ":0\r\n"},
		{"integer 1000", func(b []byte) []byte { return resp.AppendInt(b, 1000) }, ":1000\r\n"},
		{"negative integer", func(b []byte) []byte { return resp.AppendInt(b, -1000) }, ":-1000\r\n"},
		{"bulk string", func(b []byte) []byte { return resp.AppendBulk(b, []byte("hello")) }, "$5\r\nhello\r\n"},
		{"empty bulk string", func(b []byte) []byte { return resp.AppendBulkString(b, "") }, "$0\r\n\r\n"},
		{"null bulk string", resp.AppendNull2, "$-1\r\n"},
		{"empty array", func(b []byte) []byte { return resp.AppendArray(b, 0) }, "*0\r\n"},
		{"array of two bulk strings", func(b []byte) []byte {
			b = resp.AppendArray(b, 2)
			b = resp.AppendBulkString(b, "hello")
			return resp.AppendBulkString(b, "world")
		}, "*2\r\n$5\r\nhello\r\n$5\r\nworld\r\n"},
		{"array of three integers", func(b []byte) []byte {
			b = resp.AppendArray(b, 3)
			for i := range 3 {
				b = resp.AppendInt(b, int64(i+1))
			}
			return b
		}, "*3\r\n:1\r\n:2\r\n:3\r\n"},
		{"mixed array", func(b []byte) []byte {
			b = resp.AppendArray(b, 5)
			for i := range 4 {
				b = resp.AppendInt(b, int64(i+1))
			}
			return resp.AppendBulkString(b, "hello")
		}, "*5\r\n:1\r\n:2\r\n:3\r\n:4\r\n$5\r\nhello\r\n"},
		{"nested arrays", func(b []byte) []byte {
			b = resp.AppendArray(b, 2)
			b = resp.AppendArray(b, 3)
			for i := range 3 {
				b = resp.AppendInt(b, int64(i+1))
			}
			b = resp.AppendArray(b, 2)
			b = resp.AppendSimple(b, "Hello")
			return resp.AppendError(b, "World")
		}, "*2\r\n*3\r\n:1\r\n:2\r\n:3\r\n*2\r\n+Hello\r\n-World\r\n"},
		{"array with a null", func(b []byte) []byte {
			b = resp.AppendArray(b, 3)
			b = resp.AppendBulkString(b, "hello")
			b = resp.AppendNull2(b)
			return resp.AppendBulkString(b, "world")
		}, "*3\r\n$5\r\nhello\r\n$-1\r\n$5\r\nworld\r\n"},
		{"null", resp.AppendNull3, "_\r\n"},
		{"true", func(b []byte) []byte { return resp.AppendBool(b, true) }, "#t\r\n"},
		{"false", func(b []byte) []byte { return resp.AppendBool(b, false) }, "#f\r\n"},
		{"double", func(b []byte) []byte { return resp.AppendDouble(b, 1.23) }, ",1.23\r\n"},
		{"double integer", func(b []byte) []byte { return resp.AppendDouble(b, 10) }, ",10\r\n"},
		{"double inf", func(b []byte) []byte { return resp.AppendDouble(b, math.Inf(1)) }, ",inf\r\n"},
		{"double -inf", func(b []byte) []byte { return resp.AppendDouble(b, math.Inf(-1)) }, ",-inf\r\n"},
		{"double nan", func(b []byte) []byte { return resp.AppendDouble(b, math.NaN()) }, ",nan\r\n"},
		{"verbatim string", func(b []byte) []byte { return resp.AppendVerbatim(b, "Some string") }, "=15\r\ntxt:Some string\r\n"},
		{"map", func(b []byte) []byte {
			b = resp.AppendMap(b, 2)
			b = resp.AppendSimple(b, "first")
			b = resp.AppendInt(b, 1)
			b = resp.AppendSimple(b, "second")
			return resp.AppendInt(b, 2)
		}, "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n"},
		{"set", func(b []byte) []byte {
			b = resp.AppendSet(b, 2)
			b = resp.AppendSimple(b, "orange")
			return resp.AppendInt(b, 10)
		}, "~2\r\n+orange\r\n:10\r\n"},
	} {
		// Each encoder appends: what dst held stays in front.
		got := tc.encode([]byte("prefix"))
		if string(got) != "prefix"+tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, "prefix"+tc.want)
		}
	}
}

// TestAppendLineBreaks: a simple string or an error carrying line
// breaks has each CR and LF replaced by a space, so that it stays one
// line of the protocol; the bytes of a bulk string go as they are.
func TestAppendLineBreaks(t *testing.T) {
	for _, tc := range []struct{ in, simple, bulk string }{
		{"a\r\nb", "+a  b\r\n", "$4\r\na\r\nb\r\n"},
		{"\n", "+ \r\n", "$1\r\n\n\r\n"},
		{"\r", "+ \r\n", "$1\r\n\r\r\n"},
		{"x\ny\rz", "+x y z\r\n", "$5\r\nx\ny\rz\r\n"},
		{"no breaks", "+no breaks\r\n", "$9\r\nno breaks\r\n"},
	} {
		if got := string(resp.AppendSimple(nil, tc.in)); got != tc.simple {
			t.Errorf("AppendSimple(%q) = %q, want %q", tc.in, got, tc.simple)
		}
		if got, want := string(resp.AppendError(nil, tc.in)), "-"+tc.simple[1:]; got != want {
			t.Errorf("AppendError(%q) = %q, want %q", tc.in, got, want)
		}
		if got := string(resp.AppendBulkString(nil, tc.in)); got != tc.bulk {
			t.Errorf("AppendBulkString(%q) = %q, want %q", tc.in, got, tc.bulk)
		}
	}
}

// TestAppendIntRange: every integer of one and two digits, and the
// extremes of int64, are written in decimal, as strconv writes them.
func TestAppendIntRange(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{-10, ":-10\r\n"}, {-9, ":-9\r\n"}, {-1, ":-1\r\n"}, {0, ":0\r\n"}, {9, ":9\r\n"}, {10, ":10\r\n"}, {99, ":99\r\n"},
		{math.MaxInt64, ":9223372036854775807\r\n"}, {math.MinInt64, ":-9223372036854775808\r\n"},
	} {
		if got := string(resp.AppendInt(nil, tc.n)); got != tc.want {
			t.Errorf("AppendInt(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	for _, n := range []int{0, 9, 10, 1 << 20} {
		want := "*" + strconv.Itoa(n) + "\r\n"
		if got := string(resp.AppendArray(nil, n)); got != want {
			t.Errorf("AppendArray(%d) = %q, want %q", n, got, want)
		}
	}
}
