// Package servermetrics exports a server's figures ([server.Server.Stats])
// as Prometheus metrics, with github.com/prometheus/client_golang, so that
// the server package itself needs no metrics library. `cuckoo serve
// --metrics` serves them; a program that embeds a server.Server registers
// the same collector:
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(servermetrics.NewCollector(srv))
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// Set server.Config.CommandStats for the commands' counts and durations.
// Every metric is named cuckoo_…; docs/server.md ("Operating") says what
// each one means.
package servermetrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dedupkit/cuckoo/internal/buildinfo"
	"github.com/dedupkit/cuckoo/server"
)

// Collector is a prometheus.Collector of a server's Stats. Each scrape
// reads them once (Server.Stats, which walks the keys).
type Collector struct {
	srv *server.Server
}

// NewCollector returns a collector of srv's figures. Register one per
// server in a registry.
func NewCollector(srv *server.Server) *Collector { return &Collector{srv: srv} }

const ns = "cuckoo"

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(ns+"_"+name, help, labels, nil)
}

var (
	buildInfo = desc("build_info", "The build of the server: a constant 1 labelled with the module version, the source revision and the Go version.",
		"version", "revision", "goversion")

	connectedClients    = desc("connected_clients", "Connections being served.")
	maxClients          = desc("max_clients", "The most connections served at once (--maxclients).")
	connectionsReceived = desc("connections_received_total", "Connections accepted, including those refused for --maxclients.")
	connectionsRejected = desc("connections_rejected_total", "Connections refused because --maxclients connections were being served.")

	commands        = desc("commands_total", "Commands run, by command and result (ok, error, wrong_type).", "command", "result")
	commandDuration = desc("command_duration_seconds",
		"Time to run a command, by command and result, for a random sample of about one command in 16; not counting the wait for the log or the network.",
		"command", "result")
	errorsTotal = desc("errors_total", "Errors by kind: error replies (wrong_type, not_found, filter_full, oom, auth, unknown_command, "+
		"log_failed, other), malformed requests (protocol), clients over their output limit (output_limit), failed snapshots (snapshot).", "kind")

	keys           = desc("keys", "Keys, by type of filter (cuckoo, bloom, window).", "type")
	filterMemory   = desc("filter_memory_bytes", "Memory of the filters, by type, as --maxmemory counts it.", "type")
	memoryLimit    = desc("memory_limit_bytes", "The bound on the filters' memory (--maxmemory; 0: none).")
	filterItems    = desc("filter_items", "Items the filters hold, by type (a window's: those of its window).", "type")
	filterCapacity = desc("filter_capacity", "Items the filters were sized for, by type (a growing filter's: its tables' so far).", "type")
	filterTables   = desc("filter_tables", "Tables of the filters, by type (a Bloom filter's layers).", "type")
	filterGrowths  = desc("filter_growths_total", "Tables added to growing filters, by type.", "type")
	fixedFill      = desc("fixed_filter_fill_ratio",
		"Filters of a fixed capacity (EXPANSION 0, NONSCALING, windows), which refuse items when full, by items over capacity.", "type")

	datasetMemory = desc("dataset_memory_bytes",
		"Memory of the filters, the SCANDUMP copies and the pending LOADCHUNK loads, as --maxmemory counts it (INFO's used_memory_dataset).")
	dumpCopies      = desc("scandump_copies", "Copies of filters' encodings held for the SCANDUMPs in progress, one per key at most.")
	dumpCopyMemory  = desc("scandump_copies_memory_bytes", "Memory of the copies held for the SCANDUMPs in progress, counted by --maxmemory.")
	pendingLoads    = desc("loadchunk_pending", "LOADCHUNK loads begun and not finished: their keys do not exist until the last chunk.")
	pendingLoadsMem = desc("loadchunk_pending_memory_bytes", "Memory of the chunks the unfinished LOADCHUNK loads hold, counted by --maxmemory.")

	logSize      = desc("log_size_bytes", "Bytes of the current append-only log file (a snapshot starts a new one).")
	logFailed    = desc("log_failed", "1 once a write or fsync of the log failed: writes are refused (MISCONF) until a restart.")
	logFsync     = desc("log_fsync_duration_seconds", "Time each fsync of the log took.")
	logLastFsync = desc("log_last_fsync_timestamp_seconds", "Unix time of the last fsync of the log that succeeded.")

	snapshots        = desc("snapshots_total", "Snapshots written since the start.")
	snapshotLast     = desc("snapshot_last_timestamp_seconds", "Unix time of the newest snapshot (the one loaded at start until one is written).")
	snapshotOK       = desc("snapshot_last_success", "1 when the last snapshot attempted was written, 0 when it failed.")
	snapshotDuration = desc("snapshot_last_duration_seconds", "Time the last snapshot written took.")
	snapshotSize     = desc("snapshot_size_bytes", "Bytes of the newest snapshot file.")
	snapshotRunning  = desc("snapshot_in_progress", "1 while a snapshot is being written.")

	recoveryDuration = desc("recovery_duration_seconds", "Time the start took to load the snapshot and replay the log.")
	recoveryRecords  = desc("recovery_log_records", "Log records the start replayed.")
)

