// Package kafkametrics exports a Kafka dedup processor's counts
// ([kafkadedup.Stats]) as Prometheus metrics, with
// github.com/prometheus/client_golang, so that the kafkadedup package
// itself needs no metrics library. A service that embeds a Processor
// registers one collector per Processor, named by its consumer group:
//
//	reg.MustRegister(kafkametrics.NewCollector("orders", p.Stats))
//
// The metrics are named cuckoo_kafka_…, each labelled group="<name>":
// counters (…_total, …_seconds_total, …_bytes_total) of the committed
// transactions' counts, and gauges of what the Processor holds now (its
// partitions, keys, filters' bytes, lag); kafkadedup.Stats says what each
// field counts. The share of records dropped as duplicates is, in PromQL,
//
//	rate(cuckoo_kafka_dropped_records_total[5m]) / rate(cuckoo_kafka_records_total[5m])
package kafkametrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dedupkit/cuckoo/kafkadedup"
)

// Collector is a prometheus.Collector of a Processor's Stats, read once
// per scrape.
type Collector struct {
	stats func() kafkadedup.Stats
	descs [len(metrics)]*prometheus.Desc
}

// metrics are the metrics: each one field of kafkadedup.Stats.
var metrics = [...]struct {
	name, help string
	kind       prometheus.ValueType
	field      func(kafkadedup.Stats) float64
}{
	{"records_total", "Records judged, in committed transactions (control records are not counted).",
		prometheus.CounterValue, func(s kafkadedup.Stats) float64 { return float64(s.In) }},
	{"kept_records_total", "Records written to the output topic, the unreadable ones passed unjudged included.",
		prometheus.CounterValue, func(s kafkadedup.Stats) float64 { return float64(s.Kept) }},
	{"dropped_records_total", "Records dropped as seen within the window.",
		prometheus.CounterValue, func(s kafkadedup.Stats) float64 { return float64(s.Dropped) }},
	{"unreadable_records_total", "Records whose key or time could not be read, written unjudged (WithPassUnreadable).",
		prometheus.CounterValue, func(s kafkadedup.Stats) float64 { return float64(s.Unreadable) }},
	{"misplaced_records_total", "Records judged by their record key that are not in the partition Kafka's default partitioner gives it.",
		prometheus.CounterValue, func(s kafkadedup.Stats) float64 { return float64(s.Misplaced) }},
	{"expected_false_drops_total", "Expected number of records dropped by a false positive of the filters.",
		prometheus.CounterValue, func(s kafkadedup.Stats) float64 { return s.ExpectedFalseDrops }},
	{"transactions_total", "Transactions committed.",
		prometheus.CounterValue, func(s kafkadedup.Stats) float64 { return float64(s.Transactions) }},
	{"aborted_transactions_total", "Transactions aborted, by a rebalance or a failure: their records are judged again.",
		prometheus.CounterValue, func(s kafkadedup.Stats) float64 { return float64(s.Aborted) }},
	{"restores_total", "Partitions whose state was restored: a snapshot read and the input replayed from it.",
		prometheus.CounterValue, func(s kafkadedup.Stats) float64 { return float64(s.Restores) }},
	{"replayed_records_total", "Input records replayed by restores.",
		prometheus.CounterValue, func(s kafkadedup.Stats) float64 { return float64(s.Replayed) }},
	{"restore_seconds_total", "Time spent restoring partitions: reading snapshots and replaying.",
		prometheus.CounterValue, func(s kafkadedup.Stats) float64 { return s.RestoreTime.Seconds() }},
	{"replay_seconds_total", "Of the restores' time, the time spent replaying the input.",
		prometheus.CounterValue, func(s kafkadedup.Stats) float64 { return s.ReplayTime.Seconds() }},
	{"snapshots_total", "Snapshots of partitions' filters committed to the state topic.",
		prometheus.CounterValue, func(s kafkadedup.Stats) float64 { return float64(s.Snapshots) }},
	{"snapshot_bytes_total", "Bytes of the snapshots committed.",
		prometheus.CounterValue, func(s kafkadedup.Stats) float64 { return float64(s.SnapshotBytes) }},
	{"partitions", "Input partitions whose state the processor holds now.",
		prometheus.GaugeValue, func(s kafkadedup.Stats) float64 { return float64(s.Partitions) }},
	{"keys", "Keys in the filters of the partitions held.",
		prometheus.GaugeValue, func(s kafkadedup.Stats) float64 { return float64(s.Keys) }},
	{"filter_bytes", "Memory of the filters of the partitions held.",
		prometheus.GaugeValue, func(s kafkadedup.Stats) float64 { return float64(s.FilterBytes) }},
	{"lag_records", "Records behind the last stable offsets of the partitions held, as of the last committed transaction.",
		prometheus.GaugeValue, func(s kafkadedup.Stats) float64 { return float64(s.Lag) }},
}

// NewCollector returns a collector of the counts stats returns (a
// Processor's Stats method), labelled group=group. Collectors of
// different groups register in one registry side by side.
func NewCollector(group string, stats func() kafkadedup.Stats) *Collector {
	c := &Collector{stats: stats}
	for i, m := range metrics {
		c.descs[i] = prometheus.NewDesc("cuckoo_kafka_"+m.name, m.help, nil, prometheus.Labels{"group": group})
	}
	return c
}

// Describe sends the descriptions of the metrics.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect sends the metrics' values.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for i, m := range metrics {
		ch <- prometheus.MustNewConstMetric(c.descs[i], m.kind, m.field(s))
	}
}
