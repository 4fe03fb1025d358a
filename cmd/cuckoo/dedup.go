package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/dedupkit/cuckoo/bloom"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/dedup"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
)

const dedupHelp = `Usage: cuckoo dedup [flags] [FILE...]

Write each line of the files (or of standard input) the first time it is
seen, in input order. Memory is the filter (at the default rate, about 2.5
bytes per line of input, whatever the lines' length) plus a few MiB of
buffers, so it handles files far larger than 'sort -u' or awk can hold.
It uses every core: the input is read, split and hashed, and the output
written, on other cores than the one that asks the filter; the output is
the same as on one core (GOMAXPROCS=1) with the same --seed.

A new line is dropped wrongly only when the filter gives a false positive,
with probability at most --fpr per distinct line (--stats prints the
expected number); a line is never printed twice. Lines may be of any length
and hold any bytes; "a\r\n" and "a\n" are the same line (each is printed as
read), and a last line without a newline gets one.

The filter grows as needed: it starts with room for the lines the input
files' sizes call for (counted up to 8 MiB, sampled above), and adds a
larger table when full, keeping the rate below --fpr however far it grows.
Standard input or a pipe is read up to 8 MiB ahead (for at most a second,
and only while it keeps coming: a slow stream is not held back) and
counted: the filter starts with room for its lines if it ended there, else
for eight times as many (at least 262,144, at most 8,388,608: about 20 MiB
at the default rate). --capacity N makes it a plain cuckoo filter of fixed
size instead (slightly faster; past N distinct lines dedup stops with exit
status 4). --save, --load and --state
carry the seen lines across runs. A loaded filter keeps its parameters:
with --load, --capacity, --grow, --fpr, --seed, --bloom and the shape
flags are refused; --state FILE takes them when they describe the filter
in FILE (its --capacity, --fpr…), so that the run that makes FILE and
those that load it are one command line, and refuses another value (exit
status 2, naming the flag and both values).

--exact drops only lines seen before, with no false positives at any size
(lines compared as above: a trailing CR is not part of a line, which awk
'!seen[$0]++' takes it to be): the seen lines go to a scratch file in
$TMPDIR, gone when the run ends, behind an index in RAM (9 to 19 bytes per
distinct line); --exact-dir DIR keeps them in a store instead (about 9
bytes of RAM per distinct line; each line goes to the store before the
next is read, which is slower), so they count as seen in later runs ('cuckoo store
has DIR LINE' reads it). --redis URL --name NAME makes the
seen-set the cuckoo filter NAME in Redis, shared by every run that names
it, on any machine: --capacity N creates it if missing ('cuckoo push'
uploads one); when it is full, dedup stops with exit status 4.

--window D drops a line only if its key was seen within D before it (90m,
24h, 7d), and forgets older keys, in a filter of fixed size: every line,
printed or dropped, counts as seen, so an id that comes every hour under
--window 24h is printed once. A line's time is when it is read, or with
--time-field N the time in field N (RFC 3339 or Unix seconds;
--time-format reads others). That time never goes back: a line older than
one before it is judged at the latest time seen. A key is forgotten
between D and D + D/14 after its last line (--stats says exactly).
--capacity N is the most distinct keys one window holds (default: the
input's lines, 1,048,576 for a pipe); past it dedup stops with status 4.
--state carries the window across runs: give the run that makes the file
a --capacity for a whole window (later runs may repeat it). With --redis
URL --name NAME the window is the window filter NAME in Redis, shared by
every run that names it; a line's time is then Redis's clock (or
--time-field's).

--kafka BROKERS --from TOPIC --to TOPIC --group NAME reads Kafka topics
with a consumer group and writes each record not seen before in its
partition (within --window, by the record's timestamp or --time-field) to
the output topic, exactly once: the output and the offsets are committed in
one transaction, and each partition's filter is restored from snapshots in
a compacted topic after a crash or a rebalance. The key is the record's key,
or --key (a field spec of the value, or a JSON path such as .user.id).
SIGINT and SIGTERM finish the open transaction and exit 0; --exit-when-idle
D exits 0 once caught up and idle for D. docs/kafka.md has the guarantee,
the state, TLS and SASL.

Examples:
  cuckoo dedup urls.txt > unique.txt
  cat *.log | cuckoo dedup --stats > unique.log
  cuckoo dedup --key 2 --delimiter , users.csv      # first row per value of column 2
  cuckoo dedup --key 1,3 --csv --delimiter ';' data.csv
  cuckoo dedup --duplicates urls.txt                # only the repeats
  cuckoo dedup --count urls.txt                     # how many lines are repeats
  cuckoo dedup --state seen.ckoo today.txt > new-today.txt   # yesterday's lines stay seen
  cuckoo dedup --capacity 1M --grow --fpr 1e-6 --state seen.ckoo hourly.txt   # the same line every hour
  cuckoo dedup -o urls.txt urls.txt                 # in place, atomically
  cuckoo dedup --fpr 1e-7 urls.txt                  # exact for all practical purposes
  cuckoo dedup --exact urls.txt > unique.txt        # exact: no line dropped wrongly
  cuckoo dedup --exact-dir seen-urls.d monday.txt > new-monday.txt
  cuckoo dedup --redis $REDIS --name crawler:seen --capacity 10M --fpr 1e-6 monday.txt
  cuckoo dedup --window 24h --time-field 1 --key 2 events.log    # time in field 1, id in field 2
  cuckoo dedup --window 7d --capacity 1M --state week.ckoo hourly.txt   # (hourly) lines not seen in 7 days
  cuckoo dedup --redis $REDIS --name events:day --window 24h --capacity 10M events.log
  cuckoo dedup --kafka localhost:9092 --from clicks --to clicks-unique --group dedup --window 24h

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
	exact      exactFlags
	redis      redisFlags  // --redis, --name: the seen-set is a filter in Redis (redisdedup.go)
	window     windowFlags // --window: the seen-set forgets old keys (dedupwindow.go)
	kafka      kafkaFlags  // --kafka: Kafka topics in and out, exactly once (kafkadedup.go)
}

func (f *dedupFlags) register(fs *flag.FlagSet) {
	f.filter.register(fs, true)
	fs.Var((*fieldSpecValue)(&f.key), "key", "dedup on these fields only: a field `spec` as cut -f (2, 1,3, 2-4, 3-)")
	f.fields.register(fs)
	fs.BoolVar(&f.duplicates, "duplicates", false, "print only the repeats (every line seen before) instead")
	fs.BoolVar(&f.count, "count", false, "print only how many lines were dropped as repeats")
	fs.BoolVar(&f.stats, "stats", false, "print lines in and out, memory and expected false positives on standard error")
	fs.Var((*nameValue)(&f.save), "save", "save the seen-set to `file` after a successful run (atomically)")
	fs.Var((*nameValue)(&f.load), "load", "start from the seen-set in `file`: its lines count as seen")
	fs.Var((*nameValue)(&f.state), "state", "--load `file` if it exists, and --save it after the run")
	fs.Var((*nameValue)(&f.output), "o", "write to `file` (atomically; it may be an input) instead of standard output")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress bar")
	fs.BoolVar(&f.quiet, "q", false, "the same as --quiet")
	f.exact.register(fs)
	f.redis.register(fs)
	f.redis.registerWait(fs)
	f.window.register(fs)
	f.kafka.register(fs)
}

func dedupCommand() *command {
	return newCommand("dedup", "print each line the first time it is seen (or only the repeats)", dedupHelp,
		(*dedupFlags).register, runDedup)
}

// seenSet is where dedup records the keys it has seen. openSeen makes it
// from the flags: a filter, new or loaded (--load, --state), saved after a
// successful run (--save, --state). A flag that chooses another kind of
// set (an exact one, one shared through a server) is declared in register
// and handled in openSeen, which returns it as a dedup.SeenSet with filter
// and save left empty (refusing --save and the new-filter flags with it).
type seenSet struct {
	set    dedup.SeenSet      // what the Deduper adds keys to
	filter *filterfile.Filter // set, when it is a filter: for --stats, --save and full filters
	loaded string             // the file it was loaded from, if any
	save   string             // the file to save it to after a successful run, if any
	// ahead is the start of the one input, of unknown size, that a new
	// filter was sized from (readAheadInput), already open; nil otherwise.
	ahead      *dedup.Ahead
	aheadClose func()
}

// openSeen makes the seen-set the flags ask for. The files it will read
// and write are locked first (see lockFiles), so that runs sharing a
// --state file take turns.
func openSeen(e *env, f *dedupFlags, ins []input) (*seenSet, error) {
	s := &seenSet{loaded: f.load, save: f.save}
	if f.state != "" {
		s.save = f.state
	}
	if err := e.lockFiles(s.save, f.output); err != nil {
		return nil, err
	}
	if f.state != "" {
		// Absent, it is made; unreadable (a loop of symbolic links), it is
		// an error, never taken for absent and replaced.
		_, err := os.Stat(f.state)
		switch {
		case err == nil:
			s.loaded = f.state
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fileErr(f.state, err, "check the name")
		}
	}
	if handled, err := openWindowSeen(e, f, s, ins); handled {
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	if s.loaded != "" {
		filter, err := e.loadFilter(s.loaded)
		if err != nil {
			return nil, err
		}
		if err := checkLoadedFlags(f, filter, s.loaded,
			"--capacity, --grow, --fpr, --seed, --bloom, --bucket-size, --fingerprint-bits and --semi-sorted"); err != nil {
			return nil, err
		}
		s.set, s.filter = filter, filter
		return s, nil
	}
	spec, known, err := f.filter.spec(e, "dedup", ins)
	if err != nil {
		return nil, err
	}
	if !known && !f.filter.capacity.set && len(ins) == 1 && spec.Kind.Grows() {
		if err := s.readAhead(e, &ins[0]); err != nil {
			return nil, err
		}
		spec.Capacity = dedup.AheadCapacity(s.ahead, spec.Capacity)
	}
	filter, err := newSizedFilter(spec, !f.filter.capacity.set)
	if err != nil {
		s.closeAhead()
		return nil, err
	}
	s.set, s.filter = filter, filter
	return s, nil
}

// checkLoadedFlags refuses the flags that describe a new filter (--capacity,
// --fpr, --seed, the shape flags…, listed in flags for the message) when
// the seen-set is loaded from path, whose filter keeps its own parameters.
// With --load, every one is refused. With --state, one is refused only
// when its value is not the filter's: the run that makes the file and
// those that load it can be one command line, and a window or a fixed
// filter, which never grows, needs its --capacity on the first. The
// refusal names the flag, its value and the filter's.
func checkLoadedFlags(f *dedupFlags, loaded *filterfile.Filter, path, flags string) error {
	if f.state == "" {
		if f.filter.anySet() {
			return usageErr("the loaded filter keeps its own parameters; drop them or start a new file",
				"%s describe a new filter, not the one loaded from %s", flags, path)
		}
		return nil
	}
	if given, why := stateConflict(&f.filter, loaded); given != "" {
		return usageErr("drop the flag or give the filter's value ('cuckoo info "+path+"' shows it), or start a new file",
			"%s does not describe the filter in %s: %s", given, path, why)
	}
	return nil
}

// stateConflict returns the first flag of ff (as "--flag value") that
// describes another filter than loaded, and how loaded differs; "" when
// every flag given describes it. A rate is the filter's when it is the
// bound the file keeps (a growing cuckoo filter, a Bloom filter), or else
// (a fixed cuckoo filter, a window) when it gives the fingerprints the
// file has: the file keeps no other trace of it.
func stateConflict(ff *filterFlags, loaded *filterfile.Filter) (given, why string) {
	facts := map[string]any{}
	for _, x := range loaded.Info() {
		facts[x.Key] = x.Value
	}
	kind := loaded.Kind()
	capacity, what := loaded.Capacity(), "its capacity is %d"
	madeCapacity := capacity == ff.capacity.n
	if n, ok := facts["initial_capacity"].(uint64); ok {
		capacity, what, madeCapacity = n, "its initial capacity is %d (it grows)", n == ff.capacity.n
	} else if layers, ok := facts["layers"].(int); ok {
		// A growing Bloom filter keeps the capacity of its layers, the
		// first's times 2 (bloom.DefaultGrowth) for each next, rounded up.
		what, madeCapacity = "its layers hold %d keys (it grows)", bloomLayers(ff.capacity.n, layers) == capacity
	} else if kind == filterfile.CuckooWindow {
		what = "it holds %d keys a window"
	}
	bucketSize, hasBuckets := facts["bucket_size"].(int)
	bits, _ := facts["fingerprint_bits"].(int)
	semi, _ := facts["semi_sorted"].(bool)
	switch {
	case ff.capacity.set && !madeCapacity:
		return fmt.Sprintf("--capacity %d", ff.capacity.n), fmt.Sprintf(what, capacity)
	case ff.seed.set && ff.seed.n != loaded.Seed():
		return "--seed " + units.Seed(ff.seed.n), "its seed is " + units.Seed(loaded.Seed())
	case ff.grow && !kind.Grows():
		return "--grow", "it is a " + kind.String() + " filter of fixed size (made without --grow)"
	case ff.bloom.kind != 0 && ff.bloom.kind != kind:
		return "--bloom=" + ff.bloom.String(), "it is a " + kind.String() + " filter"
	case ff.bucketSize != 0 && (!hasBuckets || bucketSize != int(ff.bucketSize)):
		if !hasBuckets {
			return fmt.Sprintf("--bucket-size %d", ff.bucketSize), "it is a " + kind.String() + " filter, which has no buckets"
		}
		return fmt.Sprintf("--bucket-size %d", ff.bucketSize), fmt.Sprintf("its buckets have %d slots", bucketSize)
	case ff.fingerprint != 0 && bits != int(ff.fingerprint):
		if !hasBuckets {
			return fmt.Sprintf("--fingerprint-bits %d", ff.fingerprint), "it is a " + kind.String() + " filter, which has no fingerprints"
		}
		return fmt.Sprintf("--fingerprint-bits %d", ff.fingerprint), fmt.Sprintf("its fingerprints have %d bits", bits)
	case ff.semi && !semi:
		return "--semi-sorted", "its buckets are not semi-sorted"
	case ff.fpr.set:
		return rateConflict(ff, loaded, capacity, bucketSize, bits, semi)
	}
	return "", ""
}

// bloomLayers returns the keys the first n layers of a growing Bloom
// filter of initial capacity c hold, as bloom.Scalable adds them.
func bloomLayers(c uint64, n int) uint64 {
	var sum uint64
	for range n {
		sum += c
		c = uint64(min(math.Ceil(float64(c)*bloom.DefaultGrowth), bloom.MaxCapacity))
	}
	return sum
}

// rateConflict is stateConflict for --fpr, which is set.
func rateConflict(ff *filterFlags, loaded *filterfile.Filter, capacity uint64, bucketSize, bits int, semi bool) (given, why string) {
	given = "--fpr " + ff.fpr.text
	kind := loaded.Kind()
	if kind.Grows() || kind.IsBloom() {
		_, target, _ := loaded.FarAboveTarget()
		if math.Abs(target-ff.fpr.p) <= 1e-9*max(target, ff.fpr.p) {
			return "", ""
		}
		return given, "it was made with --fpr " + strconv.FormatFloat(target, 'g', -1, 64)
	}
	// The fingerprints --fpr gives a filter of this shape; 0 if none.
	spec := filterfile.Spec{Kind: kind, Capacity: capacity, FPR: ff.fpr.p, BucketSize: bucketSize, SemiSorted: semi}
	want := 0
	if w := loaded.Window(); w != nil {
		// A window's fingerprints depend on the rate and the buckets only.
		spec.Capacity, spec.Window = 1, w.Window()
		if trial, err := filterfile.New(spec); err == nil {
			want = trial.Window().FingerprintBits()
		}
	} else if p, err := filterfile.CuckooPlan(spec); err == nil {
		want = p.FingerprintBits
	}
	if want == bits {
		return "", ""
	}
	_, target, _ := loaded.FarAboveTarget()
	why = fmt.Sprintf("it has %d-bit fingerprints (a false-positive rate of %s at capacity)", bits, units.Percent(target))
	if want != 0 {
		why += fmt.Sprintf(", and --fpr %s gives %d-bit ones", ff.fpr.text, want)
	}
	return given, why
}

// newSizedFilter makes the new filter of spec: dedup's seen-set, build's
// filter. A growing filter started with room for few keys needs more
// generations to reach 2^36 keys, and at a low rate its package may
// refuse it, since they would need
// fingerprints wider than 32 bits: with 4-slot buckets at 1e-7, the rate
// that makes the output awk's for all practical purposes, a start of 4
// keys or fewer, which an input of as many lines gets (an empty file, a
// short pipe). When the start was sized from the input (sized: no
// --capacity), such a filter starts larger instead, at the first of
// twice, four times… that start its package takes, up to the start of a
// pipe that goes on (unknownInitial): a few KiB of filter more for a
// small input. When none does, the error is the first start's.
func newSizedFilter(spec filterfile.Spec, sized bool) (*filterfile.Filter, error) {
	filter, err := newFilter(spec)
	if err == nil || !sized || spec.Kind != filterfile.CuckooScalable {
		return filter, err
	}
	for start := max(spec.Capacity, 1) * 2; start <= unknownInitial; start *= 2 {
		spec.Capacity = start
		if larger, lerr := filterfile.New(spec); lerr == nil {
			return larger, nil
		}
	}
	return nil, err
}

// readAhead opens in, an input of unknown size (a pipe), and reads its
// start (dedup.ReadAhead: at most 8 MiB, for at most a second, and no
// longer than the input pauses for 0.1 s, so a slow stream's first lines
// are not held back), to size the filter from: its lines when that is the
// whole input, else room for the lines of eight times as much input
// (dedup.AheadCapacity). A growing filter
// started this large spares a large input the tables a small start adds,
// each of which every lookup of a new line probes; it keeps its rate
// below the bound at any size.
func (s *seenSet) readAhead(e *env, in *input) error {
	r, closeIn, err := in.open(e)
	if err != nil {
		return err
	}
	s.ahead, s.aheadClose = dedup.ReadAhead(r, 0, 0, 0), closeIn
	return nil
}

// open opens input i of ins: the one read ahead, if any, gives back its
// start first.
func (s *seenSet) open(e *env, ins []input, i int) (io.Reader, func(), error) {
	if i == 0 && s.ahead != nil {
		r, closeIn := s.ahead, s.aheadClose
		s.ahead, s.aheadClose = nil, nil
		return r, closeIn, nil
	}
	return ins[i].open(e)
}

// closeAhead closes the input read ahead, if it was not handed over.
func (s *seenSet) closeAhead() {
	if s.aheadClose != nil {
		s.aheadClose()
		s.ahead, s.aheadClose = nil, nil
	}
}

func runDedup(e *env, f *dedupFlags, names []string) error {
	const remedy = "see 'cuckoo dedup --help'"
	if handled, err := runKafkaDedup(e, f, names); handled {
		return err
	}
	for _, spec := range []struct{ flag, value string }{{"--key", f.key}, {"--field", f.fields.field}, {"--time-field", f.window.timeField}} {
		if isJSONPath(spec.value) {
			return usageErr("give a field spec (2, 1,3, 2-4) for lines", "%s %s is a JSON path, which only --kafka reads", spec.flag, spec.value)
		}
	}
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
	if sameTarget(f.output, f.save) || sameTarget(f.output, f.state) || sameTarget(f.output, f.load) {
		return usageErr(remedy, "-o and --save (or --state, --load) name the same file %s; give two", f.output)
	}
	if f.redis.url == "" && (f.redis.name != "" || f.redis.cluster || f.redis.wait.set) {
		return usageErr(remedy, "--name, --cluster and --redis-wait are about a filter in Redis; give --redis URL too")
	}
	if f.window.window.set && f.exact.on() {
		return usageErr(remedy, "--window keeps its own seen-set, which forgets; --exact keeps another")
	}
	if f.exact.on() && f.redis.url != "" {
		return usageErr(remedy, "--exact keeps its own seen-set and --redis shares a filter in Redis; give one")
	}
	ins, err := openInputs(e, "dedup", names)
	if err != nil {
		return err
	}
	if f.exact.on() {
		return runExactDedup(e, f, keyer, ins)
	}
	if f.redis.url != "" {
		return runRedisDedup(e, f, keyer, ins)
	}
	seen, err := openSeen(e, f, ins)
	if err != nil {
		return err
	}
	defer seen.closeAhead()

	out := e.stdout
	var outFile *outputFile
	if f.output != "" {
		if outFile, err = e.createOutput(f.output); err != nil {
			return err
		}
		out = outFile
	}
	bar := e.startBar("dedup", totalSize(ins), f.quiet, f.output == "" && !f.count)
	d := dedup.New(seen.set, out, dedup.Config{
		Key:        keyer,
		Duplicates: f.duplicates,
		CountOnly:  f.count,
		OnRead:     bar.AddChunk,

		TrackFalsePositives: f.stats,
	})
	start := time.Now()
	runErr := func() error {
		for i := range ins {
			r, closeIn, err := seen.open(e, ins, i)
			if err != nil {
				return err
			}
			err = d.Run(r)
			closeIn()
			if err != nil {
				return dedupError(&ins[i], err, seen, f.filter.capacity.set, func() inputLines { return countLines(e, ins) })
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
	st := d.Stats()
	if f.count && flushErr == nil {
		_, flushErr = fmt.Fprintln(out, st.Dropped)
	}
	if flushErr != nil {
		outFile.abort()
		return dataErr(remedyWrite+"; nothing was saved", "writing the output: %v", cause(flushErr))
	}
	// The state is written whole before the output is put in place, and
	// put in place after it: a state that cannot be written (a full disk)
	// fails the run with the output file unchanged too, instead of leaving
	// an output whose lines the state lacks; an interrupt between the two
	// renames leaves the output written and the state as it was, lines
	// printed again by the next run, never lines recorded and not printed.
	stateFile, err := seen.writeState(e, f.output)
	if err != nil {
		outFile.abort()
		return err
	}
	if err := outFile.commit(); err != nil {
		stateFile.abort()
		return err
	}
	if err := stateFile.commit(); err != nil {
		return err
	}
	if f.stats {
		printDedupStats(e.stderr, st, seen.filter, time.Since(start))
	}
	return nil
}

// writeState writes the seen-set to the temporary file of the --save or
// --state file, and returns it for the caller to put in place (nil
// without one). output is the -o file, which a failure leaves unchanged
// too, or "" for standard output, which has the lines already.
func (s *seenSet) writeState(e *env, output string) (*outputFile, error) {
	if s.save == "" {
		return nil, nil
	}
	o, err := e.createOutput(s.save)
	if err != nil {
		return nil, err
	}
	bw := newBufWriter(o)
	_, err = s.filter.WriteTo(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		o.abort()
		remedy := "the previous file, if any, is unchanged, without the lines this run printed"
		if output != "" {
			remedy = "the previous files, if any, are unchanged: " + output + " and " + s.save
		}
		return nil, dataErr(remedy, "writing %s: %v", s.save, unwrap(err))
	}
	return o, nil
}

// dedupError explains a failure of the dedup engine on an input. lines
// counts the inputs' lines, for the remedy of a full filter (called only
// then).
func dedupError(in *input, err error, seen *seenSet, capacitySet bool, lines func() inputLines) error {
	if errors.Is(err, filterfile.ErrFull) && seen.filter != nil {
		// capacity is the larger --capacity to suggest.
		capacity := func() string {
			n, why := lines().capacityFor(seen.filter.Capacity(), seen.filter.Len())
			return fmt.Sprintf("%d: %s", n, why)
		}
		var remedy string
		switch {
		case seen.filter.Window() != nil && seen.loaded != "":
			remedy = "the window in " + seen.loaded + " holds more keys than it was made for; start a new file with a larger --capacity (keys a window)"
		case seen.filter.Window() != nil:
			remedy = fmt.Sprintf("rerun with a larger --capacity: the most keys a window holds (%s)", capacity())
		case seen.loaded != "":
			remedy = "the filter in " + seen.loaded + " has no room left; rebuild it larger with 'cuckoo build --capacity N'"
		case seen.filter.Kind().IsBloom() && capacitySet:
			remedy = fmt.Sprintf("rerun with a larger --capacity (%s), or with --bloom=scalable, which grows", capacity())
		case seen.filter.Kind().IsBloom():
			remedy = "rerun with --capacity N above the number of distinct lines, or with --bloom=scalable, which grows"
		default:
			remedy = fmt.Sprintf("rerun with a larger --capacity (%s), or without --capacity to let the filter grow", capacity())
		}
		var line uint64
		var le *dedup.LineError
		if errors.As(err, &le) {
			line = le.Line
		}
		return fullError(seen.filter, in.displayName(), line, "line", remedy+"; nothing was saved")
	}
	if errors.Is(err, dedup.ErrOutput) {
		return dataErr(remedyWrite+"; nothing was saved", "writing the output: %v", cause(err))
	}
	return dataErr("nothing was saved", "reading %s: %v", in.displayName(), unwrap(err))
}

// printDedupStats prints what --stats promises: lines in and out, the
// filter (when the seen-set is one), the expected false positives, speed.
func printDedupStats(w io.Writer, st dedup.Stats, seen *filterfile.Filter, elapsed time.Duration) {
	secs := max(elapsed.Seconds(), 1e-9)
	fmt.Fprintf(w, "cuckoo dedup: %s in (%s), %s out, %s dropped as repeats\n",
		units.Counted(st.LinesIn, "line"), units.Bytes(st.BytesIn), units.Count(st.LinesOut), units.Count(st.Dropped))
	if seen != nil {
		size := seen.SizeInBytes()
		bpk := 0.0
		if n := seen.Len(); n > 0 {
			bpk = float64(size*8) / float64(n)
		}
		fmt.Fprintf(w, "cuckoo dedup: filter: %s, %s, %s (%.1f bits per key), false-positive rate now %s\n",
			seen.Kind(), units.Counted(seen.Len(), "key"), units.Bytes(size), bpk, units.Percent(seen.FalsePositiveRate()))
		windowStats(w, seen)
	}
	fmt.Fprintf(w, "cuckoo dedup: expected false positives (new lines dropped wrongly): %.3g\n", st.ExpectedFalsePositives)
	fmt.Fprintf(w, "cuckoo dedup: %.2f s, %s lines/s, %s/s\n", secs,
		units.SI(float64(st.LinesIn)/secs), units.Bytes(uint64(float64(st.BytesIn)/secs)))
}
