package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/dedup"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
	"github.com/dedupkit/cuckoo/internal/units"
)

const dedupHelp = `Usage: cuckoo dedup [flags] [FILE...]

Write each line of the files (or of standard input) the first time it is
seen, in input order. Memory is the filter (at the default rate, about 2.5
bytes per line of input, whatever the lines' length) plus a few MiB of
buffers, so it handles files far larger than 'sort -u' or awk can hold.

A new line is dropped wrongly only when the filter gives a false positive,
with probability at most --fpr per distinct line (--stats prints the
expected number); a line is never printed twice. Lines may be of any length
and hold any bytes; "a\r\n" and "a\n" are the same line (each is printed as
read), and a last line without a newline gets one.

The filter grows as needed: it starts with room for the lines the input
files' sizes call for (counted up to 8 MiB, sampled above), or for 262,144
lines when reading standard input or a pipe, and adds a larger table when
full, keeping the rate below --fpr however far it grows. --capacity N
makes it a plain cuckoo filter of fixed size instead (slightly faster; past N
distinct lines dedup stops with exit status 4). --save, --load and --state
carry the seen lines across runs.

Examples:
  cuckoo dedup urls.txt > unique.txt
  cat *.log | cuckoo dedup --stats > unique.log
  cuckoo dedup --key 2 --delimiter , users.csv      # first row per value of column 2
  cuckoo dedup --key 1,3 --csv --delimiter ';' data.csv
  cuckoo dedup --duplicates urls.txt                # only the repeats
  cuckoo dedup --count urls.txt                     # how many lines are repeats
  cuckoo dedup --state seen.ckoo today.txt > new-today.txt   # yesterday's lines stay seen
  cuckoo dedup -o urls.txt urls.txt                 # in place, atomically
  cuckoo dedup --fpr 1e-7 urls.txt                  # exact for all practical purposes

--key takes a field spec as cut -f does: 2, 1,3, 2-4, 3-. Fields are split
on runs of blanks (as awk does) unless --delimiter is given; --csv honours
double quotes. The whole line is printed, deduplicated on the key.
`

type dedupFlags struct {
	filter     filterFlags
	fields     fieldFlags
	key        string
	duplicates bool
	count      bool
	stats      bool
	save, load string
	state      string
	output     string
	quiet      bool
	redis      redisFlags // --redis, --name: the seen-set is a filter in Redis (redisdedup.go)
}

func (f *dedupFlags) register(fs *flag.FlagSet) {
	f.filter.register(fs, 0.0001, true)
	fs.StringVar(&f.key, "key", "", "dedup on these fields only: a field `spec` as cut -f (2, 1,3, 2-4, 3-)")
	f.fields.register(fs)
	fs.BoolVar(&f.duplicates, "duplicates", false, "print only the repeats (every line seen before) instead")
	fs.BoolVar(&f.count, "count", false, "print only how many lines were dropped as repeats")
	fs.BoolVar(&f.stats, "stats", false, "print lines in and out, memory and expected false positives on standard error")
	fs.StringVar(&f.save, "save", "", "save the seen-set to `file` after a successful run (atomically)")
	fs.StringVar(&f.load, "load", "", "start from the seen-set in `file`: its lines count as seen")
	fs.StringVar(&f.state, "state", "", "--load `file` if it exists, and --save it after the run")
	fs.StringVar(&f.output, "o", "", "write to `file` (atomically; it may be an input) instead of standard output")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress bar")
	fs.BoolVar(&f.quiet, "q", false, "the same as --quiet")
	f.redis.register(fs)
}

func dedupCommand() *command {
	return newCommand("dedup", "print each line the first time it is seen (or only the repeats)", dedupHelp,
		(*dedupFlags).register, runDedup)
}

