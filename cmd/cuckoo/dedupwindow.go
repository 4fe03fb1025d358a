package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/dedup"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
)

// dedup --window: the seen-set is a cuckoo.Window, which forgets keys
// older than the window (package dedup's window.go says what "seen within
// the window" means).

// windowFlags are dedup's window flags.
type windowFlags struct {
	window     windowValue
	timeField  string
	timeFormat string
}

func (f *windowFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.window, "window", "drop a line only if its key was seen within this `duration` before it (90m, 24h, 7d): a filter that forgets older keys")
	fs.Var((*fieldSpecValue)(&f.timeField), "time-field", "with --window: each line's time is in this `field` (RFC 3339 or Unix seconds), not when it is read")
	fs.Func("time-format", "with --time-field: how the time is written: rfc3339, unix, unix-ms, unix-us, unix-ns, or a Go `layout` such as \"2006-01-02 15:04:05\"", func(s string) error {
		if _, err := dedup.ParseTimeFormat(s); err != nil {
			return wantError(err.Error())
		}
		f.timeFormat = s
		return nil
	})
}

// windowValue is --window: a positive duration, in Go's syntax or with
// days (7d, 1d12h).
type windowValue struct {
	d   time.Duration
	set bool
}

func (v *windowValue) String() string {
	if v == nil || !v.set {
		return ""
	}
	return v.d.String()
}

func (v *windowValue) Set(s string) error {
	d, err := parseDays(strings.TrimSpace(s))
	if err != nil || d <= 0 {
		return wantError("a duration such as 90m, 24h or 7d")
	}
	v.d, v.set = d, true
	return nil
}

// parseDays is time.ParseDuration with a leading count of days: 7d, 1.5d,
// 1d12h.
func parseDays(s string) (time.Duration, error) {
	days, rest, ok := strings.Cut(s, "d")
	if !ok {
		return time.ParseDuration(s)
	}
	n, err := strconv.ParseFloat(days, 64)
	if err != nil || n < 0 || n > 100*365 {
		return 0, fmt.Errorf("bad days %q", days)
	}
	d := time.Duration(n * float64(24*time.Hour))
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil {
			return 0, err
		}
		d += r
	}
	return d, nil
}

// openWindowSeen makes the seen-set of a window dedup into s, when --window
// is given or the file to load holds a window filter (handled), from the
// file or new. s.loaded and s.save are set, and the files locked.
func openWindowSeen(e *env, f *dedupFlags, s *seenSet, ins []input) (handled bool, err error) {
	const remedy = "see 'cuckoo dedup --help'"
	wf := &f.window
	loadedKind := sniffKind(s.loaded)
	if !wf.window.set && loadedKind != filterfile.CuckooWindow {
		if wf.timeField != "" || wf.timeFormat != "" {
			return true, usageErr(remedy, "--time-field and --time-format are about --window; give --window DURATION")
		}
		return false, nil
	}
	if wf.timeFormat != "" && wf.timeField == "" {
		return true, usageErr(remedy, "--time-format says how --time-field's time is written; give --time-field N")
	}
	if f.filter.grow || f.filter.semi || f.filter.bloom.kind != 0 {
		return true, usageErr(remedy, "--window makes a window filter: --grow, --semi-sorted and --bloom do not apply")
	}
	var filter *filterfile.Filter
	if s.loaded != "" {
		if filter, err = e.loadFilter(s.loaded); err != nil {
			return true, err
		}
		if err := checkLoadedFlags(f, filter, s.loaded, "--capacity, --fpr, --seed, --bucket-size and --fingerprint-bits"); err != nil {
			return true, err
		}
		w := filter.Window()
		switch {
		case w == nil:
			return true, usageErr("give a file written by 'cuckoo dedup --window', or a new one",
				"--window needs a window filter, and %s holds a %s", s.loaded, filter.Kind().Description())
		case wf.window.set && w.Window() != wf.window.d:
			return true, usageErr("give --window "+w.Window().String()+", or start a new file",
				"%s keeps a window of %v, not %v", s.loaded, w.Window(), wf.window.d)
		}
	} else {
		spec, err := windowSpec(e, f, ins)
		if err != nil {
			return true, err
		}
		if filter, err = filterfile.New(spec); err != nil {
			return true, paramErr(remedy, err)
		}
	}
	times, err := timeField(f)
	if err != nil {
		return true, err
	}
	now := new(time.Time)
	if times != nil {
		filter.SetWindowClock(func() time.Time { return *now })
	}
	s.set, s.filter = dedup.NewWindowSet(filter, times, now), filter
	return true, nil
}

