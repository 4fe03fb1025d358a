package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdb, err := f.redis.connect(ctx, "dedup")
	if err != nil {
		return err
	}
	defer rdb.Close()
	var seen *redisfilter.Filter
	// A batch waits up to --redis-wait for a stalled, restarting or
	// failing-over server: its writes are resent until then, and run once.
	wait := redisfilter.WithRetryHorizon(f.redis.wait.d)
	if ff.capacity.set {
		opts := []redisfilter.Option{wait}
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
		seen, err = redisfilter.Open(ctx, rdb, f.redis.name, wait)
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
		mu          sync.Mutex
		stopped     bool
		interrupted atomic.Bool
		stopNote    string // what an interrupt must add to its message
	)
	defer e.atInterrupt(func() string {
		// The batch in flight stops waiting for Redis; the lines it sent
		// and Redis did not confirm are saved, and named here.
		interrupted.Store(true)
		cancel()
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		out.Flush()
		return stopNote
	})()
	var lines, keyBuf [dedup.MaxBatch][]byte
	// send tests and inserts the batch's keys in Redis and writes the
	// lines the flags ask for: those of every key Redis answered for,
	// whatever happened to the others. A key Redis could not take (a full
	// filter) fails the run after those lines are written. Keys whose
	// writes Redis did not confirm within --redis-wait (it stalled, or the
	// connection was lost) may be recorded without their lines written:
	// those lines are saved to a file, and the error names them and the
	// lines not sent.
	send := func(final bool) error {
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
		batchErr := seen.AddUniqueBatch(ctx, keys, added, errs)
		var (
			refused     error    // the first key Redis did not take
			unconfirmed [][]byte // lines whose keys Redis did not confirm
			lineNums    []uint64 // their numbers
			notSent     uint64   // the first line not sent, or 0
		)
		lineStart := 0
		for i := range n {
			line := arena[lineStart:lineEnds[i]]
			lineStart = keyEnds[i]
			switch {
			case errors.Is(errs[i], redisfilter.ErrUnconfirmed):
				unconfirmed = append(unconfirmed, line)
				lineNums = append(lineNums, firstLine+uint64(i))
				continue
			case errors.Is(errs[i], redisfilter.ErrNotSent):
				if notSent == 0 {
					notSent = firstLine + uint64(i)
				}
				continue
			case errs[i] != nil:
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
		var lost error
		if len(unconfirmed) > 0 || notSent != 0 {
			if notSent == 0 && !final {
				notSent = linesIn + 1 // the run stops reading here
			}
			lost = unconfirmedErr(e, &f.redis, batchErr, interrupted.Load(), unconfirmed, lineNums, notSent)
		}
		arena, lineEnds, keyEnds = arena[:0], lineEnds[:0], keyEnds[:0]
		// bufio.Writer keeps its first error: a failed write shows here.
		if _, err := out.Write(nil); err != nil {
			return batchLinesErr(dataErr(remedyWrite, "writing the output: %v", cause(err)), firstLine, linesIn)
		}
		if lost != nil && interrupted.Load() {
			stopNote = lost.Error()
			return errStopped
		}
		return cmpErr(lost, refused)
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
			sendErr = send(false)
		}
		return sendErr
	})
	if sendErr == nil {
		// The last batch, and after a read error the lines read before it.
		if err := send(true); err != nil {
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
		fmt.Fprintf(e.stderr, "cuckoo dedup: %s in, %s out, %s dropped as seen (by this or another process); filter %q in Redis, %s; %.2f s, %s lines/s\n",
			units.Counted(linesIn, "line"), units.Count(written), units.Count(dropped), f.redis.name, units.Counted(uint64(seen.Segments()), "segment"), secs, units.SI(float64(linesIn)/secs))
	}
	return nil
}

// errStopped is what a batch sent after an interrupt returns.
var errStopped = errors.New("stopped by an interrupt")

