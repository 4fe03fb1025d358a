package exactdedup

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/dedup"
	"github.com/dedupkit/cuckoo/internal/hash"
)

// scratch is the seen-set of a run that keeps nothing (no Config.Dir):
// the distinct keys in an append-only log in a temporary file, written
// without syncs (nothing is recovered from it), and an index in RAM from
// each key's hash to its record (index.go), whose fragments of the hash
// act as a filter in front of the log: a key reads the log only when an
// entry has its fragment, which a key never seen has with a probability
// of about 8 × load × 2^−fragBits (fragments of 12 to 23 bits). The
// log's newest MiB is still in memory, and is read there, and so are the
// short keys confirmed last (hotKeys) and the pages of the file
// read last (logPages).
//
// A record is the key's length (a uvarint) and the key. It carries no
// checksum: the file lives as long as the run, unlinked as soon as it is
// made where the system allows.
type scratch struct {
	// mu is held while a block is recorded, so that stop, from another
	// goroutine, closes the log between blocks.
	mu      sync.Mutex
	stopped bool
	seed    uint64
	ix      *index
	f       *os.File
	path    string // the file's name, while it is not unlinked
	buf     []byte // the log's tail not yet written: from offset flushed
	flushed int64  // bytes of the log written to the file
	size    int64  // bytes of the log
	keys    uint64 // distinct keys
	locs    []uint64
	rd      []byte // a read of the log
	reads   uint64 // reads of the file
	hot     *hotKeys
	pages   *logPages // made at the first read of the file
}

// hotKeys holds the short keys confirmed last (repeats), by hash: a
// repeat of one is settled without the index or the file (most repeats
// of the frequent lines of real text). A slot holds the key it was last
// given, always one the set holds. A key added is not put there: the
// repeat of a recent key is found in the log's newest MiB or among its
// pages read last anyway, so a random write per new key would cost more
// than it saves, and keys seen once would push out the repeated ones.
type hotKeys struct {
	hash [hotSlots]uint64
	len  [hotSlots]uint8 // 0: empty, else the key's length + 1
	key  [hotSlots][hotKeyMax]byte
}

const (
	hotSlots  = 1 << 14
	hotKeyMax = 56 // longer keys are not kept
)

// has reports whether key k, of hash h, is kept: then the set holds it.
func (c *hotKeys) has(h uint64, k []byte) bool {
	i := h & (hotSlots - 1)
	return int(c.len[i]) == len(k)+1 && c.hash[i] == h && string(c.key[i][:len(k)]) == string(k)
}

// put keeps key k, of hash h, which the set holds, if it is short.
func (c *hotKeys) put(h uint64, k []byte) {
	if len(k) > hotKeyMax {
		return
	}
	i := h & (hotSlots - 1)
	c.hash[i], c.len[i] = h, uint8(len(k)+1)
	copy(c.key[i][:], k)
}

// logPages holds the pages of the log's file read last, by page number.
// The repeats that get past hotKeys come in runs more often than not: a
// file copied into another directory, generated code, a list sent twice.
// The lines of such a run were added together, so their records share
// pages, and a page read for the run's first line holds the next
// hundred or so.
type logPages struct {
	at   [pageSlots]int64 // the page's number + 1 (0: none)
	n    [pageSlots]int32 // the bytes read: the last page may be partial
	data [pageSlots][pageSize]byte
}

const (
	pageShift = 12
	pageSize  = 1 << pageShift
	pageSlots = 1 << 8 // 1 MiB
)

// page returns the bytes of the log's file from offset off to the end of
// its page, at least need of them (off+need no further than the bytes
// written to the file), reading the page unless it is held.
func (s *scratch) page(off, need int64) ([]byte, error) {
	if s.pages == nil {
		s.pages = new(logPages)
	}
	c := s.pages
	n, base := off>>pageShift, off&^(pageSize-1)
	i := n % pageSlots
	if c.at[i] != n+1 || int64(c.n[i]) < off-base+need {
		// Read the whole page, or the file's end if that comes first.
		p := c.data[i][:min(pageSize, s.flushed-base)]
		c.at[i] = 0
		s.reads++
		if _, err := s.f.ReadAt(p, base); err != nil {
			return nil, fmt.Errorf("reading the scratch log: %w", err)
		}
		c.at[i], c.n[i] = n+1, int32(len(p))
	}
	return c.data[i][off-base : c.n[i]], nil
}

const (
	// logBuffer is the log's tail kept in memory before it is written.
	logBuffer = 1 << 20
	// readChunk is the most bytes of a record one read of the file takes.
	readChunk = 64 << 10
	// maxLog is the largest log the index's locations address.
	maxLog = locMask - 1
	// maxInitialBuckets bounds the index a hint of lines starts it at
	// (log2; 64 MiB).
	maxInitialBuckets = 20
	// lookGroup is how many lines AddUniqueBlock looks up at once, with
	// the index buckets of the next group's prefetched meanwhile.
	lookGroup = 16
)

