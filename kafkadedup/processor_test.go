package kafkadedup

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupkit/cuckoo/internal/kafkatest"
	"github.com/dedupkit/cuckoo/internal/testseed"
)

// quickOpts are the options every in-process test gives: the broker, a
// fixed seed (so that filterKept predicts the filters exactly), a short
// idle exit.
func quickOpts(t testing.TB, addr string) []Option {
	start := time.Now()
	return []Option{WithClient(kgo.SeedBrokers(addr)), WithSeed(7), WithExitWhenIdle(300 * time.Millisecond),
		WithLogf(func(format string, args ...any) {
			t.Logf("%v: "+format, append([]any{time.Since(start).Round(time.Millisecond)}, args...)...)
		})}
}

func TestWindowDedupMatchesTheModel(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Start(t)
	kafkatest.CreateTopic(t, addr, "in", 3)
	kafkatest.CreateTopic(t, addr, "out", 3)
	rng := testseed.Rand(t)
	recs := genInput(rng, 3000, 3, 400, time.Minute)
	produceInput(t, addr, "in", recs)
	p, err := New("g", []string{"in"}, "out", append(quickOpts(t, addr), WithWindow(2*time.Hour), WithCapacity(2000))...)
	if err != nil {
		t.Fatal(err)
	}
	st := runUntilIdle(t, p)
	checkOutput(t, &p.cfg, recs, kafkatest.ReadCommitted(t, addr, "out"))
	if st.In != uint64(len(recs)) || st.Kept+st.Dropped != st.In {
		t.Fatalf("stats %+v for %d records", st, len(recs))
	}
}
