package dedup

import (
	"bytes"
	"errors"
	"io"
	"runtime/debug"
	"time"

	"github.com/dedupkit/cuckoo/internal/hash"
)

// A Deduper reads its input in blocks: runs of whole lines read with one
// or a few large Reads, then split, keyed and hashed on other goroutines
// than the one that owns the seen-set (pipeline.go). A block holds at
// most its size in bytes and a sixteenth of that in lines. A line longer
// than a block is a block of its own, read into pieces that are never
// copied into one another, so that it costs its size once (plus a
// block), and joined into one slice only when its key must be one (a
// key of fields, an exact seen-set): then it costs its size twice, a key
// built of several fields or CSV included (as long again: the pieces,
// garbage once joined, are given back to the system before the key is
// built). One long line is read at a time, and once a line of more than
// bigLine bytes is written its memory is given back too, so that the
// next one does not add to it.

// bigLine is the size of a line after which a Deduper collects garbage.
const bigLine = 16 << 20

// DefaultBlockSize is the size of a Deduper's blocks (Config.BufferSize
// when 0).
const DefaultBlockSize = 64 << 10

// minBlockLines is the fewest lines a block may hold, however small.
const minBlockLines = 64

// blockLines returns the most lines a block of size bytes holds: a
// sixteenth of its size, so that the line table (about 13 bytes a line,
// more with keys) stays within about its size.
func blockLines(size int) int { return max(size/16, minBlockLines) }

// Block is a run of consecutive lines of one input, with what the
// seen-set asked to have computed for each (Needs): its key, its key's
// hash, the first line of the block with the same key, its time. A
// Deduper hands each block to its SeenSet in input order. A Block and the
// slices its methods return are valid only during the call it is given
// to.
type Block struct {
	buf  []byte   // the block's memory: data is buf[:len(data)]
	data []byte   // lines, back to back, and the start of the next block
	cut  int      // data[:cut] are the block's lines
	long [][]byte // a line longer than a block: its pieces, in order (n is 1)
	// keyBuilt reports whether long's pieces were joined and a key built
	// of them beside (fields, CSV): the memory of a big one is given
	// back once it is written (Deduper.releaseLong).
	keyBuilt bool
	n        int      // lines
	ends     []int32  // ends[i]: the offset in data just past line i
	keys     [][]byte // keys[i], when asked for
	hash     []uint64 // the hash of keys[i], when asked for
	// first[i] is the first line of the block whose key equals keys[i],
	// when asked for.
	first []int32
	// repeat[i] reports that an earlier line of the block has line i's
	// hash, when asked for (Needs.Repeats); hash[:distinct] then holds the
	// hashes of the other lines, in order.
	repeat   []bool
	distinct int

	times   []time.Time
	keyEnds []int32 // ends of the keys built in arena
	arena   []byte  // keys the extractor built (several fields, CSV)
	// timeErrAt is the first line whose time could not be read (-1:
	// none), timeErr its error.
	timeErrAt int
	timeErr   error
	added     []bool
	upto      int           // lines the set decided, which may be written
	bytes     int           // input bytes the lines take
	ready     chan struct{} // a worker has prepared the block
}

// Len returns the number of lines in b.
func (b *Block) Len() int { return b.n }

// Keys returns the keys of the lines (Needs.Keys).
func (b *Block) Keys() [][]byte { return b.keys[:b.n] }

// Hashes returns the hashes of the lines' keys (Needs.Hash).
func (b *Block) Hashes() []uint64 { return b.hash[:b.n] }

// First returns the first line of b whose key equals line i's: i itself
// when none before it does (Needs.Links).
func (b *Block) First(i int) int { return int(b.first[i]) }

// Times returns the lines' times (Needs.Times) up to the first line whose
// time could not be read, and that line's error (nil when every time was
// read).
func (b *Block) Times() (times []time.Time, err error) {
	if b.timeErrAt >= 0 {
		return b.times[:b.timeErrAt], b.timeErr
	}
	return b.times[:b.n], nil
}

// Needs says what a BlockSet wants computed for each line of a block.
type Needs struct {
	Keys bool // Block.Keys
	// Hash asks for Block.Hashes: hash.Sum64 of each key with Seed, the
	// hash the filters of this module give a key.
	Hash bool
	Seed uint64
	// Links asks for Block.First; it implies Keys and Hash.
	Links bool
	// Repeats, with Hash, has the lines whose hash an earlier line of the
	// block has marked as repeats, and the others' hashes compacted to
	// the front of the hashes in order (Block.hash[:Block.distinct], so
	// Block.Hashes is not the lines' then): for a set that sees only
	// hashes, to which such a line is a repeat whatever its key (a
	// HashSet's Deduper asks for it).
	Repeats bool
	// Times asks for Block.Times, read with copies of this field.
	Times *TimeField
}

