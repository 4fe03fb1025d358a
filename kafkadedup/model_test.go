package kafkadedup

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/kafkatest"
)

func TestMain(m *testing.M) {
	if runChild() {
		return
	}
	kafkatest.Main(m)
}

// An input record of the tests: its value is its id ("p3-17": partition
// 3, the 17th record written to it), unique over the input, so that the
// output can be matched to the input.
type inRec struct {
	part int32
	key  string
	ts   time.Time
	id   string
}

// genInput makes n records over parts partitions: keys drawn from a pool
// of distinct keys (so that about dupShare of the records repeat a key of
// the same partition), and times that move forward a step at a time with
// now and then a record late by up to 3 steps (time never goes back for
// the rule: a late record is judged at the latest time).
func genInput(rng *rand.Rand, n, parts, distinct int, step time.Duration) []inRec {
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	counts := make([]int, parts)
	now := make([]time.Time, parts)
	for i := range now {
		now[i] = base
	}
	recs := make([]inRec, n)
	for i := range recs {
		p := rng.IntN(parts)
		now[p] = now[p].Add(time.Duration(rng.Int64N(int64(2 * step))))
		ts := now[p]
		if rng.IntN(20) == 0 {
			ts = ts.Add(-time.Duration(rng.Int64N(int64(3 * step))))
		}
		ts = ts.Truncate(time.Millisecond) // Kafka's timestamps are in ms
		// Keys of one partition only: the producer's partitioner would
		// place a key in one partition.
		k := rng.IntN(distinct)
		recs[i] = inRec{part: int32(p), key: fmt.Sprintf("key-%d-%d", p, k), ts: ts, id: fmt.Sprintf("p%d-%d", p, counts[p])}
		counts[p]++
	}
	return recs
}

// produceInput writes the records to topic, each to its partition.
func produceInput(t testing.TB, addr, topic string, recs []inRec) {
	cl := kafkatest.Client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	batch := make([]*kgo.Record, 0, 1000)
	for i, r := range recs {
		batch = append(batch, &kgo.Record{Topic: topic, Partition: r.part, Key: []byte(r.key), Value: []byte(r.id), Timestamp: r.ts})
		if len(batch) == cap(batch) || i == len(recs)-1 {
			kafkatest.Produce(t, cl, batch...)
			batch = batch[:0]
		}
	}
}

// ruleKept returns the ids the rule keeps, exactly (a map, no filter): a
// record is dropped when its key's last record of the partition fell in
// an epoch at most 14 before its own (the epochs of cuckoo.Window, of
// window/14), times taken as the latest seen in the partition; without a
// window, when its key came before in the partition.
func ruleKept(recs []inRec, window time.Duration) map[string]bool {
	g := int64(0)
	if window > 0 {
		g = (int64(window) + cuckoo.WindowEpochs - 1) / cuckoo.WindowEpochs
	}
	last := map[string]int64{}
	latest := map[int32]int64{}
	kept := map[string]bool{}
	for _, r := range recs {
		ns := max(r.ts.UnixNano(), latest[r.part])
		latest[r.part] = ns
		var e int64
		if g > 0 {
			e = ns / g
		}
		prev, seen := last[r.key]
		if !seen || g > 0 && e-prev > cuckoo.WindowEpochs {
			kept[r.id] = true
		}
		last[r.key] = e
	}
	return kept
}

// filterKept returns the ids a Processor of c keeps, exactly, false
// positives included: each partition's records run through a fresh filter
// of c (whose seed the test fixes), as a Processor that never stopped
// would judge them. A restored filter must judge as this one does.
func filterKept(t testing.TB, c *config, recs []inRec) map[string]bool {
	filters := map[int32]*seen{}
	kept := map[string]bool{}
	for _, r := range recs {
		f := filters[r.part]
		if f == nil {
			var err error
			if f, err = newSeen(c); err != nil {
				t.Fatal(err)
			}
			filters[r.part] = f
		}
		keep, err := f.judge([]byte(r.key), r.ts)
		if err != nil {
			t.Fatal(err)
		}
		if keep {
			kept[r.id] = true
		}
	}
	return kept
}

// checkOutput checks the output records against the input: each is an
// input record, key and time as read, and their ids pass checkIDs.
func checkOutput(t testing.TB, c *config, recs []inRec, out []*kgo.Record) {
	t.Helper()
	byID := map[string]inRec{}
	for _, r := range recs {
		byID[r.id] = r
	}
	ids := make([]string, len(out))
	for i, r := range out {
		ids[i] = string(r.Value)
		in, ok := byID[ids[i]]
		if !ok || string(r.Key) != in.key || !r.Timestamp.Equal(in.ts) {
			t.Fatalf("output record %q, key %q, time %v: not an input record as read", r.Value, r.Key, r.Timestamp)
		}
	}
	checkIDs(t, c, recs, ids)
}

// checkIDs compares the ids of the output with the models: no id twice,
// exactly the ids filterKept keeps, and so nothing the rule drops (a
// filter has no false negatives), and the rule's kept ids missing only as
// false positives, no more than 5σ above the rate c asks for.
func checkIDs(t testing.TB, c *config, recs []inRec, out []string) {
	t.Helper()
	byID := map[string]inRec{}
	for _, r := range recs {
		byID[r.id] = r
	}
	want := filterKept(t, c, recs)
	rule := ruleKept(recs, c.window)
	got := map[string]bool{}
	var problems []string
	for _, id := range out {
		in, ok := byID[id]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%q is not an input record", id))
		case got[id]:
			problems = append(problems, fmt.Sprintf("%s is in the output twice", id))
		case !rule[id]:
			problems = append(problems, fmt.Sprintf("%s (key %s) was let through: its key was seen within the window", id, in.key))
		case !want[id]:
			problems = append(problems, fmt.Sprintf("%s was kept where an uninterrupted filter drops it", id))
		}
		got[id] = true
	}
	for id := range want {
		if !got[id] {
			problems = append(problems, fmt.Sprintf("%s is missing", id))
		}
	}
	if len(problems) > 0 {
		if len(problems) > 20 {
			problems = append(problems[:20], fmt.Sprintf("and %d more", len(problems)-20))
		}
		t.Fatalf("%d input records, %d output, %d kept by the rule, %d by the filter:\n%s",
			len(recs), len(out), len(rule), len(want), strings.Join(problems, "\n"))
	}
	falseDrops := len(rule) - len(want)
	// The filter drops a new key with probability at most the rate: over
	// len(rule) new keys, 5σ above that is a bound chance never meets.
	mean := c.fpr * float64(len(rule))
	if bound := mean + 5*math.Sqrt(mean) + 1; float64(falseDrops) > bound {
		t.Fatalf("%d of %d kept-worthy records dropped, above %.1f (rate %g)", falseDrops, len(rule), bound, c.fpr)
	}
	t.Logf("%d records in, %d kept (%d dropped by a false positive)", len(recs), len(want), falseDrops)
}

// runUntilIdle runs a Processor until it has caught up and been idle for
// a moment, and returns its stats.
func runUntilIdle(t testing.TB, p *Processor) Stats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Wait)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("Run did not catch up within %v", kafkatest.Wait)
	}
	return p.Stats()
}

// runChild runs the Processor of a child process, when the environment
// asks for one (see crash_test.go), and reports whether it did.
var runChild = func() bool { return os.Getenv(envChild) != "" && childMain() }
