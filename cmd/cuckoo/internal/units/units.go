// Package units formats and parses the quantities the CLI prints and
// accepts: counts with thousands separators and SI suffixes, byte sizes,
// rates, durations.
package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Count formats n with thousands separators: 3,000,000.
func Count(n uint64) string {
	s := strconv.FormatUint(n, 10)
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/3)
	first := len(s) % 3
	if first == 0 {
		first = 3
	}
	b.WriteString(s[:first])
	for i := first; i < len(s); i += 3 {
		b.WriteByte(',')
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// Bytes formats a byte size with binary prefixes: 512 B, 6.7 MiB, 1.25 GiB.
func Bytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	x := float64(n)
	prefixes := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := -1
	for x >= unit && i < len(prefixes)-1 {
		x /= unit
		i++
	}
	return trim3(x) + " " + prefixes[i]
}

// SI formats x with an SI suffix and about three significant digits:
// 812, 41.3k, 1.20M, 3.5G.
func SI(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	if x == 0 {
		return "0"
	}
	suffixes := []string{"", "k", "M", "G", "T", "P"}
	i := 0
	for math.Abs(x) >= 999.5 && i < len(suffixes)-1 {
		x /= 1000
		i++
	}
	return trim3(x) + suffixes[i]
}

// trim3 prints x with three significant digits (x < 1000).
func trim3(x float64) string {
	switch {
	case x >= 99.95:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case x >= 9.995:
		return strconv.FormatFloat(x, 'f', 1, 64)
	default:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
}

// Rate formats a probability as a percentage with two significant digits
// and as "1 in N": 0.012 % (1 in 8,623).
func Rate(p float64) string {
	switch {
	case p <= 0:
		return "0"
	case p >= 1:
		return "100 %"
	}
	return Percent(p) + " (1 in " + Count(uint64(math.Round(1/p))) + ")"
}

// Percent formats p (a fraction) as a percentage with two significant
// digits: 2.9 %, 0.012 %, 0.00000018 %.
func Percent(p float64) string {
	pc := 100 * p
	if pc == 0 {
		return "0 %"
	}
	digits := max(0, 1-int(math.Floor(math.Log10(math.Abs(pc)))))
	return strconv.FormatFloat(pc, 'f', digits, 64) + " %"
}

// Duration formats d roughly, for an ETA: 45s, 3m05s, 2h07m.
func Duration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	default:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
}

// ErrSyntax is matched (errors.Is) by the errors of ParseCount, ParseRate
// and ParseSeed, which are *SyntaxError.
var ErrSyntax = errors.New("invalid number")

// SyntaxError is the error of a parse function: the input, and what it
// should have been.
type SyntaxError struct {
	Input string
	Want  string // e.g. "want a rate such as 0.001, 1e-4 or 0.1%"
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%v %q: %s", ErrSyntax, e.Input, e.Want) }

// Is makes errors.Is(err, ErrSyntax) true.
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

const wantCount = "want a whole number such as 1000000, 1_000_000, 1M or 1e6"

// ParseCount parses a non-negative integer count. It accepts digits with
// optional _ or , separators (3_000_000, 3,000,000), an SI suffix k, M, G
// (or B, billion), T (10M, 1.5M), and exponent notation (1e7); the result
// must be a whole number.
func ParseCount(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	t = strings.NewReplacer("_", "", ",", "").Replace(t)
	mult := 1.0
	if t != "" {
		switch t[len(t)-1] {
		case 'k', 'K':
			mult = 1e3
		case 'm', 'M':
			mult = 1e6
		case 'g', 'G', 'b', 'B':
			mult = 1e9
		case 't', 'T':
			mult = 1e12
		}
		if mult != 1 {
			t = t[:len(t)-1]
		}
	}
	if t == "" || strings.HasPrefix(t, "-") || strings.HasPrefix(t, "+") {
		return 0, &SyntaxError{s, wantCount}
	}
	if n, err := strconv.ParseUint(t, 10, 64); err == nil && mult == 1 {
		return n, nil
	}
	x, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, &SyntaxError{s, wantCount}
	}
	x *= mult
	if x != math.Trunc(x) || x < 0 || x >= 1<<64 {
		return 0, &SyntaxError{s, "want a whole number between 0 and 2^64"}
	}
	return uint64(x), nil
}

// ParseBytes parses a number of bytes: a count as ParseCount reads it
// (1048576, 1M: 1,000,000), or a whole or fractional number with a binary
// suffix Ki, Mi, Gi or Ti, with or without a final B (64Mi and 64MiB:
// 67,108,864).
func ParseBytes(s string) (uint64, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "B")
	for i, suffix := range []string{"Ki", "Mi", "Gi", "Ti"} {
		num, ok := strings.CutSuffix(t, suffix)
		if !ok {
			continue
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || !(x >= 0) || strings.HasPrefix(num, "+") {
			break
		}
		x *= float64(uint64(1) << (10 * (i + 1)))
		if x != math.Trunc(x) || x >= 1<<64 {
			return 0, &SyntaxError{s, "want a whole number of bytes below 2^64"}
		}
		return uint64(x), nil
	}
	n, err := ParseCount(s)
	if err != nil {
		return 0, &SyntaxError{s, "want a number of bytes such as 1048576, 1Mi or 64MiB"}
	}
	return n, nil
}

// ParseRate parses a probability strictly between 0 and 1: 0.001, 1e-4,
// or a percentage, 0.1%.
func ParseRate(s string) (float64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	if strings.HasSuffix(t, "%") {
		t, scale = strings.TrimSpace(strings.TrimSuffix(t, "%")), 0.01
	}
	x, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(x) {
		return 0, &SyntaxError{s, "want a rate such as 0.001, 1e-4 or 0.1%"}
	}
	x *= scale
	if !(x > 0 && x < 1) {
		return 0, &SyntaxError{s, "a rate must be above 0 and below 1 (e.g. 0.001)"}
	}
	return x, nil
}

// ParseSeed parses a 64-bit hash seed: decimal digits (with optional _
// separators), or 0x and up to 16 hexadecimal digits, the form Seed
// prints.
func ParseSeed(s string) (uint64, error) {
	t := strings.ReplaceAll(strings.TrimSpace(s), "_", "")
	base := 10
	if len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
		t, base = t[2:], 16
	}
	n, err := strconv.ParseUint(t, base, 64)
	if err != nil || t == "" || t[0] == '+' {
		return 0, &SyntaxError{s, "want a whole number below 2^64, in decimal or in hexadecimal after 0x (as info prints it)"}
	}
	return n, nil
}

// Seed formats a hash seed as 0x and 16 hexadecimal digits, which
// ParseSeed reads.
func Seed(seed uint64) string { return fmt.Sprintf("%#016x", seed) }

// Counted formats n things: Count(n), a space and noun, with an s unless n
// is 1 ("1 item", "3,000 items"). For nouns whose plural is not noun+"s",
// use Count.
func Counted(n uint64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return Count(n) + " " + noun + "s"
}