// newBlock returns an empty block of size bytes.
func newBlock(size int, needs Needs) *Block {
	lines := blockLines(size)
	b := &Block{buf: make([]byte, size), ends: make([]int32, lines), added: make([]bool, lines),
		ready: make(chan struct{}, 1), timeErrAt: -1}
	if needs.Keys {
		b.keys = make([][]byte, lines)
	}
	if needs.Hash {
		b.hash = make([]uint64, lines)
	}
	if needs.Links {
		b.first = make([]int32, lines)
	}
	if needs.Repeats {
		b.repeat = make([]bool, lines)
	}
	if needs.Times != nil {
		b.times = make([]time.Time, lines)
	}
	return b
}

// blockReader cuts an input into blocks.
type blockReader struct {
	r io.Reader
	// longs, when set, holds a token while a long line is in the
	// pipeline (fillLong takes it, the writer gives it back), and stop
	// ends a wait for it.
	longs  chan struct{}
	stop   <-chan struct{}
	onRead func(chunk []byte)
	err    error  // the error that ended r (io.EOF at its end)
	carry  []byte // the start of the next block, read with the last one
	short  bool   // the last Read returned less than it was asked for
	empty  int    // Reads in a row that returned nothing
}

// errStopped ends the reading of a run that stopped.
var errStopped = errors.New("dedup: stopped")

// maxEmptyReads is how many Reads in a row may return nothing before the
// reader is taken to be broken (io.ErrNoProgress), as bufio does.
const maxEmptyReads = 100

// start begins block b with the bytes read past the last block's lines;
// after it, the last block may be handed on.
func (br *blockReader) start(b *Block) {
	b.data = b.buf[:copy(b.buf, br.carry)]
	br.carry = nil
	b.long, b.n, b.timeErrAt, b.timeErr = nil, 0, -1, nil
}

// fill reads block b, begun by start, and reports whether it holds a
// line: false at the end of the input (Err then says why it ended).
//
// A block ends after the last line end in its buffer once the buffer is
// full, or once a Read returned less than it was asked for (a pipe:
// what has come is handed on, not held back for more); and after
// blockLines lines. With no line end in a full buffer, the line is long
// and is read into pieces of its own (fillLong).
func (br *blockReader) fill(b *Block) bool {
	scanned, line := 0, false
	for {
		if !line && bytes.IndexByte(b.data[scanned:], '\n') >= 0 {
			line = true
		}
		scanned = len(b.data)
		if br.err != nil || line && br.short {
			break
		}
		if len(b.data) == len(b.buf) {
			if line {
				break
			}
			br.fillLong(b)
			return true
		}
		b.data = br.read(b.data, len(b.buf))
	}
	return br.cut(b)
}

// read reads once into p[len(p):size], returning p extended by what it
// read.
func (br *blockReader) read(p []byte, size int) []byte {
	want := size - len(p)
	n, err := br.r.Read(p[len(p):size])
	if n < 0 || n > want {
		n, err = 0, io.ErrNoProgress // a broken Reader: never trust its count
	}
	if n > 0 && br.onRead != nil {
		br.onRead(p[len(p) : len(p)+n])
	}
	br.short = n < want
	switch {
	case err != nil:
		br.err = err
	case n > 0:
		br.empty = 0
	default:
		if br.empty++; br.empty >= maxEmptyReads {
			br.err = io.ErrNoProgress
		}
	}
	return p[:len(p)+n]
}

// cut ends block b after its last whole line (after its last byte at the
// end of the input), or after its blockLines-th line, and keeps the rest
// for the next block. It reports whether b holds a line.
func (br *blockReader) cut(b *Block) bool {
	data := b.data
	end := len(data)
	if br.err == nil {
		end = bytes.LastIndexByte(data, '\n') + 1
	}
	if e := nthLineEnd(data[:end], len(b.ends)); e >= 0 {
		end = e // past the most lines: cut after the last one of them
	}
	b.cut, b.bytes = end, end
	br.carry = data[end:]
	return end > 0
}

