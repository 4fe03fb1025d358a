package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
)

const buildHelp = `Usage: cuckoo build -o FILE [flags] [KEYS-FILE...]

Build a filter file from keys, one per line, read from the files (or from
standard input). The file is written atomically: it appears complete or not
at all, and an existing FILE is replaced only when the build succeeds
(Ctrl-C or an error leaves it as it was).

By default it builds a cuckoo filter sized from the input files' sizes,
with 25 % headroom for keys added later with 'cuckoo add' (--headroom
changes it; it rebuilds larger if the files hold more lines than
estimated); from standard input or a pipe, a cuckoo filter that grows as
needed. --capacity fixes the
size; --grow makes a filter that grows (from --capacity, if given), for a
file that 'cuckoo add' will keep growing. --bloom builds a Bloom filter
instead (no deletes; 'cuckoo plan' compares them); a fixed-size one needs
--capacity when reading standard input.

Every line is added, as a multiset: a line given twice is stored twice
and needs two deletes ('cuckoo delete'). --unique adds a line only when the
filter does not already report it, for set semantics and a smaller filter
on repetitive input.

--segments N splits a fixed-size cuckoo filter's table into N segments,
which 'cuckoo push' stores as N Redis keys, so that a cluster's masters
share the filter (see docs/redis.md).

Examples:
  cuckoo build -o seen.ckoo urls.txt
  cuckoo build -o seen.ckoo --fpr 1e-6 --capacity 50M part-*.txt
  zcat urls.gz | cuckoo build -o seen.ckoo
  cuckoo build -o emails.ckoo --field 3 --delimiter , users.csv
  cuckoo build -o seen.bloom --bloom=classic --fpr 0.01 urls.txt
  cuckoo build --segments 16 --capacity 1M -o seen.ckoo keys.txt
`

type buildFlags struct {
	output string
	filter filterFlags
	fields fieldFlags
	unique bool
	stats  bool
	quiet  bool

	segments int // --segments: the table in N segments, the segments of 'cuckoo push'

	headroom headroomValue // --headroom: room beyond the input's lines, in percent
}

// defaultHeadroom is the room, in percent of the input's lines, that a
// fixed-size filter sized from its input leaves for later adds.
const defaultHeadroom = 25

// maxHeadroom bounds --headroom: 100 times the input is more than any
// growth a fixed filter should plan for (--grow is for that).
const maxHeadroom = 10000

// headroomValue is --headroom: a percentage, "50%" or "50".
type headroomValue struct {
	pct float64
	set bool
}

func (h *headroomValue) String() string {
	if h == nil || !h.set {
		return ""
	}
	return fmt.Sprint(h.pct, "%")
}

func (h *headroomValue) Set(s string) error {
	p, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || !(p >= 0 && p <= maxHeadroom) {
		return wantError(fmt.Sprintf("want a percentage from 0 to %d, like 50%%", maxHeadroom))
	}
	h.pct, h.set = p, true
	return nil
}

// or returns the percentage given, or def.
func (h *headroomValue) or(def float64) float64 {
	if h.set {
		return h.pct
	}
	return def
}

func (f *buildFlags) register(fs *flag.FlagSet) {
	fs.Var((*nameValue)(&f.output), "o", "write the filter to `file` (required)")
	fs.Var((*nameValue)(&f.output), "output", "the same as -o")
	f.filter.register(fs, false)
	f.fields.register(fs)
	fs.BoolVar(&f.unique, "unique", false, "add a key only if the filter does not report it already (set semantics)")
	fs.BoolVar(&f.stats, "stats", false, "print keys, size and false-positive rate on standard error")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress bar")
	fs.BoolVar(&f.quiet, "q", false, "the same as --quiet")
	fs.Var(&f.headroom, "headroom", fmt.Sprintf("room for later 'cuckoo add's in a fixed-size filter sized from the input files, in `percent` of their lines (default %d%%)", defaultHeadroom))
	fs.Var((*segmentsValue)(&f.segments), "segments", "split the fixed-size cuckoo filter's table into `N` segments (1 to 65536); 'cuckoo push' stores each in one Redis key (see docs/redis.md)")
}

