package main

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/dedupkit/cuckoo/internal/hash"
)

// measureFloor times, in this process, the least work a dedup of the
// input at path must do, part by part, each the best of three:
//
//   - read: the file into a buffer, 1 MiB at a time (from the page
//     cache);
//   - split and hash: find every line end and hash every line
//     (XXH3-64, the filters' hash);
//   - one cache miss per new key: for each distinct line, add its hash
//     into a random word of a table the size of a default filter for the
//     distinct lines (20 bits a key), the accesses independent, so that
//     the processor overlaps them as a filter's batches do;
//   - write: the distinct lines, 256 KiB at a time, to /dev/null, where
//     the timed runs write.
//
// One core does them in turn; two can overlap the first two with the
// last two.
func measureFloor(w io.Writer, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	best := func(f func()) float64 {
		b := 1e9
		for range 3 {
			t0 := time.Now()
			f()
			b = min(b, time.Since(t0).Seconds())
		}
		return b
	}
	read := best(func() {
		f, err := os.Open(path)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, 1<<20)
		for {
			if _, err := f.Read(buf); err == io.EOF {
				return
			} else if err != nil {
				log.Fatal(err)
			}
		}
	})
	var hs []uint64
	split := best(func() {
		hs = hs[:0]
		for rest := data; len(rest) > 0; {
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				i = len(rest) - 1
			}
			hs = append(hs, hash.Sum64(rest[:i], 1))
			rest = rest[i+1:]
		}
	})
	seen := make(map[uint64]bool, len(hs)) // the distinct lines (their hashes)
	var distinct []uint64
	var out bytes.Buffer
	i := 0
	for rest := data; len(rest) > 0; i++ {
		n := bytes.IndexByte(rest, '\n') + 1
		if n == 0 {
			n = len(rest)
		}
		if !seen[hs[i]] {
			seen[hs[i]] = true
			distinct = append(distinct, hs[i])
			out.Write(rest[:n])
		}
		rest = rest[n:]
	}
	table := make([]uint64, max(len(distinct)*20/64, 1))
	misses := best(func() {
		m := uint64(len(table))
		for _, h := range distinct {
			table[(h>>32)*m>>32] += h
		}
	})
	write := best(func() {
		f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			log.Fatal(err)
		}
		for b := out.Bytes(); len(b) > 0; {
			n := min(len(b), 256<<10)
			if _, err := f.Write(b[:n]); err != nil {
				log.Fatal(err)
			}
			b = b[n:]
		}
		f.Close()
	})
	fmt.Fprintf(w, "The floor on %s (%d lines, %d distinct), best of 3 in one process: read %.3f s, split and hash %.3f s, "+
		"one cache miss per new key (table of %.1f MiB) %.3f s, write %.3f s; in turn %.3f s, on two cores at best %.3f s.\n\n",
		filepath.Base(path), len(hs), len(distinct), read, split, float64(len(table))*8/(1<<20), misses, write,
		read+split+misses+write, max(read+split, misses+write))
}