// nthLineEnd returns the offset just past the n-th line end ('\n') of
// data, or -1 if data holds fewer. It counts the line ends of a stretch
// at a time and looks for them one by one only in the stretch that holds
// the n-th: input of short lines (numbers, ids) fills a block's lines
// long before its bytes, and a search per line end would cost as much as
// the preparer's split that follows.
func nthLineEnd(data []byte, n int) int {
	const stretch = 4 << 10
	for start := 0; start < len(data); start += stretch {
		s := data[start:min(start+stretch, len(data))]
		if k := bytes.Count(s, []byte{'\n'}); k < n {
			n -= k
			continue
		}
		end := start
		for range n {
			end += bytes.IndexByte(data[end:], '\n') + 1
		}
		return end
	}
	return -1
}

// fillLong reads the rest of a line longer than block b, whose full
// buffer holds its start, into pieces of its own; the block's buffer goes
// with the line, and the block gets a new one.
func (br *blockReader) fillLong(b *Block) {
	if br.longs != nil {
		select {
		case br.longs <- struct{}{}:
		case <-br.stop:
			br.err = errStopped
			br.cut(b)
			return
		}
	}
	size := len(b.buf)
	b.long, b.keyBuilt = append(b.long[:0], b.data), false
	b.bytes = len(b.data)
	b.buf, b.data, b.cut, b.n = make([]byte, size), nil, 0, 1
	for {
		p := make([]byte, 0, size)
		for len(p) < size && br.err == nil {
			old := len(p)
			p = br.read(p, size)
			if i := bytes.IndexByte(p[old:], '\n'); i >= 0 {
				end := old + i + 1
				b.long = append(b.long, p[:end])
				b.bytes += end
				br.carry = p[end:]
				return
			}
		}
		b.long = append(b.long, p)
		b.bytes += len(p)
		if br.err != nil {
			return
		}
	}
}

// Err returns the error that ended the input, nil at a clean end.
func (br *blockReader) Err() error {
	if br.err == io.EOF {
		return nil
	}
	return br.err
}

// preparer computes what the seen-set needs for each line of a block:
// one per goroutine, each with its own copies of the extractors.
type preparer struct {
	needs Needs
	keyer *KeyExtractor
	times *TimeField
	// built reports whether keyer builds keys in its scratch buffer
	// (which the next key overwrites) rather than slicing the line.
	built bool
	links []int32 // an open-addressing table of lines (index + 1) by hash
	// hashes is an open-addressing table of a block's distinct hashes
	// (their index in the compacted hashes + 1), for Needs.Repeats.
	hashes []int32
}

func newPreparer(needs Needs, keyer *KeyExtractor, size int) *preparer {
	p := &preparer{needs: needs}
	if keyer != nil {
		p.keyer = keyer.Clone()
		p.built = !keyer.SlicesContent()
	}
	if needs.Times != nil {
		p.times = needs.Times.Clone()
	}
	n := tableSize(blockLines(size))
	if needs.Links {
		p.links = make([]int32, n)
	}
	if needs.Repeats {
		p.hashes = make([]int32, n)
	}
	return p
}

// prepare splits block b into lines and computes their keys, hashes,
// links and times, as needed.
func (p *preparer) prepare(b *Block) {
	if b.long != nil {
		p.prepareLong(b)
		if p.needs.Repeats {
			p.markRepeats(b)
		}
		return
	}
	data := b.data[:b.cut]
	keys := p.needs.Keys
	if p.built && keys {
		b.arena, b.keyEnds = b.arena[:0], b.keyEnds[:0]
	}
	n := 0
	for start := 0; start < len(data); n++ {
		end := len(data)
		if i := bytes.IndexByte(data[start:], '\n'); i >= 0 {
			end = start + i + 1
		}
		b.ends[n] = int32(end)
		content := Content(data[start:end])
		start = end
		key := content
		if p.keyer != nil {
			key = p.keyer.Key(content)
		}
		if p.needs.Hash {
			b.hash[n] = hash.Sum64(key, p.needs.Seed)
		}
		if keys {
			if p.built {
				b.arena = append(b.arena, key...)
				b.keyEnds = append(b.keyEnds, int32(len(b.arena)))
			} else {
				b.keys[n] = key
			}
		}
		if p.times != nil && b.timeErrAt < 0 {
			t, err := p.times.Time(content)
			b.times[n] = t
			if err != nil {
				b.timeErrAt, b.timeErr = n, err
			}
		}
	}
	b.n = n
	if p.built && keys {
		start := int32(0)
		for i, end := range b.keyEnds {
			b.keys[i] = b.arena[start:end:end]
			start = end
		}
	}
	if p.needs.Links {
		p.link(b)
	}
	if p.needs.Repeats {
		p.markRepeats(b)
	}
}