// timeField returns the reader of the lines' times --time-field and
// --time-format ask for, or nil (arrival time) without --time-field.
func timeField(f *dedupFlags) (*dedup.TimeField, error) {
	const remedy = "see 'cuckoo dedup --help'"
	wf := &f.window
	if wf.timeField == "" {
		return nil, nil
	}
	format, err := dedup.ParseTimeFormat(wf.timeFormat)
	if err != nil {
		return nil, usageErr(remedy, "bad --time-format: %v", err)
	}
	delim, err := dedup.ParseDelimiter(f.fields.delimiter)
	if err != nil {
		return nil, usageErr(remedy, "bad --delimiter: %v", err)
	}
	times, err := dedup.NewTimeField(wf.timeField, delim, f.fields.csv, format)
	if err != nil {
		return nil, usageErr(remedy, "bad --time-field %q: %v", wf.timeField, err)
	}
	return times, nil
}

// windowSpec describes the new window filter the flags ask for: --capacity
// keys a window, or as many as the input files have lines (every line may
// fall in one window), or unknownWindowCapacity for a pipe.
func windowSpec(e *env, f *dedupFlags, ins []input) (filterfile.Spec, error) {
	remedy := "see 'cuckoo dedup --help'"
	ff := &f.filter
	spec := filterfile.Spec{Kind: filterfile.CuckooWindow, FPR: ff.fpr.or(filterfile.DefaultRate), BucketSize: int(ff.bucketSize),
		FingerprintBits: int(ff.fingerprint), Seed: ff.seed.n, SeedSet: ff.seed.set, Window: f.window.window.d}
	if ff.fpr.set && ff.fingerprint != 0 {
		return spec, usageErr(remedy, "--fpr and --fingerprint-bits both set the fingerprint; give one")
	}
	if ff.fingerprint != 0 {
		spec.FPR = 0
	}
	if err := ff.checkBucketSize("a window filter (--window)", 2, 4, 8); err != nil {
		return spec, err
	}
	switch {
	case ff.capacity.set && ff.capacity.n == 0:
		return spec, usageErr(remedy, "--capacity 0: a window must hold at least one key")
	case ff.capacity.set:
		spec.Capacity = ff.capacity.n
	default:
		n, known, err := estimateLines(e, ins)
		if err != nil {
			return spec, err
		}
		spec.Capacity = max(n, 1)
		if !known {
			spec.Capacity = unknownWindowCapacity
		}
	}
	return spec, nil
}

// unknownWindowCapacity is the keys a window holds when neither --capacity
// nor the input's size says: a window filter does not grow, and past its
// capacity dedup stops with status 4 and says to give --capacity.
const unknownWindowCapacity = 1 << 20

// sniffKind returns the kind of the filter file at path, or 0 when it is
// not one or cannot be read (loading it then says why).
func sniffKind(path string) filterfile.Kind {
	if path == "" {
		return 0
	}
	file, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer file.Close()
	head := make([]byte, filterfile.HeaderSize)
	if _, err := io.ReadFull(file, head); err != nil {
		return 0
	}
	kind, _, err := filterfile.Sniff(head)
	if err != nil {
		return 0
	}
	return kind
}

// windowStats is the line --stats prints about a window filter.
func windowStats(w io.Writer, filter *filterfile.Filter) {
	if win := filter.Window(); win != nil {
		fmt.Fprintf(w, "cuckoo dedup: window %v (keys are forgotten between %v and %v after their last line), %s in it now\n",
			win.Window(), win.Window(), (win.Window() + win.Granularity()).Round(time.Second), units.Counted(win.Len(), "key"))
	}
}
