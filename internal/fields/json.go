package fields

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrNoField is wrapped by the error of a document that has no value at
// a JSONPath.
var ErrNoField = errors.New("no such field")

// ErrNotJSON is wrapped by the error of a document that is not JSON where
// a JSONPath reads it.
var ErrNotJSON = errors.New("not JSON")

// maxJSONDepth bounds the nesting a JSONPath steps over, so that a
// hostile document cannot make a lookup slow; encoding/json's bound is
// 10,000 too.
const maxJSONDepth = 10000

// JSONPath reads one value out of a JSON document: the value at a path of
// member names and array indexes, written as jq writes a simple path:
// ".user.id", ".items[0].sku", or with a leading "$" as JSONPath writes it
// ("$.user.id"). A name holds no '.', '[' or ']'.
//
// The value a lookup returns is a string's content, unescaped (so "a" and
// "\u0061" are one key), or the text of any other value as written (a
// number, true, false, null, an object or an array). Where a name occurs
// twice in one object, the last one counts, as in encoding/json. The
// document is checked as far as the lookup reads it: what lies past the
// value found is not read.
//
// A JSONPath is not safe for concurrent use (it owns a scratch buffer).
type JSONPath struct {
	text    string
	steps   []jsonStep
	scratch []byte
}

// jsonStep is one step of a path: a member name, or an array index when
// name is "" and index ≥ 0.
type jsonStep struct {
	name  string
	index int
}

// ParseJSONPath parses a path (see JSONPath).
func ParseJSONPath(s string) (*JSONPath, error) {
	bad := func(why string) error { return fmt.Errorf("%w: JSON path %q: %s", ErrSpec, s, why) }
	rest := strings.TrimPrefix(s, "$")
	if rest == "" || rest[0] != '.' && rest[0] != '[' {
		return nil, bad(`want a path such as .user.id or .items[0].sku`)
	}
	p := &JSONPath{text: s}
	for rest != "" {
		switch rest[0] {
		case '.':
			rest = rest[1:]
			end := strings.IndexAny(rest, ".[]")
			if end < 0 {
				end = len(rest)
			}
			if end == 0 {
				return nil, bad("an empty name")
			}
			p.steps = append(p.steps, jsonStep{name: rest[:end], index: -1})
			rest = rest[end:]
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, bad("a [ without its ]")
			}
			n, err := strconv.Atoi(rest[1:end])
			if err != nil || n < 0 || strings.HasPrefix(rest[1:end], "+") {
				return nil, bad("an index is a whole number from 0")
			}
			p.steps = append(p.steps, jsonStep{index: n})
			rest = rest[end+1:]
		default:
			return nil, bad("a ']' without its '['")
		}
	}
	return p, nil
}

// String returns the path as it was written.
func (p *JSONPath) String() string { return p.text }

// Value returns the value at the path in doc: a string's unescaped
// content, or any other value's text. The result may point into doc or
// into the path's scratch buffer, and is valid until the next call. A
// document without the path gives an error wrapping ErrNoField; one that
// is not JSON as far as the lookup reads it, ErrNotJSON.
func (p *JSONPath) Value(doc []byte) ([]byte, error) {
	i := skipSpace(doc, 0)
	for _, st := range p.steps {
		var err error
		if st.name != "" {
			i, err = p.member(doc, i, st.name)
		} else {
			i, err = element(doc, i, st.index)
		}
		if err != nil {
			return nil, err
		}
	}
	end, err := skipValue(doc, i)
	if err != nil {
		return nil, err
	}
	if doc[i] != '"' {
		return doc[i:end], nil
	}
	return p.unquote(doc[i:end]), nil
}

func notJSON(at int) error { return fmt.Errorf("%w at byte %d", ErrNotJSON, at) }

func (p *JSONPath) noField() error { return fmt.Errorf("%w %s", ErrNoField, p.text) }