// markRepeats marks the lines of b whose hash an earlier line has, and
// moves the others' hashes, in order, to the front of b.hash, in place:
// line i's hash goes to slot u <= i (the distinct lines before it), so no
// hash is overwritten before it is read.
func (p *preparer) markRepeats(b *Block) {
	table := blockTable(p.hashes, b.n)
	mask := uint64(len(table) - 1)
	u := 0
	for i := range b.n {
		h := b.hash[i]
		for s := h & mask; ; s = (s + 1) & mask {
			e := table[s]
			if e == 0 {
				table[s] = int32(u + 1)
				b.hash[u], b.repeat[i] = h, false
				u++
				break
			}
			if b.hash[e-1] == h {
				b.repeat[i] = true
				break
			}
		}
	}
	b.distinct = u
}

// link sets b.first: a table of the block's first occurrences by hash,
// whose keys are compared, so that only equal keys are linked.
func (p *preparer) link(b *Block) {
	table := blockTable(p.links, b.n)
	mask := uint64(len(table) - 1)
	for i := range b.n {
		h := b.hash[i]
		for s := h & mask; ; s = (s + 1) & mask {
			e := table[s]
			if e == 0 {
				table[s] = int32(i + 1)
				b.first[i] = int32(i)
				break
			}
			if j := int(e - 1); b.hash[j] == h && bytes.Equal(b.keys[j], b.keys[i]) {
				b.first[i] = int32(j)
				break
			}
		}
	}
}

// tableSize is the entries of an open-addressing table for n lines: the
// least power of two of at least 2n, so that a probe always finds an
// empty slot.
func tableSize(n int) int {
	size := 1
	for size < 2*n {
		size <<= 1
	}
	return size
}

// blockTable returns the cleared front of table (tableSize of a full
// block's lines) to use for a block of n lines: no larger than n needs,
// so that a short block (a slow pipe's) clears only as much.
func blockTable(table []int32, n int) []int32 {
	table = table[:tableSize(n)]
	clear(table)
	return table
}

// prepareLong prepares a block of one long line. Its key is hashed
// piece by piece when nothing else needs it whole; else the line's
// content is joined into one slice (and its pieces dropped).
func (p *preparer) prepareLong(b *Block) {
	b.n = 1
	// The terminator: "\n", "\r\n", or a lone "\r" ending the input, as
	// Content cuts it, possibly across pieces.
	total := 0
	for _, piece := range b.long {
		total += len(piece)
	}
	term := 0
	if total > 0 && byteAt(b.long, total-1) == '\n' {
		term = 1
	}
	if total > term && byteAt(b.long, total-term-1) == '\r' {
		term++
	}
	content := total - term
	if p.keyer == nil && !p.needs.Keys && p.times == nil {
		if p.needs.Hash {
			stream := hash.NewStream(p.needs.Seed)
			left := content
			for _, piece := range b.long {
				piece = piece[:min(len(piece), left)]
				stream.Write(piece)
				left -= len(piece)
			}
			b.hash[0] = stream.Sum64()
		}
		return
	}
	line := make([]byte, 0, content)
	tail := make([]byte, 0, term)
	for _, piece := range b.long {
		k := min(len(piece), content-len(line))
		line = append(line, piece[:k]...)
		tail = append(tail, piece[k:]...)
	}
	clear(b.long[:cap(b.long)])
	b.long = append(b.long[:0], line, tail)
	b.keyBuilt = p.built
	if p.built && content > bigLine {
		// The key is built beside the line: give the pieces' memory
		// back first, or they stay resident beside both (3 times the
		// line in all, from twice).
		debug.FreeOSMemory()
	}
	key := line
	if p.keyer != nil {
		key = p.keyer.Key(line)
		if p.built {
			// The key is in the extractor's scratch buffer, which its next
			// key overwrites: the block takes the buffer, and the
			// preparer a new extractor, rather than a copy of the key (its
			// size once more), and the preparer keeps no buffer the size
			// of a long line for the lines after it.
			p.keyer = p.keyer.Clone()
		}
	}
	if p.needs.Hash {
		b.hash[0] = hash.Sum64(key, p.needs.Seed)
	}
	if p.needs.Keys {
		b.keys[0] = key
	}
	if p.needs.Links {
		b.first[0] = 0
	}
	if p.times != nil {
		t, err := p.times.Time(line)
		b.times[0] = t
		if err != nil {
			b.timeErrAt, b.timeErr = 0, err
		}
	}
}

// byteAt returns byte i of the pieces joined.
func byteAt(pieces [][]byte, i int) byte {
	for _, piece := range pieces {
		if i < len(piece) {
			return piece[i]
		}
		i -= len(piece)
	}
	panic("dedup: byteAt past the end")
}
