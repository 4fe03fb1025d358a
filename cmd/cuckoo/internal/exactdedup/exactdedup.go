// Package exactdedup is the engine of 'cuckoo dedup --exact': line dedup
// with no false drops at any size. Each line's key goes to a store.Store
// with PutIfAbsent: the store's index in RAM is the filter (a tag of 15
// bits or more per key), which sends fewer than 0.1 % of new lines to the
// disk; a line whose tag matches is verified against the key in the log.
// RAM is the index, about 9 bytes per distinct line, plus the buffers;
// the lines themselves go to the store's log on disk, in a temporary
// directory or one the caller keeps.
//
// Lines are read as package dedup reads them: "a\r\n" and "a\n" are the
// same line (each printed as read), and a last line without "\n" gets
// one. So the output is that of
//
//	awk '{ k = $0; sub(/\r$/, "", k) } !seen[k]++'
//
// which is awk '!seen[$0]++' on input without CR.
package exactdedup

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/dedup"
	"github.com/dedupkit/cuckoo/store"
)

// Config says what a Deduper writes and where it keeps the seen keys.
type Config struct {
	// Dir is the store of seen keys, kept after Close (keys already in it
	// count as seen); "" makes a temporary one in TempDir, removed by
	// Close.
	Dir string
	// TempDir is where the temporary store goes ("": os.TempDir()).
	TempDir string
	// Key extracts each line's key from its content (nil: the content).
	Key *dedup.KeyExtractor
	// Duplicates writes the repeats instead of the first occurrences.
	Duplicates bool
	// CountOnly writes no lines.
	CountOnly bool
	// OnRead is called with each chunk read (for progress).
	OnRead func(chunk []byte)
}

// Stats counts what a Deduper did.
type Stats struct {
	LinesIn, LinesOut, Distinct, BytesIn uint64
	Store                                store.Stats
}

// Deduper removes repeated lines. Its methods are not safe for concurrent
// use, except Stop, which may be called while Run runs.
type Deduper struct {
	cfg Config
	kr  *dedup.KeyReader
	key []byte

	// mu is held while a line is recorded and written, so that Stop finds
	// every line recorded in the store also in the output buffer.
	mu      sync.Mutex
	s       *store.Store
	tmp     string
	out     *bufio.Writer
	stats   Stats
	stopped bool
}

// ErrOutput wraps the errors of writing the output.
var ErrOutput = errors.New("exactdedup: writing the output")

// ErrStopped is returned by Run after Stop.
var ErrStopped = errors.New("exactdedup: stopped")

// New opens the store of seen keys and returns a Deduper writing to out.
func New(out io.Writer, cfg Config) (*Deduper, error) {
	d := &Deduper{cfg: cfg, kr: dedup.NewKeyReader(cfg.Key, 0), out: bufio.NewWriterSize(out, dedup.DefaultBufferSize)}
	dir := cfg.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp(cfg.TempDir, "cuckoo-exact-")
		if err != nil {
			return nil, err
		}
		d.tmp, dir = tmp, tmp
	}
	s, err := store.Open(dir, store.WithSync(store.SyncNever), store.WithAutoCompact(0, 0))
	if err != nil {
		if d.tmp != "" {
			os.RemoveAll(d.tmp)
		}
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

// storeKey turns a line's key into the store's key: 1 and the key, or,
// for a key longer than the store takes, 2 and its SHA-256 (the line
// itself is then kept as the value and compared).
func (d *Deduper) storeKey(k []byte) (key []byte, long bool) {
	if len(k) < store.MaxKeySize {
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
		old, err := d.s.Get(key)
		if err != nil {
			return false, err
		}
		if v == nil || string(old) == string(k) {
			return true, nil
		}
		key = append(key, i) // a SHA-256 collision: the next key
	}
}

// Run dedups the lines of r, continuing from the keys seen so far.
func (d *Deduper) Run(r io.Reader) error {
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

// line records one line's key k and writes the line if it is to be
// printed, under d.mu.
func (d *Deduper) line(line, k []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return ErrStopped
	}
	d.stats.LinesIn++
	dup, err := d.seen(k)
	if err != nil {
		return fmt.Errorf("line %d: %w", d.kr.Line(), err)
	}
	if !dup {
		d.stats.Distinct++
	}
	if dup != d.cfg.Duplicates || d.cfg.CountOnly {
		return nil
	}
	d.stats.LinesOut++
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

// Stop ends a run from another goroutine (on an interrupt): after the
// line being recorded, it writes the buffered output, so that every line
// recorded as seen has been written, and closes the store (a temporary
// one is removed). Run then returns ErrStopped; Close does nothing more.
func (d *Deduper) Stop() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return nil
	}
	d.stopped = true
	err := d.flush()
	if cerr := d.close(); err == nil {
		err = cerr
	}
	return err
}

// Flush writes what is buffered.
func (d *Deduper) Flush() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.flush()
}

func (d *Deduper) flush() error {
	if err := d.out.Flush(); err != nil {
		return fmt.Errorf("%w: %w", ErrOutput, err)
	}
	return nil
}

// Stats returns the counts so far (without the store's, once stopped or
// closed).
func (d *Deduper) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.stats
	if !d.stopped {
		st.Store = d.s.Stats()
	}
	return st
}

// Close closes the store, and removes it if it is temporary.
func (d *Deduper) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return nil
	}
	d.stopped = true
	return d.close()
}

func (d *Deduper) close() error {
	err := d.s.Close()
	if d.tmp != "" {
		if rerr := os.RemoveAll(d.tmp); err == nil {
			err = rerr
		}
	}
	return err
}
