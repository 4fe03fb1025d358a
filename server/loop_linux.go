package server

// The event loops of Linux. A loop owns an epoll set of connections and
// serves them in rounds, as Redis's event loop does: wait for the
// connections that have data; read each once and run the commands that
// arrived; make the round's log records durable with one write (and one
// fsync, under appendfsync always); then send each connection its
// replies. A goroutine per connection reads first and waits after
// (Go's network poller), so an unpipelined request costs it a read that
// finds nothing, a goroutine switch, and a log write of its own; a loop
// reads only what epoll says has arrived, switches no goroutines, and
// shares the log write between the connections of a round
// (docs/benchmarks.md, "The server", has the measurements). There is one
// loop per GOMAXPROCS (--threads), and a connection stays on the loop
// that took it.
//
// A loop's connections and their buffers belong to its goroutine. Other
// goroutines reach a loop only through its inbox (new connections,
// stopping), and wake it with a byte on its pipe.

import (
	"io"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/dedupkit/cuckoo/server/resp"
)

// useLoops says whether connections with a file descriptor are served by
// event loops (a variable for the tests, which run the goroutine path
// too).
var useLoops = true

// loopConn is a connection's part that its loop keeps: the socket, and
// the replies the socket did not take yet.
type loopConn struct {
	l       *loop
	fd      int
	pending []byte // written to the socket when it takes more (EPOLLOUT)
	out     bool   // the epoll set waits for EPOLLOUT
	closing bool   // close once pending is sent
	err     error  // the socket failed: close at once
	touched bool   // in the round's list
}

// Write sends p to the socket, or keeps what the socket does not take
// now, up to the output limit; it never blocks. It is the io.Writer of the
// client's resp.Writer, whose Flush is the one call per round.
func (lc *loopConn) Write(p []byte) (int, error) {
	if lc.err != nil {
		return 0, lc.err
	}
	size := len(p)
	if len(lc.pending) == 0 {
		for len(p) > 0 {
			n, errno := rawWrite(lc.fd, p)
			if errno == syscall.EINTR {
				continue
			}
			if errno == syscall.EAGAIN {
				break
			}
			if errno != 0 {
				lc.err = errno
				return 0, errno
			}
			p = p[n:]
		}
		if len(p) == 0 {
			return size, nil
		}
	}
	if limit := lc.l.s.cfg.MaxOutputBuffer; limit > 0 && len(lc.pending)+len(p) > limit {
		lc.err = resp.ErrOutputLimit
		return 0, lc.err
	}
	lc.pending = append(lc.pending, p...)
	lc.l.s.clientBufs.output.Add(int64(len(p)))
	lc.l.watchOut(lc, true)
	return size, nil
}

