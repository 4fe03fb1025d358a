package fields

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTimeFormats(t *testing.T) {
	utc := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, c := range []struct {
		format, text string
		want         time.Time
	}{
		{"", "2026-03-01T12:00:00Z", utc("2026-03-01T12:00:00Z")},
		{"", "2026-03-01T12:00:00.25+02:00", utc("2026-03-01T10:00:00.25Z")},
		{"", " 1700000000 ", time.Unix(1700000000, 0)},
		{"", "1700000000.5", time.Unix(1700000000, 5e8)},
		{"", "1700000000.123456789123", time.Unix(1700000000, 123456789)},
		{"", "-1.5", time.Unix(-1, -5e8)},
		{"unix", "12", time.Unix(12, 0)},
		{"unix-ms", "1700000000123", time.Unix(1700000000, 123e6)},
		{"unix-us", "1700000000123456.9", time.Unix(1700000000, 123456900)},
		{"unix-ns", "1700000000123456789", time.Unix(1700000000, 123456789)},
		{"rfc3339", "2026-03-01T12:00:00Z", utc("2026-03-01T12:00:00Z")},
		{"2006-01-02 15:04:05", "2026-03-01 12:00:01", utc("2026-03-01T12:00:01Z")},
		{"02/Jan/2006:15:04:05 -0700", "01/Mar/2026:12:00:00 +0100", utc("2026-03-01T11:00:00Z")},
	} {
		f, err := ParseTimeFormat(c.format)
		if err != nil {
			t.Fatalf("ParseTimeFormat(%q): %v", c.format, err)
		}
		got, err := f.Parse([]byte(c.text))
		if err != nil || !got.Equal(c.want) {
			t.Errorf("format %q: Parse(%q) = %v, %v; want %v", c.format, c.text, got, err, c.want)
		}
	}
	for _, c := range []struct{ format, text string }{
		{"", "yesterday"}, {"", "1700000000x"}, {"", ""}, {"", "1.2.3"}, {"", ".5"},
		{"unix", "2026-03-01T12:00:00Z"}, {"unix", "99999999999999999999"}, {"unix-ms", "1e9"},
		{"rfc3339", "1700000000"}, {"2006-01-02", "01/03/2026"},
	} {
		f, _ := ParseTimeFormat(c.format)
		if _, err := f.Parse([]byte(c.text)); !errors.Is(err, ErrTime) {
			t.Errorf("format %q: Parse(%q) = %v, want ErrTime", c.format, c.text, err)
		}
	}
	if _, err := ParseTimeFormat("soon"); err == nil {
		t.Error("ParseTimeFormat accepted a layout without a digit")
	}
}

func TestTimeField(t *testing.T) {
	f, _ := ParseTimeFormat("2006-01-02 15:04:05")
	tf, err := NewTimeField("2-3", "", false, f)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tf.Time([]byte("id-7  2026-03-01   12:00:01 payload"))
	if err != nil || !got.Equal(time.Date(2026, 3, 1, 12, 0, 1, 0, time.UTC)) {
		t.Fatalf("two fields: %v, %v", got, err)
	}
	auto, _ := ParseTimeFormat("")
	tf, err = NewTimeField("2", ",", true, auto)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tf.Time([]byte(`x,"1700000000",y`)); err != nil || got.Unix() != 1700000000 {
		t.Fatalf("a quoted CSV field: %v, %v", got, err)
	}
	_, err = tf.Time([]byte("x,,y"))
	if !errors.Is(err, ErrTime) || !strings.Contains(err.Error(), `field 2 is ""`) {
		t.Fatalf("an empty field: %v", err)
	}
	for _, spec := range []string{"3-", "1-9", "0", ""} {
		if _, err := NewTimeField(spec, "", false, auto); err == nil {
			t.Errorf("NewTimeField(%q) accepted", spec)
		}
	}
}

// FuzzTimeFormat: Parse never panics, and a Unix time it reads is the
// number it was given.
func FuzzTimeFormat(f *testing.F) {
	for _, s := range []string{"1700000000", "-1.5", "2026-03-01T12:00:00Z", "1.2.3", "", "9999999999999999999"} {
		f.Add("", s)
		f.Add("unix-ms", s)
	}
	f.Add("2006-01-02 15:04:05", "2026-03-01 12:00:01")
	f.Fuzz(func(t *testing.T, format, text string) {
		tf, err := ParseTimeFormat(format)
		if err != nil {
			return
		}
		got, err := tf.Parse([]byte(text))
		if err != nil {
			if !errors.Is(err, ErrTime) {
				t.Fatalf("error %v does not wrap ErrTime", err)
			}
			return
		}
		if tf.unit == 1e9 && !strings.Contains(text, ".") {
			back, err := tf.Parse([]byte(strings.TrimSpace(text)))
			if err != nil || !back.Equal(got) || got.Nanosecond() != 0 {
				t.Fatalf("%q: %v, then %v", text, got, back)
			}
		}
	})
}
