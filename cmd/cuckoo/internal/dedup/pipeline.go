package dedup

import (
	"sync"
	"sync/atomic"
)

// The pipeline of a Run: a reader goroutine cuts the input into blocks
// (blockReader) and hands them, in order, to the workers, which split,
// key and hash them (preparer), and to the caller's goroutine, which
// takes them in the same order, waits for each to be prepared (preparing
// meanwhile any block no worker has taken yet: await) and hands it to
// the set (own), then to a writer goroutine, which writes the
// lines kept and gives the block back. The blocks go round a pool of a
// fixed number, so a slow output holds the reader back and memory stays
// bounded. Only the caller's goroutine touches the set and the counts;
// only the writer, the output buffer.

// blockPool holds the blocks of a Deduper's runs: at most max, made as
// needed.
type blockPool struct {
	free  chan *Block
	made  int // touched by the reader goroutine only
	max   int
	size  int
	needs Needs
}

// blocksPerWorker is how many blocks a pool holds beyond one per worker:
// one being read, one waiting for the set, one with the set, one being
// written, and one spare, so that one stage running late (on two cores,
// the worker shares a core with the reader and the writer) does not stall
// the others at once.
const blocksPerWorker = 4

func newBlockPool(max, size int, needs Needs) *blockPool {
	return &blockPool{free: make(chan *Block, max), max: max, size: size, needs: needs}
}

// get returns a free block, waiting for one if all are in use; nil if
// stop is closed meanwhile.
func (p *blockPool) get(stop <-chan struct{}) *Block {
	select {
	case b := <-p.free:
		return b
	default:
	}
	if p.made < p.max {
		p.made++
		return newBlock(p.size, p.needs)
	}
	select {
	case b := <-p.free:
		return b
	case <-stop:
		return nil
	}
}

// put gives a block back.
func (p *blockPool) put(b *Block) { p.free <- b }

// runSequential is Run on the caller's goroutine: the same steps, one
// block after another, with two blocks (the next one starts with the
// bytes read past the last one's lines).
func (d *Deduper) runSequential(br *blockReader) error {
	for i := range d.pair {
		if d.pair[i] == nil {
			d.pair[i] = newBlock(d.size, d.needs)
		}
	}
	for i := 0; ; i ^= 1 {
		b := d.pair[i]
		br.start(b)
		if !br.fill(b) {
			return br.Err()
		}
		d.preparers[0].prepare(b)
		err := d.own(b)
		if werr := d.write(b); werr != nil {
			return werr
		}
		if err != nil {
			return err
		}
	}
}

// runConcurrent is Run with the work spread over goroutines.
func (d *Deduper) runConcurrent(br *blockReader) error {
	if d.pool == nil {
		d.pool = newBlockPool(d.workers+blocksPerWorker, d.size, d.needs)
	}
	pool := d.pool
	stop := make(chan struct{})
	br.longs, br.stop = make(chan struct{}, 1), stop
	work := make(chan *Block, pool.max)
	order := make(chan *Block, pool.max)
	var wg sync.WaitGroup
	wg.Add(1 + len(d.preparers))
	go func() {
		defer wg.Done()
		defer close(order)
		defer close(work)
		readBlocks(br, pool, work, order, stop)
	}()
	for _, p := range d.preparers {
		go func() {
			defer wg.Done()
			for b := range work {
				p.prepare(b)
				b.ready <- struct{}{}
			}
		}()
	}

	writes := make(chan *Block, pool.max)
	written := make(chan error, 1)
	var writeFailed atomic.Bool
	go func() {
		var err error
		for b := range writes {
			if err == nil {
				if err = d.write(b); err != nil {
					writeFailed.Store(true)
				}
			}
			pool.put(b)
		}
		written <- err
	}()

	var err error
	var steal <-chan *Block = work
	for b := range order {
		steal = d.await(b, steal)
		if writeFailed.Load() {
			break
		}
		err = d.own(b)
		writes <- b
		if err != nil {
			break
		}
	}
	close(writes)
	if werr := <-written; werr != nil {
		err = werr
	}
	if err != nil {
		// The reader may be waiting in a Read that never returns (a pipe
		// nobody writes to): leave it, and its blocks, behind.
		close(stop)
		d.pool, d.reader = nil, nil
		return err
	}
	wg.Wait()
	return br.Err()
}

// await waits until block b is prepared, and meanwhile prepares blocks
// that no worker has taken yet from work (b itself, or one after it), so
// that the caller's goroutine, which the set waits on, is never idle
// while there is work: on two cores the workers share a core with the
// reader and the writer, and fall behind now and then. It returns work,
// or nil once work is closed.
func (d *Deduper) await(b *Block, work <-chan *Block) <-chan *Block {
	for {
		select {
		case <-b.ready:
			return work
		default:
		}
		select {
		case <-b.ready:
			return work
		case w, ok := <-work:
			if !ok {
				work = nil
				continue
			}
			d.ownPrep.prepare(w)
			w.ready <- struct{}{}
		}
	}
}

// readBlocks is the reader goroutine: it fills blocks from the pool and
// hands each to the workers and, in the same order, to the caller's
// goroutine. A block is handed on once the next one has taken the bytes
// read past its lines, before the next one is read.
func readBlocks(br *blockReader, pool *blockPool, work, order chan<- *Block, stop <-chan struct{}) {
	var prev *Block
	for {
		b := pool.get(stop)
		if b == nil {
			return
		}
		br.start(b)
		if prev != nil {
			select {
			case work <- prev:
			case <-stop:
				return
			}
			select {
			case order <- prev:
			case <-stop:
				return
			}
		}
		if !br.fill(b) {
			pool.put(b)
			return
		}
		prev = b
	}
}
