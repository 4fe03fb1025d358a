package resp

import (
	"math"
	"strconv"

	"github.com/tidwall/redcon"
)

// The Append functions encode one reply element at the end of dst and
// return the extended slice, as strconv.AppendInt does. They allocate only
// when dst lacks capacity. The RESP2 types come from redcon, the RESP library
// several Go servers share; the RESP3 types, which redcon does not write,
// are here.

// AppendSimple appends a simple string (+OK). Carriage returns and line
// feeds in s are replaced by spaces, so a reply can never break the framing.
func AppendSimple(dst []byte, s string) []byte { return redcon.AppendString(dst, s) }

// AppendError appends an error reply (-ERR ...), with line breaks in s
// replaced by spaces. s should begin with an upper-case code such as ERR.
func AppendError(dst []byte, s string) []byte { return redcon.AppendError(dst, s) }

// AppendInt appends an integer reply (:n).
func AppendInt(dst []byte, n int64) []byte { return redcon.AppendInt(dst, n) }

// AppendBulk appends a bulk string ($len, then the bytes).
func AppendBulk(dst []byte, b []byte) []byte { return redcon.AppendBulk(dst, b) }

// AppendBulkString appends a bulk string.
func AppendBulkString(dst []byte, s string) []byte { return redcon.AppendBulkString(dst, s) }

// AppendArray appends the header of an array of n elements.
func AppendArray(dst []byte, n int) []byte { return redcon.AppendArray(dst, n) }

// AppendNull2 appends RESP2's null bulk string ($-1).
func AppendNull2(dst []byte) []byte { return redcon.AppendNull(dst) }

// AppendNull3 appends RESP3's null (_).
func AppendNull3(dst []byte) []byte { return append(dst, '_', '\r', '\n') }

// AppendMap appends the header of a RESP3 map of n key-value pairs (%n).
func AppendMap(dst []byte, n int) []byte { return appendHeader(dst, '%', n) }

// AppendSet appends the header of a RESP3 set of n elements (~n).
func AppendSet(dst []byte, n int) []byte { return appendHeader(dst, '~', n) }

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
	dst = appendHeader(dst, '=', len(s)+4)
	dst = append(dst, "txt:"...)
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

func appendHeader(dst []byte, prefix byte, n int) []byte {
	dst = append(dst, prefix)
	dst = strconv.AppendInt(dst, int64(n), 10)
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
