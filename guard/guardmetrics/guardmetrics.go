// Package guardmetrics exports a guard's counters ([guard.Stats]) as
// Prometheus metrics, with github.com/prometheus/client_golang, so that
// the guard package itself needs no metrics library. A service that
// embeds a guard registers one collector per guard, named:
//
//	reg.MustRegister(guardmetrics.NewCollector("users", g.Stats))
//
// The metrics are counters named cuckoo_guard_…_total, one per field of
// guard.Stats, each labelled guard="<name>"; guard.Stats says what each
// counts. The rate at which the filter lets absent keys through, which
// tells when to Rebuild (docs/guard.md), is in PromQL
//
//	rate(cuckoo_guard_missing_total[5m])
//	  / (rate(cuckoo_guard_blocked_total[5m]) + rate(cuckoo_guard_missing_total[5m]))
package guardmetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dedupkit/cuckoo/guard"
)

// Collector is a prometheus.Collector of a guard's Stats, read once per
// scrape.
type Collector struct {
	stats func() guard.Stats
	descs [len(counters)]*prometheus.Desc
}

// counters are the metrics: each a counter of one field of guard.Stats.
var counters = [...]struct {
	name, help string
	field      func(guard.Stats) uint64
}{
	{"lookups_total", "Keys looked up: each Get, each key of GetMany.", func(s guard.Stats) uint64 { return s.Lookups }},
	{"blocked_total", "Lookups the filter answered alone, without a load: database queries saved.", func(s guard.Stats) uint64 { return s.Blocked }},
	{"loads_total", "Calls of load (concurrent lookups of one key share one).", func(s guard.Stats) uint64 { return s.Loads }},
	{"joined_total", "Lookups answered by a load another lookup of the same key started.", func(s guard.Stats) uint64 { return s.Joined }},
	{"missing_total", "Lookups the filter let through whose load found no row: false positives, and rows removed behind the filter.",
		func(s guard.Stats) uint64 { return s.Missing }},
	{"load_errors_total", "Calls of load that failed with an error other than not found.", func(s guard.Stats) uint64 { return s.LoadErrors }},
	{"errors_total", "Operations of the filter's set that failed: lookups, adds, deletes.", func(s guard.Stats) uint64 { return s.Errors }},
	{"failed_open_total", "Lookups sent to load because the filter could not answer.", func(s guard.Stats) uint64 { return s.FailedOpen }},
	{"failed_closed_total", "Lookups that failed because the filter could not answer (WithFailClosed).", func(s guard.Stats) uint64 { return s.FailedClosed }},
	{"unguarded_total", "Lookups made while the guard had no set: each went to load.", func(s guard.Stats) uint64 { return s.Unguarded }},
	{"late_adds_total", "Inserts into a shared set whose write outlasted the grace period.", func(s guard.Stats) uint64 { return s.LateAdds }},
	{"rebuilds_total", "Rebuilds that swapped their fresh set in.", func(s guard.Stats) uint64 { return s.Rebuilds }},
}

// NewCollector returns a collector of the counters stats returns (a
// Guard's Stats method), labelled guard=name. Collectors of different
// names register in one registry side by side.
func NewCollector(name string, stats func() guard.Stats) *Collector {
	c := &Collector{stats: stats}
	for i, m := range counters {
		c.descs[i] = prometheus.NewDesc("cuckoo_guard_"+m.name, m.help, nil, prometheus.Labels{"guard": name})
	}
	return c
}

// Describe sends the descriptions of the metrics.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect sends the counters' values.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for i, m := range counters {
		ch <- prometheus.MustNewConstMetric(c.descs[i], prometheus.CounterValue, float64(m.field(s)))
	}
}
