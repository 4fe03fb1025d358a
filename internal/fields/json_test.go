package fields

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestJSONPathValues(t *testing.T) {
	doc := `{"user": {"id": "u-17", "n": 42, "tags": ["a", "b\u00e9"], "o": {"x": [1, {"y": null}]}},
	         "esc": "a\"b\\c\/d\n\ud83d\ude00", "dup": 1, "dup": "last", "f": -1.5e+3, "t": true,
	         "e": {}, "ea": [], "weird key": 7}`
	for _, c := range []struct{ path, want string }{
		{".user.id", "u-17"},
		{"$.user.id", "u-17"},
		{".user.n", "42"},
		{".user.tags[1]", "bé"},
		{".user.tags", `["a", "b\u00e9"]`},
		{".user.o.x[1].y", "null"},
		{".user.o.x[1]", `{"y": null}`},
		{".esc", "a\"b\\c/d\n😀"},
		{".dup", "last"},
		{".f", "-1.5e+3"},
		{".t", "true"},
		{".e", "{}"},
		{".ea", "[]"},
		{".weird key", "7"},
	} {
		p, err := ParseJSONPath(c.path)
		if err != nil {
			t.Fatalf("ParseJSONPath(%q): %v", c.path, err)
		}
		got, err := p.Value([]byte(doc))
		if err != nil || string(got) != c.want {
			t.Errorf("%s = %q, %v; want %q", c.path, got, err, c.want)
		}
	}
	for _, c := range []struct{ path, doc string }{
		{".user.missing", doc},
		{".user.id.deeper", doc},
		{".user.tags[2]", doc},
		{".ea[0]", doc},
		{".e.x", doc},
		{"[0]", doc},
		{".a", `[1,2]`},
	} {
		p, _ := ParseJSONPath(c.path)
		if _, err := p.Value([]byte(c.doc)); !errors.Is(err, ErrNoField) {
			t.Errorf("%s in %.20q: %v, want ErrNoField", c.path, c.doc, err)
		}
	}
	p, _ := ParseJSONPath(".a")
	for _, bad := range []string{``, `plain text`, `{"a": }`, `{"a": "open`, `{"a": 01}`, `{"a": 1.}`, `{"a": tru}`,
		`{"a" 1}`, `{a: 1}`, `{"b": [1,}`, `{"b": 1 "a": 2}`, "{\"a\": \"tab\there\"}", `{"a": "\x"}`, `{"a": "\u12g4"}`,
		`{"b": {"c": [1, 2}, "a": 1}`, strings.Repeat("[", maxJSONDepth+1)} {
		if _, err := p.Value([]byte(bad)); !errors.Is(err, ErrNotJSON) {
			t.Errorf(".a in %.30q: %v, want ErrNotJSON", bad, err)
		}
	}
	for _, bad := range []string{"", "a", "$", "..a", ".a.", ".a[", ".a[x]", ".a[-1]", ".a]", "$a"} {
		if _, err := ParseJSONPath(bad); !errors.Is(err, ErrSpec) {
			t.Errorf("ParseJSONPath(%q) = %v, want ErrSpec", bad, err)
		}
	}
}

func TestJSONPathAllocs(t *testing.T) {
	p, _ := ParseJSONPath(".event.id")
	doc := []byte(`{"ts": 1700000000, "event": {"kind": "click", "id": "e-123456", "tags": [1, 2, 3]}}`)
	esc := []byte(`{"event": {"id": "e-\u0031"}}`)
	p.Value(esc) // grows the scratch buffer once
	if n := testing.AllocsPerRun(100, func() {
		if _, err := p.Value(doc); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Value(esc); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations a lookup, want 0", n)
	}
}

// reference is the value at path in doc as encoding/json reads it: a
// string's content, or another value's text; ok is false when the path
// is not there.
func reference(doc []byte, steps []jsonStep) (string, bool) {
	raw := json.RawMessage(doc)
	for _, st := range steps {
		if st.name != "" {
			var obj map[string]json.RawMessage
			if json.Unmarshal(raw, &obj) != nil {
				return "", false
			}
			v, ok := obj[st.name]
			if !ok {
				return "", false
			}
			raw = v
			continue
		}
		var arr []json.RawMessage
		if json.Unmarshal(raw, &arr) != nil || st.index >= len(arr) {
			return "", false
		}
		raw = arr[st.index]
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	return string(bytes.TrimSpace(raw)), true
}

// FuzzJSONPath: a lookup never panics; in a valid document it finds what
// encoding/json finds, and reports a missing path as ErrNoField.
func FuzzJSONPath(f *testing.F) {
	f.Add(".a.b", []byte(`{"a": {"b": "x"}}`))
	f.Add(".a[1]", []byte(`{"a": [1, "\ud83d\ude00", 3]}`))
	f.Add(".a", []byte(`{"a": 1, "a": {"c": [true, false, null]}}`))
	f.Add(".k", []byte(`{"k": "\ud800\u0041"}`))
	f.Add(".k", []byte(`{"k": "bad \x"}`))
	f.Add(".x.y", []byte(`[{"x": 1}]`))
	f.Fuzz(func(t *testing.T, path string, doc []byte) {
		p, err := ParseJSONPath(path)
		if err != nil {
			return
		}
		got, err := p.Value(doc)
		if err != nil && !errors.Is(err, ErrNoField) && !errors.Is(err, ErrNotJSON) {
			t.Fatalf("error %v wraps neither ErrNoField nor ErrNotJSON", err)
		}
		if !json.Valid(doc) || !utf8.Valid(doc) {
			return
		}
		want, ok := reference(doc, p.steps)
		switch {
		case !ok && !errors.Is(err, ErrNoField):
			t.Fatalf("%s in %q: %q, %v; encoding/json finds nothing", path, doc, got, err)
		case ok && (err != nil || string(got) != want):
			t.Fatalf("%s in %q: %q, %v; encoding/json reads %s", path, doc, got, err, strconv.Quote(want))
		}
	})
}
