package server

// CF.SCANDUMP / BF.SCANDUMP and CF.LOADCHUNK / BF.LOADCHUNK copy a filter
// out of a server and into another (or the same) in chunks, with
// RedisBloom's iterator protocol:
//
//	SCANDUMP key 0         -> [it1, chunk1]
//	SCANDUMP key it1       -> [it2, chunk2]
//	...                    -> [0, nil]          (the end)
//	LOADCHUNK key it1 chunk1, LOADCHUNK key it2 chunk2, ...
//
// The chunks are pieces of the object encoding (object.go): the library's
// own checksummed filter encoding, not RedisBloom's, so a dump loads back
// into an equal filter here and is refused by RedisBloom. The iterator
// after a chunk is the offset where the chunk ends, plus one, with the
// dump's generation in the bits above (dumpOffsetBits). The encoding
// is taken when iterator 0 is asked for, and the later chunks are cut from
// that copy, so a dump is a consistent picture even while the filter
// changes. An empty filter is dumped too (RedisBloom answers [0, nil] at
// once, losing its parameters).
//
// # The copies
//
// A key has one copy at most: a new SCANDUMP key 0 replaces it. The
// server cannot tell a dump in progress from one its client abandoned
// (it disconnected, crashed, or gave up), and does not tie a copy to the
// connection that began the dump, since a pooled client may ask for each
// chunk on another connection. So a copy is counted, and bounded:
//
//   - its bytes count in keyspace.used, the memory maxmemory bounds and
//     INFO reports (used_memory_dataset; scandump_copies and
//     mem_scandump_copies for the copies alone), and in Stats;
//   - it is freed when the dump ends (the [0, nil] reply), when the key is
//     deleted or overwritten (DEL, UNLINK, RENAME onto it, FLUSHALL), and
//     with the server;
//   - it is dropped once no SCANDUMP has used it for dumpIdle, with or
//     without maxmemory: an abandoned dump holds its copy for minutes, not
//     until the key goes;
//   - a SCANDUMP key 0 whose copy would pass maxmemory gets Redis's OOM
//     error; it never drops another dump's copy to make room (two dumps
//     restarting in turn would drop each other's for ever);
//   - a command that would be refused for maxmemory only because of the
//     copies (Server.overMemory) drops them first, least recently
//     used first, until it fits: the data's writes come before the
//     dumps. When dropping them all would not make room, it drops none.
//
// A chunk is only ever cut from the copy its dump began with: a SCANDUMP
// at an iterator other than 0 for a key without a copy (its dump ended,
// the key was deleted or overwritten, the server restarted, or the copy
// was dropped) gets errDumpGone, telling the client to start again from
// iterator 0. Encoding the filter anew there would stitch chunks of two
// encodings: LOADCHUNK would refuse them late, once the length the first
// chunk announced has arrived (by the checksum) or been passed, or never
// finish when the newer encoding is shorter; and a client keeping the
// chunks (a backup) would not notice at all. Two dumps of one key at
// once share its copy: the later SCANDUMP key 0 replaces it, and the
// earlier dump, whose iterators carry another generation, gets
// errDumpGone too.
//
// LOADCHUNK of the first chunk (its iterator equals its length plus one)
// starts a load into a key that must not exist; the chunks that follow must
// come in order; with the last one the filter is decoded, checked, and
// stored. Until then the key does not exist.

