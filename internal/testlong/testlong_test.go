package testlong

import "testing"

func TestEnabled(t *testing.T) {
	for _, c := range []struct {
		v    string
		want bool
	}{{"", false}, {"0", false}, {"1", true}, {"yes", true}} {
		t.Setenv(Env, c.v)
		if got := Enabled(); got != c.want {
			t.Errorf("%s=%q: Enabled() = %v, want %v", Env, c.v, got, c.want)
		}
	}
}

// TestSkipQuickRun runs a check in the long run and in the -short runs,
// and skips it in the quick run alone.
func TestSkipQuickRun(t *testing.T) {
	short := testing.Short()
	for _, long := range []string{"", "1"} {
		t.Run("CUCKOO_LONG="+long, func(t *testing.T) {
			t.Setenv(Env, long)
			ran := false
			// A subtest of its own: Skip ends the goroutine it is called on.
			t.Run("check", func(t *testing.T) {
				SkipQuickRun(t)
				ran = true
			})
			if want := long != "" || short; ran != want {
				t.Errorf("CUCKOO_LONG=%q, -short %v: ran %v, want %v", long, short, ran, want)
			}
		})
	}
}
