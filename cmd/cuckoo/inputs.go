package main

import (
	"io"
	"os"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/dedup"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
)

// input is one input stream of lines.
type input struct {
	name string // as the user gave it; "-" for standard input
	size int64  // bytes, for a regular file; -1 otherwise
}

// openInputs checks every named input before anything is read, so that a
// typo in the last name fails before any output: each must exist, be
// readable and not be a directory. No names means standard input. The
// files are opened one at a time by open.
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
			if stdinClosed(e.stdinFile) {
				// As cat and sort say "-: Bad file descriptor": a closed
				// standard input is no input, not an empty one.
				return nil, dataErr("give the files to read as arguments, or </dev/null for no input",
					"reading standard input: it is closed")
			}
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

// open opens an input for reading.
func (in *input) open(e *env) (io.Reader, func(), error) {
	if in.name == "-" {
		growPipe(e.stdinFile)
		return e.stdin, func() {}, nil
	}
	f, err := os.Open(in.name)
	if err != nil {
		return nil, nil, fileErr(in.name, err, "check the name")
	}
	return f, func() { f.Close() }, nil
}

// displayName is the input's name in messages.
func (in *input) displayName() string {
	if in.name == "-" {
		return "standard input"
	}
	return in.name
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

// allSized reports whether every input has a known size.
func allSized(ins []input) bool {
	for _, in := range ins {
		if in.size < 0 {
			return false
		}
	}
	return true
}

// allFiles reports whether every input can be read twice.
func allFiles(ins []input) bool {
	for _, in := range ins {
		if in.name == "-" || in.size < 0 {
			return false
		}
	}
	return true
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

// inputLines is the number of lines of a run's inputs, for the remedy of
// a full filter, which suggests a --capacity that holds them: there are
// never more distinct keys than lines.
type inputLines struct {
	n     uint64
	known bool // false for input of unknown size (a pipe)
	exact bool // counted, rather than estimated from above from a sample
}

// countLines counts (up to dedup.DefaultEstimateBudget bytes in all,
// else estimates from above) the lines of the inputs. An error leaves
// them unknown: the remedy it serves then says less.
func countLines(e *env, ins []input) inputLines {
	n, known, err := estimateLines(e, ins)
	if err != nil || !known {
		return inputLines{}
	}
	return inputLines{n: n, known: true, exact: totalSize(ins) <= dedup.DefaultEstimateBudget}
}

// keyLines is the inputLines of keys given on the command line (--key).
func keyLines(n int) inputLines { return inputLines{n: uint64(n), known: true, exact: true} }

// counted is the count in a message, of noun: "4,000 lines", or "about
// 2,100,000 lines".
func (l inputLines) counted(noun string) string {
	if l.exact {
		return units.Counted(l.n, noun)
	}
	return "about " + units.Counted(l.n, noun)
}

// capacityFor returns the --capacity to suggest for the inputs when a
// filter of capacity now was full holding held keys: their lines when
// known (and more than both), else twice the larger of the two. A small
// filter holds more than its capacity (its table is rounded up): twice
// the capacity would be no larger.
func (l inputLines) capacityFor(now, held uint64) (capacity uint64, why string) {
	if l.known && l.n > max(now, held) {
		return l.n, "the input's " + l.counted("line")
	}
	if held > now {
		return 2 * held, "twice what it holds"
	}
	return 2 * now, "twice the capacity"
}

// readBatches reads the lines of the inputs in turn through kr, a batch at
// a time into lines and keys (see dedup.KeyReader.NextBatch), and calls fn
// with each batch's size. It stops at fn's first error and returns it; a
// read error comes back as the command reports it, naming the input.
func readBatches(e *env, ins []input, kr *dedup.KeyReader, lines, keys [][]byte, fn func(n int) error) error {
	for i := range ins {
		r, closeIn, err := ins[i].open(e)
		if err != nil {
			return err
		}
		kr.Reset(r)
		for {
			n := kr.NextBatch(lines, keys)
			if n == 0 {
				break
			}
			if err := fn(n); err != nil {
				closeIn()
				return err
			}
		}
		err = kr.Err()
		closeIn()
		if err != nil {
			return dataErr(remedyRead+readProcessed, "reading %s: %v", ins[i].name, unwrap(err))
		}
	}
	return nil
}