// member returns where the value of the last member name of the object at
// doc[i:] starts.
func (p *JSONPath) member(doc []byte, i int, name string) (int, error) {
	if i >= len(doc) || doc[i] != '{' {
		if _, err := skipValue(doc, i); err != nil {
			return 0, err
		}
		return 0, p.noField()
	}
	found := -1
	i = skipSpace(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return 0, p.noField()
	}
	for {
		if i >= len(doc) || doc[i] != '"' {
			return 0, notJSON(i)
		}
		end, err := skipString(doc, i)
		if err != nil {
			return 0, err
		}
		match := string(p.unquote(doc[i:end])) == name
		i = skipSpace(doc, end)
		if i >= len(doc) || doc[i] != ':' {
			return 0, notJSON(i)
		}
		i = skipSpace(doc, i+1)
		if match {
			found = i
		}
		if i, err = skipValue(doc, i); err != nil {
			return 0, err
		}
		i = skipSpace(doc, i)
		switch {
		case i < len(doc) && doc[i] == ',':
			i = skipSpace(doc, i+1)
		case i < len(doc) && doc[i] == '}':
			if found < 0 {
				return 0, p.noField()
			}
			return found, nil
		default:
			return 0, notJSON(i)
		}
	}
}

// element returns where element n of the array at doc[i:] starts.
func element(doc []byte, i, n int) (int, error) {
	if i >= len(doc) || doc[i] != '[' {
		if _, err := skipValue(doc, i); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%w [%d]: not an array", ErrNoField, n)
	}
	i = skipSpace(doc, i+1)
	if i < len(doc) && doc[i] == ']' {
		return 0, fmt.Errorf("%w [%d]: the array is empty", ErrNoField, n)
	}
	for k := 0; ; k++ {
		if k == n {
			_, err := skipValue(doc, i)
			return i, err
		}
		var err error
		if i, err = skipValue(doc, i); err != nil {
			return 0, err
		}
		i = skipSpace(doc, i)
		switch {
		case i < len(doc) && doc[i] == ',':
			i = skipSpace(doc, i+1)
		case i < len(doc) && doc[i] == ']':
			return 0, fmt.Errorf("%w [%d]: the array has %d elements", ErrNoField, n, k+1)
		default:
			return 0, notJSON(i)
		}
	}
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the value that starts at doc[i], checking
// it as JSON: nested objects and arrays are walked without recursion, to
// a depth of at most maxJSONDepth.
func skipValue(doc []byte, i int) (int, error) {
	// stack holds the opening bracket of each container the walk is in:
	// what may follow a value depends on it. The first levels need no
	// allocation.
	var shallow [32]byte
	stack := shallow[:0]
	for {
		if i >= len(doc) {
			return 0, notJSON(i)
		}
		var err error
		switch c := doc[i]; {
		case c == '"':
			i, err = skipString(doc, i)
		case c == '-' || c >= '0' && c <= '9':
			i, err = skipNumber(doc, i)
		case c == 't':
			i, err = skipLiteral(doc, i, "true")
		case c == 'f':
			i, err = skipLiteral(doc, i, "false")
		case c == 'n':
			i, err = skipLiteral(doc, i, "null")
		case c == '{' || c == '[':
			if len(stack) == maxJSONDepth {
				return 0, fmt.Errorf("%w: nested deeper than %d at byte %d", ErrNotJSON, maxJSONDepth, i)
			}
			stack = append(stack, c)
			i = skipSpace(doc, i+1)
			if i < len(doc) && (c == '{' && doc[i] == '}' || c == '[' && doc[i] == ']') {
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i, err = skipKey(doc, i); err != nil {
					return 0, err
				}
			}
			continue
		default:
			return 0, notJSON(i)
		}
		if err != nil {
			return 0, err
		}
		// A value ended at i: close the containers it ends, or go on to
		// the next element or member.
		for {
			if len(stack) == 0 {
				return i, nil
			}
			i = skipSpace(doc, i)
			if i >= len(doc) {
				return 0, notJSON(i)
			}
			open := stack[len(stack)-1]
			if doc[i] == ',' {
				i = skipSpace(doc, i+1)
				if open == '{' {
					if i, err = skipKey(doc, i); err != nil {
						return 0, err
					}
				}
				break
			}
			if open == '{' && doc[i] == '}' || open == '[' && doc[i] == ']' {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			return 0, notJSON(i)
		}
	}
}

// skipKey skips a member's name and its colon, and the space after.
func skipKey(doc []byte, i int) (int, error) {
	if i >= len(doc) || doc[i] != '"' {
		return 0, notJSON(i)
	}
	i, err := skipString(doc, i)
	if err != nil {
		return 0, err
	}
	i = skipSpace(doc, i)
	if i >= len(doc) || doc[i] != ':' {
		return 0, notJSON(i)
	}
	return skipSpace(doc, i+1), nil
}

// skipString returns the end of the string that starts at doc[i] (its
// quote), checking its escapes and that it holds no control character.
func skipString(doc []byte, i int) (int, error) {
	start := i
	for i++; i < len(doc); i++ {
		switch c := doc[i]; {
		case c == '"':
			return i + 1, nil
		case c < 0x20:
			return 0, notJSON(i)
		case c == '\\':
			i++
			if i >= len(doc) {
				return 0, notJSON(start)
			}
			switch doc[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(doc) || !isHex4(doc[i+1:i+5]) {
					return 0, notJSON(i)
				}
				i += 4
			default:
				return 0, notJSON(i)
			}
		}
	}
	return 0, notJSON(start)
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// skipNumber returns the end of the number at doc[i], as JSON's grammar
// writes one: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber(doc []byte, i int) (int, error) {
	start := i
	digits := func() bool {
		j := i
		for i < len(doc) && doc[i] >= '0' && doc[i] <= '9' {
			i++
		}
		return i > j
	}
	if doc[i] == '-' {
		i++
	}
	switch {
	case i < len(doc) && doc[i] == '0':
		i++
	case !digits():
		return 0, notJSON(start)
	}
	if i < len(doc) && doc[i] == '.' {
		i++
		if !digits() {
			return 0, notJSON(start)
		}
	}
	if i < len(doc) && (doc[i] == 'e' || doc[i] == 'E') {
		i++
		if i < len(doc) && (doc[i] == '+' || doc[i] == '-') {
			i++
		}
		if !digits() {
			return 0, notJSON(start)
		}
	}
	return i, nil
}

func skipLiteral(doc []byte, i int, lit string) (int, error) {
	if len(doc)-i < len(lit) || string(doc[i:i+len(lit)]) != lit {
		return 0, notJSON(i)
	}
	return i + len(lit), nil
}

// unquote returns the content of the checked JSON string q (quotes
// included): a slice of q when it has no escape, else the decoded text in
// the scratch buffer. A \u escape of a lone surrogate becomes U+FFFD, as
// encoding/json decodes it.
func (p *JSONPath) unquote(q []byte) []byte {
	body := q[1 : len(q)-1]
	esc := -1
	for j, c := range body {
		if c == '\\' {
			esc = j
			break
		}
	}
	if esc < 0 {
		return body
	}
	out := append(p.scratch[:0], body[:esc]...)
	for j := esc; j < len(body); j++ {
		c := body[j]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		j++
		switch body[j] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(body[j+1:])
			j += 4
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if j+6 < len(body) && body[j+1] == '\\' && body[j+2] == 'u' {
					r2 = hex4(body[j+3:])
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
					j += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default: // '"', '\\', '/'
			out = append(out, body[j])
		}
	}
	p.scratch = out
	return out
}

// hex4 reads the four hex digits skipString checked.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= 'a':
			r |= rune(c - 'a' + 10)
		case c >= 'A':
			r |= rune(c - 'A' + 10)
		default:
			r |= rune(c - '0')
		}
	}
	return r
}
