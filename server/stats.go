package server

// The server's figures for operators (Server.Stats): connections,
// commands, errors, keys and filters, persistence. Most are counters
// the server keeps anyway; the ones kept for Stats alone are cheap where
// commands run:
//
//   - With Config.CommandStats, each command costs one atomic addition
//     to the count of its command and result (found by index, never by
//     name), and a countdown; a random sample of one command in
//     commandSampling also reads the clock twice and adds its duration to
//     a histogram: a clock reading costs a few percent of what a pipelined
//     CF.EXISTS costs the server (bench/notes.md, item 31), too much for
//     every command. The event loops add to copies of their own
//     (commandStats), so that loops on different cores do not write the
//     same cache lines; Stats adds the copies up.
//   - An error reply is counted by kind, on the error's path only.
//   - A filter's growth is noticed where the key space already accounts
//     its memory (keyspace.unlockWrite), when the memory changed.
//   - The keys' items, capacities and tables are read by Stats itself,
//     walking the keys.

import (
	"cmp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Stats are a Server's figures, for operators: a moment's view, each
// figure read at a slightly different moment while commands run.
// Counters count from New.
type Stats struct {
	// Clients is the number of connections being served.
	Clients int64
	// MaxClients is Config.MaxClients.
	MaxClients int
	// ConnectionsReceived counts the connections accepted, including
	// those refused for MaxClients.
	ConnectionsReceived int64
	// ConnectionsRejected counts the connections refused because
	// MaxClients connections were being served.
	ConnectionsRejected int64

	// Commands has an entry for each command and result that occurred,
	// sorted by command, then result; it is empty unless
	// Config.CommandStats is set.
	Commands []CommandStats
	// Errors counts the errors by kind, with an entry for every kind
	// ErrorKinds lists.
	Errors map[string]int64

	// Types has the keys of each type: "cuckoo" (cuckoo filters that do
	// not forget), "bloom" and "window" (cuckoo filters with a WINDOW),
	// in that order.
	Types []TypeStats
	// MaxMemory is Config.MaxMemory, the bound on the filters' memory
	// (0: none).
	MaxMemory int64
	// DatasetBytes is the memory MaxMemory counts besides the clients'
	// buffers (INFO memory's used_memory_dataset): the filters' (the
	// Bytes of Types), the dumps' copies and the pending loads' chunks.
	DatasetBytes int64
	// DumpCopies is the number of copies of filters' encodings that the
	// dumps in progress (CF.SCANDUMP, BF.SCANDUMP) are served from, and
	// DumpCopyBytes their bytes (scandump_copies, mem_scandump_copies).
	DumpCopies, DumpCopyBytes int64
	// PendingLoads is the number of loads (CF.LOADCHUNK, BF.LOADCHUNK)
	// begun and not finished, and PendingLoadBytes the bytes of the
	// chunks they hold (loadchunk_pending, mem_loadchunk_pending).
	PendingLoads, PendingLoadBytes int64

	Log      LogStats
	Snapshot SnapshotStats
	Recovery RecoveryStats
}

// CommandStats are the count and durations of one command's calls that
// ended with one result.
type CommandStats struct {
	// Command is the command's name in lower case (cf.add), or "unknown"
	// for names the server does not know.
	Command string
	// Result is "ok", "error" (the reply is an error, or holds one in
	// place of an item: BF.MADD's on a full filter), or "wrong_type"
	// (a key of another type: WRONGTYPE).
	Result string
	// Count counts the calls.
	Count uint64
	// Durations counts a random sample of the calls, about one in 16, by
	// the time each took to run: from its arguments read to its reply
	// written to the connection's buffer, not the time the reply waited
	// for the log to be written or fsynced (LogStats.Fsyncs), nor the
	// network's.
	Durations Histogram
}

// Histogram counts durations in buckets, as Prometheus's histograms do.
type Histogram struct {
	// Count is the number of durations counted.
	Count uint64
	// Sum is their sum.
	Sum time.Duration
	// Buckets[i] counts the durations of at most DurationBounds()[i];
	// the counts are cumulative, and the durations above the last bound
	// are in Count only.
	Buckets []uint64
}

// durationBounds are the upper bounds of the duration histograms'
// buckets, in nanoseconds: 1, 2.5 and 5 of each decade from 1 µs to 5 s,
// then 10 s. A fast command (CF.EXISTS) takes a fraction of the first;
// an fsync, from tens of microseconds to seconds.
var durationBounds = [...]int64{
	1e3, 2.5e3, 5e3, 1e4, 2.5e4, 5e4, 1e5, 2.5e5, 5e5,
	1e6, 2.5e6, 5e6, 1e7, 2.5e7, 5e7, 1e8, 2.5e8, 5e8,
	1e9, 2.5e9, 5e9, 1e10,
}

// DurationBounds returns the upper bounds of Histogram's buckets,
// ascending: 1 µs, 2.5 µs, 5 µs, 10 µs, … 5 s, 10 s.
func DurationBounds() []time.Duration {
	b := make([]time.Duration, len(durationBounds))
	for i, ns := range durationBounds {
		b[i] = time.Duration(ns)
	}
	return b
}

// durationHistogram is a Histogram being counted.
type durationHistogram struct {
	buckets [len(durationBounds) + 1]atomic.Uint64 // not cumulative; the last counts what is above every bound
	sum     atomic.Int64                           // nanoseconds
}

// observe counts a duration of d nanoseconds.
func (h *durationHistogram) observe(d int64) {
	i := 0
	for i < len(durationBounds) && d > durationBounds[i] {
		i++
	}
	h.buckets[i].Add(1)
	h.sum.Add(d)
}

// addTo adds the histogram's counts to out, whose Buckets has a count for
// each bound.
func (h *durationHistogram) addTo(out *Histogram) {
	var cum uint64
	for i := range h.buckets {
		cum += h.buckets[i].Load()
		if i < len(out.Buckets) {
			out.Buckets[i] += cum
		}
	}
	out.Count += cum
	out.Sum += time.Duration(h.sum.Load())
}

func (h *durationHistogram) snapshot() Histogram {
	out := Histogram{Buckets: make([]uint64, len(durationBounds))}
	h.addTo(&out)
	return out
}

// processStart is the origin of monotonicNow.
var processStart = time.Now()

// monotonicNow returns the monotonic clock in nanoseconds, with one
// reading of the clock (time.Now reads two).
func monotonicNow() int64 { return int64(time.Since(processStart)) }

// result is how a command ended, for the command statistics.
type result uint8

const (
	resultOK result = iota
	resultError
	resultWrongType
	numResults
)

var resultNames = [numResults]string{"ok", "error", "wrong_type"}

// commandSampling is the mean gap between the commands whose durations
// a client samples.
const commandSampling = 16

// commandStats are the counts of the commands, and the durations of a
// sample of them, for each command and result, at index
// slot·numResults + result (command.slot; the last slot is the unknown
// commands').
type commandStats struct {
	counts []atomic.Uint64
	h      []durationHistogram
}

func newCommandStats() *commandStats {
	n := (len(commandSlots) + 1) * int(numResults)
	return &commandStats{counts: make([]atomic.Uint64, n), h: make([]durationHistogram, n)}
}

// commandSample is a client's sampling of its commands' durations: the
// commands are timed at random gaps of 1 to 2·commandSampling−1, so that
// no repeating pattern of commands hides one of them from the sample.
type commandSample struct {
	next int32  // commands until the next one timed
	rand uint64 // xorshift state, never 0
}

func newCommandSample(seed int64) commandSample {
	// splitmix64 of the seed: neighbouring clients draw unrelated gaps.
	z := uint64(seed) + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	cs := commandSample{rand: z | 1}
	cs.next = cs.gap()
	return cs
}

// gap draws the number of commands until the next one timed.
func (cs *commandSample) gap() int32 {
	x := cs.rand
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	cs.rand = x
	return 1 + int32((x*0x2545f4914f6cdd1d)>>32%(2*commandSampling-1))
}

// begin is called before a client's command runs: it returns the time
// (monotonicNow) when the command is one of the sample, else 0.
func (cs *commandSample) begin() int64 {
	if cs.next--; cs.next > 0 {
		return 0
	}
	cs.next = cs.gap()
	return monotonicNow()
}

// count counts the call c, and its duration when it began at start, not
// 0 (commandSample.begin).
func (cs *commandStats) count(c *call, start int64) {
	slot := len(commandSlots)
	if c.cmd != nil {
		slot = c.cmd.slot
	}
	i := slot*int(numResults) + int(c.result)
	cs.counts[i].Add(1)
	if start != 0 {
		cs.h[i].observe(monotonicNow() - start)
	}
}

// commandStatsFor returns the copy of the command statistics a client
// adds to, or nil without Config.CommandStats. A client whose id is i
// modulo the number of event loops is served by loop i (toLoop), so that
// each loop adds to one copy alone.
func (s *Server) commandStatsFor(id int64) *commandStats {
	if len(s.stats.commands) == 0 {
		return nil
	}
	return s.stats.commands[id%int64(len(s.stats.commands))]
}

// ErrorKinds returns the kinds of error Stats.Errors counts:
//
//   - wrong_type: a command on a key of another type (WRONGTYPE)
//   - not_found: a command on a key that does not exist, where that is
//     an error (CF.INFO, RENAME)
//   - filter_full: a filter refused an item (Filter is full, Maximum
//     expansions reached, non scaling filter is full)
//   - oom: a command refused past MaxMemory (OOM)
//   - auth: a command before AUTH, or a wrong password (NOAUTH,
//     WRONGPASS)
//   - unknown_command: a command or subcommand the server does not know
//   - log_failed: a write refused because the append-only log failed,
//     or, without the log, the last snapshot (MISCONF)
//   - other: every other error reply: a wrong argument, a syntax error,
//     a key that exists already, …
//   - protocol: a malformed request, after which the connection is
//     closed
//   - output_limit: a client disconnected because its replies passed
//     MaxOutputBuffer
//   - query_buffer_limit: a client disconnected because one command
//     passed client-query-buffer-limit (Limits.MaxCommand)
//   - snapshot: a snapshot that failed
func ErrorKinds() []string { return slices.Clone(errorKindNames[:]) }

// errorKind is a kind of error Stats.Errors counts.
type errorKind uint8

const (
	errKindWrongType errorKind = iota
	errKindNotFound
	errKindFilterFull
	errKindOOM
	errKindAuth
	errKindUnknownCommand
	errKindLogFailed
	errKindOther
	errKindProtocol
	errKindOutputLimit
	errKindQueryBufferLimit
	errKindSnapshot
	numErrorKinds
)

var errorKindNames = [numErrorKinds]string{"wrong_type", "not_found", "filter_full", "oom", "auth",
	"unknown_command", "log_failed", "other", "protocol", "output_limit",
	"query_buffer_limit", "snapshot"}

// replyErrorKind returns the kind of an error reply.
func replyErrorKind(text string) errorKind {
	code, _, _ := strings.Cut(text, " ")
	switch code {
	case "WRONGTYPE":
		return errKindWrongType
	case "OOM":
		return errKindOOM
	case "NOAUTH", "WRONGPASS":
		return errKindAuth
	case "MISCONF":
		return errKindLogFailed
	}
	switch replyError(text) {
	case errCFFull, errCFMaxExpansions, errBloomFull:
		return errKindFilterFull
	case errNotFound, errNoSuchKey, errCFDelNotFound:
		return errKindNotFound
	case errNoPassword:
		return errKindAuth
	}
	if strings.HasPrefix(text, "ERR unknown command ") || strings.HasPrefix(text, "ERR unknown subcommand ") {
		return errKindUnknownCommand
	}
	return errKindOther
}

// countError counts an error of kind k.
func (s *Server) countError(k errorKind) { s.stats.errors[k].Add(1) }

// serverStats are the counters behind Stats that the rest of the server
// does not keep for itself.
type serverStats struct {
	errors        [numErrorKinds]atomic.Int64
	rejectedConns atomic.Int64
	// commands are the copies of the command statistics, one per event
	// loop (GOMAXPROCS at New); none without Config.CommandStats.
	commands []*commandStats
	// recovery is New's loading of the data directory, written by New
	// alone.
	recovery struct {
		duration time.Duration
		records  int64
	}
}

// initStats makes the copies of the command statistics, when asked for.
func (s *Server) initStats() {
	if !s.cfg.CommandStats {
		return
	}
	s.stats.commands = make([]*commandStats, max(runtime.GOMAXPROCS(0), 1))
	for i := range s.stats.commands {
		s.stats.commands[i] = newCommandStats()
	}
}

// filterType is a key's type in Stats.Types.
type filterType uint8

const (
	typeCuckoo filterType = iota
	typeBloom
	typeWindow
	numFilterTypes
)

var filterTypeNames = [numFilterTypes]string{"cuckoo", "bloom", "window"}

// filterType returns the type of o's filter.
func (o *object) filterType() filterType {
	switch {
	case o.bf != nil:
		return typeBloom
	case o.cf.win != nil:
		return typeWindow
	}
	return typeCuckoo
}

// tableCount returns the tables of o's filter (a Bloom filter's layers).
func (o *object) tableCount() int {
	if o.cf != nil {
		return o.cf.tables()
	}
	return o.bf.tables()
}

// fixedCapacity reports whether o's filter refuses items once full
// instead of growing: a cuckoo filter with EXPANSION 0, a NONSCALING
// Bloom filter, a window.
func (o *object) fixedCapacity() bool {
	if o.cf != nil {
		return o.cf.s == nil
	}
	return o.bf.f != nil
}

// TypeStats are the figures of the keys of one type.
type TypeStats struct {
	// Type is "cuckoo", "bloom" or "window".
	Type string
	// Keys is the number of keys.
	Keys int64
	// Bytes is their filters' memory, as MaxMemory counts it.
	Bytes int64
	// Items is the items their filters hold (for a window, the items of
	// the current window), and Capacity the items they were sized for:
	// a growing filter's capacity is that of the tables it has so far.
	Items, Capacity uint64
	// Tables is their tables (a growing cuckoo filter has one more for
	// each growth; a Bloom filter's are its layers; a fixed filter and a
	// window have one).
	Tables int64
	// Growths counts the tables added to growing filters of this type
	// since New.
	Growths int64
	// Fill counts the filters of a fixed capacity (EXPANSION 0,
	// NONSCALING, windows), which refuse items once full, by how full
	// they are: Fill.Buckets[i] counts those whose items are at most
	// FillBounds()[i] of their capacity, cumulatively, and Fill.Count
	// all of them. FillSum is the sum of their fill ratios.
	Fill    FillHistogram
	FillSum float64
}

// FillHistogram counts filters by how full they are, as Prometheus's
// histograms count.
type FillHistogram struct {
	Count   uint64
	Buckets []uint64
}

// fillBounds are the upper bounds of the fill histogram's buckets.
var fillBounds = [...]float64{0.5, 0.75, 0.9, 0.95, 0.99, 1}

// FillBounds returns the upper bounds of the buckets of TypeStats.Fill,
// ascending: 0.5, 0.75, 0.9, 0.95, 0.99 and 1 of the capacity.
func FillBounds() []float64 { return slices.Clone(fillBounds[:]) }

// Stats returns the server's figures. It walks the keys, holding each
// key's read lock for a moment (a command writing to that key waits that
// long): its cost grows with the number of keys, not with their size.
func (s *Server) Stats() Stats {
	st := Stats{
		Clients:             s.numClients.Load(),
		MaxClients:          s.cfg.MaxClients,
		ConnectionsReceived: s.totalConns.Load(),
		ConnectionsRejected: s.stats.rejectedConns.Load(),
		Errors:              make(map[string]int64, numErrorKinds),
		MaxMemory:           s.cfg.MaxMemory,
		Commands:            s.commandTotals(),
		Types:               s.typeStats(),
		Snapshot: SnapshotStats{
			Count:        s.save.count.Load(),
			LastOK:       s.save.lastOK.Load(),
			LastDuration: time.Duration(s.save.took.Load()),
			Size:         s.save.fileSize.Load(),
			Running:      s.save.running.Load(),
		},
		Recovery: RecoveryStats{
			Duration:   s.stats.recovery.duration,
			LogRecords: s.stats.recovery.records,
		},
	}
	st.DatasetBytes = s.ks.used.Load()
	st.DumpCopies, st.DumpCopyBytes = int64(s.ks.dumps.count()), s.ks.dumps.bytes.Load()
	loads, loadBytes := s.pendingLoads()
	st.PendingLoads, st.PendingLoadBytes = int64(loads), loadBytes
	if last := s.save.last.Load(); last > 0 {
		st.Snapshot.Last = time.Unix(last, 0)
	}
	for k := range numErrorKinds {
		st.Errors[errorKindNames[k]] = s.stats.errors[k].Load()
	}
	if a := s.aof; a != nil {
		st.Log = LogStats{Enabled: true, Size: a.size(), Failed: a.failed.Load(), Fsyncs: a.fsyncs.snapshot()}
		if t := a.lastFsync.Load(); t > 0 {
			st.Log.LastFsync = time.Unix(0, t)
		}
	}
	return st
}

// commandTotals adds up the copies of the command statistics.
func (s *Server) commandTotals() []CommandStats {
	if len(s.stats.commands) == 0 {
		return nil
	}
	var out []CommandStats
	for slot := range len(commandSlots) + 1 {
		name := "unknown"
		if slot < len(commandSlots) {
			name = commandSlots[slot].name
		}
		for r := range numResults {
			cs := CommandStats{Command: name, Result: resultNames[r], Durations: Histogram{Buckets: make([]uint64, len(durationBounds))}}
			i := slot*int(numResults) + int(r)
			for _, part := range s.stats.commands {
				cs.Count += part.counts[i].Load()
				part.h[i].addTo(&cs.Durations)
			}
			if cs.Count > 0 {
				out = append(out, cs)
			}
		}
	}
	slices.SortFunc(out, func(a, b CommandStats) int {
		return cmp.Or(strings.Compare(a.Command, b.Command), strings.Compare(a.Result, b.Result))
	})
	return out
}

// typeStats walks the keys.
func (s *Server) typeStats() []TypeStats {
	out := make([]TypeStats, numFilterTypes)
	for t := range out {
		out[t] = TypeStats{Type: filterTypeNames[t], Growths: s.ks.growths[t].Load(),
			Fill: FillHistogram{Buckets: make([]uint64, len(fillBounds))}}
	}
	var objs []*object
	for i := range s.ks.shards {
		objs = s.ks.objects(i, objs[:0])
		for _, o := range objs {
			o.mu.RLock()
			if !o.dead {
				ts := &out[o.filterType()]
				ts.Keys++
				ts.Bytes += o.size
				ts.Tables += int64(o.tableCount())
				var items, capacity uint64
				if o.cf != nil {
					items, capacity = o.cf.len(), o.cf.capacity()
				} else {
					items, capacity = o.bf.len(), o.bf.capacity()
				}
				ts.Items += items
				ts.Capacity += capacity
				if o.fixedCapacity() && capacity > 0 {
					fill := float64(items) / float64(capacity)
					ts.Fill.Count++
					ts.FillSum += fill
					for b, bound := range fillBounds {
						if fill <= bound {
							ts.Fill.Buckets[b]++
						}
					}
				}
			}
			o.mu.RUnlock()
		}
	}
	return out
}

// LogStats are the figures of the append-only log.
type LogStats struct {
	// Enabled is Config.AppendOnly with a data directory: the rest is
	// zero without a log.
	Enabled bool
	// Size is the bytes of the current log file, which a snapshot
	// starts anew.
	Size int64
	// Failed is set once a write or an fsync of the log failed: the
	// server then refuses writes (MISCONF) until it is restarted.
	Failed bool
	// Fsyncs counts the log's fsyncs by their duration.
	Fsyncs Histogram
	// LastFsync is the time of the last fsync that succeeded (zero
	// before the first).
	LastFsync time.Time
}

// SnapshotStats are the figures of the snapshots.
type SnapshotStats struct {
	// Count counts the snapshots written since New.
	Count int64
	// Last is the time of the newest snapshot written (LASTSAVE), the one
	// loaded at start until the first is written; zero when there is none.
	Last time.Time
	// LastOK is false when the last snapshot attempted failed.
	LastOK bool
	// LastDuration is the time the last snapshot written took.
	LastDuration time.Duration
	// Size is the bytes of the newest snapshot file.
	Size int64
	// Running is set while a snapshot is being written.
	Running bool
}

// RecoveryStats describe New's loading of the data directory.
type RecoveryStats struct {
	// Duration is the time it took: the snapshot loaded and the log
	// replayed.
	Duration time.Duration
	// LogRecords is the log records it replayed.
	LogRecords int64
}