func runDedup(e *env, f *dedupFlags, names []string) error {
	const remedy = "see 'cuckoo dedup --help'"
	if f.key != "" && f.fields.field != "" && f.key != f.fields.field {
		return usageErr(remedy, "--key and --field are the same flag; give one")
	}
	if f.key != "" {
		f.fields.field = f.key
	}
	keyer, err := f.fields.extractor("dedup", "key")
	if err != nil {
		return err
	}
	if f.duplicates && f.count {
		return usageErr(remedy, "--count already counts the repeats; drop --duplicates")
	}
	if f.state != "" && (f.save != "" || f.load != "") {
		return usageErr(remedy, "--state is --load and --save of one file; give either --state or --load/--save")
	}
	ins, err := openInputs(e, "dedup", names)
	if err != nil {
		return err
	}
	if f.redis.url != "" {
		return runRedisDedup(e, f, keyer, ins)
	}

	load, save := f.load, f.save
	if f.state != "" {
		save = f.state
		if _, err := os.Stat(f.state); err == nil {
			load = f.state
		}
	}
	var seen *filterfile.Filter
	if load != "" {
		if f.filter.anySet() {
			return usageErr("the loaded filter keeps its own parameters; drop them or start a new file",
				"--capacity, --grow, --fpr, --seed, --bloom, --bucket-size, --fingerprint-bits and --semi-sorted describe a new filter, not the one loaded from %s", load)
		}
		if seen, err = loadFilter(load); err != nil {
			return err
		}
	} else {
		spec, _, err := f.filter.spec(e, "dedup", ins)
		if err != nil {
			return err
		}
		if seen, err = newFilter(spec); err != nil {
			return err
		}
	}

	out := e.stdout
	var outFile *outputFile
	if f.output != "" {
		if outFile, err = e.createOutput(f.output); err != nil {
			return err
		}
		out = outFile
	}
	bar := e.startBar("dedup", totalSize(ins), f.quiet, f.output == "" && !f.count)
	d := dedup.New(seen, out, dedup.Config{
		Key:        keyer,
		Duplicates: f.duplicates,
		CountOnly:  f.count,
		OnRead:     bar.AddChunk,

		TrackFalsePositives: f.stats,
	})
	start := time.Now()
	runErr := func() error {
		for i := range ins {
			r, closeIn, err := ins[i].open(e)
			if err != nil {
				return err
			}
			err = d.Run(r)
			closeIn()
			if err != nil {
				return dedupError(ins[i].name, err, seen, load)
			}
		}
		return nil
	}()
	flushErr := d.Flush()
	e.stopBar()
	if runErr != nil {
		outFile.abort()
		return runErr
	}
	if flushErr != nil {
		outFile.abort()
		return dataErr(remedyWrite+"; nothing was saved", "writing the output: %v", cause(flushErr))
	}
	st := d.Stats()
	if f.count {
		fmt.Fprintln(out, st.Dropped)
	}
	if err := outFile.commit(); err != nil {
		return err
	}
	if save != "" {
		if err := e.writeFile(save, func(w io.Writer) error {
			_, err := seen.WriteTo(w)
			return err
		}); err != nil {
			return err
		}
	}
	if f.stats {
		printDedupStats(e.stderr, st, seen, time.Since(start))
	}
	return nil
}

// dedupError explains a failure of the dedup engine.
func dedupError(name string, err error, seen *filterfile.Filter, loaded string) error {
	if name == "-" {
		name = "standard input"
	}
	if errors.Is(err, filterfile.ErrFull) {
		remedy := fmt.Sprintf("rerun with a larger --capacity (e.g. %d), or without --capacity to let the filter grow", 2*seen.Capacity())
		if loaded != "" {
			remedy = "the filter in " + loaded + " has no room left; rebuild it larger with 'cuckoo build --capacity N'"
		}
		where := name
		var le *dedup.LineError
		if errors.As(err, &le) {
			where += " line " + units.Count(le.Line)
		}
		return &cliError{code: exitFull, remedy: remedy + "; nothing was saved",
			msg: fmt.Sprintf("the filter is full at %s: it holds %s lines, its capacity is %s",
				where, units.Count(seen.Len()), units.Count(seen.Capacity()))}
	}
	if errors.Is(err, dedup.ErrOutput) {
		return dataErr(remedyWrite+"; nothing was saved", "writing the output: %v", cause(err))
	}
	return dataErr("nothing was saved", "reading %s: %v", name, unwrap(err))
}

func printDedupStats(w io.Writer, st dedup.Stats, seen *filterfile.Filter, elapsed time.Duration) {
	secs := max(elapsed.Seconds(), 1e-9)
	fmt.Fprintf(w, "cuckoo dedup: %s lines in (%s), %s out, %s dropped as repeats\n",
		units.Count(st.LinesIn), units.Bytes(st.BytesIn), units.Count(st.LinesOut), units.Count(st.Dropped))
	size := seen.SizeInBytes()
	bpk := 0.0
	if n := seen.Len(); n > 0 {
		bpk = float64(size*8) / float64(n)
	}
	fmt.Fprintf(w, "cuckoo dedup: filter: %s, %s keys, %s (%.1f bits per key), false-positive rate now %s\n",
		seen.Kind(), units.Count(seen.Len()), units.Bytes(size), bpk, units.Percent(seen.FalsePositiveRate()))
	fmt.Fprintf(w, "cuckoo dedup: expected false positives (new lines dropped wrongly): %.3g\n", st.ExpectedFalsePositives)
	fmt.Fprintf(w, "cuckoo dedup: %.2f s, %s lines/s, %s/s\n", secs,
		units.SI(float64(st.LinesIn)/secs), units.Bytes(uint64(float64(st.BytesIn)/secs)))
}

// newFilter builds a filter for spec, with errors that name the flags.
func newFilter(spec filterfile.Spec) (*filterfile.Filter, error) {
	f, err := filterfile.New(spec)
	if err != nil {
		return nil, usageErr("see the command's --help for the ranges", "cannot make that filter: %v", err)
	}
	return f, nil
}
