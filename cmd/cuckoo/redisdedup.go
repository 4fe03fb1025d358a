package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/dedup"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
	"github.com/dedupkit/cuckoo/redisfilter"
)

// redisDedupBatch is the most lines sent to Redis at once: one pipeline
// of test-and-insert calls, grouped by shard.
const redisDedupBatch = 8192

// runRedisDedup is 'cuckoo dedup --redis URL --name N': the seen-set is
// the shared cuckoo filter N in Redis, so several processes (on several
// machines) dedup one stream: each line is printed by the one process
// whose atomic test-and-insert added its key. With --capacity the filter
// is created if missing (with --fpr, --seed, --bucket-size and
// --fingerprint-bits); without, it must exist.
func runRedisDedup(e *env, f *dedupFlags, keyer *dedup.KeyExtractor, ins []input) error {
	const remedy = "see 'cuckoo dedup --help'"
	if f.save != "" || f.load != "" || f.state != "" || f.output != "" {
		return usageErr(remedy, "with --redis the seen-set lives in Redis: --save, --load, --state and -o do not apply (redirect the output instead)")
	}
	ff := &f.filter
	if ff.grow || ff.semi || ff.bloom.kind != 0 {
		return usageErr(remedy, "--grow, --semi-sorted and --bloom do not apply to a filter in Redis")
	}
	ctx := context.Background()
	rdb, err := f.redis.connect(ctx, "dedup")
	if err != nil {
		return err
	}
	defer rdb.Close()
	var seen *redisfilter.Filter
	if ff.capacity.set {
		opts := []redisfilter.Option{}
		switch {
		case ff.fingerprint != 0:
			opts = append(opts, redisfilter.WithFingerprintBits(int(ff.fingerprint)))
		case ff.fpr.set:
			opts = append(opts, redisfilter.WithFalsePositiveRate(ff.fpr.p))
		default:
			opts = append(opts, redisfilter.WithFalsePositiveRate(filterfile.DefaultRate))
		}
		if ff.bucketSize != 0 {
			opts = append(opts, redisfilter.WithBucketSize(int(ff.bucketSize)))
		}
		if ff.seed.set {
			opts = append(opts, redisfilter.WithSeed(ff.seed.n))
		}
		seen, err = redisfilter.New(ctx, rdb, f.redis.name, ff.capacity.n, opts...)
	} else {
		if ff.anySet() {
			return usageErr("give --capacity N too, to create the filter", "--fpr, --seed, --bucket-size and --fingerprint-bits describe a new filter")
		}
		seen, err = redisfilter.Open(ctx, rdb, f.redis.name)
	}
	if err != nil {
		if errors.Is(err, redisfilter.ErrNotFound) {
			return dataErr("give --capacity N to create it", "no filter %q in Redis at %s", f.redis.name, f.redis.url)
		}
		return redisErr(&f.redis, err)
	}

	out := newBufWriter(e.stdout)
	kr := dedup.NewKeyReader(keyer, 0)
	var (
		arena             []byte
		lineEnds, keyEnds []int
		keys              [][]byte
		added             = make([]bool, redisDedupBatch)
		errs              = make([]error, redisDedupBatch)
		linesIn, dropped  uint64
		written           uint64
		start             = time.Now()

		// mu is held while a batch is sent and its lines written, so that
		// an interrupt finds every line Redis recorded for this run in the
		// output buffer, and writes it.
		mu      sync.Mutex
		stopped bool
	)
	defer e.atInterrupt(func() string {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		out.Flush()
		return ""
	})()
	var lines, keyBuf [dedup.MaxBatch][]byte
	// send tests and inserts the batch's keys in Redis and writes the
	// lines the flags ask for. A key Redis could not take (a full filter)
	// fails the run after the lines of the batch that Redis took are
	// written; if Redis fails or the output cannot be written, the keys
	// of the batch may be recorded in Redis without their lines written,
	// and the error says which lines.
	send := func() error {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return errStopped
		}
		n := len(lineEnds)
		if n == 0 {
			return nil
		}
		firstLine := linesIn - uint64(n) + 1
		// The arena holds each line, then its key.
		keys = keys[:0]
		for i := range n {
			keys = append(keys, arena[lineEnds[i]:keyEnds[i]])
		}
		added, errs = added[:n], errs[:n]
		if err := seen.AddUniqueBatch(ctx, keys, added, errs); err != nil {
			return batchErr(redisErr(&f.redis, err), firstLine, linesIn)
		}
		var refused error // the first key Redis did not take
		lineStart := 0
		for i := range n {
			line := arena[lineStart:lineEnds[i]]
			lineStart = keyEnds[i]
			if errs[i] != nil {
				if refused == nil {
					refused = redisErr(&f.redis, errs[i])
					if ce, ok := refused.(*cliError); ok && ce.code == exitFull {
						ce.msg = fmt.Sprintf("the filter %q in Redis is full: line %d was not recorded (the lines Redis took are written)", f.redis.name, firstLine+uint64(i))
					}
				}
				continue
			}
			if !added[i] {
				dropped++
			}
			if added[i] == f.duplicates || f.count {
				continue
			}
			written++
			out.Write(line)
			if len(line) == 0 || line[len(line)-1] != '\n' {
				out.WriteByte('\n')
			}
		}
		arena, lineEnds, keyEnds = arena[:0], lineEnds[:0], keyEnds[:0]
		// bufio.Writer keeps its first error: a failed write shows here.
		if _, err := out.Write(nil); err != nil {
			return batchErr(dataErr(remedyWrite, "writing the output: %v", cause(err)), firstLine, linesIn)
		}
		return refused
	}
	var sendErr error
	runErr := readBatches(e, ins, kr, lines[:], keyBuf[:], func(n int) error {
		linesIn += uint64(n)
		for j := range n {
			arena = append(arena, lines[j]...)
			lineEnds = append(lineEnds, len(arena))
			arena = append(arena, keyBuf[j]...)
			keyEnds = append(keyEnds, len(arena))
		}
		if len(lineEnds) >= redisDedupBatch-dedup.MaxBatch {
			sendErr = send()
		}
		return sendErr
	})
	if sendErr == nil {
		// The last batch, and after a read error the lines read before it.
		if err := send(); err != nil {
			runErr = err
		}
	}
	if errors.Is(runErr, errStopped) {
		e.halt() // an interrupt stopped the run, and exits
	}
	if runErr == nil && f.count {
		fmt.Fprintln(out, dropped)
	}
	// The lines of every batch Redis took are written, whatever failed.
	mu.Lock()
	flushErr := out.Flush()
	mu.Unlock()
	if runErr != nil {
		return runErr
	}
	if flushErr != nil {
		return dataErr(remedyWrite, "writing the output: %v", cause(flushErr))
	}
	if f.stats {
		secs := max(time.Since(start).Seconds(), 1e-9)
		fmt.Fprintf(e.stderr, "cuckoo dedup: %s lines in, %s out, %s dropped as seen (by this or another process); filter %q in Redis, %d shards; %.2f s, %s lines/s\n",
			units.Count(linesIn), units.Count(written), units.Count(dropped), f.redis.name, seen.Shards(), secs, units.SI(float64(linesIn)/secs))
	}
	return nil
}

// errStopped is what a batch sent after an interrupt returns.
var errStopped = errors.New("stopped by an interrupt")

// batchErr adds to err that the lines first..last of the input (counted
// over all inputs) may be recorded in Redis as seen without having been
// written.
func batchErr(err error, first, last uint64) error {
	ce, ok := err.(*cliError)
	if !ok {
		return err
	}
	c := *ce
	c.remedy = fmt.Sprintf("lines %d to %d may be recorded in Redis but not written; %s", first, last, c.remedy)
	return &c
}
