// Command dedup copies standard input to standard output, dropping every
// line it has seen before, with a cuckoo filter as the memory of what it
// has seen: a few bytes per distinct line, whatever the lines' length.
//
//	go run ./examples/dedup < urls.txt > unique.txt
//	go run ./examples/dedup -capacity 50000000 -fpr 1e-6 < big.txt > out.txt
//
// A line is dropped wrongly only when the filter gives a false positive,
// with probability at most -fpr per distinct line. The full tool is the
// cuckoo command (cmd/cuckoo), which also sizes the filter from the input,
// grows it, and saves the seen-set between runs.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/dedupkit/cuckoo"
)

func main() {
	capacity := flag.Uint64("capacity", 10_000_000, "most distinct lines expected")
	fpr := flag.Float64("fpr", 1e-4, "acceptable probability of dropping a new line")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *capacity, *fpr); err != nil {
		fmt.Fprintln(os.Stderr, "dedup:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer, capacity uint64, fpr float64) error {
	seen, err := cuckoo.New(capacity, cuckoo.WithFalsePositiveRate(fpr))
	if err != nil {
		return err
	}
	r := bufio.NewReaderSize(in, 1<<20)
	w := bufio.NewWriterSize(out, 1<<20)
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: copy it out before reading on
			// (ReadSlice reuses the buffer), and hash it whole.
			head := append([]byte(nil), line...)
			rest, err2 := readRest(r)
			line, err = append(head, rest...), err2
		}
		if len(line) > 0 {
			key := line
			if key[len(key)-1] == '\n' {
				key = key[:len(key)-1]
			}
			added, addErr := seen.AddUnique(key)
			if addErr != nil {
				return fmt.Errorf("more than %d distinct lines: rerun with a larger -capacity (%w)", capacity, addErr)
			}
			if added {
				if _, werr := w.Write(line); werr != nil {
					return werr
				}
			}
		}
		if err == io.EOF {
			return w.Flush()
		}
		if err != nil {
			return err
		}
	}
}

func readRest(r *bufio.Reader) ([]byte, error) {
	var rest []byte
	for {
		chunk, err := r.ReadSlice('\n')
		rest = append(rest, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return rest, err
		}
	}
}
