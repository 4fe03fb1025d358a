package servermetrics_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/dedupkit/cuckoo/server"
	"github.com/dedupkit/cuckoo/server/servermetrics"
)

// startServer starts a server that counts its commands, with its data in
// a temporary directory and its log fsynced at every write, and returns
// it with a client.
func startServer(t *testing.T) (*server.Server, *redis.Client) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.Sync = server.SyncAlways
	cfg.SaveOnShutdown = false
	cfg.CommandStats = true
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), DialTimeout: 30 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
	t.Cleanup(func() {
		rdb.Close()
		srv.Close()
		if err := <-served; !errors.Is(err, server.ErrClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv, rdb
}

// gather collects the collector's metrics through a pedantic registry,
// which also checks them against their descriptions, and returns them by
// name.
func gather(t *testing.T, c prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range families {
		byName[mf.GetName()] = mf
	}
	return byName
}

// metric returns the metric of family name whose labels are the given
// name=value pairs, or nil.
func metric(families map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	mf := families[name]
	if mf == nil {
		return nil
	}
next:
	for _, m := range mf.GetMetric() {
		for _, want := range labels {
			k, v, _ := strings.Cut(want, "=")
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		return m
	}
	return nil
}

// value returns the value of a counter or gauge, failing when it is
// missing.
func value(t *testing.T, families map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m := metric(families, name, labels...)
	switch {
	case m == nil:
		t.Fatalf("no %s%v", name, labels)
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("%s%v is neither a counter nor a gauge", name, labels)
	return 0
}

// TestCollectorFollowsCommands: the counters and histograms move with the
// commands a real client sends, and the figures of keys, filters, the log
// and the build are there.
func TestCollectorFollowsCommands(t *testing.T) {
	srv, rdb := startServer(t)
	ctx := context.Background()
	c := servermetrics.NewCollector(srv)
	before := gather(t, c)
	if metric(before, "cuckoo_commands_total") != nil {
		t.Fatal("commands counted before any was sent")
	}
	if v := value(t, before, "cuckoo_errors_total", "kind=wrong_type"); v != 0 {
		t.Fatalf("wrong_type errors before any command: %v", v)
	}
	if err := rdb.CFReserve(ctx, "seen", 1000).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if err := rdb.CFAdd(ctx, "seen", fmt.Sprint("item", i)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		rdb.CFExists(ctx, "seen", fmt.Sprint("item", i))
	}
	if err := rdb.BFAdd(ctx, "seen", "x").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("BF.ADD on a cuckoo filter: %v", err)
	}
	rdb.BFAdd(ctx, "bloom", "x")

	after := gather(t, c)
	for _, tc := range []struct {
		command, result string
		want            float64
	}{{"cf.reserve", "ok", 1}, {"cf.add", "ok", 50}, {"cf.exists", "ok", 20}, {"bf.add", "wrong_type", 1}, {"bf.add", "ok", 1}} {
		labels := []string{"command=" + tc.command, "result=" + tc.result}
		if got := value(t, after, "cuckoo_commands_total", labels...); got != tc.want {
			t.Errorf("cuckoo_commands_total%v = %v, want %v", labels, got, tc.want)
		}
		h := metric(after, "cuckoo_command_duration_seconds", labels...).GetHistogram()
		if float64(h.GetSampleCount()) > tc.want || h.GetSampleSum() < 0 || len(h.GetBucket()) != len(server.DurationBounds()) {
			t.Errorf("cuckoo_command_duration_seconds%v: %d samples summing to %v in %d buckets", labels, h.GetSampleCount(), h.GetSampleSum(), len(h.GetBucket()))
		}
	}
	for name, want := range map[string]float64{
		"cuckoo_errors_total{kind=wrong_type}": 1,
		"cuckoo_keys{type=cuckoo}":             1,
		"cuckoo_keys{type=bloom}":              1,
		"cuckoo_keys{type=window}":             0,
		"cuckoo_filter_items{type=cuckoo}":     50,
		"cuckoo_connections_received_total":    1,
		"cuckoo_connections_rejected_total":    0,
		"cuckoo_log_failed":                    0,
		"cuckoo_snapshots_total":               0,
	} {
		name, labels, _ := strings.Cut(strings.TrimSuffix(name, "}"), "{")
		var ls []string
		if labels != "" {
			ls = strings.Split(labels, ",")
		}
		if got := value(t, after, name, ls...); got != want {
			t.Errorf("%s%v = %v, want %v", name, ls, got, want)
		}
	}
	if v := value(t, after, "cuckoo_filter_memory_bytes", "type=cuckoo"); v <= 0 {
		t.Errorf("cuckoo_filter_memory_bytes{type=cuckoo} = %v", v)
	}
	if v := value(t, after, "cuckoo_log_size_bytes"); v <= 0 {
		t.Errorf("cuckoo_log_size_bytes = %v", v)
	}
	// appendfsync always: an fsync for each write's batch.
	if n := metric(after, "cuckoo_log_fsync_duration_seconds").GetHistogram().GetSampleCount(); n < 51 {
		t.Errorf("%d fsyncs counted for 51 writes under appendfsync always", n)
	}
	if v := value(t, after, "cuckoo_log_last_fsync_timestamp_seconds"); time.Since(time.Unix(int64(v), 0)) > time.Hour {
		t.Errorf("last fsync at %v", v)
	}
	if fill := metric(after, "cuckoo_fixed_filter_fill_ratio", "type=cuckoo").GetHistogram(); fill.GetSampleCount() != 0 {
		t.Errorf("a growing filter counted among the fixed ones: %v", fill)
	}
	if m := metric(after, "cuckoo_build_info"); m == nil || len(m.GetLabel()) != 3 {
		t.Errorf("cuckoo_build_info: %v", m)
	}
}

// TestCollectorFollowsNaming: the metrics pass client_golang's lint of
// Prometheus's naming conventions (units, _total on counters, help).
func TestCollectorFollowsNaming(t *testing.T) {
	srv, rdb := startServer(t)
	rdb.CFAdd(context.Background(), "k", "x")
	rdb.Do(context.Background(), "SAVE")
	problems, err := testutil.CollectAndLint(servermetrics.NewCollector(srv))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// infoMemory returns the fields of INFO memory as numbers, by name.
func infoMemory(t *testing.T, rdb *redis.Client) map[string]float64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]float64{}
	for _, line := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		var f float64
		if _, err := fmt.Sscan(v, &f); ok && err == nil {
			fields[k] = f
		}
	}
	return fields
}

// TestCollectorCountsDumpCopiesAndPendingLoads: with a CF.SCANDUMP in
// progress (its copy of the filter's encoding held) and a CF.LOADCHUNK
// load begun and not finished (its first chunk held), the metrics count
// both, as INFO memory does, and the dataset's memory is INFO's
// used_memory_dataset: the filters', the copies' and the loads' together.
// Once the dump ends and the load is abandoned (DEL), they count nothing.
func TestCollectorCountsDumpCopiesAndPendingLoads(t *testing.T) {
	srv, rdb := startServer(t)
	ctx := context.Background()
	c := servermetrics.NewCollector(srv)
	if err := rdb.CFReserve(ctx, "src", 5000).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		rdb.CFAdd(ctx, "src", fmt.Sprint("item", i))
	}
	dump, err := rdb.CFScanDump(ctx, "src", 0).Result()
	if err != nil || dump.Iter == 0 {
		t.Fatalf("CF.SCANDUMP src 0: %v, %v", dump, err)
	}
	// The first half of the encoding, loaded as a first chunk: the header
	// announces the whole length, so the load waits for the rest.
	half := dump.Data[:len(dump.Data)/2]
	if err := rdb.CFLoadChunk(ctx, "dst", int64(len(half)+1), half).Err(); err != nil {
		t.Fatalf("CF.LOADCHUNK of half a dump: %v", err)
	}

	m := gather(t, c)
	info := infoMemory(t, rdb)
	for _, tc := range []struct {
		metric, info string
		want         float64
	}{
		{"cuckoo_scandump_copies", "scandump_copies", 1},
		{"cuckoo_scandump_copies_memory_bytes", "mem_scandump_copies", float64(len(dump.Data))},
		{"cuckoo_loadchunk_pending", "loadchunk_pending", 1},
		{"cuckoo_loadchunk_pending_memory_bytes", "mem_loadchunk_pending", float64(len(half))},
	} {
		if got := value(t, m, tc.metric); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.metric, got, tc.want)
		}
		if got, ok := info[tc.info]; !ok || got != tc.want {
			t.Errorf("INFO memory's %s = %v (present: %v), want %v", tc.info, got, ok, tc.want)
		}
	}
	dataset := value(t, m, "cuckoo_dataset_memory_bytes")
	if dataset != info["used_memory_dataset"] {
		t.Errorf("cuckoo_dataset_memory_bytes = %v, INFO's used_memory_dataset %v", dataset, info["used_memory_dataset"])
	}
	var filters float64
	for _, typ := range []string{"cuckoo", "bloom", "window"} {
		filters += value(t, m, "cuckoo_filter_memory_bytes", "type="+typ)
	}
	if sum := filters + float64(len(dump.Data)) + float64(len(half)); dataset != sum {
		t.Errorf("cuckoo_dataset_memory_bytes = %v, want the filters' %v + the copy's %d + the load's %d = %v",
			dataset, filters, len(dump.Data), len(half), sum)
	}

	// The end of the dump: [0, nil], which go-redis reads as redis.Nil.
	if end, err := rdb.CFScanDump(ctx, "src", dump.Iter).Result(); !errors.Is(err, redis.Nil) || end.Iter != 0 {
		t.Fatalf("the end of the dump: %v, %v", end, err)
	}
	rdb.Del(ctx, "dst")
	m = gather(t, c)
	for _, name := range []string{"cuckoo_scandump_copies", "cuckoo_scandump_copies_memory_bytes",
		"cuckoo_loadchunk_pending", "cuckoo_loadchunk_pending_memory_bytes"} {
		if got := value(t, m, name); got != 0 {
			t.Errorf("%s = %v once the dump ended and the load was abandoned", name, got)
		}
	}
	if got := value(t, m, "cuckoo_dataset_memory_bytes"); got != filters {
		t.Errorf("cuckoo_dataset_memory_bytes = %v once the dump ended and the load was abandoned, want the filters' %v", got, filters)
	}
}
