// Package dedup is the streaming line dedup engine behind `cuckoo dedup`:
// it reads lines, extracts each line's key (the whole line, or fields of
// it), asks a filter whether the key was seen, and writes the lines seen
// for the first time (or only the repeats) in input order.
//
// Memory is the filter, the read and write buffers, and the longest line
// that does not fit in the read buffer; it does not grow with the input.
// A line is dropped wrongly only when the filter gives a false positive for
// its key, with the filter's false-positive rate at that moment; no line
// seen for the first time is ever kept twice (a filter has no false
// negatives).
package dedup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// Set is the seen-set a Deduper records keys in: a filter
// (*filterfile.Filter), or any set that offers these methods.
type Set interface {
	// AddUniqueBatch adds each key the set does not hold, in order:
	// added[i] reports whether keys[i] was added. It returns how many
	// keys it processed: len(keys), or fewer with the error that stopped
	// it (a full set's wraps filterfile.ErrFull).
	AddUniqueBatch(keys [][]byte, added []bool) (processed int, err error)
	// FalsePositiveRate is the chance that a key never added is reported
	// held: 0 for an exact set.
	FalsePositiveRate() float64
	// RateIsCheap reports whether FalsePositiveRate is O(1).
	RateIsCheap() bool
}

// Config says what a Deduper writes and how it reads.
type Config struct {
	// Key extracts a key from each line's content; nil keys on the whole
	// content (the line without "\n" or "\r\n").
	Key *KeyExtractor
	// Duplicates writes the repeats (every line whose key was seen
	// before) instead of the first occurrences.
	Duplicates bool
	// CountOnly writes no lines; the caller reports Stats.
	CountOnly bool
	// BufferSize is the read buffer (DefaultBufferSize when 0).
	BufferSize int
	// TrackFalsePositives computes Stats.ExpectedFalsePositives. It is
	// free for cuckoo filters; for Bloom filters, whose rate is computed
	// from the whole bit array, it costs O(log n) passes over it.
	TrackFalsePositives bool
	// OnRead, when set, is called after every read with the bytes read
	// (valid only during the call): once per buffer fill, for progress
	// reports.
	OnRead func(chunk []byte)
}

// Stats counts what a Deduper did.
type Stats struct {
	LinesIn  uint64 // lines read
	LinesOut uint64 // lines written
	Added    uint64 // keys added to the filter: the distinct keys, less false positives
	Dropped  uint64 // lines whose key the filter reported seen: LinesIn − Added
	BytesIn  uint64 // bytes read
	// ExpectedFalsePositives is the expected number of lines dropped
	// wrongly: the sum, over the keys added, of the filter's false-positive
	// rate when each was looked up (integrated once per buffer fill, or
	// every 1/16 growth for a Bloom filter). Only with
	// Config.TrackFalsePositives.
	ExpectedFalsePositives float64
}

// ErrOutput is wrapped by the errors Run and Flush return when writing the
// output fails (a full disk, a closed pipe), to tell them from errors of
// the input.
var ErrOutput = errors.New("dedup: writing the output")

// batchSize is the most lines handed to the filter at once.
const batchSize = 64

// Deduper removes repeated lines from one or more inputs that share one
// filter, writing to one output. It is not safe for concurrent use.
type Deduper struct {
	seen Set
	cfg  Config
	kr   *KeyReader
	out  *bufio.Writer

	// One batch of lines, their keys, and which keys were added.
	lines, keys [batchSize][]byte
	added       [batchSize]bool

	stats Stats
	// False-positive accounting: the rate at the last fill, and the keys
	// added since.
	lastRate  float64
	sinceFill uint64
}

// New returns a Deduper that records keys in seen (which may already hold
// keys: those lines count as seen) and writes to out through a 1 MiB
// buffer. Call Flush when done.
func New(seen Set, out io.Writer, cfg Config) *Deduper {
	d := &Deduper{
		seen: seen,
		cfg:  cfg,
		kr:   NewKeyReader(cfg.Key, cfg.BufferSize),
		out:  bufio.NewWriterSize(out, DefaultBufferSize),
	}
	if cfg.TrackFalsePositives {
		d.lastRate = seen.FalsePositiveRate()
	}
	d.kr.OnRead(d.onRead)
	return d
}

