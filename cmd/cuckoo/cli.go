package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/atomicfile"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/dedup"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/progress"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
)

// Exit statuses. They are part of the command's interface: scripts test
// them, so they never change meaning.
const (
	exitOK          = 0   // success
	exitAbsent      = 1   // query --key: a key is absent
	exitUsage       = 2   // bad command line: unknown command or flag, bad value, missing argument
	exitData        = 3   // a file is missing, unreadable, damaged, or cannot be written
	exitFull        = 4   // a fixed-capacity filter is full
	exitInterrupted = 130 // interrupted by Ctrl-C (SIGINT); 143 for SIGTERM
)

const exitStatusHelp = `Exit status:
  0    success
  1    query --key: a key is absent
  2    usage error: unknown command or flag, bad flag value, missing argument
  3    data or I/O error: missing or unreadable file, damaged filter file,
       write failure; a file being written is left as it was
  4    a fixed-capacity filter is full; a file being written is left as it was
  130  interrupted (Ctrl-C); a file being written is left as it was`

// cliError is an error with its exit status and the remedy to print
// after it: "cuckoo <cmd>: <problem>; <remedy>".
type cliError struct {
	code   int
	msg    string
	remedy string
}

func (e *cliError) Error() string {
	if e.remedy == "" {
		return e.msg
	}
	return e.msg + "; " + e.remedy
}

func usageErr(remedy, format string, args ...any) error {
	return &cliError{code: exitUsage, msg: fmt.Sprintf(format, args...), remedy: remedy}
}

func dataErr(remedy, format string, args ...any) error {
	return &cliError{code: exitData, msg: fmt.Sprintf(format, args...), remedy: remedy}
}

// Remedies shared by several errors.
const (
	remedyRead  = "check that the file is readable"
	remedyWrite = "check the free space and where the output goes"
)

// errHelp asks run to print the command's help and exit 0.
var errHelp = errors.New("help requested")

// env is what a command talks to: its streams, and whether they are
// terminals. Tests substitute buffers.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	stdinFile      *os.File // nil when stdin is not a file
	stdoutTTY      bool
	stderrTTY      bool
	// pending holds the atomic writes in progress, so an interrupt can
	// remove their temporary files before exiting.
	mu      sync.Mutex
	pending map[*atomicfile.File]struct{}
	// bar is the progress bar on screen, erased on an interrupt.
	bar *progress.Bar
}

// command is a subcommand.
type command struct {
	name     string
	synopsis string // for the command list
	run      func(e *env, args []string) error
	help     string // the full help: usage, description, examples
	flags    func() *flag.FlagSet
}

// newCommand builds a command whose flags fill a fresh T: register
// declares them, run runs the command with them and the positional
// arguments.
func newCommand[T any](name, synopsis, help string, register func(*T, *flag.FlagSet), run func(*env, *T, []string) error) *command {
	return &command{
		name:     name,
		synopsis: synopsis,
		help:     help,
		flags: func() *flag.FlagSet {
			fs := newFlags(name)
			register(new(T), fs)
			return fs
		},
		run: func(e *env, args []string) error {
			f := new(T)
			fs := newFlags(name)
			register(f, fs)
			pos, err := parseArgs(fs, name, args)
			if err != nil {
				return err
			}
			return run(e, f, pos)
		},
	}
}

// noArgs returns a usage error when a command that takes no argument got
// one.
func noArgs(cmd string, pos []string) error {
	if len(pos) > 0 {
		return usageErr("see 'cuckoo "+cmd+" --help'", "unexpected argument %q", pos[0])
	}
	return nil
}

// newFlags returns an empty flag set for a command, silent on errors (run
// reports them its own way).
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("cuckoo "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseArgs parses flags and positional arguments in any order, as users
// of `cuckoo query FILE --present` expect; "--" ends the flags. It accepts
// -flag and --flag, with the value after "=" or as the next argument.
func parseArgs(fs *flag.FlagSet, cmd string, args []string) ([]string, error) {
	var flags, pos []string
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
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil && !isBoolFlag(f) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	if err := fs.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, errHelp
		}
		return nil, usageErr("see 'cuckoo "+cmd+" --help'", "%s", flagError(err))
	}
	return pos, nil
}

