package kafkadedup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/testseed"
)

// judgeInput makes n records of one partition for the batch tests: keys
// from a pool of distinct ones; and, for a window whose epochs
// last gran, times that walk forward by steps of every size around an
// epoch (none, 1 ns, an epoch less or more 1 ns, several epochs), land on
// epoch boundaries, go back by up to five epochs, start before the Unix
// epoch, and, in the last tenth, jump past the times whose epoch is known
// here (to 2110, then to 2150, past the times a Window tells apart). A
// record without a key is unreadable.
func judgeInput(rng *rand.Rand, n, distinct int, gran int64) []*kgo.Record {
	ns := -3*gran - 1
	recs := make([]*kgo.Record, n)
	for i := range recs {
		switch rng.IntN(8) {
		case 0:
		case 1:
			ns++
		case 2:
			ns += gran - 1
		case 3:
			ns += gran + 1
		case 4:
			ns = (ns/gran + 1) * gran // the next boundary
		case 5:
			ns += rng.Int64N(3 * gran)
		default:
			ns += rng.Int64N(gran / 4)
		}
		var t time.Time
		switch {
		case i >= n*19/20: // past what a Window holds: it holds its time at 2^62 ns
			t = time.Date(2150, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(ns))
		case i >= n*9/10: // epochs a Window counts, not known here
			t = time.Date(2110, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(ns))
		default:
			t = time.Unix(0, ns)
		}
		if rng.IntN(10) == 0 {
			t = t.Add(-time.Duration(rng.Int64N(5 * gran)))
		}
		r := &kgo.Record{Offset: int64(i), Key: fmt.Appendf(nil, "k%d", rng.IntN(distinct)), Timestamp: t}
		if rng.IntN(50) == 0 {
			r.Key = nil
		}
		recs[i] = r
	}
	return recs
}

// judgeModel judges recs one filter call at a time, as judgeOne does,
// skipping unreadable records as a replay does, and returns
// the verdict of each judged offset, the filter, and the offset of the
// record that found it full (-1: none).
func judgeModel(t *testing.T, c *config, recs []*kgo.Record) (map[int64]bool, *seen, int64) {
	s, err := newSeen(c)
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[int64]bool{}
	for _, r := range recs {
		if r.Key == nil {
			continue
		}
		keep, err := judgeOne(s, r.Key, r.Timestamp)
		if err != nil {
			return verdicts, s, r.Offset
		}
		verdicts[r.Offset] = keep
	}
	return verdicts, s, -1
}

func encoded(t *testing.T, s *seen) []byte {
	var b bytes.Buffer
	if _, err := s.writeTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Records judged in batches (the batch ending at every epoch the time
// reaches, at the end of a poll, when full) are judged exactly as one
// filter call a record judges them: the same verdicts, and the same filter
// after, byte for byte, for times that cross epochs in every way, go back,
// or are too far out for their epoch to be known; for keys that a KeyFunc
// gives in a buffer it reuses; for the three kinds of filter; and, on a
// filter that fills up, failing at the same record.
func TestBatchesJudgeAsOneRecordAtATime(t *testing.T) {
	t.Parallel()
	rng := testseed.Rand(t)
	var buf []byte
	reusedBuffer := func(r *kgo.Record) ([]byte, error) { // the record key, in a buffer each call overwrites
		if r.Key == nil {
			return nil, ErrUnreadable
		}
		buf = append(buf[:0], r.Key...)
		return buf, nil
	}
	for _, c := range []struct {
		name    string
		opts    []Option
		n, keys int
		full    bool
	}{
		{"filter=window", []Option{WithWindow(14 * time.Second), WithCapacity(3000)}, 20000, 4000, false},
		{"filter=window/key=func", []Option{WithWindow(14 * time.Second), WithCapacity(3000), WithKey(reusedBuffer)}, 20000, 4000, false},
		{"filter=window/full", []Option{WithWindow(time.Hour), WithCapacity(500)}, 20000, 20000, true},
		{"filter=fixed", []Option{WithCapacity(6000)}, 8000, 4000, false},
		{"filter=fixed/full", []Option{WithCapacity(500)}, 8000, 8000, true},
		{"filter=growing", nil, 8000, 4000, false},
	} {
		if testing.Short() && !c.full {
			// CI's race run (-short): a model run of one goroutine gains
			// nothing from the race detector, which makes it 10 times
			// slower; a quarter of the records and keys still cross every
			// kind of epoch. (The full cases stop early anyway.)
			c.n, c.keys = c.n/4, c.keys/4
		}
		t.Run(c.name, func(t *testing.T) {
			p, err := New("g", []string{"in"}, "out", append(c.opts, WithSeed(rng.Uint64()))...)
			if err != nil {
				t.Fatal(err)
			}
			gran := p.cfg.epoch
			if gran == 0 {
				gran = int64(time.Second)
			}
			recs := judgeInput(rng, c.n, c.keys, gran)
			want, model, full := judgeModel(t, &p.cfg, recs)
			if c.full != (full >= 0) {
				t.Fatalf("the model's filter full at offset %d: the case is not what it says", full)
			}
			got := map[int64]bool{}
			p.cfg.testHookJudged = func(recs []*kgo.Record, keep []bool) {
				for i, r := range recs {
					if r.Key != nil {
						got[r.Offset] = keep[i]
					}
				}
			}
			s, err := newSeen(&p.cfg)
			if err != nil {
				t.Fatal(err)
			}
			st := &partition{topic: "in", seen: s}
			ctx := context.Background()
			// Polls of random sizes, each ending in a flush, as replay
			// does.
			err = nil
			for lo := 0; lo < len(recs) && err == nil; {
				hi := min(lo+1+rng.IntN(3000), len(recs))
				for _, r := range recs[lo:hi] {
					if err = p.add(ctx, st, r, nil); err != nil {
						break
					}
				}
				if err == nil {
					err = p.flush(ctx, st, nil)
				}
				lo = hi
			}
			if full >= 0 {
				if want := fmt.Sprintf("in/0 offset %d: ", full); !errors.Is(err, cuckoo.ErrFull) || !bytes.HasPrefix([]byte(err.Error()), []byte(want)) {
					t.Fatalf("judging in batches: %v, want the filter full at offset %d", err, full)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d records judged in batches, %d one at a time", len(got), len(want))
			}
			for off, keep := range want {
				if got[off] != keep {
					t.Fatalf("offset %d: kept %v in a batch, %v one at a time", off, got[off], keep)
				}
			}
			if !bytes.Equal(encoded(t, st.seen), encoded(t, model)) {
				t.Fatal("the filters differ after judging in batches and one record at a time")
			}
			if st.next != int64(len(recs)) {
				t.Fatalf("the partition is at offset %d after %d records", st.next, len(recs))
			}
		})
	}
}
