package cuckoo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/dedupkit/cuckoo/internal/codec"
	"github.com/dedupkit/cuckoo/internal/format"
	"github.com/dedupkit/cuckoo/internal/table/chain"
	"github.com/dedupkit/cuckoo/internal/table/concurrent"
)

// snapshot copies the state: the table encoding of a fixed-capacity
// filter (a Filter's), the chain of a growing one (a Scalable's). Writers
// wait while the tables are copied; readers do not.
func (c *Concurrent) snapshot() (*tableEncoding, *chainState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.st.Load()
	if ch == nil {
		return nil, nil, errors.New("cuckoo: the zero Concurrent has no table to encode")
	}
	// A delete may have emptied the oldest table and not released it yet
	// (it waits for mu): release it now, as the encoding must not hold it.
	if ts := dropLeading(ch.tables); len(ts) != len(ch.tables) {
		ch = ch.with(ts)
		c.publish(ch)
	}
	// Memory first, while writers go on; the table sizes cannot change
	// while mu is held.
	bufs := make([][]uint64, len(ch.tables))
	for i, t := range ch.tables {
		bufs[i] = t.SnapshotBuffer()
	}
	start := time.Now()
	for _, t := range ch.tables {
		t.Exclusive()
	}
	defer func() {
		for i := len(ch.tables) - 1; i >= 0; i-- {
			ch.tables[i].EndExclusive()
		}
		c.pause.Store(int64(time.Since(start)))
	}()
	if ch.grow == nil {
		t := ch.tables[0]
		m, _ := t.SnapshotLocked(bufs[0])
		return &tableEncoding{m: m, seed: ch.seed, capacity: t.Gen().Capacity, maxKicks: ch.maxKicks}, nil, nil
	}
	st := &chainState{g: *ch.grow, seed: ch.seed, maxKicks: ch.maxKicks}
	for i, t := range ch.tables {
		m, over := t.SnapshotLocked(bufs[i])
		g := t.Gen()
		lv := &chain.Level{Plain: m, Gen: g.K, Capacity: g.Capacity, Limit: g.Limit, Over: over}
		for _, v := range over {
			lv.NOver += v
		}
		st.extra += lv.NOver
		st.levels = append(st.levels, lv)
	}
	// A delete may have emptied the oldest tables between dropLeading and
	// the locks: the encoding holds no empty oldest table.
	st.dropEmpty()
	return nil, st, nil
}

