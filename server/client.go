package server

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dedupkit/cuckoo/server/resp"
)

// A connection is served in one of two ways. On Linux an event loop
// (loop_linux.go) serves many: it waits for the connections that have
// data, reads each once, runs what arrived, makes the batch's log records
// durable with one write, and sends each connection its replies, as Redis
// does. Elsewhere, and for a listener whose connections have no file
// descriptor, a goroutine serves each connection (serveGoroutine). Both
// run commands with the same code (runBuffered, finishBatch).

// unauthLimits are the request limits of a client that has not yet given
// the password, as in Redis: enough for AUTH and HELLO, no more.
var unauthLimits = resp.Limits{MaxBulk: 16 << 10, MaxArray: 10, MaxInline: 16 << 10, MaxCommand: 64 << 10}

// flushThreshold is the size of pending replies past which a batch is
// flushed before the next command runs, so that a long pipeline's replies
// flow back as they are made.
const flushThreshold = 64 << 10

// client is one connection.
type client struct {
	s       *Server
	nc      net.Conn // nil when an event loop serves the connection
	lc      *loopConn
	id      int64
	addr    string
	created time.Time
	rd      *resp.Reader
	lim     *resp.Limits // the limits rd has, once authenticated
	w       *resp.Writer
	authed  bool
	quit    bool
	call    call

	// logOff is the log offset after the records of the client's own
	// pending writes, seenOff the log's end when its last command ran:
	// a reply may tell of any write logged before it (another
	// connection's CF.ADD that this one's CF.ADDNX found), so it waits
	// until the log holds those too, as durably as its own. flushed is
	// the offset already made durable for this client.
	logOff, seenOff, flushed int64

	cmds     atomic.Int64
	lastCmd  atomic.Int64  // unix nanoseconds
	cmdStats *commandStats // nil without Config.CommandStats
	sample   commandSample // which commands cmdStats times

	mu struct { // read by CLIENT LIST and INFO from other connections
		sync.Mutex
		name, libName, libVer string
		lastName              string
		// proto is the protocol HELLO chose (0: RESP2): the writer's
		// own field belongs to the connection's loop or goroutine.
		proto int
	}
}

// serveConn serves a new connection until it ends. The caller has
// counted it in s.conns; whoever serves it marks it done.
func (s *Server) serveConn(nc net.Conn) {
	s.totalConns.Add(1)
	if s.numClients.Add(1) > int64(s.cfg.MaxClients) {
		s.numClients.Add(-1)
		s.stats.rejectedConns.Add(1)
		nc.SetWriteDeadline(time.Now().Add(time.Second))
		nc.Write([]byte("-" + string(errMaxClients) + "\r\n"))
		nc.Close()
		s.conns.Done()
		return
	}
	c := &client{
		s:       s,
		nc:      nc,
		id:      s.nextClientID.Add(1),
		addr:    nc.RemoteAddr().String(),
		created: time.Now(),
		authed:  s.cfg.Password == "",
	}
	c.cmdStats, c.sample = s.commandStatsFor(c.id), newCommandSample(c.id)
	c.lastCmd.Store(c.created.UnixNano())
	// Every field is set before the client is registered, where other
	// connections (CLIENT LIST) and Shutdown see it.
	onLoop := s.toLoop(c)
	if !onLoop {
		c.rd = c.newReader(nc)
		c.w = resp.NewWriter(nc, s.cfg.MaxOutputBuffer)
	}
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		c.closed()
		return
	}
	s.mu.clients[c] = struct{}{}
	s.mu.Unlock()
	if onLoop {
		c.addToLoop()
		return
	}
	c.serveGoroutine()
	c.closed()
}

// newReader returns the reader of the client's requests from rd, with its
// buffer from the server's and the limits the client has now.
func (c *client) newReader(rd io.Reader) *resp.Reader {
	lim := &unauthLimits
	if c.authed {
		c.lim = c.s.clientBufs.limits.Load()
		lim = c.lim
	}
	r := resp.NewReader(rd, *lim)
	r.SetMemory(&c.s.clientBufs)
	return r
}

// refreshLimits gives an authenticated client the limits CONFIG SET set
// last, before it parses what arrived.
func (c *client) refreshLimits() {
	if !c.authed {
		return
	}
	if lim := c.s.clientBufs.limits.Load(); lim != c.lim {
		c.lim = lim
		c.rd.SetLimits(*lim)
	}
}

// closed unregisters a client whose connection has ended, and closes the
// connection.
func (c *client) closed() {
	s := c.s
	s.mu.Lock()
	if _, ok := s.mu.clients[c]; ok {
		delete(s.mu.clients, c)
		s.totalCmds.Add(c.cmds.Load())
	}
	s.mu.Unlock()
	if c.w != nil && c.w.Err() == resp.ErrOutputLimit {
		s.countError(errKindOutputLimit)
	}
	if c.nc != nil {
		c.nc.Close()
	}
	if c.rd != nil {
		c.rd.Release() // the buffers do not outlive the client
	}
	c.closeLoopConn()
	s.numClients.Add(-1)
	s.conns.Done()
}

