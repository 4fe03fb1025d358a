package resp

import (
	"math"
	"strconv"
)

// The Append functions encode one reply element at the end of dst and
// return the extended slice, as strconv.AppendInt does. They allocate only
// when dst lacks capacity.

// AppendSimple appends a simple string (+OK). Carriage returns and line
// feeds in s are replaced by spaces, so a reply can never break the framing.
func AppendSimple(dst []byte, s string) []byte { return appendLine(dst, '+', s) }

// AppendError appends an error reply (-ERR ...), with line breaks in s
// replaced by spaces. s should begin with an upper-case code such as ERR.
func AppendError(dst []byte, s string) []byte { return appendLine(dst, '-', s) }

// AppendInt appends an integer reply (:n).
func AppendInt(dst []byte, n int64) []byte { return appendHeader(dst, ':', n) }

// AppendBulk appends a bulk string ($len, then the bytes).
func AppendBulk(dst []byte, b []byte) []byte {
	dst = appendHeader(dst, '$', int64(len(b)))
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

// AppendBulkString appends a bulk string.
func AppendBulkString(dst []byte, s string) []byte {
	dst = appendHeader(dst, '$', int64(len(s)))
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// AppendArray appends the header of an array of n elements.
func AppendArray(dst []byte, n int) []byte { return appendHeader(dst, '*', int64(n)) }

// AppendNull2 appends RESP2's null bulk string ($-1).
func AppendNull2(dst []byte) []byte { return append(dst, '$', '-', '1', '\r', '\n') }

// AppendNull3 appends RESP3's null (_).
func AppendNull3(dst []byte) []byte { return append(dst, '_', '\r', '\n') }

// AppendMap appends the header of a RESP3 map of n key-value pairs (%n).
func AppendMap(dst []byte, n int) []byte { return appendHeader(dst, '%', int64(n)) }

// AppendSet appends the header of a RESP3 set of n elements (~n).
func AppendSet(dst []byte, n int) []byte { return appendHeader(dst, '~', int64(n)) }

// AppendBool appends a RESP3 boolean (#t or #f).
func AppendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, '#', 't', '\r', '\n')
	}
	return append(dst, '#', 'f', '\r', '\n')
}

// AppendDouble appends a RESP3 double (,1.5), with inf, -inf and nan
// spelled as RESP3 spells them.
func AppendDouble(dst []byte, f float64) []byte {
	dst = append(dst, ',')
	dst = appendFloat(dst, f)
	return append(dst, '\r', '\n')
}

// AppendVerbatim appends a RESP3 verbatim string of format txt (=len,
// then "txt:" and s).
func AppendVerbatim(dst []byte, s string) []byte {
	dst = appendHeader(dst, '=', int64(len(s))+4)
	dst = append(dst, "txt:"...)
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// appendHeader appends a type byte, n in decimal, and CRLF: the line that
// starts an integer, a bulk string or an aggregate. A single digit, the
// commonest length and integer in replies, skips strconv.
func appendHeader(dst []byte, prefix byte, n int64) []byte {
	if 0 <= n && n <= 9 {
		return append(dst, prefix, byte('0'+n), '\r', '\n')
	}
	dst = append(dst, prefix)
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\r', '\n')
}

// appendLine appends a type byte, s with each CR and LF replaced by a
// space, and CRLF: a simple string or an error, which end at the first
// line break.
func appendLine(dst []byte, prefix byte, s string) []byte {
	dst = append(dst, prefix)
	start := len(dst)
	dst = append(dst, s...)
	for i := start; i < len(dst); i++ {
		if c := dst[i]; c == '\r' || c == '\n' {
			dst[i] = ' '
		}
	}
	return append(dst, '\r', '\n')
}

// appendFloat formats f as Redis does: the shortest text that reads back
// as f, with inf, -inf and nan for the special values.
func appendFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f):
		return append(dst, "nan"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}
