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
// after a chunk is the offset where the chunk ends, plus one. The encoding
// is taken when iterator 0 is asked for, and the later chunks are cut from
// that copy, so a dump is a consistent picture even while the filter
// changes. An empty filter is dumped too (RedisBloom answers [0, nil] at
// once, losing its parameters).
//
// LOADCHUNK of the first chunk (its iterator equals its length plus one)
// starts a load into a key that must not exist; the chunks that follow must
// come in order; with the last one the filter is decoded, checked, and
// stored. Until then the key does not exist.

import (
	"strconv"
)

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
	key, iter := r.key, r.iter
	o := c.readExisting(key, r.kind)
	if o == nil {
		return
	}
	o.dumpMu.Lock()
	if iter == 0 || o.dump == nil {
		enc, err := o.encode()
		if err != nil {
			o.dumpMu.Unlock()
			o.mu.RUnlock()
			c.fail(err)
			return
		}
		o.dump = enc
	}
	dump := o.dump
	start := max(iter-1, 0)
	var chunk []byte
	var next int64
	if start < int64(len(dump)) {
		end := min(start+maxDumpChunk, int64(len(dump)))
		chunk, next = dump[start:end], end+1
	} else {
		o.dump = nil // the dump is over
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
	start := iter - 1 - int64(len(data))
	if iter < 1 || start < 0 {
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
