// Package exactdedup is the engine of 'cuckoo dedup --exact': line dedup
// with no false drops at any size.
//
// A run that keeps nothing (no Config.Dir) records the distinct keys in
// a scratch seen-set: an append-only log in a temporary file, written
// without syncs, and an index in RAM from each key's hash to its record,
// whose fragments of the hash act as a filter in front of the log, so
// that a new key seldom reads the log (at most about 1 in 600 times,
// at the largest sizes before the index is rebuilt), and a repeat once
// to confirm it (a repeat of a line earlier in the same block of input
// is confirmed in memory, and so are the log's newest MiB, its pages
// read last and the short keys confirmed last). It
// runs on dedup's pipeline:
// the input is read, split and hashed on other goroutines than the one
// that owns the seen-set. RAM is the index, 9.4 to 19 bytes per distinct
// line (it doubles as it fills), plus the buffers; the lines themselves
// go to the log on disk.
//
// A kept seen-set (Config.Dir) is a store.Store, and each line's key goes
// to it with PutIfAbsent, one at a time: the store's index in RAM is the
// filter (a tag of 15 bits or more per key), about 9 bytes per distinct
// line, and its log keeps the lines for later runs.
//
// Lines are read as package dedup reads them, as cuckoo dedup without
// --exact does: "a\r\n" and "a\n" are the same line (each printed as
// read), and a last line without "\n" gets one. So the output is that of
//
//	awk '{ k = $0; sub(/\r$/, "", k) } !seen[k]++'
//
// which is that of awk '!seen[$0]++' on input without CR (awk takes the
// CR as part of the line).
//
// # The seen-set on disk
//
// The store's keys are the lines' keys, each behind a byte that keeps
// them apart from the store's other keys: 1 and the key, or, for a key
// of store.MaxKeySize bytes or more, 2 and its SHA-256 (the key itself is
// then the value, and compared). A kept store also holds the key
// "\x00dedup --exact-dir", which marks it as a seen-set, so that
// 'cuckoo store' reads its keys as lines (IsSeenSet, StoreKey).
package exactdedup

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/dedup"
	"github.com/dedupkit/cuckoo/store"
)

// Config says what a Deduper writes and where it keeps the seen keys.
type Config struct {
	// Dir is the store of seen keys, kept after Close (keys already in it
	// count as seen); "" keeps nothing: the seen keys go to a scratch log
	// in TempDir, removed by Close.
	Dir string
	// TempDir is where the scratch log goes ("": os.TempDir()).
	TempDir string
	// Lines is how many lines the input has, about (0: unknown), to size
	// the scratch log's index from.
	Lines uint64
	// Key extracts each line's key from its content (nil: the content).
	Key *dedup.KeyExtractor
	// Duplicates writes the repeats instead of the first occurrences.
	Duplicates bool
	// CountOnly writes no lines.
	CountOnly bool
	// OnRead is called with each chunk read (for progress), on another
	// goroutine than Run's when nothing is kept.
	OnRead func(chunk []byte)
	// Sequential does a run that keeps nothing on Run's goroutine alone
	// (see dedup.Config).
	Sequential bool
}

// Stats counts what a Deduper did.
type Stats struct {
	LinesIn, LinesOut, Distinct, BytesIn uint64
	Keys                                 uint64 // the keys in the seen-set (a kept one's from earlier runs too)
	IndexBytes                           uint64 // the RAM of the seen-set's index
	LogBytes                             uint64 // the bytes of its log on disk
	LogReads                             uint64 // reads of the scratch log's file (a page, or a record across pages)
}

// Deduper removes repeated lines. Its methods are not safe for concurrent
// use, except Stop, which may be called while Run runs.
type Deduper struct {
	cfg Config

	// A run that keeps nothing: a scratch seen-set behind dedup's
	// pipeline.
	scratch *scratch
	pipe    *dedup.Deduper

	// A kept store: one line at a time.
	kr  *dedup.KeyReader
	key []byte
	// mu is held while a line is recorded and written, so that Stop finds
	// every line recorded in the store also in the output buffer.
	mu sync.Mutex
	s  *store.Store
	// outMu guards out and outErr: the store flushes the output
	// (flushBeforeRecords) from whichever goroutine writes its records,
	// a checkpoint's included.
	outMu   sync.Mutex
	out     *bufio.Writer
	outErr  error // the output's first error (flush)
	stats   Stats
	stopped bool
}

// seenSetMark is the key that marks a store as a seen-set. Its NUL byte
// keeps it apart from the lines' keys (which begin with 1 or 2) and from
// the keys a command line can give.
var seenSetMark = []byte("\x00dedup --exact-dir")

// ErrNotSeenSet is returned by New for a kept store that holds other keys
// than lines: one that 'cuckoo store put' or 'import' wrote.
var ErrNotSeenSet = errors.New("exactdedup: the store holds other keys than seen lines")