import (
	"cmp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// A dump's iterators carry its generation, so that a chunk is cut only
// from the copy its dump began with: the bits from dumpOffsetBits up
// hold the generation (1 to dumpGenerations, counted per key, wrapping),
// the bits below the offset where the last chunk ended, plus one.
// LOADCHUNK reads the offset alone. Iterators stay below 2^53, so that
// clients that read integers as floating-point numbers (JavaScript's)
// send them back intact.
const (
	dumpOffsetBits  = 40
	dumpOffsetMask  = 1<<dumpOffsetBits - 1
	dumpGenerations = 1<<(53-dumpOffsetBits) - 1
)

// dumpIdle is how long a dump's copy is kept unused: the server's
// background task drops a copy no SCANDUMP has used (begun or continued)
// for that long, checking once a second. A client takes a chunk, of
// 16 MiB at most, and asks for the next: minutes between two are a client
// that gave up. errDumpGone's text names it.
const dumpIdle = 5 * time.Minute

// maxDumpChunk is the most bytes one SCANDUMP returns, as in RedisBloom
// (a variable for the tests).
var maxDumpChunk int64 = 16 << 20

// pendingLoad is a LOADCHUNK sequence in progress.
type pendingLoad struct {
	kind  kind
	total uint64
	buf   []byte
}

// dumpErrors are the texts a kind's dump commands answer with, as
// RedisBloom words them: for an iterator that is not a number (SCANDUMP,
// LOADCHUNK), a chunk out of place, a first chunk that is not a header, a
// dump that does not decode.
type dumpErrors struct {
	scanIter, loadIter, position, header, load replyError
}

func dumpErrorsOf(k kind) dumpErrors {
	if k == kindCF {
		return dumpErrors{errCFInvalidPosition, errCFInvalidPosition, errCFInvalidPosition, errCFInvalidHeader, errCFLoadChunk}
	}
	return dumpErrors{errBFScanDumpIter, errBFLoadChunkIter, errBFBadOffset, errBFBadData, errBFBadData}
}

// dumpCopies are the copies dumps in progress are served from: the
// objects whose dump is not nil. Their bytes are counted in keyspace.used
// too. Lock order: object.mu, then object.dumpMu, then mu.
type dumpCopies struct {
	mu    sync.Mutex
	held  map[*object]struct{}
	bytes atomic.Int64  // the copies' length, summed
	tick  atomic.Uint64 // the last object.dumpTick given
	now   func() int64  // the clock of object.dumpUsed, in nanoseconds (monotonicNow but in tests)
}

// count returns the number of copies held.
func (d *dumpCopies) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.held)
}

// setDump makes enc the copy o's dump is served from, replacing any, and
// counts it. The caller holds o.dumpMu.
func (ks *keyspace) setDump(o *object, enc []byte) {
	delta := int64(len(enc)) - int64(len(o.dump))
	if o.dump == nil {
		ks.dumps.mu.Lock()
		ks.dumps.held[o] = struct{}{}
		ks.dumps.mu.Unlock()
	}
	o.dump = enc
	ks.used.Add(delta)
	ks.dumps.bytes.Add(delta)
	ks.useDump(o)
}

// useDump notes that o's copy served a chunk now. The caller holds
// o.dumpMu.
func (ks *keyspace) useDump(o *object) {
	o.dumpUsed.Store(ks.dumps.now())
	o.dumpTick.Store(ks.dumps.tick.Add(1))
}

// releaseDump frees o's copy, if it has one. The caller holds o.dumpMu.
func (ks *keyspace) releaseDump(o *object) {
	if o.dump == nil {
		return
	}
	ks.used.Add(-int64(len(o.dump)))
	ks.dumps.bytes.Add(-int64(len(o.dump)))
	o.dump = nil
	ks.dumps.mu.Lock()
	delete(ks.dumps.held, o)
	ks.dumps.mu.Unlock()
}

// heldDump is a copy held, with the dumpTick of its last use when it was
// listed.
type heldDump struct {
	o    *object
	tick uint64
}

// heldDumps lists the copies held, least recently used first.
func (ks *keyspace) heldDumps() []heldDump {
	ks.dumps.mu.Lock()
	list := make([]heldDump, 0, len(ks.dumps.held))
	for o := range ks.dumps.held {
		list = append(list, heldDump{o, o.dumpTick.Load()})
	}
	ks.dumps.mu.Unlock()
	slices.SortFunc(list, func(a, b heldDump) int { return cmp.Compare(a.tick, b.tick) })
	return list
}