// serveGoroutine reads and runs commands until the connection ends.
// Commands that arrived together (a pipeline) run one after the other, and
// their replies go back in one write, after their log records are durable.
func (c *client) serveGoroutine() {
	s := c.s
	for {
		if !c.runBuffered() || !c.finishBatch() {
			return
		}
		if s.cfg.IdleTimeout > 0 {
			c.nc.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
		}
		// Shutdown sets closing, then a past read deadline: checking
		// closing after our deadline is set means Fill cannot block.
		if s.closing.Load() {
			return
		}
		if err := c.rd.Fill(); err != nil {
			c.queryBufferLimit(err)
			return
		}
	}
}

// runBuffered runs the commands whose bytes have arrived, and reports
// false when the connection must close: after a QUIT, a malformed request
// or a failed write, whose replies it has sent.
func (c *client) runBuffered() bool {
	s := c.s
	c.refreshLimits()
	for {
		args, err := c.rd.Next()
		if err != nil {
			// Malformed request: answer what came before it, then say why
			// and hang up, as Redis does; past the query buffer limit,
			// Redis hangs up without a reply.
			overLimit := c.queryBufferLimit(err)
			if overLimit {
				s.countError(errKindQueryBufferLimit)
			} else {
				s.countError(errKindProtocol)
			}
			if c.finishBatch() && !overLimit {
				c.w.Error(protocolReply(err, c.authed))
				c.w.Flush()
			}
			return false
		}
		if args == nil {
			return true
		}
		var start int64 // when the statistics time this command
		if c.cmdStats != nil {
			start = c.sample.begin()
		}
		s.exec(&c.call, c, c.w, args)
		c.cmds.Add(1)
		if c.cmdStats != nil {
			c.cmdStats.count(&c.call, start)
		}
		c.noteLog()
		if c.quit || c.w.Err() != nil {
			c.finishBatch()
			return false
		}
		if c.w.Buffered() >= flushThreshold && !c.finishBatch() {
			return false
		}
	}
}

// finishBatch makes the log records of the replies waiting to be sent
// durable as the fsync policy says, then sends the replies. It reports
// false when the connection must close: a client is never told a write
// succeeded that the log could not keep.
func (c *client) finishBatch() bool {
	c.lastCmd.Store(time.Now().UnixNano())
	if off := c.logWait(); off > c.flushed {
		if !c.logFlushed(c.s.aof.flush(off, c.s.cfg.Sync == SyncAlways), off) {
			c.s.logf("append-only log: %v; closing the connection of client %d without its replies", c.s.aof.err(), c.id)
			return false
		}
	}
	return c.w.Flush() == nil
}

// noteLog records, after a command ran, the log offsets its reply waits
// for: its own records', and the log's end (see seenOff).
func (c *client) noteLog() {
	if c.call.logOff > c.logOff {
		c.logOff = c.call.logOff
	}
	if c.s.aof != nil {
		if end := c.s.aof.appended.Load(); end > c.seenOff {
			c.seenOff = end
		}
	}
}

// logWait returns the log offset the pending replies wait for.
func (c *client) logWait() int64 { return max(c.logOff, c.seenOff) }

// logFlushed takes the result err of making the log durable up to off
// (logWait's), and reports whether the replies may be sent: not when the
// log failed to keep a record of the client's own. A failure in records
// the client only saw does not hold its replies back: the server refuses
// writes from then on (MISCONF), and the records written so far are
// durable; until a restart, a read may see the write that failed.
func (c *client) logFlushed(err error, off int64) bool {
	if err != nil && c.logOff > c.flushed {
		return false
	}
	c.flushed = off
	return true
}

// setAuthed marks the client authenticated and lifts its request limits.
func (c *client) setAuthed() {
	c.authed = true
	c.lim = c.s.clientBufs.limits.Load()
	c.rd.SetLimits(*c.lim)
}

// queryBufferLimit reports whether err is a command past the client's
// query buffer limit, which it then logs and counts, as Redis does.
func (c *client) queryBufferLimit(err error) bool {
	if !errors.Is(err, resp.ErrQueryBufferLimit) {
		return false
	}
	c.s.clientBufs.limitCloses.Add(1)
	limit := unauthLimits.MaxCommand
	if c.authed {
		limit = c.lim.MaxCommand
	}
	c.s.logf("closing client %d (%s) that reached client-query-buffer-limit (%d bytes)", c.id, c.addr, limit)
	return true
}

// wake makes a client waiting for requests see that the server is
// stopping; force closes its connection at once.
func (c *client) wake(force bool) {
	switch {
	case c.nc == nil:
		// Its event loop is woken once for all its clients.
	case force:
		c.nc.Close()
	default:
		c.nc.SetReadDeadline(time.Now())
	}
}