// IsSeenSet reports whether s is a seen-set that a Deduper kept.
func IsSeenSet(s *store.Store) (bool, error) { return s.Has(seenSetMark) }

// StoreKey returns the key under which a seen-set records the line key k,
// for a key shorter than store.MaxKeySize (ok is false for a longer one,
// which the seen-set records under its SHA-256).
func StoreKey(k []byte) (key []byte, ok bool) {
	if len(k) >= store.MaxKeySize {
		return nil, false
	}
	return append([]byte{1}, k...), true
}

// ErrOutput wraps the errors of writing the output.
var ErrOutput = dedup.ErrOutput

// ErrStopped is returned by Run after Stop.
var ErrStopped = errors.New("exactdedup: stopped")

// New opens the seen-set (a kept store, or a new scratch log) and returns
// a Deduper writing to out.
func New(out io.Writer, cfg Config) (*Deduper, error) {
	d := &Deduper{cfg: cfg}
	if cfg.Dir == "" {
		sc, err := newScratch(cfg.TempDir, cfg.Lines)
		if err != nil {
			return nil, err
		}
		d.scratch = sc
		d.pipe = dedup.New(sc, out, dedup.Config{Key: cfg.Key, Duplicates: cfg.Duplicates, CountOnly: cfg.CountOnly,
			OnRead: cfg.OnRead, Sequential: cfg.Sequential})
		return d, nil
	}
	d.kr, d.out = dedup.NewKeyReader(cfg.Key, 0), bufio.NewWriterSize(out, dedup.DefaultBufferSize)
	// The output is flushed before the store writes records to its file,
	// so that whenever the process is killed, every line recorded was
	// printed (a later run may print a line again, never lose one).
	s, err := store.Open(cfg.Dir, store.WithSync(store.SyncNever), store.WithAutoCompact(0, 0),
		store.WithBeforeWrite(d.flush))
	if err == nil {
		if err = markSeenSet(s); err != nil {
			s.Close()
		}
	}
	if err != nil {
		return nil, err
	}
	d.s = s
	d.kr.OnRead(func(c []byte) {
		d.stats.BytesIn += uint64(len(c))
		if cfg.OnRead != nil {
			cfg.OnRead(c)
		}
	})
	return d, nil
}

// markSeenSet marks a kept store as a seen-set: a new one, or one that an
// earlier version kept without the mark (all its keys are lines' keys).
// It refuses a store that holds other keys.
func markSeenSet(s *store.Store) error {
	if ok, err := IsSeenSet(s); ok || err != nil {
		return err
	}
	if s.Len() > 0 {
		var other []byte
		err := s.Range(func(k, _ []byte) bool {
			if len(k) == 0 || k[0] != 1 && k[0] != 2 {
				other = append([]byte(nil), k...)
				return false
			}
			return true
		})
		if err != nil {
			return err
		}
		if other != nil {
			return fmt.Errorf("%w (such as %q)", ErrNotSeenSet, other)
		}
	}
	return s.Put(seenSetMark, nil)
}

// storeKey turns a line's key into the store's key: 1 and the key, or,
// for a key longer than the store takes, 2 and its SHA-256 (the line
// itself is then kept as the value and compared).
func (d *Deduper) storeKey(k []byte) (key []byte, long bool) {
	if len(k) < store.MaxKeySize { // StoreKey, without an allocation
		d.key = append(append(d.key[:0], 1), k...)
		return d.key, false
	}
	sum := sha256.Sum256(k)
	d.key = append(append(d.key[:0], 2), sum[:]...)
	return d.key, true
}

// seen records k and reports whether it was seen before.
func (d *Deduper) seen(k []byte) (bool, error) {
	key, long := d.storeKey(k)
	if !long {
		stored, err := d.s.PutIfAbsent(key, nil)
		return !stored, err
	}
	// A key past MaxKeySize: stored under its SHA-256 with the key as the
	// value (up to MaxValueSize), and compared, so that only equal keys
	// count as seen.
	var v []byte
	if len(k) <= store.MaxValueSize {
		v = k
	}
	for i := byte(0); ; i++ {
		stored, err := d.s.PutIfAbsent(key, v)
		if err != nil || stored {
			return false, err
		}
		if v == nil {
			return true, nil
		}
		// Compared in place: the stored line is never read whole.
		same, err := d.s.ValueEquals(key, k)
		if err != nil {
			return false, err
		}
		if same {
			return true, nil
		}
		key = append(key, i) // a SHA-256 collision: the next key
	}
}

