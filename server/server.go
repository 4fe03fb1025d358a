package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dedupkit/cuckoo/internal/vfs"
	"github.com/dedupkit/cuckoo/server/resp"
)

// redisVersion is the Redis version whose commands and replies this server
// follows (with the probabilistic commands built in, as RedisBloom 8), as
// INFO and HELLO report it to clients that check.
const redisVersion = "8.0.0"

// Config configures a Server. DefaultConfig returns the defaults of
// `cuckoo serve`; in a Config built by hand, zero limits take those
// defaults, and the zero values of the other fields mean what their
// comments say.
type Config struct {
	// Addr is the TCP address ListenAndServe listens on.
	Addr string
	// Dir is the data directory (created if missing). Empty: nothing is
	// persisted and nothing is loaded.
	Dir string
	// AppendOnly turns on the append-only log in Dir; without it only the
	// snapshots persist data, and a crash loses the writes since the last.
	AppendOnly bool
	// Sync is when the log is fsynced (appendfsync; default
	// SyncEverySecond). New refuses any other value than the three
	// policies.
	Sync SyncPolicy
	// SaveInterval is how often a snapshot is taken when there were writes
	// since the last one; 0: only by SAVE, BGSAVE, the log's growth and
	// shutdown.
	SaveInterval time.Duration
	// RewriteMinSize: a snapshot is also taken when the current log file
	// is larger than this and larger than the last snapshot file, so that
	// rewriting costs no more than the log it saves (Redis's
	// auto-aof-rewrite-min-size). 0: 64 MiB; negative: never.
	RewriteMinSize int64
	// SaveOnShutdown takes a snapshot on Shutdown, so that the next start
	// replays no log.
	SaveOnShutdown bool
	// Repair lets New start from a log damaged before its end: the log is
	// cut before the first bad record, and what followed is dropped.
	Repair bool

	// Password, when set, must be given with AUTH or HELLO before any
	// other command.
	Password string
	// ProtectedMode refuses to serve on a non-loopback address without a
	// Password.
	ProtectedMode bool

	// MaxClients bounds the connections served at once (0: 10,000).
	MaxClients int
	// MaxMemory bounds the filters' memory, in bytes: past it, commands
	// that may add memory get Redis's OOM error, and so does creating a
	// filter that would pass it. 0: no bound.
	MaxMemory int64
	// MaxFilterBytes bounds the memory one CF.RESERVE or BF.RESERVE may
	// ask for, and the size of a dump CF.LOADCHUNK or BF.LOADCHUNK
	// accepts (0: 16 GiB).
	MaxFilterBytes int64
	// MaxOutputBuffer bounds the replies waiting to be sent to one client,
	// in bytes; a client past it is disconnected (0: 256 MiB).
	MaxOutputBuffer int
	// IdleTimeout closes a connection idle for that long (0: never).
	IdleTimeout time.Duration
	// Limits bound each request (zero fields: resp.DefaultLimits): MaxBulk
	// is Redis's proto-max-bulk-len and MaxCommand its
	// client-query-buffer-limit, which CONFIG SET changes while the server
	// runs. New refuses a limit past MaxQueryBufferLimit.
	Limits resp.Limits

	// Filters are the parameters of the filters the commands create
	// without being given them, Redis 8's bf-* and cf-* settings, which
	// CONFIG SET changes while the server runs. The zero value takes
	// DefaultFilterSettings; New refuses a value out of range.
	Filters FilterSettings

	// CommandStats counts every command by command and result, and times
	// a random sample of them (Stats.Commands), for an atomic addition
	// per command, and two clock readings per command of the sample.
	CommandStats bool

	// Logf, when set, receives the server's log lines (recovery, snapshots,
	// errors), without a trailing newline.
	Logf func(format string, args ...any)

	// now, when set, is the clock the dumps' copies are aged by
	// (dumpIdle), in nanoseconds, in place of the monotonic clock: for
	// the tests.
	now func() int64
}