// errLogFull is the error of a log that reached maxLog bytes.
var errLogFull = errors.New("exactdedup: the scratch log of seen lines is full (1 TiB)")

// newScratch makes an empty scratch seen-set in a temporary file in dir
// ("": os.TempDir()), with an index sized for lines lines of which a
// quarter are distinct (0: unknown).
func newScratch(dir string, lines uint64) (*scratch, error) {
	f, err := os.CreateTemp(dir, "cuckoo-exact-*.log")
	if err != nil {
		return nil, err
	}
	s := &scratch{seed: rand.Uint64(), f: f, path: f.Name(), buf: make([]byte, 0, logBuffer), hot: new(hotKeys),
		ix: newIndex(min(bucketsFor(lines/4), maxInitialBuckets))}
	if os.Remove(s.path) == nil {
		s.path = "" // unlinked: the system frees it when the file closes
	}
	return s, nil
}

// Needs asks for the lines' keys, their hashes with the set's seed, and
// the links between equal keys of a block.
func (s *scratch) Needs() dedup.Needs {
	return dedup.Needs{Keys: true, Hash: true, Seed: s.seed, Links: true}
}

// FalsePositiveRate is 0: the set is exact.
func (s *scratch) FalsePositiveRate() float64 { return 0 }

// RateIsCheap is true.
func (s *scratch) RateIsCheap() bool { return true }

// AddUniqueBatch adds each key not seen before, in order.
func (s *scratch) AddUniqueBatch(keys [][]byte, added []bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return 0, ErrStopped
	}
	for i, k := range keys {
		h := hash.Sum64(k, s.seed)
		seen, err := s.seen(k, h)
		if err == nil && !seen {
			err = s.add(k, h)
		}
		if err != nil {
			return i, err
		}
		added[i] = !seen
	}
	return len(keys), nil
}

// AddUniqueBlock decides a block's lines a group at a time: the first
// occurrence of each key in the block is looked up, a later line with the
// same key is a repeat, and the new keys are added, in order, while the
// index buckets of the next group's first occurrences are prefetched (so
// that their cache misses overlap each other and this group's work).
// Within a group the first occurrences are distinct keys, so each is new
// exactly when the set held it before the group.
func (s *scratch) AddUniqueBlock(b *dedup.Block, added []bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return 0, ErrStopped
	}
	keys, hs := b.Keys(), b.Hashes()
	s.prefetchGroup(b, hs, 0)
	for lo := 0; lo < len(keys); lo += lookGroup {
		hi := min(lo+lookGroup, len(keys))
		s.prefetchGroup(b, hs, hi)
		// A repeat in the block, or of a kept key, needs no lookup.
		var settled [lookGroup]bool
		for i := lo; i < hi; i++ {
			settled[i-lo] = b.First(i) != i || s.hot.has(hs[i], keys[i])
		}
		var err error
		for i := lo; i < hi; i++ {
			if settled[i-lo] {
				added[i] = false
				continue
			}
			var seen bool
			if seen, err = s.seen(keys[i], hs[i]); err != nil {
				hi = i
				break
			}
			added[i] = !seen
		}
		for i := lo; i < hi; i++ {
			if added[i] {
				if aerr := s.add(keys[i], hs[i]); aerr != nil {
					return i, aerr
				}
			}
		}
		if err != nil {
			return hi, err
		}
	}
	return len(keys), nil
}

// prefetchGroup prefetches the index buckets of the first occurrences
// among the group of lines of b from lo (none past the block's end).
func (s *scratch) prefetchGroup(b *dedup.Block, hs []uint64, lo int) {
	for i := lo; i < min(lo+lookGroup, len(hs)); i++ {
		if b.First(i) == i {
			s.ix.prefetch(hs[i])
		}
	}
}

// seen reports whether the set holds key k, whose hash is h.
func (s *scratch) seen(k []byte, h uint64) (bool, error) {
	if s.hot.has(h, k) {
		return true, nil
	}
	s.locs = s.ix.candidates(h, s.locs[:0])
	for _, loc := range s.locs {
		eq, err := s.holds(int64(loc-1), k)
		if eq {
			s.hot.put(h, k)
		}
		if eq || err != nil {
			return eq, err
		}
	}
	return false, nil
}

// add appends k to the log and indexes it.
func (s *scratch) add(k []byte, h uint64) error {
	off := s.size
	rec := int64(uvarintLen(uint64(len(k))) + len(k))
	if off+rec > maxLog {
		return errLogFull
	}
	if len(s.buf)+int(rec) > cap(s.buf) {
		if err := s.flush(); err != nil {
			return err
		}
	}
	if int(rec) > cap(s.buf) {
		// A record larger than the buffer goes straight to the file.
		hdr := binary.AppendUvarint(nil, uint64(len(k)))
		if _, err := s.f.Write(hdr); err != nil {
			return err
		}
		if _, err := s.f.Write(k); err != nil {
			return err
		}
		s.flushed += rec
	} else {
		s.buf = binary.AppendUvarint(s.buf, uint64(len(k)))
		s.buf = append(s.buf, k...)
	}
	s.size += rec
	s.keys++
	for !s.ix.insert(h, uint64(off)+1) {
		if err := s.grow(off); err != nil {
			return err
		}
	}
	return nil
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// flush writes the log's buffered tail to the file.
func (s *scratch) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	if _, err := s.f.Write(s.buf); err != nil {
		return err
	}
	s.flushed += int64(len(s.buf))
	s.buf = s.buf[:0]
	return nil
}

