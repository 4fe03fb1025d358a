package main

import (
	"bufio"
	"flag"
	"fmt"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/dedup"
)

const queryHelp = `Usage: cuckoo query FILE [flags] [KEYS-FILE...]
       cuckoo query FILE --key KEY [--key KEY...]

Look keys up in the filter file FILE. Keys are read one per line from the
KEYS-FILEs (or standard input); each line is printed with a tab and
"present" or "absent". --present or --absent print only the lines of one
kind, as they were read, to use in a pipeline. "present" means "probably
present": a key never added is reported present with the filter's
false-positive rate ('cuckoo info FILE' shows it). "absent" is certain.

With --key, the keys are given on the command line and the exit status is
the answer: 0 when every key is present, 1 when one is absent (--quiet
prints nothing, as grep -q).

Examples:
  cuckoo query seen.ckoo --key https://example.com/ && echo "seen before"
  cuckoo query seen.ckoo urls.txt                   # each line with present/absent
  cuckoo query seen.ckoo --absent new.txt > fresh.txt
  cuckoo query seen.ckoo --present --count new.txt  # how many are (probably) known
  cut -f2 events.tsv | cuckoo query seen.ckoo --absent
`

type queryFlags struct {
	present, absent bool
	keys            listValue
	fields          fieldFlags
	count           bool
	quiet           bool
}

func (f *queryFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.present, "present", false, "print only the lines whose key is (probably) present")
	fs.BoolVar(&f.absent, "absent", false, "print only the lines whose key is absent")
	fs.Var(&f.keys, "key", "look up `key` (repeatable); the exit status says whether all are present")
	f.fields.register(fs)
	fs.BoolVar(&f.count, "count", false, "print only the number of lines that would be printed")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress bar; with --key, print nothing (the exit status answers)")
	fs.BoolVar(&f.quiet, "q", false, "the same as --quiet")
}

func queryCommand() *command {
	return newCommand("query", "look keys up in a filter file", queryHelp,
		(*queryFlags).register, runQuery)
}

func runQuery(e *env, f *queryFlags, pos []string) error {
	keyer, err := keyInputs("query", pos, f.keys, &f.fields)
	if err != nil {
		return err
	}
	if f.present && f.absent {
		return usageErr("see 'cuckoo query --help'", "--present and --absent exclude each other; give one (or neither, for both)")
	}
	filter, err := e.loadFilter(pos[0])
	if err != nil {
		return err
	}
	out := newBufWriter(e.stdout)
	defer out.Flush()

	if len(f.keys) > 0 {
		allPresent := true
		var n uint64
		for _, k := range f.keys {
			ok := filter.Contains([]byte(k))
			allPresent = allPresent && ok
			if ok == !f.absent || (!f.present && !f.absent) {
				n++
				if !f.quiet && !f.count {
					printAnswer(out, []byte(k), ok, f.present || f.absent)
				}
			}
		}
		if f.count && !f.quiet {
			fmt.Fprintln(out, n)
		}
		if !allPresent {
			return exitCode(exitAbsent)
		}
		return nil
	}

	ins, err := openInputs(e, "query", pos[1:])
	if err != nil {
		return err
	}
	bar := e.startBar("query", totalSize(ins), f.quiet, !f.count)
	kr := dedup.NewKeyReader(keyer, 0)
	kr.OnRead(bar.AddChunk)
	var lines, keys [batchLines][]byte
	var found [batchLines]bool
	var n uint64
	// A batch at a time: a cuckoo filter prefetches the buckets of all its
	// keys before it looks them up.
	err = readBatches(e, ins, kr, lines[:], keys[:], func(m int) error {
		filter.ContainsBatch(keys[:m], found[:m])
		for j, line := range lines[:m] {
			present := found[j]
			if (f.present || f.absent) && present != f.present {
				continue
			}
			n++
			if f.count {
				continue
			}
			var err error
			if f.present || f.absent {
				_, err = out.Write(line)
				if line[len(line)-1] != '\n' {
					out.WriteByte('\n')
				}
			} else {
				err = printAnswer(out, dedup.Content(line), present, false)
			}
			if err != nil {
				return dataErr(remedyWrite, "writing the output: %v", cause(err))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	e.stopBar()
	if f.count {
		fmt.Fprintln(out, n)
	}
	if err := out.Flush(); err != nil {
		return dataErr(remedyWrite, "writing the output: %v", cause(err))
	}
	return nil
}

// batchLines is how many key lines query looks up at once.
const batchLines = 64

// printAnswer prints key and its answer: "key\tpresent", or the key alone
// when filtering to one kind.
func printAnswer(out *bufio.Writer, key []byte, present, keyOnly bool) error {
	out.Write(key)
	var err error
	switch {
	case keyOnly:
		_, err = out.WriteString("\n")
	case present:
		_, err = out.WriteString("\tpresent\n")
	default:
		_, err = out.WriteString("\tabsent\n")
	}
	return err
}