// Defaults of the limits.
const (
	DefaultMaxClients      = 10_000
	DefaultRewriteMinSize  = 64 << 20
	DefaultMaxFilterBytes  = 16 << 30
	DefaultMaxOutputBuffer = 256 << 20
)

// DefaultConfig returns the configuration of `cuckoo serve` with no flags:
// 127.0.0.1:6379, data in ./cuckoo-data with the append-only log fsynced
// every second, a snapshot every 5 minutes when there were writes and on
// shutdown, protected mode on.
func DefaultConfig() Config {
	return Config{
		Addr:           "127.0.0.1:6379",
		Dir:            "cuckoo-data",
		AppendOnly:     true,
		Sync:           SyncEverySecond,
		SaveInterval:   5 * time.Minute,
		SaveOnShutdown: true,
		ProtectedMode:  true,
		Filters:        DefaultFilterSettings(),
	}
}

// Server serves the filters over RESP. Create one with New, serve with
// Serve or ListenAndServe, stop with Shutdown. All its methods are safe for
// concurrent use.
type Server struct {
	cfg     Config
	filters atomic.Pointer[FilterSettings] // cfg.Filters, then CONFIG SET's; never changed in place
	ks      *keyspace
	aof     *aof // nil without an append-only log
	lock    *os.File
	started time.Time
	logf    func(format string, args ...any)

	nextClientID atomic.Int64
	numClients   atomic.Int64
	clientBufs   clientBuffers // the clients' query buffers and pending replies
	configMu     sync.Mutex    // held by CONFIG SET
	totalConns   atomic.Int64
	totalCmds    atomic.Int64
	stats        serverStats // what Stats reports that the rest does not keep (stats.go)

	mu struct {
		sync.Mutex
		listeners map[net.Listener]struct{}
		clients   map[*client]struct{}
		loads     map[string]*pendingLoad // CF/BF.LOADCHUNK in progress
	}
	closing  atomic.Bool
	conns    sync.WaitGroup
	shutdown struct {
		once      sync.Once
		done      chan struct{}
		err       error
		force     chan struct{} // closed by Close: a Shutdown retrying its snapshot gives up
		forceOnce sync.Once
	}

	save struct {
		sync.Mutex // held while a snapshot is taken
		running    atomic.Bool
		last       atomic.Int64 // unix seconds of the last good snapshot
		lastOK     atomic.Bool
		count      atomic.Int64
		fileSize   atomic.Int64 // bytes of the last snapshot file
		took       atomic.Int64 // nanoseconds the last good snapshot took
		abandon    atomic.Bool  // a Shutdown ran out of time: stop writing snapshots (snapshot.go)
	}

	stopBG chan struct{}
	bg     sync.WaitGroup

	// The event loops (loop_linux.go), started by the first Serve and
	// stopped once every connection has ended.
	loopsOnce sync.Once
	loops     []*loop

	replayOut bytes.Buffer // recovery's replies
}

