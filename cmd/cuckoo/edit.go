package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
)

const addHelp = `Usage: cuckoo add FILE [flags] [KEYS-FILE...]
       cuckoo add FILE --key KEY [--key KEY...]

Add keys to the filter file FILE, in place: one per line from the
KEYS-FILEs (or standard input), or the --key values. FILE is replaced
atomically (a temporary file in the same directory, fsync, rename), so a
crash, Ctrl-C or an error leaves it exactly as it was: when a
fixed-capacity filter fills up, nothing is added at all (exit status 4).

Keys are added as a multiset, like 'cuckoo build': a key added twice needs
two deletes. --unique adds a key only when the filter does not report it.

Examples:
  cuckoo add seen.ckoo new-urls.txt
  cuckoo add seen.ckoo --key https://example.com/
  grep -h login *.log | cut -d' ' -f3 | cuckoo add users.ckoo
`

const deleteHelp = `Usage: cuckoo delete FILE [flags] [KEYS-FILE...]
       cuckoo delete FILE --key KEY [--key KEY...]

Delete keys from the filter file FILE, in place and atomically (see
'cuckoo add --help'): one copy of each key, one per line from the
KEYS-FILEs (or standard input), or the --key values. Keys that are not in
the filter change nothing; they are counted and reported, and make the
exit status 1, as for 'cuckoo store del' (the file is written all the
same, with the other keys deleted).

Delete only keys that were added: a filter cannot tell a key from another
with the same fingerprint, so deleting a key never added may remove that
other key (with the false-positive probability). Cuckoo filters and
counting Bloom filters can delete; other Bloom filters cannot.

Examples:
  cuckoo delete seen.ckoo expired-urls.txt
  cuckoo delete seen.ckoo --key https://example.com/
`

type editFlags struct {
	keys   listValue
	fields fieldFlags
	unique bool
	stats  bool
	quiet  bool
}

func (f *editFlags) register(fs *flag.FlagSet, cmd string) {
	fs.Var(&f.keys, "key", cmd+" `key` (repeatable) instead of reading key lines")
	f.fields.register(fs)
	if cmd == "add" {
		fs.BoolVar(&f.unique, "unique", false, "add a key only if the filter does not report it already (set semantics)")
	}
	fs.BoolVar(&f.stats, "stats", false, "print what changed on standard error")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress bar, no notes")
	fs.BoolVar(&f.quiet, "q", false, "the same as --quiet")
}

func editCommand(name string) *command {
	help, synopsis := addHelp, "add keys to a filter file, atomically"
	if name == "delete" {
		help, synopsis = deleteHelp, "delete keys from a filter file, atomically"
	}
	register := func(f *editFlags, fs *flag.FlagSet) { f.register(fs, name) }
	return newCommand(name, synopsis, help, register, func(e *env, f *editFlags, pos []string) error {
		return runEdit(e, name, f, pos)
	})
}

func runEdit(e *env, cmd string, f *editFlags, pos []string) error {
	keyer, err := keyInputs(cmd, pos, f.keys, &f.fields)
	if err != nil {
		return err
	}
	path := pos[0]
	// Locked from before the read until the file is replaced, so that
	// two runs changing one file take turns instead of losing keys.
	if err := e.lockFiles(path); err != nil {
		return err
	}
	filter, err := e.loadFilter(path)
	if err != nil {
		return err
	}
	if cmd == "delete" && !filter.Kind().CanDelete() {
		return usageErr("build it with --bloom=counting, or use a cuckoo filter",
			"%s holds a %s", path, filter.Kind().Description())
	}
	start := time.Now()
	before := filter.Len()
	var lines, missing uint64
	if len(f.keys) > 0 {
		for i, k := range f.keys {
			lines++
			if cmd == "delete" {
				ok, err := filter.Delete([]byte(k))
				if err != nil {
					return err
				}
				if !ok {
					missing++
				}
				continue
			}
			if err := addOne(filter, []byte(k), f.unique); err != nil {
				return keysError(&keyError{input: "--key", line: uint64(i + 1), err: err}, filter, path, before, false,
					func() inputLines { return keyLines(len(f.keys)) })
			}
		}
	} else {
		ins, err := openInputs(e, cmd, pos[1:])
		if err != nil {
			return err
		}
		bar := e.startBar(cmd, totalSize(ins), f.quiet, false)
		if cmd == "add" {
			lines, err = addKeys(e, ins, keyer, filter, bar.AddChunk, f.unique)
		} else {
			lines, missing, err = deleteKeys(e, ins, keyer, filter, bar.AddChunk)
		}
		e.stopBar()
		if err != nil {
			return keysError(err, filter, path, before, false, func() inputLines { return countLines(e, ins) })
		}
	}
	if err := e.writeFile(path, func(w io.Writer) error {
		_, err := filter.WriteTo(w)
		return err
	}); err != nil {
		return err
	}
	if missing > 0 && !f.quiet {
		were, they := "were", "they"
		if missing == 1 {
			were, they = "was", "it"
		}
		fmt.Fprintf(e.stderr, "cuckoo delete: %s of %s %s not in the filter; %s changed nothing\n",
			units.Count(missing), units.Counted(lines, "key"), were, they)
	}

	if f.stats {
		after := filter.Len()
		verb, diff := "added", after-before
		if cmd == "delete" {
			verb, diff = "deleted", before-after
		}
		fmt.Fprintf(e.stderr, "cuckoo %s: %s %s from %s\n", cmd, units.Counted(diff, "item"), verb, units.Counted(lines, "key"))
		printFilterSummary(e.stderr, cmd, path, filter, lines, time.Since(start))
	}
	if missing > 0 {
		// An absent key is the run's answer, as for query --key and
		// store del: status 1, the file written all the same.
		return exitCode(exitAbsent)
	}
	return nil
}
