package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
)

// newFlags returns an empty flag set for a command. The flag package only
// declares the flags and holds their values: parseArgs does the parsing,
// with the messages the CLI promises.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("cuckoo "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseArgs parses flags and positional arguments in any order, as users
// of `cuckoo query FILE --present` expect; "--" ends the flags. It accepts
// -flag and --flag, with the value after "=" or as the next argument (a
// bool flag takes a value only after "="). -h and --help, unless a command
// declares them, ask for the help. The messages are the CLI's own: the
// flag package only holds the declarations and the values.
func parseArgs(fs *flag.FlagSet, cmd string, args []string) ([]string, error) {
	remedy := "see 'cuckoo " + cmd + " --help'"
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		f := fs.Lookup(name)
		switch {
		case f == nil && (name == "h" || name == "help"):
			return nil, errHelp
		case f == nil:
			return nil, usageErr(remedy, "unknown flag %s", flagName(name))
		case !hasValue && isBoolFlag(f):
			value = "true"
		case !hasValue:
			if i+1 == len(args) {
				return nil, usageErr(remedy, "flag %s needs a value", flagName(name))
			}
			i++
			value = args[i]
		}
		if err := fs.Set(name, value); err != nil {
			// The Values of this file say what they want (a wantError);
			// the flag package's bool can only want true or false; a
			// fs.Func's function says what it likes.
			reason := err.Error()
			var want wantError
			switch {
			case errors.As(err, &want):
				reason = string(want)
			case isBoolFlag(f):
				reason = "want true or false"
			}
			return nil, usageErr(remedy, "bad %s value %q: %s", flagName(name), value, reason)
		}
	}
	return pos, nil
}

// flagName is a flag as users type it: -o, --fpr.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// Flag values with the parsing the CLI promises. Their Set errors are
// wantErrors, which say what the value should be; parseArgs names the
// flag and the value.

// wantError is what a flag value should have been: "want a whole number".
type wantError string

func (w wantError) Error() string { return string(w) }

// wantOf returns what a units parse error says the value should be.
func wantOf(err error) error {
	var se *units.SyntaxError
	if errors.As(err, &se) {
		return wantError(se.Want)
	}
	return wantError(err.Error())
}

// countValue is a count flag: 1000000, 1_000_000, 1M, 1e6.
type countValue struct {
	n   uint64
	set bool
}

func (c *countValue) String() string {
	if c == nil || !c.set {
		return ""
	}
	return units.Count(c.n)
}

func (c *countValue) Set(s string) error {
	n, err := units.ParseCount(s)
	if err != nil {
		return wantOf(err)
	}
	c.n, c.set = n, true
	return nil
}

// seedValue is a hash seed: decimal, or hexadecimal after 0x as info
// prints it.
type seedValue struct {
	n   uint64
	set bool
}

func (v *seedValue) String() string { return "" }

func (v *seedValue) Set(s string) error {
	n, err := units.ParseSeed(s)
	if err != nil {
		return wantOf(err)
	}
	v.n, v.set = n, true
	return nil
}

// rateValue is a probability flag: 0.001, 1e-4, 0.1%. It keeps the text
// the user gave, for messages.
type rateValue struct {
	p    float64
	text string
	set  bool
}

func (r *rateValue) String() string {
	if r == nil || r.p == 0 {
		return ""
	}
	return fmt.Sprint(r.p)
}

func (r *rateValue) Set(s string) error {
	p, err := units.ParseRate(s)
	if err != nil {
		return wantOf(err)
	}
	r.p, r.text, r.set = p, s, true
	return nil
}

// or returns the rate given, or def when none was.
func (r *rateValue) or(def float64) float64 {
	if r.set {
		return r.p
	}
	return def
}

// intValue is a small whole-number flag.
type intValue int

func (v *intValue) String() string {
	if v == nil || *v == 0 {
		return ""
	}
	return strconv.Itoa(int(*v))
}

func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return wantError("want a whole number")
	}
	*v = intValue(n)
	return nil
}

// listValue is a repeatable string flag.
type listValue []string

func (l *listValue) String() string     { return "" }
func (l *listValue) Set(s string) error { *l = append(*l, s); return nil }
