package kafkametrics_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupkit/cuckoo/internal/kafkatest"
	"github.com/dedupkit/cuckoo/kafkadedup"
	"github.com/dedupkit/cuckoo/kafkadedup/kafkametrics"
)

// TestScrapeFollowsStats runs a Processor over 300 records of 100 keys
// (each three times) and scrapes its collector over HTTP: the counters
// are its Stats, labelled with its group.
func TestScrapeFollowsStats(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Start(t)
	kafkatest.CreateTopic(t, addr, "in", 1)
	kafkatest.CreateTopic(t, addr, "out", 1)
	var recs []*kgo.Record
	for i := range 300 {
		recs = append(recs, &kgo.Record{Topic: "in", Key: fmt.Appendf(nil, "key-%d", i%100), Value: []byte("v")})
	}
	kafkatest.Produce(t, kafkatest.Client(t, addr), recs...)
	p, err := kafkadedup.New("orders", []string{"in"}, "out", kafkadedup.WithClient(kgo.SeedBrokers(addr)),
		kafkadedup.WithExitWhenIdle(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(kafkametrics.NewCollector("orders", p.Stats))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	scrape := func() string {
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if before := scrape(); !strings.Contains(before, `cuckoo_kafka_records_total{group="orders"} 0`+"\n") {
		t.Fatalf("before Run:\n%s", before)
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Wait)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	s := p.Stats()
	if s.In != 300 || s.Kept != 100 || s.Dropped != 200 {
		t.Fatalf("stats %+v: want 300 in, 100 kept, 200 dropped", s)
	}
	after := scrape()
	for _, line := range []string{
		`cuckoo_kafka_records_total{group="orders"} 300`,
		`cuckoo_kafka_kept_records_total{group="orders"} 100`,
		`cuckoo_kafka_dropped_records_total{group="orders"} 200`,
		fmt.Sprintf(`cuckoo_kafka_transactions_total{group="orders"} %d`, s.Transactions),
		fmt.Sprintf(`cuckoo_kafka_keys{group="orders"} %d`, s.Keys),
		fmt.Sprintf(`cuckoo_kafka_filter_bytes{group="orders"} %d`, s.FilterBytes),
		`cuckoo_kafka_partitions{group="orders"} 1`,
		"# TYPE cuckoo_kafka_records_total counter",
		"# TYPE cuckoo_kafka_lag_records gauge",
	} {
		if !strings.Contains(after, line+"\n") {
			t.Errorf("no line %q in the scrape:\n%s", line, after)
		}
	}
	if n := testutil.CollectAndCount(kafkametrics.NewCollector("orders", p.Stats)); n != 18 {
		t.Errorf("%d metrics, want one per field of kafkadedup.Stats (18)", n)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}