// New returns a Server configured by cfg, with the data of cfg.Dir loaded:
// the newest snapshot, then the log records written after it. A torn last
// log record is cut off (and logged); any other damage makes New fail with
// an error wrapping ErrDataDir that says where, unless cfg.Repair is set.
// The data directory is locked against a second server until Shutdown or
// Close.
func New(cfg Config) (*Server, error) {
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	if cfg.RewriteMinSize == 0 {
		cfg.RewriteMinSize = DefaultRewriteMinSize
	}
	if cfg.MaxFilterBytes <= 0 {
		cfg.MaxFilterBytes = DefaultMaxFilterBytes
	}
	if cfg.MaxOutputBuffer <= 0 {
		cfg.MaxOutputBuffer = DefaultMaxOutputBuffer
	}
	if cfg.Filters == (FilterSettings{}) {
		cfg.Filters = DefaultFilterSettings()
	}
	if cfg.Sync != SyncEverySecond && cfg.Sync != SyncAlways && cfg.Sync != SyncNever {
		return nil, fmt.Errorf("server: Config.Sync is %v: want SyncEverySecond, SyncAlways or SyncNever", cfg.Sync)
	}
	filters, err := cfg.Filters.normalized()
	if err != nil {
		return nil, err
	}
	cfg.Filters = filters
	limits, err := normalizedLimits(cfg.Limits)
	if err != nil {
		return nil, err
	}
	cfg.Limits = limits
	s := &Server{cfg: cfg, ks: newKeyspace(), started: time.Now(), stopBG: make(chan struct{})}
	if cfg.now != nil {
		s.ks.dumps.now = cfg.now
	}
	s.filters.Store(&filters)
	s.clientBufs.limits.Store(&limits)
	s.logf = cfg.Logf
	if s.logf == nil {
		s.logf = func(string, ...any) {}
	}
	s.mu.listeners = make(map[net.Listener]struct{})
	s.mu.clients = make(map[*client]struct{})
	s.mu.loads = make(map[string]*pendingLoad)
	s.shutdown.done, s.shutdown.force = make(chan struct{}), make(chan struct{})
	s.save.lastOK.Store(true)
	s.initStats()
	if cfg.Dir != "" {
		start := time.Now()
		if err := s.openDir(); err != nil {
			if s.lock != nil {
				s.lock.Close()
			}
			return nil, err
		}
		s.stats.recovery.duration = time.Since(start)
	}
	s.bg.Add(1)
	go s.background()
	return s, nil
}

// openDir locks the data directory and loads it.
func (s *Server) openDir() error {
	dir := s.cfg.Dir
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("%w %s: %v", ErrDataDir, dir, err)
	}
	// The lock keeps two servers out of one data directory.
	lock, err := vfs.LockFile(filepath.Join(dir, "LOCK"), 0o640)
	if errors.Is(err, vfs.ErrLocked) {
		return fmt.Errorf("%w %s: %w", ErrDataDir, dir, ErrDirInUse)
	}
	if err != nil {
		return fmt.Errorf("%w %s: %v", ErrDataDir, dir, err)
	}
	s.lock = lock
	return s.recover()
}

// Addr returns the address of the first listener being served, or nil.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ln := range s.mu.listeners {
		return ln.Addr()
	}
	return nil
}

// ListenAndServe listens on cfg.Addr and serves until Shutdown, after
// which it returns ErrClosed.
func (s *Server) ListenAndServe() error {
	if err := s.checkProtected(s.cfg.Addr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// checkProtected applies protected mode to a listening address.
func (s *Server) checkProtected(addr string) error {
	if !s.cfg.ProtectedMode || s.cfg.Password != "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrProtectedMode, addr)
}

// Serve accepts connections on ln, one goroutine each, until Shutdown;
// it closes ln and returns ErrClosed then, or the accept error that
// stopped it.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.checkProtected(ln.Addr().String()); err != nil {
		ln.Close()
		return err
	}
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		ln.Close()
		return ErrClosed
	}
	s.mu.listeners[ln] = struct{}{}
	s.mu.Unlock()
	s.loopsOnce.Do(s.startLoops)
	defer func() {
		s.mu.Lock()
		delete(s.mu.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return ErrClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
				return err
			}
			// Out of file descriptors and the like: wait and go on.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.logf("accept: %v; retrying in %v", err, delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		s.conns.Add(1)
		go s.serveConn(nc)
	}
}

// Shutdown stops the server gracefully: it stops accepting connections,
// lets each connection finish the commands it has received, closes them,
// flushes and fsyncs the log, takes a snapshot if cfg.SaveOnShutdown, and
// unlocks the data directory. If ctx ends first, the connections still
// open are closed at once (a command whose reply was not sent was not
// acknowledged), and, when the append-only log is on, a snapshot being
// written is abandoned and none is taken: the log keeps every write, and
// the next New replays it. The log is flushed and fsynced in every case,
// and without a log the snapshot is taken whatever ctx says: it is the
// only copy of the writes since the last one, so one that fails is tried
// again every second, until one succeeds or Close is called. Shutdown
// returns the first error of the log or the snapshot; later calls wait
// for the first and return its result.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.stop(ctx, s.cfg.SaveOnShutdown)
}