func (d *Deduper) onRead(chunk []byte) {
	d.stats.BytesIn += uint64(len(chunk))
	if d.cfg.TrackFalsePositives && (d.seen.RateIsCheap() || d.sinceFill*16 >= d.stats.Added) {
		d.settle()
	}
	if d.cfg.OnRead != nil {
		d.cfg.OnRead(chunk)
	}
}

// settle adds the expected false positives among the keys added since the
// last settlement: the mean of the rates at both ends (a trapezoid) times
// the keys, exact for a cuckoo filter, whose rate grows linearly with its
// keys, and an overestimate for a Bloom filter, whose rate is convex.
func (d *Deduper) settle() {
	if d.sinceFill == 0 || !d.cfg.TrackFalsePositives {
		return
	}
	rate := d.seen.FalsePositiveRate()
	d.stats.ExpectedFalsePositives += float64(d.sinceFill) * (d.lastRate + rate) / 2
	d.lastRate, d.sinceFill = rate, 0
}

// LineError is the error of the filter at one line of an input.
type LineError struct {
	Line uint64 // from 1, in the input Run was reading
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the filter's error.
func (e *LineError) Unwrap() error { return e.Err }

// Run dedups the lines of r, continuing from the keys seen so far. It
// stops at the first error: a read error, a write error (wrapping
// ErrOutput), or the filter's (a
// full fixed-capacity filter gives a *LineError wrapping
// filterfile.ErrFull; that line is not written, the lines before it are).
func (d *Deduper) Run(r io.Reader) error {
	kr := d.kr
	kr.Reset(r)
	lines, keys, added := &d.lines, &d.keys, &d.added
	for {
		n := kr.NextBatch(lines[:], keys[:])
		if n == 0 {
			break
		}
		// The filter hashes the whole batch and prefetches its buckets
		// before it adds the keys one by one, in order: the cache misses
		// of a big table overlap instead of following one another.
		done, err := d.addBatch(lines[:n], keys[:n], added[:n])
		// Lines to write that lie next to each other in the read buffer
		// (most of them) go out in one Write.
		var run []byte
		for i, line := range lines[:done] {
			if added[i] {
				d.sinceFill++
				d.stats.Added++
			}
			if added[i] == d.cfg.Duplicates || d.cfg.CountOnly {
				continue
			}
			d.stats.LinesOut++
			if adjacent(run, line) {
				run = run[:len(run)+len(line)]
				continue
			}
			if werr := d.write(run); werr != nil {
				d.stats.LinesIn += kr.Line() - uint64(n-i)
				return werr
			}
			run = line
		}
		if werr := d.write(run); werr != nil {
			d.stats.LinesIn += kr.Line() - uint64(n-done)
			return werr
		}
		if err != nil {
			line := kr.Line() - uint64(n-done) + 1
			d.stats.LinesIn += line - 1
			return &LineError{Line: line, Err: err}
		}
	}
	d.stats.LinesIn += kr.Line()
	return kr.Err()
}

// adjacent reports whether line starts where run ends in memory, so that
// run[:len(run)+len(line)] is both. Only lines that end in '\n' are
// joined: a last line without one gets its '\n' from write.
func adjacent(run, line []byte) bool {
	return len(run) > 0 && run[len(run)-1] == '\n' && cap(run)-len(run) >= len(line) &&
		&run[:len(run)+1][len(run)] == &line[0]
}

// write writes lines (one, or several adjacent ones), adding a '\n' to a
// last line without one.
func (d *Deduper) write(lines []byte) error {
	if len(lines) == 0 {
		return nil
	}
	_, err := d.out.Write(lines)
	if err == nil && lines[len(lines)-1] != '\n' {
		err = d.out.WriteByte('\n')
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrOutput, err)
	}
	return nil
}

// Flush writes out what is buffered. Its error wraps ErrOutput.
func (d *Deduper) Flush() error {
	if err := d.out.Flush(); err != nil {
		return fmt.Errorf("%w: %w", ErrOutput, err)
	}
	return nil
}

// Stats returns the counts so far.
func (d *Deduper) Stats() Stats {
	d.settle()
	s := d.stats
	s.Dropped = s.LinesIn - s.Added
	return s
}