// MarshalBinary encodes a consistent snapshot of the filter: as a Filter
// (kind 1) for a fixed-capacity filter, as a Scalable (kind 2) for a
// growing one. It allocates a copy of the tables. On a 32-bit platform a
// growing filter's tables may add up to more than one []byte holds
// (2 GiB): MarshalBinary then returns an error, and WriteTo writes the
// encoding.
func (c *Concurrent) MarshalBinary() ([]byte, error) {
	e, st, err := c.snapshot()
	if err != nil {
		return nil, err
	}
	var buf *bytes.Buffer
	if e != nil {
		if buf, err = encodingBuffer(e.size()); err == nil {
			_, err = e.writeTo(buf)
		}
	} else {
		if buf, err = encodingBuffer(st.encodedSize()); err == nil {
			_, err = st.writeTo(buf)
		}
	}
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteTo writes the encoding of a consistent snapshot of the filter to w
// (see [Concurrent.MarshalBinary]) and returns the number of bytes written.
// Writers wait only while the tables are copied in memory, not during the
// writes to w.
func (c *Concurrent) WriteTo(w io.Writer) (int64, error) {
	e, st, err := c.snapshot()
	if err != nil {
		return 0, err
	}
	if e != nil {
		return e.writeTo(w)
	}
	return st.writeTo(w)
}

// UnmarshalBinary replaces the filter's state with one encoded by a
// Concurrent, a Filter (kind 1: a fixed-capacity filter) or a Scalable
// (kind 2: a growing one). A Concurrent's tables do not grow in place: a
// Scalable's newest table, if it is growing, is loaded at its full size
// (the memory a Concurrent with WithGrowth gives a new table), so the
// encoding of the result differs from the one loaded. Damaged data gives
// an error wrapping [ErrCorrupt]; an encoding with semi-sorted buckets, or
// with a table this platform cannot hold (see [Scalable.UnmarshalBinary]),
// gives one wrapping [ErrInvalidParameter]; a stream's table is refused
// after its header, before anything is allocated for it. On error the
// filter is unchanged.
func (c *Concurrent) UnmarshalBinary(data []byte) error {
	d := codec.NewBytesDecoder(data)
	ch, err := decodeChain(d, sniffKind(data))
	if err == nil {
		err = d.ExpectEnd()
	}
	if err != nil {
		return decodeError(err)
	}
	return c.replace(ch)
}

// decodeError is corrupt, except for a valid encoding Concurrent cannot
// take.
func decodeError(err error) error {
	if errors.Is(err, errSemiConcurrent) {
		return err
	}
	return asDecodeError(err)
}

// ReadFrom replaces the filter's state with one read from r (see
// [Concurrent.UnmarshalBinary]) and returns the number of bytes read. It
// reads exactly the encoding.
func (c *Concurrent) ReadFrom(r io.Reader) (int64, error) {
	var head [format.StartSize]byte
	n, err := io.ReadFull(r, head[:])
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = codec.ErrTruncated
		}
		return int64(n), asDecodeError(err)
	}
	d := codec.NewDecoder(io.MultiReader(bytes.NewReader(head[:]), r))
	ch, err := decodeChain(d, sniffKind(head[:]))
	if err != nil {
		return d.Read(), decodeError(err)
	}
	return d.Read(), c.replace(ch)
}

// sniffKind returns the kind of encoding data starts with, or 0 when it
// is not one this build reads: then the Filter decoder says what is wrong.
func sniffKind(data []byte) format.Kind {
	s, err := format.Sniff(data)
	if err != nil {
		return 0
	}
	return s.Kind
}

// decodeChain decodes a Filter or a Scalable, by kind, into a chain.
func decodeChain(d *codec.Decoder, kind format.Kind) (*cchain, error) {
	if kind == format.Scalable {
		st, err := decodeChainState(d)
		if err != nil {
			return nil, err
		}
		if st.g.semi {
			return nil, errSemiConcurrent
		}
		g := st.g
		ch := &cchain{seed: st.seed, maxKicks: st.maxKicks, grow: &g}
		for i, lv := range st.levels {
			if lv.Grow != nil {
				// A Concurrent's tables are plain: the growing one takes
				// its full size, as it would have in a chain that doubles.
				lv.GrowToFull()
			}
			state := concurrent.Sealed
			if i == len(st.levels)-1 {
				state = concurrent.Open
			}
			g := concurrent.Gen{K: lv.Gen, Capacity: lv.Capacity, Limit: lv.Limit, Growing: true}
			ch.tables = append(ch.tables, concurrent.From(&lv.Plain, st.maxKicks, lv.Over, g, state))
		}
		return ch, nil
	}
	e, err := decodeFilter(d) // rejects any other kind
	if err != nil {
		return nil, err
	}
	t := &e.m.T
	if t.Semi {
		return nil, errSemiConcurrent
	}
	ch := &cchain{seed: e.seed, maxKicks: e.maxKicks}
	g := concurrent.Gen{Capacity: e.capacity, Limit: t.NumBuckets * t.Slots}
	ch.tables = []*concurrent.Table{concurrent.From(&e.m, e.maxKicks, nil, g, concurrent.Open)}
	return ch, nil
}

var errSemiConcurrent = fmt.Errorf("%w: Concurrent does not support semi-sorted buckets", ErrInvalidParameter)

func (c *Concurrent) replace(ch *cchain) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch.epoch = c.epoch.Add(1)
	c.publish(ch)
	return nil
}