// flagError rewrites the flag package's messages in our style.
func flagError(err error) string {
	msg := err.Error()
	msg = strings.Replace(msg, "flag provided but not defined: -", "unknown flag --", 1)
	msg = strings.Replace(msg, "flag needs an argument: -", "flag --", 1)
	if strings.HasPrefix(msg, "flag --") && !strings.Contains(msg, ":") {
		msg += " needs a value"
	}
	// "invalid value "x" for flag -fpr: parse error" → "bad --fpr value "x": …"
	if strings.HasPrefix(msg, "invalid value ") {
		if i := strings.Index(msg, " for flag -"); i > 0 {
			val := msg[len("invalid value "):i]
			rest := msg[i+len(" for flag -"):]
			name, why, _ := strings.Cut(rest, ": ")
			msg = fmt.Sprintf("bad --%s value %s: %s", name, val, why)
		}
	}
	if strings.HasPrefix(msg, "invalid boolean value ") {
		msg = strings.Replace(msg, "invalid boolean value", "bad value", 1)
		msg = strings.Replace(msg, "for -", "for --", 1)
	}
	return msg
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// printHelp writes a command's help: its text, then its flags with their
// defaults, with two dashes as users type them.
func printHelp(w io.Writer, c *command) {
	fmt.Fprintln(w, strings.TrimSpace(c.help))
	if c.flags == nil {
		return
	}
	fs := c.flags()
	var lines []string
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		head := "  --" + f.Name
		if len(f.Name) == 1 {
			head = "  -" + f.Name
		}
		if name != "" && !isBoolFlag(f) {
			head += " " + name
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
			usage += " (default " + f.DefValue + ")"
		}
		if len(head) < 24 {
			lines = append(lines, fmt.Sprintf("%-24s%s", head, usage))
		} else {
			lines = append(lines, head+"\n"+strings.Repeat(" ", 24)+usage)
		}
	})
	if len(lines) > 0 {
		sort.Strings(lines)
		fmt.Fprintln(w, "\nFlags (one dash or two, before or after the arguments):")
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
}

// Flag values with the parsing the CLI promises.

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
		return syntaxError(err)
	}
	c.n, c.set = n, true
	return nil
}

// syntaxError strips the units package's prefix: the flag error already
// names the flag and the value.
func syntaxError(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return errors.New(msg)
}

// rateValue is a probability flag: 0.001, 1e-4, 0.1%.
type rateValue struct {
	p   float64
	set bool
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
		return syntaxError(err)
	}
	r.p, r.set = p, true
	return nil
}

// listValue is a repeatable string flag.
type listValue []string

func (l *listValue) String() string     { return "" }
func (l *listValue) Set(s string) error { *l = append(*l, s); return nil }

// input is one input stream of lines.
type input struct {
	name string   // as the user gave it; "-" for standard input
	file *os.File // nil for standard input given as a non-file reader
	size int64    // bytes, for a regular file; -1 otherwise
}

// openInputs checks every named input before anything is read, so that a
// typo in the last name fails before any output: each must exist, be
// readable and not be a directory. No names means standard input. The
// files are opened one at a time by each().
func openInputs(e *env, cmd string, names []string) ([]input, error) {
	if len(names) == 0 {
		names = []string{"-"}
	}
	stdinUsed := false
	var ins []input
	for _, name := range names {
		if name == "-" {
			if stdinUsed {
				return nil, usageErr("give - once", "standard input (-) given twice")
			}
			stdinUsed = true
			in := input{name: "-", size: -1}
			if e.stdinFile != nil {
				if fi, err := e.stdinFile.Stat(); err == nil && fi.Mode().IsRegular() {
					in.size = fi.Size()
				}
			}
			ins = append(ins, in)
			continue
		}
		fi, err := os.Stat(name)
		if err != nil {
			return nil, fileErr(name, err, "check the name")
		}
		if fi.IsDir() {
			return nil, dataErr("give the files inside it (e.g. "+name+"/*)", "%s is a directory", name)
		}
		in := input{name: name, size: -1}
		if fi.Mode().IsRegular() {
			in.size = fi.Size()
		}
		ins = append(ins, in)
	}
	return ins, nil
}

// fileErr turns an error about a file into a one-line message with a
// remedy.
func fileErr(name string, err error, remedy string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return dataErr(remedy, "%s: no such file", name)
	case errors.Is(err, fs.ErrPermission):
		return dataErr("check its permissions", "%s: permission denied", name)
	}
	return dataErr(remedyRead, "%s: %v", name, err)
}

// open opens an input for reading.
func (in *input) open(e *env) (io.Reader, func(), error) {
	if in.name == "-" {
		return e.stdin, func() {}, nil
	}
	f, err := os.Open(in.name)
	if err != nil {
		return nil, nil, fileErr(in.name, err, "check the name")
	}
	return f, func() { f.Close() }, nil
}