// Close stops the server at once: connections are closed without
// finishing their commands, the log is flushed, no snapshot is taken. A
// Shutdown retrying a snapshot that failed (without a log) stops trying,
// and returns the snapshot's error.
func (s *Server) Close() error {
	s.shutdown.forceOnce.Do(func() { close(s.shutdown.force) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return s.stop(ctx, false)
}

// Done returns a channel closed when the server has shut down, after
// Shutdown, Close or a client's SHUTDOWN command.
func (s *Server) Done() <-chan struct{} { return s.shutdown.done }

func (s *Server) stop(ctx context.Context, save bool) error {
	s.shutdown.once.Do(func() {
		s.shutdown.err = s.doStop(ctx, save)
		close(s.shutdown.done)
	})
	<-s.shutdown.done
	return s.shutdown.err
}

func (s *Server) doStop(ctx context.Context, save bool) error {
	if s.aof != nil {
		stopAbandon := context.AfterFunc(ctx, func() { s.save.abandon.Store(true) })
		defer stopAbandon()
	}
	s.mu.Lock()
	s.closing.Store(true)
	for ln := range s.mu.listeners {
		ln.Close()
	}
	// Wake the connections waiting for requests; those running commands
	// finish what they have read first (client.go).
	for c := range s.mu.clients {
		c.wake(false)
	}
	s.mu.Unlock()
	// A Serve starting now gets no loops: its listener is closed, and
	// s.loops is settled for the reads below.
	s.loopsOnce.Do(func() {})
	s.wakeLoops(false)

	waited := make(chan struct{})
	go func() { s.conns.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.mu.clients {
			c.wake(true)
		}
		s.mu.Unlock()
		s.wakeLoops(true)
		<-waited
	}
	s.stopLoops()
	close(s.stopBG)
	s.bg.Wait()

	var err error
	if save && s.cfg.Dir != "" {
		serr := errSnapshotAbandoned
		if s.aof == nil || ctx.Err() == nil {
			serr = s.snapshot()
		}
		for s.aof == nil && serr != nil {
			s.logf("snapshot on shutdown: %v; without the append-only log the writes since the last snapshot are only in memory: trying again in %v", serr, snapshotRetry)
			select {
			case <-time.After(snapshotRetry):
				serr = s.snapshot()
				continue
			case <-s.shutdown.force:
			}
			break
		}
		switch {
		case serr == errSnapshotAbandoned:
			s.logf("no snapshot on shutdown: out of time; the log keeps every write, and the next start replays it")
		case serr != nil:
			err = serr
			s.logf("snapshot on shutdown: %v", serr)
		}
	}
	if s.aof != nil {
		if cerr := s.aof.close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	if s.lock != nil {
		s.lock.Close()
	}
	return err
}

// background takes the periodic snapshots, fsyncs the log every second
// under SyncEverySecond, and starts a snapshot when the log has grown.
func (s *Server) background() {
	defer s.bg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastSave := time.Now()
	// The log's error is sticky (aof.err): logged when it first appears,
	// not once a second after that.
	var syncErr error
	for {
		select {
		case <-s.stopBG:
			return
		case now := <-tick.C:
			if s.aof != nil && s.cfg.Sync == SyncEverySecond {
				err := s.aof.sync()
				if err != nil && err != syncErr {
					s.logf("append-only log: %v", err)
				}
				syncErr = err
			}
			s.ks.dropIdleDumps()
			if s.cfg.Dir == "" || s.save.running.Load() {
				continue
			}
			due := s.cfg.SaveInterval > 0 && now.Sub(lastSave) >= s.cfg.SaveInterval && s.ks.dirty.Load()
			if s.aof != nil && s.cfg.RewriteMinSize > 0 {
				size := s.aof.size()
				if size > s.cfg.RewriteMinSize && size > s.save.fileSize.Load() {
					due = true
				}
			}
			if due {
				lastSave = now
				s.bgSnapshot()
			}
		}
	}
}