// Read reads once from the socket: 0 bytes and no error when nothing has
// arrived, io.EOF when the peer has closed.
func (lc *loopConn) Read(p []byte) (int, error) {
	for {
		n, errno := rawRead(lc.fd, p)
		switch {
		case errno == syscall.EINTR:
			continue
		case errno == syscall.EAGAIN:
			return 0, nil
		case errno != 0:
			return 0, errno
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// flushPending sends the replies the socket did not take before.
func (lc *loopConn) flushPending() {
	for len(lc.pending) > 0 && lc.err == nil {
		n, errno := rawWrite(lc.fd, lc.pending)
		switch {
		case errno == syscall.EINTR:
			continue
		case errno == syscall.EAGAIN:
			return
		case errno != 0:
			lc.err = errno
			return
		}
		lc.pending = lc.pending[n:]
		lc.l.s.clientBufs.output.Add(-int64(n))
	}
	lc.l.s.clientBufs.output.Add(-int64(len(lc.pending)))
	lc.pending = nil
	lc.l.watchOut(lc, false)
}

// The loop's reads and writes are of non-blocking sockets, and its waits
// for events do not block: they are made as raw system calls, which skip
// the scheduler's bookkeeping (entersyscall, exitsyscall) that a call
// that may block needs. When no connection has anything, the loop parks
// in Go's network poller, which watches the loop's epoll descriptor
// itself (an epoll set is readable when it has events): a loop blocked in
// epoll_wait would hold its P in a system call, and the runtime's monitor
// thread, which takes such Ps back, would wake every 20 µs.

// (rawRead and rawWrite are in rawio_linux.go.)

// pollNow returns the events ready now, without waiting.
func (l *loop) pollNow() int {
	n, _, errno := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(l.epfd), uintptr(unsafe.Pointer(&l.event[0])),
		uintptr(len(l.event)), 0, 0, 0)
	if errno != 0 {
		return 0
	}
	return int(n)
}

// loop is one event loop.
type loop struct {
	s     *Server
	epfd  int
	ep    *os.File        // epfd, watched by Go's network poller
	rc    syscall.RawConn // ep's, to wait for its events
	wake  [2]int          // a pipe; a byte on it wakes the loop
	conns map[int]*client
	round []*client // the clients that ran commands this round
	event [128]syscall.EpollEvent
	ready int                   // events pollNow found
	poll  func(fd uintptr) bool // rc.Read's function: made once, so that a round allocates nothing
	done  chan struct{}         // closed when the loop has ended

	inbox struct {
		sync.Mutex
		add   []*client
		force bool // close every connection at once
		stop  bool // the server has stopped: end when no connection is left
	}
}

// startLoops starts one event loop per GOMAXPROCS, unless useLoops is off
// or the system refuses them (the connections are then served by
// goroutines). The loops run until stopLoops.
func (s *Server) startLoops() {
	if !useLoops {
		return
	}
	for range runtime.GOMAXPROCS(0) {
		l, err := newLoop(s)
		if err != nil {
			s.logf("event loop: %v; serving each connection on a goroutine", err)
			s.stopLoops()
			return
		}
		s.loops = append(s.loops, l)
		go l.run()
	}
}

func newLoop(s *Server) (*loop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if err := syscall.SetNonblock(epfd, true); err != nil {
		syscall.Close(epfd)
		return nil, err
	}
	l := &loop{s: s, epfd: epfd, conns: make(map[int]*client), done: make(chan struct{})}
	l.poll = func(uintptr) bool { l.ready = l.pollNow(); return l.ready > 0 }
	l.ep = os.NewFile(uintptr(epfd), "epoll")
	if err := syscall.Pipe2(l.wake[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		l.ep.Close()
		return nil, err
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(l.wake[0])}
	err = syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, l.wake[0], &ev)
	if err == nil {
		l.rc, err = l.ep.SyscallConn()
	}
	if err != nil {
		l.closeFDs()
		return nil, err
	}
	return l, nil
}

func (l *loop) closeFDs() {
	l.ep.Close()
	syscall.Close(l.wake[0])
	syscall.Close(l.wake[1])
}

// stopLoops ends the loops, once every connection has ended (or been
// forced closed), and waits for them.
func (s *Server) stopLoops() {
	for _, l := range s.loops {
		l.inbox.Lock()
		l.inbox.stop = true
		l.inbox.Unlock()
		l.poke()
		<-l.done
	}
	s.loops = nil
}

// wakeLoops makes the loops see that the server is stopping: they send
// what their connections are owed and close them, or, with force, close
// them at once.
func (s *Server) wakeLoops(force bool) {
	for _, l := range s.loops {
		if force {
			l.inbox.Lock()
			l.inbox.force = true
			l.inbox.Unlock()
		}
		l.poke()
	}
}

// poke wakes the loop.
func (l *loop) poke() { syscall.Write(l.wake[1], []byte{0}) }

// toLoop gives the client's connection to an event loop, before the
// client is registered, and reports false when none takes it: no loops,
// or a connection without a file descriptor (a goroutine serves it
// then). The loop works on a duplicate of the descriptor, and the
// original is closed, so that Go's network poller no longer watches it;
// add then hands the client to the loop.
func (s *Server) toLoop(c *client) bool {
	if len(s.loops) == 0 {
		return false
	}
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	fd := -1
	cerr := rc.Control(func(orig uintptr) {
		// F_DUPFD_CLOEXEC: the duplicate shares the non-blocking mode.
		r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, orig, syscall.F_DUPFD_CLOEXEC, 0)
		if errno == 0 {
			fd = int(r)
		}
	})
	if cerr != nil || fd < 0 {
		return false
	}
	c.nc.Close()
	c.nc = nil
	l := s.loops[c.id%int64(len(s.loops))]
	c.lc = &loopConn{l: l, fd: fd}
	c.rd = c.newReader(c.lc)
	c.w = resp.NewWriter(c.lc, s.cfg.MaxOutputBuffer)
	return true
}

// addToLoop hands a registered client to its loop.
func (c *client) addToLoop() {
	l := c.lc.l
	l.inbox.Lock()
	l.inbox.add = append(l.inbox.add, c)
	l.inbox.Unlock()
	l.poke()
}

// closeLoopConn closes the descriptor of a client no loop serves: one the
// loop never took (the server was stopping, or epoll refused it).
func (c *client) closeLoopConn() {
	if c.lc != nil && c.lc.fd >= 0 {
		syscall.Close(c.lc.fd)
		c.lc.fd = -1
	}
}

// run serves the loop's connections until stopLoops.
func (l *loop) run() {
	defer close(l.done)
	defer l.closeFDs()
	s := l.s
	lastScan := time.Now()
	if s.cfg.IdleTimeout > 0 {
		// A poke a second, for the scan of idle connections below.
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		go func() {
			for {
				select {
				case <-tick.C:
					l.poke()
				case <-l.done:
					return
				}
			}
		}()
	}
	for {
		if err := l.rc.Read(l.poll); err != nil {
			s.logf("event loop: %v", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		n := l.ready
		// A busy loop passes through the scheduler once a round: the
		// other goroutines (accepting connections, snapshots) run then,
		// and the runtime need not preempt the loop.
		runtime.Gosched()
		events := l.event[:max(n, 0)]
		// The pipe is drained before the inbox is read, so that a poke
		// after the read leaves a byte that wakes the next wait.
		for _, ev := range events {
			if int(ev.Fd) == l.wake[0] {
				var buf [64]byte
				for {
					if n, _ := syscall.Read(l.wake[0], buf[:]); n <= 0 {
						break
					}
				}
			}
		}
		if l.takeInbox() {
			return
		}
		for _, ev := range events {
			fd := int(ev.Fd)
			c := l.conns[fd]
			if c == nil || fd == l.wake[0] {
				continue
			}
			if ev.Events&syscall.EPOLLOUT != 0 {
				c.lc.flushPending()
			}
			if ev.Events&(syscall.EPOLLIN|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 && !c.lc.closing {
				l.readable(c)
			}
			if c.lc.err != nil || c.lc.closing && len(c.lc.pending) == 0 {
				l.touch(c)
			}
		}
		l.finishRound()
		if s.closing.Load() {
			l.closeAll(false)
		}
		if s.cfg.IdleTimeout > 0 && time.Since(lastScan) >= time.Second {
			lastScan = time.Now()
			l.closeIdle()
		}
	}
}

// takeInbox registers the new connections and applies a forced close; it
// reports true when the loop must end.
func (l *loop) takeInbox() bool {
	l.inbox.Lock()
	add, force, stop := l.inbox.add, l.inbox.force, l.inbox.stop
	l.inbox.add = nil
	l.inbox.Unlock()
	for _, c := range add {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(c.lc.fd)}
		if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, c.lc.fd, &ev); err != nil {
			l.s.logf("event loop: adding client %d: %v", c.id, err)
			c.closed() // closes the descriptor
			continue
		}
		l.conns[c.lc.fd] = c
	}
	if force {
		l.closeAll(true)
	}
	return stop && len(l.conns) == 0
}

// readable reads once from c's socket and runs the commands that have
// arrived; their replies wait for the end of the round.
func (l *loop) readable(c *client) {
	if err := c.rd.Fill(); err != nil {
		c.queryBufferLimit(err)
		c.lc.closing = true
		return
	}
	l.touch(c)
	if !c.runBuffered() {
		c.lc.closing = true
	}
}

// touch puts c in the round's list.
func (l *loop) touch(c *client) {
	if !c.lc.touched {
		c.lc.touched = true
		l.round = append(l.round, c)
	}
}

// finishRound makes the round's log records durable, with one write for
// every client of the round, then sends each its replies, and closes the
// connections that are done.
func (l *loop) finishRound() {
	if len(l.round) == 0 {
		return
	}
	s := l.s
	now := time.Now().UnixNano()
	var off int64
	for _, c := range l.round {
		off = max(off, c.logWait())
	}
	var logErr error
	if off > 0 {
		if logErr = s.aof.flush(off, s.cfg.Sync == SyncAlways); logErr != nil {
			s.logf("append-only log: %v; closing the connections waiting for it without their replies", logErr)
		}
	}
	for _, c := range l.round {
		c.lc.touched = false
		c.lastCmd.Store(now)
		if want := c.logWait(); want > c.flushed && !c.logFlushed(logErr, want) {
			c.lc.err = logErr
		}
		if c.lc.err == nil {
			c.w.Flush()
		}
		if c.lc.err != nil || c.lc.closing && len(c.lc.pending) == 0 {
			l.close(c)
		}
	}
	clear(l.round)
	l.round = l.round[:0]
}

// closeAll closes the loop's connections: at once with force, or else
// each once its replies are sent (the server is stopping; the commands it
// received have run).
func (l *loop) closeAll(force bool) {
	for _, c := range l.conns {
		c.lc.closing = true
		if force || len(c.lc.pending) == 0 || c.lc.err != nil {
			l.close(c)
		}
	}
}

// closeIdle closes the connections idle for longer than IdleTimeout.
func (l *loop) closeIdle() {
	limit := time.Now().Add(-l.s.cfg.IdleTimeout).UnixNano()
	for _, c := range l.conns {
		if c.lastCmd.Load() < limit {
			l.close(c)
		}
	}
}

// watchOut makes the epoll set wait for lc's socket to take more replies,
// or stop waiting.
func (l *loop) watchOut(lc *loopConn, on bool) {
	if lc.out == on {
		return
	}
	events := uint32(syscall.EPOLLIN | syscall.EPOLLRDHUP)
	if on {
		events |= syscall.EPOLLOUT
	}
	ev := syscall.EpollEvent{Events: events, Fd: int32(lc.fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, lc.fd, &ev); err != nil {
		lc.err = err
		return
	}
	lc.out = on
}

// close ends c's connection.
func (l *loop) close(c *client) {
	if _, ok := l.conns[c.lc.fd]; !ok {
		return
	}
	delete(l.conns, c.lc.fd)
	syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, c.lc.fd, nil)
	syscall.Close(c.lc.fd)
	c.lc.fd = -1
	l.s.clientBufs.output.Add(-int64(len(c.lc.pending)))
	c.lc.pending = nil
	c.closed()
}
