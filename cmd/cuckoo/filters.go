package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/bloom"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
	"github.com/dedupkit/cuckoo/redisfilter"
)

// filterFlags describe a new filter.
type filterFlags struct {
	fpr         rateValue
	capacity    countValue
	seed        seedValue
	bucketSize  bucketValue
	fingerprint fingerprintValue
	semi        bool
	grow        bool
	bloom       bloomValue
	growDefault bool // a cuckoo filter grows unless --capacity fixes it
}

// register declares the flags. With growDefault, a new cuckoo filter is
// a growing one unless --capacity fixes its size (dedup); without, it is
// a fixed one unless --grow (build).
func (f *filterFlags) register(fs *flag.FlagSet, growDefault bool) {
	f.growDefault = growDefault
	fs.Var(&f.fpr, "fpr", fmt.Sprintf("target false-positive `rate`, a bound at any size (default %v)", filterfile.DefaultRate))
	if growDefault {
		fs.Var(&f.capacity, "capacity", "fixed size: the most distinct keys `N` (default: a filter that grows, sized from the input files)")
		fs.BoolVar(&f.grow, "grow", false, "with --capacity N: start at N and grow (the default without --capacity)")
	} else {
		fs.Var(&f.capacity, "capacity", "fixed size: the most distinct keys `N` (default: from the input files' sizes)")
		fs.BoolVar(&f.grow, "grow", false, "a cuckoo filter that grows as keys are added (--capacity is then its initial size)")
	}
	fs.Var(&f.seed, "seed", "hash `seed`, decimal or 0x-hexadecimal as info prints it, for reproducible files and runs (default random)")
	fs.Var(&f.bucketSize, "bucket-size", "cuckoo filter slots per bucket `b`: 1 to 255 (2, 4 and 8 are the fast ones), 4 with --semi-sorted, 2, 4 or 8 for --window (default 4)")
	fs.Var(&f.fingerprint, "fingerprint-bits", "cuckoo filter fingerprint `bits`, 4..32 (default: from --fpr)")
	fs.BoolVar(&f.semi, "semi-sorted", false, "cuckoo filter with semi-sorted 4-slot buckets: one bit less per key, slower")
	fs.Var(&f.bloom, "bloom", "make a Bloom filter instead: --bloom or --bloom=`kind` (blocked, classic, counting, scalable)")
}

// anySet reports whether a flag of a new filter was given.
func (f *filterFlags) anySet() bool {
	return f.fpr.set || f.capacity.set || f.seed.set || f.bucketSize != 0 || f.fingerprint != 0 || f.semi || f.grow || f.bloom.kind != 0
}

// spec returns the new filter's description: its size from --capacity,
// else from the inputs' sizes (known = false when they are unknown: the
// filter then grows), and whether it grows. The rate is --fpr as given
// (see filterfile's rate policy).
func (f *filterFlags) spec(e *env, cmd string, ins []input) (spec filterfile.Spec, known bool, err error) {
	remedy := "see 'cuckoo " + cmd + " --help'"
	spec = filterfile.Spec{Kind: filterfile.Cuckoo, FPR: f.fpr.or(filterfile.DefaultRate), BucketSize: int(f.bucketSize),
		FingerprintBits: int(f.fingerprint), SemiSorted: f.semi, Seed: f.seed.n, SeedSet: f.seed.set}
	if f.fpr.set && f.fingerprint != 0 {
		return spec, false, usageErr(remedy, "--fpr and --fingerprint-bits both set the fingerprint; give one")
	}
	if f.fingerprint != 0 {
		spec.FPR = 0
	}
	if f.bloom.kind != 0 {
		if f.bucketSize != 0 || f.fingerprint != 0 || f.semi || f.grow {
			return spec, false, usageErr("a growing Bloom filter is --bloom=scalable",
				"--bucket-size, --fingerprint-bits, --semi-sorted and --grow are cuckoo filter settings")
		}
		spec.Kind = f.bloom.kind
	}
	if f.semi {
		if err := f.checkBucketSize("a semi-sorted filter", 4); err != nil {
			return spec, false, err
		}
	}
	if grow := f.grow || (f.growDefault && !f.capacity.set); grow && spec.Kind == filterfile.Cuckoo {
		spec.Kind = filterfile.CuckooScalable
	}
	if err := filterfile.CheckRate(spec); err != nil {
		return spec, false, usageErr(remedy, "bad --fpr %s: %v", f.fpr.text, err)
	}
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

// bucketValue is --bucket-size: the slots of a cuckoo filter's buckets, 1
// to 255, the sizes a filter file takes; checkBucketSize narrows them for
// the filters that take fewer.
type bucketValue int

func (v *bucketValue) String() string { return (*intValue)(v).String() }

func (v *bucketValue) Set(s string) error {
	if err := (*intValue)(v).Set(s); err != nil || *v < 1 || *v > cuckoo.MaxBucketSize {
		return wantError(fmt.Sprintf("want 1 to %d slots (2, 4 and 8 are the fast ones; a window filter takes 2, 4 or 8, a semi-sorted one 4)", cuckoo.MaxBucketSize))
	}
	return nil
}

// fingerprintValue is --fingerprint-bits: the widths a cuckoo filter
// takes.
type fingerprintValue int

func (v *fingerprintValue) String() string { return (*intValue)(v).String() }

func (v *fingerprintValue) Set(s string) error {
	if err := (*intValue)(v).Set(s); err != nil || *v < cuckoo.MinFingerprintBits || *v > cuckoo.MaxFingerprintBits {
		return wantError(fmt.Sprintf("want %d to %d bits", cuckoo.MinFingerprintBits, cuckoo.MaxFingerprintBits))
	}
	return nil
}

// checkBucketSize refuses a --bucket-size that the filter described by
// what does not take, naming the sizes it does (allowed).
func (f *filterFlags) checkBucketSize(what string, allowed ...int) error {
	if f.bucketSize == 0 || slices.Contains(allowed, int(f.bucketSize)) {
		return nil
	}
	sizes := make([]string, len(allowed))
	for i, n := range allowed {
		sizes[i] = strconv.Itoa(n)
	}
	list := sizes[0]
	if len(sizes) > 1 {
		list = strings.Join(sizes[:len(sizes)-1], ", ") + " or " + sizes[len(sizes)-1]
	}
	return usageErr("give --bucket-size "+list+", or leave it out (4)",
		"--bucket-size %d: %s has buckets of %s slots", int(f.bucketSize), what, list)
}

// paramErr is the usage error for a filter the library refused to make:
// err wraps a package's ErrInvalidParameter, whose text ("cuckoo: invalid
// parameter: ") is the library's prefix, not the user's.
func paramErr(remedy string, err error) error {
	msg := err.Error()
	for _, sentinel := range []error{redisfilter.ErrInvalidParameter, cuckoo.ErrInvalidParameter, bloom.ErrInvalidParameter} {
		msg = strings.TrimPrefix(msg, sentinel.Error()+": ")
	}
	return usageErr(remedy, "cannot make that filter: %s", msg)
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
		return wantError("want blocked, classic, counting or scalable")
	}
	b.kind = k
	return nil
}