// totalSize returns the inputs' total size, or 0 when one is not a
// regular file.
func totalSize(ins []input) int64 {
	var t int64
	for _, in := range ins {
		if in.size < 0 {
			return 0
		}
		t += in.size
	}
	return t
}

// estimateLines estimates the lines of the inputs, and whether it could
// (all inputs regular files). The inputs share one read budget in
// proportion to their sizes, so many small files are sampled rather than
// read twice.
func estimateLines(e *env, ins []input) (uint64, bool, error) {
	if !allSized(ins) {
		return 0, false, nil
	}
	total := totalSize(ins)
	var lines uint64
	for _, in := range ins {
		var f *os.File
		if in.name == "-" {
			f = e.stdinFile
		} else {
			var err error
			if f, err = os.Open(in.name); err != nil {
				return 0, false, fileErr(in.name, err, "check the name")
			}
		}
		budget := int64(dedup.DefaultEstimateBudget)
		if total > budget {
			budget = max(1, int64(float64(budget)*float64(in.size)/float64(total)))
		}
		n, err := dedup.EstimateLines(f, in.size, budget)
		if in.name != "-" {
			f.Close()
		}
		if err != nil {
			return 0, false, fileErr(in.name, err, remedyRead)
		}
		lines += n
	}
	return lines, true, nil
}

// allSized reports whether every input has a known size.
func allSized(ins []input) bool {
	for _, in := range ins {
		if in.size < 0 {
			return false
		}
	}
	return true
}

// startBar starts a progress bar for reading total bytes, when standard
// error is a terminal, quiet is off, and (if the command writes lines to
// standard output) standard output is not that terminal.
func (e *env) startBar(label string, total int64, quiet, writesStdout bool) *progress.Bar {
	on := e.stderrTTY && !quiet && !(writesStdout && e.stdoutTTY)
	b := progress.New(e.stderr, label, total, on)
	e.mu.Lock()
	e.bar = b
	e.mu.Unlock()
	return b
}

func (e *env) stopBar() {
	e.mu.Lock()
	b := e.bar
	e.bar = nil
	e.mu.Unlock()
	b.Finish()
}

// outputFile is a file being replaced atomically (see package
// atomicfile), registered with the env so that an interrupt removes its
// temporary file and leaves the target as it was. A nil *outputFile is
// valid: commit and abort do nothing.
type outputFile struct {
	e *env
	f *atomicfile.File
}

// createOutput starts replacing path.
func (e *env) createOutput(path string) (*outputFile, error) {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return nil, dataErr("check that the directory exists and is writable", "cannot write %s: %v", path, unwrap(err))
	}
	e.mu.Lock()
	if e.pending == nil {
		e.pending = make(map[*atomicfile.File]struct{})
	}
	e.pending[f] = struct{}{}
	e.mu.Unlock()
	return &outputFile{e: e, f: f}, nil
}

func (o *outputFile) Write(p []byte) (int, error) { return o.f.Write(p) }

func (o *outputFile) done() {
	o.e.mu.Lock()
	delete(o.e.pending, o.f)
	o.e.mu.Unlock()
}

// commit puts the file in place.
func (o *outputFile) commit() error {
	if o == nil {
		return nil
	}
	defer o.done()
	if err := o.f.Commit(); err != nil {
		return dataErr("the previous file, if any, is unchanged", "%v", unwrap(err))
	}
	return nil
}

// abort drops the file; the target stays as it was.
func (o *outputFile) abort() {
	if o == nil {
		return
	}
	o.f.Abort()
	o.done()
}

// writeFile replaces path atomically with what write writes.
func (e *env) writeFile(path string, write func(w io.Writer) error) error {
	o, err := e.createOutput(path)
	if err != nil {
		return err
	}
	bw := newBufWriter(o)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		o.abort()
		return dataErr("the previous file, if any, is unchanged", "writing %s: %v", path, unwrap(err))
	}
	return o.commit()
}

// abortPending removes the temporary files of every write in progress; it
// is called on an interrupt, from the signal goroutine.
func (e *env) abortPending() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var paths []string
	for f := range e.pending {
		f.Abort()
		paths = append(paths, f.Path())
	}
	return paths
}