// Run dedups the lines of r, continuing from the keys seen so far.
func (d *Deduper) Run(r io.Reader) error {
	if d.pipe != nil {
		err := d.pipe.Run(r)
		if errors.Is(err, ErrStopped) {
			return ErrStopped
		}
		return err
	}
	d.kr.Reset(r)
	for {
		line, k, ok := d.kr.Next()
		if !ok {
			break
		}
		if err := d.line(line, k); err != nil {
			return err
		}
	}
	return d.kr.Err()
}

// printFirst is the length from which a new line is printed before its
// key is recorded: the store writes a record too large for its buffer to
// its file at once (after flushing the output, WithBeforeWrite), which
// for a line recorded first would reach the file before the line.
const printFirst = 64 << 10

// line records one line's key k and writes the line if it is to be
// printed, under d.mu.
func (d *Deduper) line(line, k []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return ErrStopped
	}
	d.stats.LinesIn++
	var dup, printed bool
	var err error
	if len(k) >= printFirst && !d.cfg.Duplicates && !d.cfg.CountOnly {
		if dup, err = d.has(k); err == nil && !dup {
			if err := d.print(line); err != nil {
				return err
			}
			printed = true
			_, err = d.seen(k)
		}
	} else {
		dup, err = d.seen(k)
	}
	if err == nil {
		d.outMu.Lock()
		err = d.outErr
		d.outMu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("line %d: %w", d.kr.Line(), err)
	}
	if !dup {
		d.stats.Distinct++
	}
	if printed || dup != d.cfg.Duplicates || d.cfg.CountOnly {
		return nil
	}
	return d.print(line)
}

// print writes line, with a '\n' if it has none.
func (d *Deduper) print(line []byte) error {
	d.stats.LinesOut++
	d.outMu.Lock()
	defer d.outMu.Unlock()
	if _, err := d.out.Write(line); err != nil {
		return fmt.Errorf("%w: %w", ErrOutput, err)
	}
	if line[len(line)-1] != '\n' {
		if err := d.out.WriteByte('\n'); err != nil {
			return fmt.Errorf("%w: %w", ErrOutput, err)
		}
	}
	return nil
}

// has reports whether key k was seen, recording nothing (seen's lookup).
func (d *Deduper) has(k []byte) (bool, error) {
	key, long := d.storeKey(k)
	if !long {
		return d.s.Has(key)
	}
	for i := byte(0); ; i++ {
		var same bool
		var err error
		if len(k) > store.MaxValueSize {
			same, err = d.s.Has(key)
			if !same && err == nil {
				err = store.ErrNotFound
			}
		} else {
			// Compared in place: the stored line is never read whole.
			same, err = d.s.ValueEquals(key, k)
		}
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if same {
			return true, nil
		}
		key = append(key, i) // a SHA-256 collision: the next key
	}
}

// Stop ends a run from another goroutine (on an interrupt). With a kept
// store, after the line being recorded, it writes the buffered output,
// so that every line recorded as seen has been written, and closes the
// store; with a scratch log, after the block being recorded, it closes
// and removes the log. Run then returns ErrStopped; Close does nothing
// more.
func (d *Deduper) Stop() error {
	if d.scratch != nil {
		return d.scratch.stop()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return nil
	}
	d.stopped = true
	err := d.flush()
	if cerr := d.s.Close(); err == nil {
		err = cerr
	}
	return err
}

// Flush writes what is buffered.
func (d *Deduper) Flush() error {
	if d.pipe != nil {
		return d.pipe.Flush()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.flush()
}

// flush writes the buffered output. It is also the store's
// WithBeforeWrite, which writes the keys of the lines flushed: when the
// output fails, so does the store's write, so the keys of the lines not
// written are not recorded either, and a later run prints them. The
// first error is kept (outErr) for the line being recorded to return.
func (d *Deduper) flush() error {
	d.outMu.Lock()
	defer d.outMu.Unlock()
	if d.outErr == nil {
		if err := d.out.Flush(); err != nil {
			d.outErr = fmt.Errorf("%w: %w", ErrOutput, err)
		}
	}
	return d.outErr
}

// Stats returns the counts so far (without the seen-set's, once stopped
// or closed).
func (d *Deduper) Stats() Stats {
	if d.pipe != nil {
		ps := d.pipe.Stats()
		st := Stats{LinesIn: ps.LinesIn, LinesOut: ps.LinesOut, Distinct: ps.Added, BytesIn: ps.BytesIn, Keys: ps.Added}
		st.IndexBytes, st.LogBytes, st.LogReads = d.scratch.sizes()
		return st
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.stats
	if !d.stopped {
		ss := d.s.Stats()
		st.Keys, st.IndexBytes, st.LogBytes = ss.Keys, ss.IndexBytes, ss.LogBytes
	}
	return st
}

// Close closes the seen-set: a kept store stays, a scratch log is
// removed.
func (d *Deduper) Close() error {
	if d.scratch != nil {
		return d.scratch.stop()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return nil
	}
	d.stopped = true
	return d.s.Close()
}