var allDescs = []*prometheus.Desc{
	buildInfo, connectedClients, maxClients, connectionsReceived, connectionsRejected, commands, commandDuration, errorsTotal,
	keys, filterMemory, memoryLimit, filterItems, filterCapacity, filterTables, filterGrowths, fixedFill,
	datasetMemory, dumpCopies, dumpCopyMemory, pendingLoads, pendingLoadsMem,
	logSize, logFailed, logFsync, logLastFsync,
	snapshots, snapshotLast, snapshotOK, snapshotDuration, snapshotSize, snapshotRunning,
	recoveryDuration, recoveryRecords,
}

// Describe sends the descriptions of every metric the collector makes.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// durationBuckets are server.DurationBounds in seconds.
var durationBuckets = func() []float64 {
	var b []float64
	for _, d := range server.DurationBounds() {
		b = append(b, d.Seconds())
	}
	return b
}()

var fillBuckets = server.FillBounds()

// Collect sends the metrics of the server's Stats.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.srv.Stats()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	histogram := func(d *prometheus.Desc, h server.Histogram, labels ...string) {
		buckets := make(map[float64]uint64, len(durationBuckets))
		for i, n := range h.Buckets {
			buckets[durationBuckets[i]] = n
		}
		ch <- prometheus.MustNewConstHistogram(d, h.Count, h.Sum.Seconds(), buckets, labels...)
	}
	timestamp := func(d *prometheus.Desc, t time.Time) {
		if !t.IsZero() {
			gauge(d, float64(t.UnixNano())/1e9)
		}
	}

	build := buildinfo.Read()
	gauge(buildInfo, 1, build.Version, build.Revision, build.GoVersion)

	gauge(connectedClients, float64(st.Clients))
	gauge(maxClients, float64(st.MaxClients))
	counter(connectionsReceived, float64(st.ConnectionsReceived))
	counter(connectionsRejected, float64(st.ConnectionsRejected))

	for _, cs := range st.Commands {
		counter(commands, float64(cs.Count), cs.Command, cs.Result)
		histogram(commandDuration, cs.Durations, cs.Command, cs.Result)
	}
	for _, kind := range server.ErrorKinds() {
		counter(errorsTotal, float64(st.Errors[kind]), kind)
	}

	gauge(memoryLimit, float64(st.MaxMemory))
	gauge(datasetMemory, float64(st.DatasetBytes))
	gauge(dumpCopies, float64(st.DumpCopies))
	gauge(dumpCopyMemory, float64(st.DumpCopyBytes))
	gauge(pendingLoads, float64(st.PendingLoads))
	gauge(pendingLoadsMem, float64(st.PendingLoadBytes))
	for _, ts := range st.Types {
		gauge(keys, float64(ts.Keys), ts.Type)
		gauge(filterMemory, float64(ts.Bytes), ts.Type)
		gauge(filterItems, float64(ts.Items), ts.Type)
		gauge(filterCapacity, float64(ts.Capacity), ts.Type)
		gauge(filterTables, float64(ts.Tables), ts.Type)
		counter(filterGrowths, float64(ts.Growths), ts.Type)
		buckets := make(map[float64]uint64, len(fillBuckets))
		for i, n := range ts.Fill.Buckets {
			buckets[fillBuckets[i]] = n
		}
		ch <- prometheus.MustNewConstHistogram(fixedFill, ts.Fill.Count, ts.FillSum, buckets, ts.Type)
	}

	if st.Log.Enabled {
		gauge(logSize, float64(st.Log.Size))
		gauge(logFailed, boolFloat(st.Log.Failed))
		histogram(logFsync, st.Log.Fsyncs)
		timestamp(logLastFsync, st.Log.LastFsync)
	}

	counter(snapshots, float64(st.Snapshot.Count))
	timestamp(snapshotLast, st.Snapshot.Last)
	gauge(snapshotOK, boolFloat(st.Snapshot.LastOK))
	gauge(snapshotDuration, st.Snapshot.LastDuration.Seconds())
	gauge(snapshotSize, float64(st.Snapshot.Size))
	gauge(snapshotRunning, boolFloat(st.Snapshot.Running))

	gauge(recoveryDuration, st.Recovery.Duration.Seconds())
	gauge(recoveryRecords, float64(st.Recovery.LogRecords))
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