// cause returns the system error inside a path error (ENOSPC, EPIPE …),
// for messages that already say which file.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// loadFilter reads a filter file, with errors that say what to do.
func loadFilter(path string) (*filterfile.Filter, error) {
	f, err := filterfile.Load(path)
	if err == nil {
		return f, nil
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, dataErr("build one with 'cuckoo build -o "+path+"'", "%s: no such file", path)
	case errors.Is(err, fs.ErrPermission):
		return nil, dataErr("check its permissions", "%s: permission denied", path)
	case errors.Is(err, filterfile.ErrNotFilter):
		return nil, dataErr("give a file written by 'cuckoo build' or 'cuckoo dedup --save'",
			"%s is not a filter file (%s)", path, strings.TrimPrefix(err.Error(), filterfile.ErrNotFilter.Error()+": "))
	case errors.Is(err, filterfile.ErrUnsupported):
		return nil, dataErr("upgrade cuckoo to a version that reads it",
			"%s holds %s", path, strings.TrimPrefix(err.Error(), filterfile.ErrUnsupported.Error()+": "))
	case errors.Is(err, filterfile.ErrDamaged):
		return nil, dataErr("restore it from a backup or rebuild it with 'cuckoo build'",
			"%s is damaged (%s)", path, strings.TrimPrefix(err.Error(), filterfile.ErrDamaged.Error()+": "))
	}
	return nil, dataErr(remedyRead, "reading %s: %v", path, unwrap(err))
}

// fieldFlags are the flags that pick a key out of each line.
type fieldFlags struct {
	field     string
	delimiter string
	delimSet  bool
	csv       bool
}

func (f *fieldFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.field, "field", "", "use these fields of each line as the key: a field `spec` as cut -f (2, 1,3, 2-4, 3-)")
	fs.Func("delimiter", "field `delimiter` (default: runs of blanks; \\t for tab)", func(s string) error {
		f.delimiter, f.delimSet = s, true
		return nil
	})
	fs.BoolVar(&f.csv, "csv", false, "fields are CSV: double-quoted fields may hold the delimiter (default delimiter ,)")
}

// extractor returns the key extractor the flags describe, or nil for
// whole lines. flagName is how the command calls the spec flag.
func (f *fieldFlags) extractor(cmd, flagName string) (*dedup.KeyExtractor, error) {
	remedy := "see 'cuckoo " + cmd + " --help'"
	if f.field == "" {
		if f.delimSet || f.csv {
			return nil, usageErr(remedy, "--delimiter and --csv need --%s", flagName)
		}
		return nil, nil
	}
	spec, err := dedup.ParseFieldSpec(f.field)
	if err != nil {
		return nil, usageErr(remedy, "bad --%s %q: %v", flagName, f.field, err)
	}
	delim, err := dedup.ParseDelimiter(f.delimiter)
	if err != nil {
		return nil, usageErr(remedy, "bad --delimiter: %v", err)
	}
	if f.delimSet && delim == "" {
		return nil, usageErr(remedy, "empty --delimiter; leave it out to split on blanks")
	}
	return dedup.NewKeyExtractor(spec, delim, f.csv), nil
}

// filterFlags describe a new filter.
type filterFlags struct {
	fpr         rateValue
	capacity    countValue
	seed        countValue
	bucketSize  int
	fingerprint int
	semi        bool
	grow        bool
	bloom       bloomValue
	defaultFPR  float64
	growDefault bool // a cuckoo filter grows unless --capacity fixes it
}

// register declares the flags. With growDefault, a new cuckoo filter is
// a growing one unless --capacity fixes its size (dedup); without, it is
// a fixed one unless --grow (build).
func (f *filterFlags) register(fs *flag.FlagSet, defaultFPR float64, growDefault bool) {
	f.defaultFPR, f.growDefault = defaultFPR, growDefault
	fs.Var(&f.fpr, "fpr", fmt.Sprintf("target false-positive `rate` (default %v)", defaultFPR))
	if growDefault {
		fs.Var(&f.capacity, "capacity", "fixed size: the most distinct keys `N` (default: a filter that grows, sized from the input files)")
		fs.BoolVar(&f.grow, "grow", false, "with --capacity N: start at N and grow (the default without --capacity)")
	} else {
		fs.Var(&f.capacity, "capacity", "fixed size: the most distinct keys `N` (default: from the input files' sizes)")
		fs.BoolVar(&f.grow, "grow", false, "a cuckoo filter that grows as keys are added (--capacity is then its initial size)")
	}
	fs.Var(&f.seed, "seed", "hash `seed`, for reproducible files and runs (default random)")
	fs.IntVar(&f.bucketSize, "bucket-size", 0, "cuckoo filter slots per bucket `b`: 2, 4 or 8 (default 4)")
	fs.IntVar(&f.fingerprint, "fingerprint-bits", 0, "cuckoo filter fingerprint `bits`, 4..32 (default: from --fpr)")
	fs.BoolVar(&f.semi, "semi-sorted", false, "cuckoo filter with semi-sorted 4-slot buckets: one bit less per key, slower")
	fs.Var(&f.bloom, "bloom", "make a Bloom filter instead: --bloom or --bloom=`kind` (blocked, classic, counting, scalable)")
}

