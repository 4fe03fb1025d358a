package fields

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseFieldSpec(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"2", "2"},
		{" 2 ", "2"},
		{"1,3", "1,3"},
		{"3,1", "1,3"},
		{"2-4", "2-4"},
		{"3-", "3-"},
		{"-2", "1-2"},
		{"1,2,3", "1-3"},
		{"1-3,2-5", "1-5"},
		{"5-,2", "2,5-"},
		{"5-,6-9", "5-"},
		{"1-2,4", "1-2,4"},
		{"4,1-2,3", "1-4"},
		{"7,7,7", "7"},
	} {
		s, err := ParseSpec(c.in)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", c.in, err)
			continue
		}
		if got := s.String(); got != c.want {
			t.Errorf("ParseSpec(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, in := range []string{"", " ", "0", "-", "a", "1,", ",1", "3-2", "1--2", "-0", "1-0", "2000000", "+1", "1.5", "1 2"} {
		if s, err := ParseSpec(in); err == nil {
			t.Errorf("ParseSpec(%q) = %q, want an error", in, s)
		} else if !errors.Is(err, ErrSpec) {
			t.Errorf("ParseSpec(%q) error %v does not wrap ErrSpec", in, err)
		}
	}
}

func TestParseDelimiter(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""}, {",", ","}, {`\t`, "\t"}, {"tab", "\t"}, {"::", "::"}, {`\x1f`, "\x1f"}, {`\`, `\`}, {"space", " "},
	} {
		got, err := ParseDelimiter(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseDelimiter(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := ParseDelimiter("a\nb"); err == nil {
		t.Error("a delimiter with a newline was accepted")
	}
}

// keyOf returns the key for spec over line, with a KeyExtractor.
func keyOf(t testing.TB, spec, delim string, csv bool, line string) string {
	t.Helper()
	s, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	return string(NewKeyExtractor(s, delim, csv).Key([]byte(line)))
}

// enc is the multi-field key encoding of fields (length-prefixed).
func enc(fields ...string) string {
	var b []byte
	for _, f := range fields {
		b = appendField(b, []byte(f))
	}
	return string(b)
}

func TestKeyExtractor(t *testing.T) {
	for _, c := range []struct {
		name, spec, delim string
		csv               bool
		line, want        string
	}{
		{"blanks-first", "1", "", false, "  alpha \t beta  ", "alpha"},
		{"blanks-second", "2", "", false, "  alpha \t beta  ", "beta"},
		{"blanks-missing", "3", "", false, "alpha beta", ""},
		{"blanks-empty-line", "1", "", false, "", ""},
		{"comma-second", "2", ",", false, "a,b,c", "b"},
		{"comma-empty-field", "2", ",", false, "a,,c", ""},
		{"comma-last", "3", ",", false, "a,b,c", "c"},
		{"comma-missing", "4", ",", false, "a,b,c", ""},
		{"tab", "2", "\t", false, "x y\tz w", "z w"},
		{"multichar", "2", "::", false, "a::b:c::d", "b:c"},
		{"multi-fields", "1,3", ",", false, "a,b,c", enc("a", "c")},
		{"multi-range", "2-3", ",", false, "a,b,c,d", enc("b", "c")},
		{"multi-open", "2-", ",", false, "a,b,c,d", enc("b", "c", "d")},
		{"multi-missing", "1,4", ",", false, "a,b", enc("a", "")},
		{"multi-blanks", "1,3", "", false, " a  b   c ", enc("a", "c")},
		{"multi-blanks-short", "1,3", "", false, "a", enc("a", "")},
		{"csv-plain", "2", ",", true, `a,b,c`, "b"},
		{"csv-quoted", "2", ",", true, `a,"b,x",c`, "b,x"},
		{"csv-escaped", "2", ",", true, `a,"say ""hi""",c`, `say "hi"`},
		{"csv-quoted-last", "3", ",", true, `a,b,"c"`, "c"},
		{"csv-unterminated", "2", ",", true, `a,"b,c`, "b,c"},
		{"csv-junk-after-quote", "2", ",", true, `a,"b"x,c`, "b"},
		{"csv-then-next", "3", ",", true, `a,"b,x",c`, "c"},
		{"csv-missing", "5", ",", true, `a,b`, ""},
		{"csv-default-delim", "2", "", true, `a,b`, "b"},
		{"csv-multi", "1,2", ",", true, `"x,y","q""r"`, enc("x,y", `q"r`)},
		{"csv-multi-missing", "1,3", ",", true, `a`, enc("a", "")},
		{"csv-long-field", "1,2", ",", true, `"` + strings.Repeat("z", 200) + `",b`, enc(strings.Repeat("z", 200), "b")},
		{"csv-long-escaped", "2,3", ",", true, `a,"` + strings.Repeat(`""`, 100) + `",b`, enc(strings.Repeat(`"`, 100), "b")},
	} {
		t.Run("case="+c.name, func(t *testing.T) {
			if got := keyOf(t, c.spec, c.delim, c.csv, c.line); got != c.want {
				t.Fatalf("key of %q = %q, want %q", c.line, got, c.want)
			}
		})
	}
}