// newFilter builds a filter for spec, with errors that name the flags.
func newFilter(spec filterfile.Spec) (*filterfile.Filter, error) {
	f, err := filterfile.New(spec)
	if err != nil {
		return nil, paramErr("see the command's --help for the ranges", err)
	}
	return f, nil
}

// loadFilter reads a filter file, with errors that say what to do, and
// warns on standard error when the filter's expected false-positive rate
// is far above its target (a Bloom filter filled far past its capacity
// by another program).
func (e *env) loadFilter(path string) (*filterfile.Filter, error) {
	f, err := filterfile.Load(path)
	if err != nil {
		return nil, loadError(path, err)
	}
	if rate, target, far := f.FarAboveTarget(); far {
		fmt.Fprintf(e.stderr, "cuckoo %s: warning: %s answers with a false-positive rate of %s, far above the %s it was built for "+
			"(it holds %s, its capacity is %s); rebuild it larger with 'cuckoo build --capacity N'\n",
			e.cmd, path, units.Percent(rate), units.Percent(target), units.Counted(f.Len(), "key"), units.Count(f.Capacity()))
	}
	return f, nil
}

// loadError explains why a filter file could not be read.
func loadError(path string, err error) error {
	detail := func(sentinel error) string { return strings.TrimPrefix(err.Error(), sentinel.Error()+": ") }
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return dataErr("build one with 'cuckoo build -o "+path+"'", "%s: no such file", path)
	case errors.Is(err, fs.ErrPermission):
		return dataErr("check its permissions", "%s: permission denied", path)
	case errors.Is(err, syscall.ELOOP):
		return fileErr(path, err, "")
	case errors.Is(err, syscall.EISDIR):
		return dataErr("give a filter file, written by 'cuckoo build' or 'cuckoo dedup --save'", "%s is a directory", path)
	case errors.Is(err, filterfile.ErrNotFilter):
		return dataErr("give a file written by 'cuckoo build' or 'cuckoo dedup --save'",
			"%s is not a filter file (%s)", path, detail(filterfile.ErrNotFilter))
	case errors.Is(err, filterfile.ErrUnsupported):
		return dataErr("upgrade cuckoo to a version that reads it", "%s holds %s", path, detail(filterfile.ErrUnsupported))
	case errors.Is(err, filterfile.ErrDamaged):
		return dataErr("restore it from a backup or rebuild it with 'cuckoo build'",
			"%s is damaged (%s)", path, detail(filterfile.ErrDamaged))
	}
	return dataErr(remedyRead, "reading %s: %v", path, unwrap(err))
}

// fullError is the error of a filter of fixed capacity that was full at
// a line of an input: status 4, and the remedy.
func fullError(filter *filterfile.Filter, input string, line uint64, noun, remedy string) error {
	return &cliError{code: exitFull, remedy: remedy,
		msg: fmt.Sprintf("the filter is full at %s line %s: it holds %s, its capacity is %s",
			input, units.Count(line), units.Counted(filter.Len(), noun), units.Count(filter.Capacity()))}
}

// printFilterSummary prints what a command left in a filter file.
func printFilterSummary(w io.Writer, cmd, path string, f *filterfile.Filter, lines uint64, elapsed time.Duration) {
	fmt.Fprintf(w, "cuckoo %s: %s: %s, %s from %s, %s in memory, %s on disk\n", cmd, path,
		f.Kind(), units.Counted(f.Len(), "item"), units.Counted(lines, "line"), units.Bytes(f.SizeInBytes()), units.Bytes(uint64(f.EncodedSize())))
	fmt.Fprintf(w, "cuckoo %s: false-positive rate now %s; capacity %s; %.2f s\n", cmd,
		units.Rate(f.FalsePositiveRate()), units.Count(f.Capacity()), elapsed.Seconds())
}