// anySet reports whether a flag of a new filter was given.
func (f *filterFlags) anySet() bool {
	return f.fpr.set || f.capacity.set || f.seed.set || f.bucketSize != 0 || f.fingerprint != 0 || f.semi || f.grow || f.bloom.kind != 0
}

// spec returns the new filter's description: its size from --capacity,
// else from the inputs' sizes (known = false when they are unknown: the
// filter then grows), and whether it grows.
func (f *filterFlags) spec(e *env, cmd string, ins []input) (spec filterfile.Spec, known bool, err error) {
	remedy := "see 'cuckoo " + cmd + " --help'"
	spec = filterfile.Spec{Kind: filterfile.Cuckoo, FPR: f.defaultFPR, BucketSize: f.bucketSize,
		FingerprintBits: f.fingerprint, SemiSorted: f.semi, Seed: f.seed.n, SeedSet: f.seed.set}
	if f.fpr.set {
		spec.FPR = f.fpr.p
		if f.fingerprint != 0 {
			return spec, false, usageErr(remedy, "--fpr and --fingerprint-bits both set the fingerprint; give one")
		}
	}
	if f.bloom.kind != 0 {
		if f.bucketSize != 0 || f.fingerprint != 0 || f.semi || f.grow {
			return spec, false, usageErr("a growing Bloom filter is --bloom=scalable",
				"--bucket-size, --fingerprint-bits, --semi-sorted and --grow are cuckoo filter settings")
		}
		spec.Kind = f.bloom.kind
	}
	grow := f.grow || (f.growDefault && !f.capacity.set)
	if grow && spec.Kind == filterfile.Cuckoo {
		spec.Kind = filterfile.CuckooScalable
	}
	defer func() {
		// A growing cuckoo filter keeps its rate below twice the rate of
		// its first table: give that table half the target, so that
		// --fpr bounds the rate at every size.
		if spec.Kind == filterfile.CuckooScalable && spec.FingerprintBits == 0 {
			spec.FPR /= 2
		}
	}()
	if f.capacity.set {
		if f.capacity.n == 0 {
			return spec, false, usageErr(remedy, "--capacity 0: a filter must hold at least one key")
		}
		spec.Capacity = f.capacity.n
		return spec, true, nil
	}
	n, known, err := estimateLines(e, ins)
	if err != nil {
		return spec, false, err
	}
	spec.Capacity = max(n, 1)
	if !known {
		// Standard input or a pipe: the size is unknown, so the filter
		// must grow.
		switch spec.Kind {
		case filterfile.Cuckoo, filterfile.CuckooScalable:
			spec.Kind, spec.Capacity = filterfile.CuckooScalable, unknownInitial
		case filterfile.BloomScalable:
			spec.Capacity = unknownInitial
		default:
			return spec, false, usageErr("give --capacity N, or use --bloom=scalable, which grows",
				"the size of the input is unknown (standard input or a pipe), and a %s has a fixed size", spec.Kind.Description())
		}
	}
	return spec, known, nil
}

// unknownInitial is the initial capacity of a growing filter for input of
// unknown size: small enough that a small input makes a small file, large
// enough that a billion keys need few tables.
const unknownInitial = 1 << 18

// bloomValue is --bloom or --bloom=kind.
type bloomValue struct{ kind filterfile.Kind }

func (b *bloomValue) IsBoolFlag() bool { return true }

func (b *bloomValue) String() string {
	if b == nil || b.kind == 0 {
		return ""
	}
	return strings.TrimPrefix(b.kind.String(), "bloom-")
}

func (b *bloomValue) Set(s string) error {
	switch s {
	case "false":
		b.kind = 0
		return nil
	case "true", "":
		s = "blocked"
	}
	k, ok := filterfile.ParseKind("bloom-" + s)
	if !ok {
		return fmt.Errorf("want blocked, classic, counting or scalable")
	}
	b.kind = k
	return nil
}
