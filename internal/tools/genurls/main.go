// Command genurls writes URL-like lines with a chosen share of repeats: the
// input of the dedup benchmark (docs/dedup-benchmark.md).
//
//	go run ./internal/tools/genurls -n 3000000 -repeat 0.3 -seed 1 > urls.txt
//
// Lines average about 54 bytes, like real crawl frontiers:
//
//	https://shop.travel417.net/docs/sports-73107/k3x9qa
//
// Each line is a repeat of an earlier line (chosen uniformly among the
// distinct lines so far) with probability -repeat, else a new distinct
// line. The output depends only on the flags: the same -seed gives the same
// bytes on every machine, so runs can be compared and reproduced.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/dedupkit/cuckoo/internal/urlgen"
)

func main() {
	n := flag.Uint64("n", 3_000_000, "lines to write")
	repeat := flag.Float64("repeat", 0.3, "share of lines that repeat an earlier line, in [0, 1)")
	seed := flag.Uint64("seed", 1, "random seed: the same seed gives the same output")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: genurls [-n lines] [-repeat share] [-seed s] > file")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 || !(*repeat >= 0 && *repeat < 1) {
		flag.Usage()
		os.Exit(2)
	}
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	g := urlgen.New(*seed, *repeat)
	line := make([]byte, 0, 128)
	for range *n {
		line, _ = g.Append(line[:0])
		if _, err := w.Write(line); err != nil {
			fmt.Fprintln(os.Stderr, "genurls:", err)
			os.Exit(1)
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "genurls:", err)
		os.Exit(1)
	}
}
