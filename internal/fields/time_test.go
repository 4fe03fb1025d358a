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

// TestTimeFieldClone checks that a clone reads the same times as its
// original, on its own buffers.
func TestTimeFieldClone(t *testing.T) {
	f, _ := ParseTimeFormat("2006-01-02 15:04:05")
	tf, err := NewTimeField("2-3", "", false, f)
	if err != nil {
		t.Fatal(err)
	}
	clone := tf.Clone()
	for _, line := range []string{"id-7  2026-03-01   12:00:01 payload", "x 2026-03-02 00:00:00"} {
		a, errA := tf.Time([]byte(line))
		b, errB := clone.Time([]byte(line))
		if errA != nil || errB != nil || !a.Equal(b) {
			t.Errorf("%q: original %v, %v; clone %v, %v", line, a, errA, b, errB)
		}
	}
	if _, err := clone.Time([]byte("x y z")); !errors.Is(err, ErrTime) {
		t.Errorf("a clone's bad time: %v, want ErrTime", err)
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

// TestTimeLayoutUnknownZoneIsAnError: a zone abbreviation the local zone
// does not define is an error naming it, not UTC: time.Parse reads
// "10:00 PST" on a machine in UTC as 10:00 UTC, 8 hours off, and "10:00
// GMT+3" as 10:00 UTC too. UTC, GMT, numeric offsets (with or without an
// abbreviation beside them) and Z keep their meaning.
func TestTimeLayoutUnknownZoneIsAnError(t *testing.T) {
	setLocal(t, time.UTC)
	abbrev, _ := ParseTimeFormat("2006-01-02 15:04:05 MST")
	for _, c := range []struct{ text, zone string }{
		{"2026-11-30 10:00:00 PST", "PST"},
		{"2026-11-30 10:00:00 CEST", "CEST"},
		{"2026-11-30 10:00:00 GMT+3", "GMT+3"},
		{"2026-11-30 10:00:00 +07", "+07"},
	} {
		got, err := abbrev.Parse([]byte(c.text))
		if !errors.Is(err, ErrTime) {
			t.Errorf("Parse(%q) = %v, %v; want an error wrapping ErrTime", c.text, got, err)
			continue
		}
		for _, want := range []string{"zone " + c.zone + " ", "-0700", "TZ"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Parse(%q): %q does not say %q", c.text, err, want)
			}
		}
	}
	ten := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		format, text string
		want         time.Time
	}{
		{"2006-01-02 15:04:05 MST", "2026-11-30 10:00:00 UTC", ten},
		{"2006-01-02 15:04:05 MST", "2026-11-30 10:00:00 GMT", ten},
		{"2006-01-02 15:04:05 -0700 MST", "2026-11-30 02:00:00 -0800 PST", ten},
		{"2006-01-02 15:04:05 -0700 MST", "2026-11-30 12:00:00 +0200 XYZ", ten},
		{"2006-01-02T15:04:05Z07:00", "2026-11-30T10:00:00Z", ten},
		{"2006-01-02T15:04:05Z07:00", "2026-11-30T11:00:00+01:00", ten},
		{"2006-01-02T15:04:05 -07", "2026-11-30T07:00:00 -03", ten},
		{"2006-01-02 15:04:05", "2026-11-30 10:00:00", ten},
	} {
		f, _ := ParseTimeFormat(c.format)
		got, err := f.Parse([]byte(c.text))
		if err != nil || !got.Equal(c.want) {
			t.Errorf("format %q: Parse(%q) = %v, %v; want %v", c.format, c.text, got, err, c.want)
		}
	}
	// Through a TimeField, as dedup and kafkadedup read it.
	tf, err := NewTimeField("1-3", "", false, abbrev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tf.Time([]byte("2026-11-30 10:00:00 PST id-1")); !errors.Is(err, ErrTime) || !strings.Contains(err.Error(), "zone PST") {
		t.Errorf("a TimeField: %v", err)
	}
}

// TestTimeLayoutLocalZoneAbbreviation: an abbreviation the local zone
// defines (TZ=America/Los_Angeles: PST in winter, PDT in summer) is read
// at that zone's offset.
func TestTimeLayoutLocalZoneAbbreviation(t *testing.T) {
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	setLocal(t, la)
	f, _ := ParseTimeFormat("2006-01-02 15:04:05 MST")
	for _, c := range []struct {
		text string
		want time.Time
	}{
		{"2026-11-30 10:00:00 PST", time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC)},
		{"2026-07-01 10:00:00 PDT", time.Date(2026, 7, 1, 17, 0, 0, 0, time.UTC)},
		{"2026-07-01 10:00:00 UTC", time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)},
		{"2026-07-01 10:00:00 GMT", time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)},
	} {
		got, err := f.Parse([]byte(c.text))
		if err != nil || !got.Equal(c.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.text, got, err, c.want.UTC())
		}
	}
	if _, err := f.Parse([]byte("2026-11-30 10:00:00 EST")); !errors.Is(err, ErrTime) || !strings.Contains(err.Error(), "zone EST ") {
		t.Errorf("EST in Los Angeles: %v, want an error naming EST", err)
	}
}

// setLocal makes loc the local zone for the rest of test t (which must
// not be parallel: time.Local is the process's).
func setLocal(t *testing.T, loc *time.Location) {
	old := time.Local
	time.Local = loc
	t.Cleanup(func() { time.Local = old })
}