// holds reports whether the record at offset off holds key k.
func (s *scratch) holds(off int64, k []byte) (bool, error) {
	if off >= s.flushed {
		return isRecordOf(s.buf[off-s.flushed:], k), nil
	}
	// A record that is k fills need bytes from off, within the file.
	need := int64(uvarintLen(uint64(len(k))) + len(k))
	if off+need > s.flushed {
		return false, nil
	}
	if (off+need-1)>>pageShift == off>>pageShift {
		rec, err := s.page(off, need)
		if err != nil {
			return false, err
		}
		return isRecordOf(rec, k), nil
	}
	// Across pages: the first read takes the length and, for a key of up
	// to readChunk bytes, the whole key.
	want := min(int64(binary.MaxVarintLen64+len(k)), readChunk, s.flushed-off)
	p, err := s.readAt(off, int(want))
	if err != nil {
		return false, err
	}
	l, hdr := binary.Uvarint(p)
	if hdr <= 0 || l != uint64(len(k)) {
		return false, nil
	}
	p = p[hdr:min(len(p), hdr+len(k))]
	off += int64(hdr + len(p))
	for {
		if !bytes.Equal(p, k[:len(p)]) {
			return false, nil
		}
		if k = k[len(p):]; len(k) == 0 {
			return true, nil
		}
		if p, err = s.readAt(off, min(len(k), readChunk)); err != nil {
			return false, err
		}
		off += int64(len(p))
	}
}

// isRecordOf reports whether rec starts with the record of key k; rec
// holds at least the bytes of k's record (the buffer's tail, or a page).
func isRecordOf(rec, k []byte) bool {
	l, hdr := binary.Uvarint(rec)
	return hdr > 0 && l == uint64(len(k)) && bytes.Equal(rec[hdr:hdr+len(k)], k)
}

// readAt reads n bytes of the file at off into s.rd.
func (s *scratch) readAt(off int64, n int) ([]byte, error) {
	if cap(s.rd) < n {
		s.rd = make([]byte, n)
	}
	s.reads++
	p := s.rd[:n]
	if _, err := s.f.ReadAt(p, off); err != nil {
		return nil, fmt.Errorf("reading the scratch log: %w", err)
	}
	return p, nil
}

// grow doubles the index, or rebuilds it from the keys of the log's
// records before offset end when its fragments are too short to double.
func (s *scratch) grow(end int64) error {
	if s.ix.double() {
		return nil
	}
	return s.rebuild(end)
}

// rebuild makes a new index with whole fragments, twice the size of the
// one that filled, as a doubling makes it (sized for the keys instead, it
// would take the key being added past twice the size, and be four times
// it), from the keys of the log's records before offset end: the key
// being added, whose record ends the log, is indexed by add.
func (s *scratch) rebuild(end int64) error {
	if err := s.flush(); err != nil {
		return err
	}
	nx := newIndex(s.ix.k + 1)
	r := bufio.NewReaderSize(io.NewSectionReader(s.f, 0, end), readChunk)
	key := make([]byte, readChunk)
	for off := int64(0); off < end; {
		l, err := binary.ReadUvarint(r)
		if err != nil {
			return fmt.Errorf("reading the scratch log: %w", err)
		}
		var h uint64
		if l <= readChunk {
			if _, err := io.ReadFull(r, key[:l]); err != nil {
				return fmt.Errorf("reading the scratch log: %w", err)
			}
			h = hash.Sum64(key[:l], s.seed)
		} else {
			stream := hash.NewStream(s.seed)
			for left := l; left > 0; {
				chunk := key[:min(left, readChunk)]
				if _, err := io.ReadFull(r, chunk); err != nil {
					return fmt.Errorf("reading the scratch log: %w", err)
				}
				stream.Write(chunk)
				left -= uint64(len(chunk))
			}
			h = stream.Sum64()
		}
		if !nx.insert(h, uint64(off)+1) {
			return errors.New("exactdedup: the index of the scratch log found no room rebuilding")
		}
		off += int64(uvarintLen(l)) + int64(l)
	}
	s.ix = nx
	return nil
}

// sizes returns the bytes of the index in RAM and of the log, and the
// reads of the log's file.
func (s *scratch) sizes() (index, log, reads uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ix.bytes(), uint64(s.size), s.reads
}

// stop closes the log and removes its file if it was not unlinked;
// later blocks get ErrStopped.
func (s *scratch) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	err := s.f.Close()
	if s.path != "" {
		if rerr := os.Remove(s.path); err == nil {
			err = rerr
		}
	}
	return err
}