// dropUnused frees h's copy unless it served a chunk since it was listed
// (or was replaced). The caller holds no object's dumpMu.
func (ks *keyspace) dropUnused(h heldDump) {
	h.o.dumpMu.Lock()
	if h.o.dumpTick.Load() == h.tick {
		ks.releaseDump(h.o)
	}
	h.o.dumpMu.Unlock()
}

// dropDumps frees copies, least recently used first, until enough
// reports true or none is left. A copy that served a chunk since the
// order was taken is kept. The caller holds no object's dumpMu.
func (ks *keyspace) dropDumps(enough func() bool) {
	for _, h := range ks.heldDumps() {
		if enough() {
			return
		}
		ks.dropUnused(h)
	}
}

// dropIdleDumps frees the copies no SCANDUMP has used for dumpIdle or
// longer. A copy used after it was found idle is kept (dropUnused). The
// caller holds no object's dumpMu.
func (ks *keyspace) dropIdleDumps() {
	idleSince := ks.dumps.now() - int64(dumpIdle)
	for _, h := range ks.heldDumps() {
		if h.o.dumpUsed.Load() <= idleSince {
			ks.dropUnused(h)
		}
	}
}

// pendingLoads returns the number of LOADCHUNK sequences in progress and
// the bytes of the chunks they hold, which keyspace.used counts too.
func (s *Server) pendingLoads() (n int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.mu.loads {
		bytes += int64(len(p.buf))
	}
	return len(s.mu.loads), bytes
}