// TestKeyDistinguishes checks that keys of different selections differ
// even when their concatenations are equal.
func TestKeyDistinguishes(t *testing.T) {
	a := keyOf(t, "1,2", ",", false, "ab,c")
	b := keyOf(t, "1,2", ",", false, "a,bc")
	if a == b {
		t.Fatalf("fields (ab, c) and (a, bc) give the same key %q", a)
	}
}

// TestCloneKeepsItsOwnBuffer checks that a clone gives the same keys as
// its original and builds them in a buffer of its own: a key the original
// built in its scratch buffer is not overwritten by the clone's next key.
func TestCloneKeepsItsOwnBuffer(t *testing.T) {
	for _, c := range []struct {
		spec, delim string
		csv         bool
	}{{"1,3", ",", false}, {"2", ",", true}, {"2-", "", false}} {
		s, err := ParseSpec(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		k := NewKeyExtractor(s, c.delim, c.csv)
		line := []byte(`a,"b""x",c,d`)
		want := string(k.Key(line)) // the original's buffers in use
		clone := k.Clone()
		if got := string(clone.Key(line)); got != want {
			t.Errorf("%+v: the clone's key %q, the original's %q", c, got, want)
		}
		kept := k.Key(line)
		clone.Key([]byte(`p,"q""y",r,s`))
		if string(kept) != want {
			t.Errorf("%+v: the clone's key overwrote the original's: %q, want %q", c, kept, want)
		}
	}
}

func TestKeyExtractorAllocs(t *testing.T) {
	for _, spec := range []string{"2", "1,3"} {
		s, _ := ParseSpec(spec)
		k := NewKeyExtractor(s, ",", false)
		line := []byte("alpha,beta,gamma,delta")
		k.Key(line) // sizes the scratch buffer
		if n := testing.AllocsPerRun(100, func() { k.Key(line) }); n != 0 {
			t.Errorf("spec %s: %v allocations per key, want 0", spec, n)
		}
	}
}

// refFields splits a line as the extractor must, without CSV quoting.
func refFields(line []byte, delim string) [][]byte {
	if delim == "" {
		return bytes.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
	}
	return bytes.Split(line, []byte(delim))
}

// FuzzFieldSpec checks that parsing never panics and that a parsed spec
// prints in a canonical form that parses back to itself.
func FuzzFieldSpec(f *testing.F) {
	for _, s := range []string{"1", "2-4", "3-", "-2", "1,3-5,9-", "0", "a", "5-3", ",,", "1-2,2-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSpec(in)
		if err != nil {
			return
		}
		canon := s.String()
		s2, err := ParseSpec(canon)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canon, in, err)
		}
		if s2.String() != canon {
			t.Fatalf("canonical form %q of %q reparses as %q", canon, in, s2.String())
		}
	})
}

// FuzzKey extracts keys from arbitrary lines. It must never panic; a
// single-field key must equal the field a plain split gives; and two lines
// must share a multi-field key exactly when their selected fields agree.
func FuzzKey(f *testing.F) {
	f.Add("2", ",", false, []byte("a,b,c"), []byte("x,b,y"))
	f.Add("1,3", "", false, []byte(" a b c"), []byte("a x c "))
	f.Add("2-", "::", false, []byte("a::b::c"), []byte("a::b"))
	f.Add("2", ",", true, []byte(`a,"b,""c",d`), []byte(`a,b,d`))
	f.Add("2-3", "", false, []byte(""), []byte("x"))     // every selected field missing
	f.Add("3,4", "", false, []byte("  "), []byte("x y")) // in a blank line too
	f.Fuzz(func(t *testing.T, spec, delim string, csv bool, line1, line2 []byte) {
		s, err := ParseSpec(spec)
		if err != nil {
			return
		}
		d, err := ParseDelimiter(delim)
		if err != nil || !utf8.ValidString(d) {
			return
		}
		k := NewKeyExtractor(s, d, csv)
		c1, c2 := line1, line2
		key1 := bytes.Clone(k.Key(c1))
		key2 := k.Key(c2)
		if csv || bytes.Contains(c1, []byte{'\n'}) {
			return // no simple reference for CSV quoting
		}
		sel := func(line []byte) [][]byte {
			fs := refFields(line, d)
			var out [][]byte
			n := len(fs)
			if last := s.last(); last > n {
				n = last
			}
			rk := 0
			for i := 1; i <= n; i++ {
				if s.selects(i, &rk) {
					if i <= len(fs) {
						out = append(out, fs[i-1])
					} else {
						out = append(out, nil)
					}
				}
			}
			return out
		}
		f1, f2 := sel(c1), sel(c2)
		if n := s.single(); n != 0 {
			want := []byte{}
			if len(f1) == 1 {
				want = f1[0]
			}
			if !bytes.Equal(key1, want) {
				t.Fatalf("key of %q = %q, want field %d = %q", c1, key1, n, want)
			}
			return
		}
		same := len(f1) == len(f2)
		for i := 0; same && i < len(f1); i++ {
			same = bytes.Equal(f1[i], f2[i])
		}
		if same != bytes.Equal(key1, key2) {
			t.Fatalf("spec %s delim %q: fields %q and %q (same=%v) but keys %q and %q", s, d, f1, f2, same, key1, key2)
		}
	})
}