// cmpErr returns the first non-nil of a and b.
func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// unconfirmedErr saves the lines whose keys Redis did not confirm (the
// lines numbered nums) to a file, or to standard error if no file can be
// made, and returns the error that names them, where they are, and the
// first line not sent (0: the input ended before it). err is the batch's
// error; interrupted says that an interrupt stopped the wait.
func unconfirmedErr(e *env, f *redisFlags, err error, interrupted bool, lines [][]byte, nums []uint64, notSent uint64) error {
	// The last error err wraps is the cause: a timeout, a closed
	// connection.
	for {
		u, ok := err.(interface{ Unwrap() []error })
		if !ok {
			break
		}
		errs := u.Unwrap()
		err = errs[len(errs)-1]
	}
	msg := fmt.Sprintf("Redis at %s did not answer within --redis-wait %v (%v)", f.url, f.wait.d, err)
	if interrupted {
		msg = fmt.Sprintf("Redis at %s had not answered", f.url)
	}
	remedy := "check the server"
	if len(lines) > 0 {
		where := saveLines(e, lines)
		if len(lines) == 1 {
			msg += fmt.Sprintf(": %s was sent and not printed, and may or may not be recorded in Redis as seen; it is %s", lineList(nums, 20), where)
			remedy += "; to lose nothing, print it after the output (if it was seen before this run, it is then printed twice)"
		} else {
			msg += fmt.Sprintf(": %s (%s lines) were sent and not printed, and may or may not be recorded in Redis as seen; they are %s",
				lineList(nums, 20), units.Count(uint64(len(lines))), where)
			remedy += "; to lose none of them, print them after the output (a line seen before this run is then printed twice)"
		}
	}
	if notSent != 0 {
		msg += fmt.Sprintf("; no line from line %d on (counted over all inputs) was sent", notSent)
		remedy += "; run dedup again on the lines not sent"
	}
	return dataErr(remedy, "%s", msg)
}

// saveLines writes lines, each ended by a newline, to a new file in the
// temporary directory, and returns where they are ("in FILE"); if it
// cannot, it writes them to standard error after a line saying what they
// are ("on standard error, above").
func saveLines(e *env, lines [][]byte) string {
	var b bytes.Buffer
	for _, l := range lines {
		b.Write(l)
		if len(l) == 0 || l[len(l)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	f, err := os.CreateTemp("", "cuckoo-dedup-unconfirmed-*.txt")
	if err == nil {
		_, err = f.Write(b.Bytes())
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			return "in " + f.Name()
		}
		os.Remove(f.Name())
	}
	fmt.Fprintf(e.stderr, "cuckoo dedup: the lines Redis did not confirm (%v saving them to a file):\n", err)
	e.stderr.Write(b.Bytes())
	return "on standard error, above"
}

// lineList names the line numbers nums (ascending) as ranges ("lines 4,
// 7-9"), the first max ranges of them and how many lines the rest hold.
func lineList(nums []uint64, max int) string {
	var parts []string
	rest := 0
	for i := 0; i < len(nums); {
		j := i
		for j+1 < len(nums) && nums[j+1] == nums[j]+1 {
			j++
		}
		switch {
		case len(parts) == max:
			rest += j - i + 1
		case j == i:
			parts = append(parts, strconv.FormatUint(nums[i], 10))
		default:
			parts = append(parts, fmt.Sprintf("%d-%d", nums[i], nums[j]))
		}
		i = j + 1
	}
	s := "line " + parts[0]
	if len(nums) > 1 {
		s = "lines " + strings.Join(parts, ", ")
	}
	if rest > 0 {
		s += fmt.Sprintf(" and %s more", units.Count(uint64(rest)))
	}
	return s
}

// batchLinesErr adds to err that the lines first..last of the input
// (counted over all inputs) may be recorded in Redis as seen without
// having been written.
func batchLinesErr(err error, first, last uint64) error {
	ce, ok := err.(*cliError)
	if !ok {
		return err
	}
	c := *ce
	c.remedy = fmt.Sprintf("lines %d to %d may be recorded in Redis but not written; %s", first, last, c.remedy)
	return &c
}
