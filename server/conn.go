package server

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dedupkit/cuckoo/server/resp"
)

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
	nc      net.Conn
	id      int64
	addr    string
	created time.Time
	rd      *resp.Reader
	w       *resp.Writer
	authed  bool
	quit    bool
	call    call

	// logOff is the log offset the pending replies wait for, flushed the
	// offset already made durable for this client.
	logOff, flushed int64

	cmds    atomic.Int64
	lastCmd atomic.Int64 // unix nanoseconds

	mu struct { // read by CLIENT LIST and INFO from other connections
		sync.Mutex
		name, libName, libVer string
		lastName              string
	}
}

func (s *Server) serveConn(nc net.Conn) {
	defer s.conns.Done()
	s.totalConns.Add(1)
	if s.numClients.Add(1) > int64(s.cfg.MaxClients) {
		s.numClients.Add(-1)
		nc.SetWriteDeadline(time.Now().Add(time.Second))
		nc.Write([]byte("-" + string(errMaxClients) + "\r\n"))
		nc.Close()
		return
	}
	defer s.numClients.Add(-1)
	c := &client{
		s:       s,
		nc:      nc,
		id:      s.nextClientID.Add(1),
		addr:    nc.RemoteAddr().String(),
		created: time.Now(),
		authed:  s.cfg.Password == "",
	}
	lim := s.cfg.Limits
	if !c.authed {
		lim = unauthLimits
	}
	c.rd = resp.NewReader(nc, lim)
	c.w = resp.NewWriter(nc, s.cfg.MaxOutputBuffer)
	c.lastCmd.Store(c.created.UnixNano())

	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		nc.Close()
		return
	}
	s.mu.clients[c] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.mu.clients, c)
		s.totalCmds.Add(c.cmds.Load())
		s.mu.Unlock()
		nc.Close()
	}()
	c.loop()
}

// loop reads and runs commands until the connection ends. Commands that
// arrived together (a pipeline) run one after the other, and their replies
// go back in one write, after their log records are durable.
func (c *client) loop() {
	s := c.s
	for {
		args, err := c.rd.Next()
		if err != nil {
			// Malformed request: answer what came before it, then say why
			// and hang up, as Redis does.
			if c.finishBatch() {
				c.w.Error(protocolReply(err, c.authed))
				c.w.Flush()
			}
			return
		}
		if args == nil {
			if !c.finishBatch() {
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
			if c.rd.Fill() != nil {
				return
			}
			continue
		}
		s.exec(&c.call, c, c.w, args)
		c.cmds.Add(1)
		if c.call.logOff > c.logOff {
			c.logOff = c.call.logOff
		}
		if c.quit || c.w.Err() != nil {
			c.finishBatch()
			return
		}
		if c.w.Buffered() >= flushThreshold && !c.finishBatch() {
			return
		}
	}
}

// finishBatch makes the log records of the replies waiting to be sent
// durable as the fsync policy says, then sends the replies. It reports
// false when the connection must close: a client is never told a write
// succeeded that the log could not keep.
func (c *client) finishBatch() bool {
	s := c.s
	c.lastCmd.Store(time.Now().UnixNano())
	if c.logOff > c.flushed {
		if err := s.aof.flush(c.logOff, s.cfg.Fsync == FsyncAlways); err != nil {
			s.logf("append-only log: %v; closing the connection of client %d without its replies", err, c.id)
			return false
		}
		c.flushed = c.logOff
	}
	return c.w.Flush() == nil
}

// setAuthed marks the client authenticated and lifts its request limits.
func (c *client) setAuthed() {
	c.authed = true
	c.rd.SetLimits(c.s.cfg.Limits)
}
