package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/dedup"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
	"github.com/dedupkit/cuckoo/internal/fields"
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
//
// The contract, which the tests hold every flag of every command to:
//   - a flag that takes a value never takes a flag as it: the next
//     argument is its value unless it starts with "--" ("--" included) or
//     is -NAME[=…] for a flag of the command (or -h, -help); then the
//     flag "needs a value". A value that starts with a dash but names no
//     flag (-, or the field spec -2, or -1 for a number, refused by its
//     flag) is taken; any value at all can be given after "=":
//     --key=--odd;
//   - every value is checked when it is set, by its flag.Value (the
//     types of this file; nameValue refuses the empty name), so that a
//     bad one is status 2 with one line naming the flag as typed: "bad
//     --fpr value "2": …". What only a combination of flags can refuse is
//     checked by the command, also status 2, naming the flags.
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
			var names []string
			fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
			return nil, usageErr(remedy, "unknown flag %s%s", flagName(name), didYouMean(name, names, flagName))
		case !hasValue && isBoolFlag(f):
			value = "true"
		case !hasValue:
			if i+1 == len(args) {
				return nil, usageErr(remedy, "flag %s needs a value", flagName(name))
			}
			if next := args[i+1]; isFlag(fs, next) {
				what := next + " is a flag"
				if next == "--" {
					what = "-- ends the flags"
				}
				return nil, usageErr(remedy, "flag %s needs a value, and %s (give a value that starts with a dash as %s=VALUE)",
					flagName(name), what, flagName(name))
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
			default:
				reason = flagPackageWant(f, reason)
			}
			return nil, usageErr(remedy, "bad %s value %q: %s", flagName(name), value, reason)
		}
	}
	return pos, nil
}

// flagPackageWant says what a value of one of the flag package's own
// types should be, for its terse "parse error" and "value out of range".
func flagPackageWant(f *flag.Flag, reason string) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return reason
	}
	switch g.Get().(type) {
	case int, int64, uint, uint64:
		return "want a whole number, in range"
	case time.Duration:
		return "want a duration such as 30s or 5m"
	case float64:
		return "want a number"
	}
	return reason
}

// isFlag reports whether arg, met where a flag's value is expected, is a
// flag rather than the value (see parseArgs).
func isFlag(fs *flag.FlagSet, arg string) bool {
	if strings.HasPrefix(arg, "--") {
		return true
	}
	if len(arg) < 2 || arg[0] != '-' {
		return false
	}
	name, _, _ := strings.Cut(arg[1:], "=")
	return fs.Lookup(name) != nil || name == "h" || name == "help"
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

// bytesValue is a byte-size flag: 1048576, 1Mi, 64MiB (ParseBytes); it
// prints as a count.
type bytesValue struct{ countValue }

func (c *bytesValue) Set(s string) error {
	n, err := units.ParseBytes(s)
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

// nameValue is a flag whose value names something (a file, a directory, a
// filter in Redis, a variable): any name but the
// empty one, which would read as the flag not given (an unset variable in
// `-o $OUT` would otherwise send the output elsewhere).
type nameValue string

func (p *nameValue) String() string {
	if p == nil {
		return ""
	}
	return string(*p)
}

func (p *nameValue) Set(s string) error {
	if s == "" {
		return wantError("want a name, not an empty one")
	}
	*p = nameValue(s)
	return nil
}

// fieldSpecValue is a field spec as cut -f takes it: 2, 1,3, 2-4, 3-, -2;
// or a JSON path (.user.id, $.user.id), which only dedup --kafka reads
// (runDedup refuses one for lines).
type fieldSpecValue string

func (v *fieldSpecValue) String() string { return (*nameValue)(v).String() }

func (v *fieldSpecValue) Set(s string) error {
	if isJSONPath(s) {
		if _, err := fields.ParseJSONPath(s); err != nil {
			return wantError(fmt.Sprintf("a JSON path such as .user.id (%v)", trimPrefixes(err)))
		}
		*v = fieldSpecValue(s)
		return nil
	}
	if _, err := dedup.ParseFieldSpec(s); err != nil {
		return wantError(strings.TrimPrefix(err.Error(), dedup.ErrFieldSpec.Error()+": "))
	}
	*v = fieldSpecValue(s)
	return nil
}

// segmentsValue is build's --segments: 1 to cuckoo.MaxSegments (0 is
// refused: leaving the flag out is one segment).
type segmentsValue int

func (v *segmentsValue) String() string { return (*intValue)(v).String() }

func (v *segmentsValue) Set(s string) error {
	if err := (*intValue)(v).Set(s); err != nil || *v < 1 || *v > cuckoo.MaxSegments {
		return wantError(fmt.Sprintf("want 1 to %d", cuckoo.MaxSegments))
	}
	return nil
}

// listValue is a repeatable string flag.
type listValue []string

func (l *listValue) String() string     { return "" }
func (l *listValue) Set(s string) error { *l = append(*l, s); return nil }
