package units

import (
	"errors"
	"testing"
	"time"
)

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {12345, "12,345"}, {3000000, "3,000,000"},
		{18446744073709551615, "18,446,744,073,709,551,615"}} {
		if got := Count(c.n); got != c.want {
			t.Errorf("Count(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1.00 KiB"}, {7 << 20, "7.00 MiB"}, {6_700_000, "6.39 MiB"}, {150 << 30, "150 GiB"}} {
		if got := Bytes(c.n); got != c.want {
			t.Errorf("Bytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestSI(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{{0, "0"}, {0.5, "0.50"}, {812, "812"}, {41300, "41.3k"}, {1.2e6, "1.20M"}, {999.7, "1.00k"}} {
		if got := SI(c.x); got != c.want {
			t.Errorf("SI(%v) = %q, want %q", c.x, got, c.want)
		}
	}
}

func TestRate(t *testing.T) {
	for _, c := range []struct {
		p    float64
		want string
	}{{0.029, "2.9 % (1 in 34)"}, {0.00011597, "0.012 % (1 in 8,623)"}, {0, "0"}, {1, "100 %"}} {
		if got := Rate(c.p); got != c.want {
			t.Errorf("Rate(%v) = %q, want %q", c.p, got, c.want)
		}
	}
}

func TestDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{-time.Second, "0s"}, {45 * time.Second, "45s"}, {185 * time.Second, "3m05s"}, {127 * time.Minute, "2h07m"}} {
		if got := Duration(c.d); got != c.want {
			t.Errorf("Duration(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestParseCount(t *testing.T) {
	for _, c := range []struct {
		s    string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"3000000", 3000000, true}, {"3_000_000", 3000000, true}, {"3,000,000", 3000000, true},
		{"10k", 10000, true}, {"1.5M", 1500000, true}, {"2G", 2e9, true}, {"1e7", 1e7, true}, {" 7 ", 7, true},
		{"18446744073709551615", 18446744073709551615, true},
		{"", 0, false}, {"-1", 0, false}, {"1.5", 0, false}, {"abc", 0, false}, {"1e30", 0, false},
		{"NaN", 0, false}, {"k", 0, false}, {"+3", 0, false}, {"Inf", 0, false},
	} {
		got, err := ParseCount(c.s)
		if c.ok != (err == nil) || got != c.want {
			t.Errorf("ParseCount(%q) = %d, %v; want %d, ok=%v", c.s, got, err, c.want, c.ok)
		}
		if err != nil && !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseCount(%q) error %v does not wrap ErrSyntax", c.s, err)
		}
	}
}

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		s    string
		want float64
		ok   bool
	}{
		{"0.001", 0.001, true}, {"1e-4", 1e-4, true}, {"0.1%", 0.001, true}, {"5 %", 0.05, true},
		{"0", 0, false}, {"1", 0, false}, {"-0.1", 0, false}, {"NaN", 0, false}, {"x", 0, false}, {"100%", 0, false},
	} {
		got, err := ParseRate(c.s)
		if c.ok != (err == nil) || (c.ok && got != c.want) {
			t.Errorf("ParseRate(%q) = %v, %v; want %v, ok=%v", c.s, got, err, c.want, c.ok)
		}
	}
}

func TestParseSeed(t *testing.T) {
	for _, c := range []struct {
		s    string
		want uint64
		ok   bool
	}{
		{"1", 1, true}, {"0", 0, true}, {"1_000", 1000, true}, {"010", 10, true},
		{"0x0000000000000001", 1, true}, {"0xac060911e2955135", 0xac060911e2955135, true}, {"0XFF", 255, true},
		{"18446744073709551615", 1<<64 - 1, true}, {"0xffffffffffffffff", 1<<64 - 1, true},
		{"", 0, false}, {"0x", 0, false}, {"-1", 0, false}, {"+1", 0, false}, {"1e6", 0, false}, {"1M", 0, false},
		{"18446744073709551616", 0, false}, {"0x1ffffffffffffffff", 0, false}, {"0xg", 0, false},
	} {
		got, err := ParseSeed(c.s)
		if c.ok != (err == nil) || got != c.want {
			t.Errorf("ParseSeed(%q) = %d, %v; want %d, ok=%v", c.s, got, err, c.want, c.ok)
		}
		if err != nil && !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseSeed(%q) error %v does not wrap ErrSyntax", c.s, err)
		}
	}
	// What Seed prints, ParseSeed reads back.
	for _, seed := range []uint64{0, 1, 0xac060911e2955135, 1<<64 - 1} {
		if got, err := ParseSeed(Seed(seed)); err != nil || got != seed {
			t.Errorf("ParseSeed(Seed(%d)) = %d, %v", seed, got, err)
		}
	}
}

func TestCounted(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want string
	}{{0, "0 items"}, {1, "1 item"}, {2, "2 items"}, {1000, "1,000 items"}} {
		if got := Counted(c.n, "item"); got != c.want {
			t.Errorf("Counted(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		s    string
		want uint64
		ok   bool
	}{
		{"1048576", 1 << 20, true}, {"1M", 1e6, true}, {"1Mi", 1 << 20, true}, {"1MiB", 1 << 20, true},
		{"64Ki", 64 << 10, true}, {"64Mi", 64 << 20, true}, {"1.5Ki", 1536, true}, {"2Gi", 2 << 30, true},
		{"1Ti", 1 << 40, true}, {" 4 Ki ", 4 << 10, true}, {"1_024", 1024, true},
		{"0.1Ki", 0, false}, {"-1Ki", 0, false}, {"+1Ki", 0, false}, {"Ki", 0, false}, {"1Xi", 0, false},
		{"16777216Ti", 0, false}, {"", 0, false}, {"NaNKi", 0, false},
	} {
		got, err := ParseBytes(c.s)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, ok %v", c.s, got, err, c.want, c.ok)
		}
		if err != nil && !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseBytes(%q): %v does not match ErrSyntax", c.s, err)
		}
	}
}