func buildCommand() *command {
	return newCommand("build", "build a filter file from keys, one per line", buildHelp,
		(*buildFlags).register, runBuild)
}

func runBuild(e *env, f *buildFlags, names []string) error {
	if f.output == "" {
		return usageErr("name the filter file to write with -o FILE", "no output file")
	}
	keyer, err := f.fields.extractor("build", "field")
	if err != nil {
		return err
	}
	ins, err := openInputs(e, "build", names)
	if err != nil {
		return err
	}
	spec, known, err := f.filter.spec(e, "build", ins)
	if err != nil {
		return err
	}
	if f.headroom.set && (f.filter.capacity.set || !known || spec.Kind.Grows()) {
		return usageErr("drop --headroom, or --capacity (or --grow)",
			"--headroom sizes a fixed-size filter from its input files; with --capacity, --grow, --bloom=scalable or standard input it does not apply")
	}
	if known && !f.filter.capacity.set && !spec.Kind.Grows() {
		spec.Capacity = withHeadroom(spec.Capacity, f.headroom.or(defaultHeadroom))
	}
	if spec.Segments = f.segments; f.segments != 0 && spec.Kind != filterfile.Cuckoo {
		return usageErr("give --capacity N, and drop --grow and --bloom", "--segments needs a fixed-size cuckoo filter, not a %s", spec.Kind.Description())
	}
	warnSegmentCost(e, spec)
	start := time.Now()
	var filter *filterfile.Filter
	var lines uint64
	for {
		// Sized from its input, a growing filter starts larger if its
		// package refuses so small a start at the rate (--grow --fpr 1e-7
		// on a file of a few lines), as dedup's does.
		if filter, err = newSizedFilter(spec, !f.filter.capacity.set); err != nil {
			return err
		}
		bar := e.startBar("build", totalSize(ins), f.quiet, false)
		lines, err = addKeys(e, ins, keyer, filter, bar.AddChunk, f.unique)
		e.stopBar()
		var le *keyError
		full := errors.As(err, &le) && errors.Is(err, filterfile.ErrFull)
		// The estimate from the file sizes can be short (lines shorter
		// than the sample said): rebuild larger, if the input can be read
		// again. A --capacity given by the user is never overridden.
		if full && known && !f.filter.capacity.set && allFiles(ins) && spec.Capacity < 1<<40 {
			spec.Capacity *= 2
			continue
		}
		if err != nil {
			return keysError(err, filter, "", 0, f.filter.capacity.set, func() inputLines { return countLines(e, ins) })
		}
		break
	}
	if err := e.writeFile(f.output, func(w io.Writer) error {
		_, err := filter.WriteTo(w)
		return err
	}); err != nil {
		return err
	}
	if f.stats {
		printFilterSummary(e.stderr, "build", f.output, filter, lines, time.Since(start))
	}
	return nil
}

// withHeadroom returns n with pct percent more, rounded up.
func withHeadroom(n uint64, pct float64) uint64 {
	return uint64(math.Ceil(float64(n) * (1 + pct/100)))
}

// warnSegmentCost warns on standard error when the segments asked for
// make the table more than twice the size of one unsegmented table of the
// same capacity: each segment is sized for its share of the keys plus
// that share's chance variation, which dominates when shares are small.
func warnSegmentCost(e *env, spec filterfile.Spec) {
	if spec.Segments <= 1 {
		return
	}
	seg, err := filterfile.CuckooPlan(spec)
	if err != nil {
		return // New reports it
	}
	one := spec
	one.Segments = 0
	flat, err := filterfile.CuckooPlan(one)
	if err != nil || seg.SizeInBytes <= 2*flat.SizeInBytes {
		return
	}
	fmt.Fprintf(e.stderr, "cuckoo build: warning: %d segments of about %s each take %s, %.0f× one table of the same capacity (%s): "+
		"each segment is sized for its share of keys and that share's chance variation; fewer segments, or a larger --capacity, cost less per key\n",
		spec.Segments, units.Counted(spec.Capacity/uint64(spec.Segments), "key"), units.Bytes(seg.SizeInBytes),
		float64(seg.SizeInBytes)/float64(flat.SizeInBytes), units.Bytes(flat.SizeInBytes))
}
