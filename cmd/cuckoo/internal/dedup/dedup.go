// Package dedup is the streaming line dedup engine behind `cuckoo dedup`:
// it reads lines, extracts each line's key (the whole line, or fields of
// it), asks a filter whether the key was seen, and writes the lines seen
// for the first time (or only the repeats) in input order.
//
// A Deduper works on every core: one goroutine reads the input in blocks
// of whole lines, others split the blocks into lines and key and hash
// them, the caller's goroutine alone hands each block's keys to the
// filter, in input order, and another writes the lines kept
// (pipeline.go). The filter sees the keys in the same order and gives the
// same answers as if one goroutine did everything, so the output is the
// same.
//
// Memory is the filter plus a bounded number of blocks (Config.BufferSize
// each, with about 13 bytes of line table per line, at most a sixteenth
// of the block's size in lines) and the write buffer; a line longer than
// a block costs its size once more (twice when its key must be one slice:
// fields of it, a key built of several fields included, or a seen-set
// that keeps keys). It does not grow with the input. A line is dropped wrongly only when the filter gives a false
// positive for its key, with the filter's false-positive rate at that
// moment; no line seen for the first time is ever kept twice (a filter
// has no false negatives).
package dedup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// SeenSet is the seen-set a Deduper records keys in: a filter
// (*filterfile.Filter), or any set that offers these methods. A SeenSet may
// also be a HashSet or a BlockSet, which a Deduper then uses instead.
type SeenSet interface {
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

// HashSet is a SeenSet that takes its keys' hashes in place of the keys, so
// that the hashing is done on other goroutines than the set's. A Deduper
// hands it each distinct hash of a block once and answers a later line of
// the block with the same hash itself, as a repeat: a set with no false
// negatives holds a hash it was just given.
type HashSet interface {
	SeenSet
	// HashSeed returns the seed with which AddUniqueHashBatch of
	// hash.Sum64(key, seed) is AddUniqueBatch of key, and true; or false,
	// when the set takes only keys.
	HashSeed() (seed uint64, ok bool)
	// AddUniqueHashBatch is AddUniqueBatch for the keys' hashes.
	AddUniqueHashBatch(hashes []uint64, added []bool) (processed int, err error)
}

// BlockSet is a SeenSet that takes a block of lines at a time, with what it
// needs computed for each line (its key, hash, first line of the block
// with the same key, time) on other goroutines than its own.
type BlockSet interface {
	SeenSet
	// Needs says what the set wants computed for each line. It is called
	// once, by New.
	Needs() Needs
	// AddUniqueBlock is AddUniqueBatch for the lines of b: added[i]
	// reports whether line i's key was added. It returns how many lines
	// it processed: b.Len(), or fewer with the error that stopped it.
	AddUniqueBlock(b *Block, added []bool) (processed int, err error)
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
	// BufferSize is the size of a block (DefaultBlockSize when 0).
	BufferSize int
	// Workers is how many goroutines split, key and hash blocks: 0 for
	// one fewer than GOMAXPROCS (at least 1, at most 4).
	Workers int
	// Sequential does all the work on the goroutine that calls Run, as
	// happens anyway when GOMAXPROCS is 1: the same output, on one core.
	Sequential bool
	// TrackFalsePositives computes Stats.ExpectedFalsePositives. It is
	// free for cuckoo filters; for Bloom filters, whose rate is computed
	// from the whole bit array, it costs O(log n) passes over it.
	TrackFalsePositives bool
	// OnRead, when set, is called after every read with the bytes read
	// (valid only during the call), for progress reports: on another
	// goroutine than Run's unless the Deduper is sequential.
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
	// rate when each was looked up (integrated once per block, or every
	// 1/16 growth for a Bloom filter). Only with
	// Config.TrackFalsePositives.
	ExpectedFalsePositives float64
}

// ErrOutput is wrapped by the errors Run and Flush return when writing the
// output fails (a full disk, a closed pipe), to tell them from errors of
// the input.
var ErrOutput = errors.New("dedup: writing the output")

// outputBuffer is the size of the output's buffer: runs of lines kept
// that fill it go out in one write from their block.
const outputBuffer = 64 << 10

// maxWorkers bounds Config.Workers' default: the set's goroutine, not the
// hashing, sets the pace.
const maxWorkers = 4

// Deduper removes repeated lines from one or more inputs that share one
// filter, writing to one output. Its methods are not safe for concurrent
// use; Run uses other goroutines itself.
type Deduper struct {
	seen   SeenSet
	hashes HashSet  // seen, when it takes hashes
	blocks BlockSet // seen, when it takes blocks
	needs  Needs
	cfg    Config
	out    *bufio.Writer
	size   int // block size

	workers    int
	sequential bool
	preparers  []*preparer // one per worker (the first for a sequential run)
	ownPrep    *preparer   // the caller's goroutine's, for blocks it prepares while it waits (await)
	pool       *blockPool  // blocks kept from one Run to the next
	reader     *blockReader
	pair       [2]*Block // a sequential run's blocks

	stats    Stats
	runLines uint64 // lines of the current Run decided
	// False-positive accounting: the rate at the last settlement, and the
	// keys added since.
	lastRate  float64
	sinceFill uint64
}

// New returns a Deduper that records keys in seen (which may already hold
// keys: those lines count as seen) and writes to out through a buffer of
// outputBuffer bytes. Call Flush when done.
func New(seen SeenSet, out io.Writer, cfg Config) *Deduper {
	d := &Deduper{seen: seen, cfg: cfg, out: bufio.NewWriterSize(out, outputBuffer), size: cfg.BufferSize}
	if d.size <= 0 {
		d.size = DefaultBlockSize
	}
	if bs, ok := seen.(BlockSet); ok {
		d.blocks, d.needs = bs, bs.Needs()
		if d.needs.Links {
			d.needs.Keys, d.needs.Hash = true, true
		}
	} else if hs, ok := seen.(HashSet); ok {
		if seed, ok := hs.HashSeed(); ok {
			d.hashes, d.needs = hs, Needs{Hash: true, Seed: seed, Repeats: true}
		}
	}
	if d.blocks == nil && d.hashes == nil {
		d.needs = Needs{Keys: true}
	}
	procs := runtime.GOMAXPROCS(0)
	d.sequential = cfg.Sequential || procs == 1
	d.workers = cfg.Workers
	if d.workers <= 0 {
		d.workers = min(max(procs-1, 1), maxWorkers)
	}
	if d.sequential {
		d.workers = 1
	}
	for range d.workers {
		d.preparers = append(d.preparers, newPreparer(d.needs, cfg.Key, d.size))
	}
	if !d.sequential {
		d.ownPrep = newPreparer(d.needs, cfg.Key, d.size)
	}
	if cfg.TrackFalsePositives {
		d.lastRate = seen.FalsePositiveRate()
	}
	return d
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
// stops at the first error: a read error (after the lines before it), a
// write error (wrapping ErrOutput), or the filter's (a full
// fixed-capacity filter gives a *LineError wrapping filterfile.ErrFull;
// that line is not written, the lines before it are). After an error
// other than the input's, a goroutine may still be waiting in a Read of
// r: it reads no more once that returns.
func (d *Deduper) Run(r io.Reader) error {
	if d.reader == nil {
		d.reader = new(blockReader)
	}
	br := d.reader
	*br = blockReader{r: r, onRead: d.cfg.OnRead}
	d.runLines = 0
	if d.sequential {
		return d.runSequential(br)
	}
	return d.runConcurrent(br)
}

// own decides the lines of block b, in order, and counts them; it
// returns the error that ends the run (a *LineError for the set's).
func (d *Deduper) own(b *Block) error {
	n, err := d.decide(b)
	b.upto = n
	var added, out uint64
	for _, a := range b.added[:n] {
		if a {
			added++
		}
		if a != d.cfg.Duplicates {
			out++
		}
	}
	d.stats.Added += added
	d.sinceFill += added
	if !d.cfg.CountOnly {
		d.stats.LinesOut += out
	}
	d.stats.LinesIn += uint64(n)
	d.runLines += uint64(n)
	switch {
	case n == b.n:
		d.stats.BytesIn += uint64(b.bytes)
	case n > 0:
		d.stats.BytesIn += uint64(b.ends[n-1])
	}
	if d.cfg.TrackFalsePositives && (d.seen.RateIsCheap() || d.sinceFill*16 >= d.stats.Added) {
		d.settle()
	}
	if err != nil {
		return &LineError{Line: d.runLines + 1, Err: err}
	}
	return nil
}

// decide hands the lines of b to the set.
func (d *Deduper) decide(b *Block) (int, error) {
	added := b.added[:b.n]
	switch {
	case d.blocks != nil:
		return d.blocks.AddUniqueBlock(b, added)
	case d.hashes != nil:
		return d.decideHashes(b, added)
	}
	return d.seen.AddUniqueBatch(b.keys[:b.n], added)
}

// decideHashes hands the set the hashes of b's lines that no earlier
// line of the block has (b.hash[:b.distinct]), and answers the others
// itself: a hash the set was given a moment before is one it holds, so
// such a line is a repeat, as the set would have said. The set's answers
// go to the front of added, and are spread to their lines from the back,
// where no answer not yet spread is overwritten. It returns the lines
// decided: those before the first hash the set did not process.
func (d *Deduper) decideHashes(b *Block, added []bool) (int, error) {
	got, err := d.hashes.AddUniqueHashBatch(b.hash[:b.distinct], added[:b.distinct])
	n := len(added)
	if b.distinct == n {
		return got, err // no repeats: every answer is in its place
	}
	if got < b.distinct {
		// The lines decided end before the got-th distinct one.
		k := 0
		for i, r := range b.repeat[:n] {
			if !r {
				if k == got {
					n = i
					break
				}
				k++
			}
		}
	}
	k := got - 1
	for i := n - 1; i >= 0; i-- {
		if b.repeat[i] {
			added[i] = false
			continue
		}
		added[i] = added[k]
		k--
	}
	return n, err
}

// write writes the lines of b the set decided (b.upto) that are to be
// written. Lines next to each other go out in one Write; a last line
// without '\n' gets one.
func (d *Deduper) write(b *Block) error {
	if d.cfg.CountOnly {
		if b.long != nil {
			d.releaseLong(b)
		}
		return nil
	}
	dups := d.cfg.Duplicates
	if b.long != nil {
		defer d.releaseLong(b)
		if b.upto == 0 || b.added[0] == dups {
			return nil
		}
		var last byte
		for _, piece := range b.long {
			if len(piece) == 0 {
				continue
			}
			if _, err := d.out.Write(piece); err != nil {
				return outputErr(err)
			}
			last = piece[len(piece)-1]
		}
		if last != '\n' {
			if err := d.out.WriteByte('\n'); err != nil {
				return outputErr(err)
			}
		}
		return nil
	}
	from, to, start := 0, 0, 0 // the run of lines to write is data[from:to]
	for i, a := range b.added[:b.upto] {
		end := int(b.ends[i])
		if a != dups {
			if to != start {
				if err := d.writeRun(b.data[from:to]); err != nil {
					return err
				}
				from = start
			}
			to = end
		}
		start = end
	}
	return d.writeRun(b.data[from:to])
}

// releaseLong drops the pieces of a long line once written, collects
// the garbage after a big one, and lets the reader take the next long
// line. A big line with a key built beside it (fields, CSV) also has its
// memory given back to the system, else the next one and its key, made
// before the collector returns it, add to it. Other lines do not: their
// pieces' memory is what the next line's pieces reuse, and giving it
// back only makes the next line fault it in again.
func (d *Deduper) releaseLong(b *Block) {
	size := b.bytes
	clear(b.long[:cap(b.long)])
	b.long = b.long[:0]
	if b.keys != nil {
		b.keys[0] = nil
	}
	switch {
	case size > bigLine && b.keyBuilt:
		debug.FreeOSMemory()
	case size > bigLine:
		runtime.GC()
	}
	b.keyBuilt = false
	if d.reader.longs != nil {
		<-d.reader.longs
	}
}

// writeRun writes lines, adding a '\n' to a last line without one.
func (d *Deduper) writeRun(lines []byte) error {
	if len(lines) == 0 {
		return nil
	}
	_, err := d.out.Write(lines)
	if err == nil && lines[len(lines)-1] != '\n' {
		err = d.out.WriteByte('\n')
	}
	return outputErr(err)
}

func outputErr(err error) error {
	if err != nil {
		return fmt.Errorf("%w: %w", ErrOutput, err)
	}
	return nil
}

// Flush writes out what is buffered. Its error wraps ErrOutput.
func (d *Deduper) Flush() error { return outputErr(d.out.Flush()) }

// Stats returns the counts so far.
func (d *Deduper) Stats() Stats {
	d.settle()
	s := d.stats
	s.Dropped = s.LinesIn - s.Added
	return s
}