// dropLoads abandons the LOADCHUNK sequences in progress into keys (nil:
// every one), freeing the chunks they hold: DEL and FLUSHALL, the only
// commands that can free what a client began and never finished (the key
// does not exist until the last chunk).
func (s *Server) dropLoads(keys [][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	drop := func(k string, p *pendingLoad) {
		s.ks.used.Add(-int64(len(p.buf)))
		delete(s.mu.loads, k)
	}
	if keys == nil {
		for k, p := range s.mu.loads {
			drop(k, p)
		}
		return
	}
	for _, k := range keys {
		if p := s.mu.loads[string(k)]; p != nil {
			drop(string(k), p)
		}
	}
}

// SCANDUMP key iterator

type scanDumpReq struct {
	key  []byte
	iter int64
	kind kind
}

func parseScanDump(k kind) func(args [][]byte) (scanDumpReq, error) {
	return func(args [][]byte) (scanDumpReq, error) {
		if len(args) != 3 {
			return scanDumpReq{}, errArity
		}
		n, ok := parseInt(args[2])
		if !ok || n < 0 {
			return scanDumpReq{}, dumpErrorsOf(k).scanIter
		}
		return scanDumpReq{args[1], n, k}, nil
	}
}

func (r scanDumpReq) run(c *call) {
	key, iter, ks := r.key, r.iter, c.s.ks
	o := c.readExisting(key, r.kind)
	if o == nil {
		return
	}
	o.dumpMu.Lock()
	fail := func(err error) {
		o.dumpMu.Unlock()
		o.mu.RUnlock()
		c.fail(err)
	}
	if iter == 0 {
		// The new copy replaces the key's old one; it never drops
		// another key's (see the file comment).
		if c.s.pastMemory(o.encodedSize() - int64(len(o.dump))) {
			fail(errOOM)
			return
		}
		enc, err := o.encode()
		if err != nil {
			fail(err)
			return
		}
		ks.setDump(o, enc)
		o.dumpGen = o.dumpGen%dumpGenerations + 1
	} else if o.dump == nil || iter>>dumpOffsetBits != int64(o.dumpGen) {
		fail(errDumpGone)
		return
	}
	dump := o.dump
	start := max(iter&dumpOffsetMask-1, 0)
	var chunk []byte
	var next int64
	if start < int64(len(dump)) {
		end := min(start+maxDumpChunk, int64(len(dump)))
		chunk, next = dump[start:end], int64(o.dumpGen)<<dumpOffsetBits|(end+1)
		ks.useDump(o)
	} else {
		ks.releaseDump(o) // the dump is over
	}
	o.dumpMu.Unlock()
	o.mu.RUnlock()
	c.w.Array(2)
	c.w.Int(next)
	if chunk == nil {
		c.w.Null()
		return
	}
	c.w.Bulk(chunk)
}

// LOADCHUNK key iterator data

type loadChunkReq struct {
	key  []byte
	iter int64
	data []byte
	kind kind
}

func parseLoadChunk(k kind) func(args [][]byte) (loadChunkReq, error) {
	return func(args [][]byte) (loadChunkReq, error) {
		if len(args) != 4 {
			return loadChunkReq{}, errArity
		}
		n, ok := parseInt(args[2])
		if !ok || k == kindCF && n == 0 {
			return loadChunkReq{}, dumpErrorsOf(k).loadIter
		}
		return loadChunkReq{args[1], n, args[3], k}, nil
	}
}

func (r loadChunkReq) run(c *call) {
	key, iter, data, k := r.key, r.iter, r.data, r.kind
	s, ks, errs := c.s, c.s.ks, dumpErrorsOf(k)
	pos := iter & dumpOffsetMask // a dump's iterator carries its generation above
	start := pos - 1 - int64(len(data))
	if pos < 1 || start < 0 {
		c.fail(errs.position)
		return
	}
	var enc []byte
	if start == 0 {
		if o := ks.get(key); o != nil {
			if o.kind != k {
				c.fail(errWrongType)
			} else {
				c.fail(errItemExists)
			}
			return
		}
		total, err := encodedLength(data)
		if err != nil || uint64(len(data)) > total {
			c.fail(errs.header)
			return
		}
		if !c.replay && total > uint64(s.cfg.MaxFilterBytes) {
			c.fail(errLoadTooLarge)
			return
		}
		if uint64(len(data)) < total {
			s.mu.Lock()
			if old := s.mu.loads[string(key)]; old != nil {
				ks.used.Add(-int64(len(old.buf)))
			}
			s.mu.loads[string(key)] = &pendingLoad{kind: k, total: total, buf: append([]byte(nil), data...)}
			ks.used.Add(int64(len(data)))
			s.mu.Unlock()
			c.w.OK()
			return
		}
		enc = data
	} else {
		s.mu.Lock()
		p := s.mu.loads[string(key)]
		if p == nil || p.kind != k || uint64(start) != uint64(len(p.buf)) {
			s.mu.Unlock()
			c.fail(errs.position)
			return
		}
		if uint64(start)+uint64(len(data)) > p.total {
			delete(s.mu.loads, string(key))
			ks.used.Add(-int64(len(p.buf)))
			s.mu.Unlock()
			c.fail(errs.load)
			return
		}
		p.buf = append(p.buf, data...)
		ks.used.Add(int64(len(data)))
		if uint64(len(p.buf)) < p.total {
			s.mu.Unlock()
			c.w.OK()
			return
		}
		delete(s.mu.loads, string(key))
		ks.used.Add(-int64(len(p.buf)))
		s.mu.Unlock()
		enc = p.buf
	}
	fresh, err := decodeObject(enc, k)
	if err != nil {
		c.fail(errs.load)
		return
	}
	// The log keeps the dump in chunks of SCANDUMP's size, which a replay
	// loads as a client's: one record of a dump of many GB would be past
	// the most a recovery reads (maxLogRecord). No other record of the key
	// comes between them: the key is not visible yet.
	o, err := createNew(c, key, fresh, func(epoch uint64) {
		for off := int64(0); off < int64(len(enc)); off += maxDumpChunk {
			end := min(off+maxDumpChunk, int64(len(enc)))
			c.log(epoch, [][]byte{c.args[0], key, strconv.AppendInt(nil, end+1, 10), enc[off:end]})
		}
	})
	if err != nil {
		c.fail(err)
		return
	}
	ks.unlockWrite(o)
	c.w.OK()
}
