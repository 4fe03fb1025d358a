package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/dedup"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// redisDedupBatch is the most lines sent to Redis at once: one pipeline
// of test-and-insert calls, grouped by segment.
const redisDedupBatch = 8192

// redisDedupBudget is the bytes of lines (and keys built of several
// fields) after which a batch is sent whatever its lines: a batch is held
// until Redis answers, so without it 8,192 lines of 1 MiB would be 8 GiB.
// 4 MiB holds a full batch of lines up to 512 bytes, more than most logs'
// and every id's, so such input still goes 8,192 lines a round trip; a
// batch of longer lines is one round trip per 4 MiB, a small cost beside
// reading them.
const redisDedupBudget = 4 << 20

// redisDedupCollectAfter is the bytes of a batch after which the garbage
// collector runs once it is answered, so that the next long lines reuse
// the memory of its lines rather than adding to it.
const redisDedupCollectAfter = 16 << 20

// runRedisDedup is 'cuckoo dedup --redis URL --name N': the seen-set is
// the shared cuckoo filter N in Redis, so several processes (on several
// machines) dedup one stream: each line is printed by the one process
// whose atomic test-and-insert added its key. With --capacity the filter
// is created if missing (with --fpr, --seed, --bucket-size and
// --fingerprint-bits); without, it must exist. With --window D the
// seen-set is the window filter N (redisfilter.Window), which forgets
// keys older than D by Redis's clock, or by the lines' own times with
// --time-field; --capacity is then its keys a window.
func runRedisDedup(e *env, f *dedupFlags, keyer *dedup.KeyExtractor, ins []input) error {
	const remedy = "see 'cuckoo dedup --help'"
	if f.save != "" || f.load != "" || f.state != "" || f.output != "" {
		return usageErr(remedy, "with --redis the seen-set lives in Redis: --save, --load, --state and -o do not apply (redirect the output instead)")
	}
	ff := &f.filter
	if ff.grow || ff.semi || ff.bloom.kind != 0 {
		return usageErr(remedy, "--grow, --semi-sorted and --bloom do not apply to a filter in Redis")
	}
	win := f.window.window.set
	switch {
	case !win && (f.window.timeField != "" || f.window.timeFormat != ""):
		return usageErr(remedy, "--time-field and --time-format are about --window; give --window DURATION")
	case f.window.timeFormat != "" && f.window.timeField == "":
		return usageErr(remedy, "--time-format says how --time-field's time is written; give --time-field N")
	}
	times, err := timeField(f)
	if err != nil {
		return err
	}
	// A batch waits up to --redis-wait for a stalled, restarting or
	// failing-over server: its writes are resent until then, and run once.
	wait := redisfilter.WithRetryHorizon(f.redis.wait.d)
	opts := []redisfilter.Option{wait}
	if ff.capacity.set {
		// The parameters are checked before Redis is asked, as without
		// --redis: a mistake is a usage error whether the server is up
		// or not.
		if _, _, err := ff.spec(e, "dedup", ins); err != nil {
			return err
		}
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
		var err error
		if win {
			_, err = redisfilter.NewWindowPlan(ff.capacity.n, f.window.window.d, opts...)
		} else {
			_, err = redisfilter.NewPlan(ff.capacity.n, opts...)
		}
		if err != nil {
			return paramErr("see the command's --help for the ranges", err)
		}
	} else if ff.anySet() {
		return usageErr("give --capacity N too, to create the filter", "--fpr, --seed, --bucket-size and --fingerprint-bits describe a new filter")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdb, err := f.redis.connect(ctx, "dedup")
	if err != nil {
		return err
	}
	defer rdb.Close()
	seen, err := openRedisSeen(ctx, rdb, f, opts, wait)
	if err != nil {
		return err
	}

	out := newBufWriter(e.stdout)
	// The reader finds the lines; each is keyed once held (below), so that
	// its key is a slice of the held line when it can be.
	kr := dedup.NewKeyReader(nil, 0)
	var (
		// A batch holds its lines until Redis answers: a line in the
		// reader's buffer is copied into the arena, a long line (read into
		// a slice of its own) is taken from the reader. A key is a slice
		// of its line (no --key, or one field), or a copy in the arena of
		// the one the extractor built (several fields, CSV); only the
		// keys' hashes go to Redis.
		arena            []byte
		held, keys       [][]byte
		heldBytes        int         // the bytes of the batch's lines and built keys
		lineTimes        []time.Time // with --time-field: each line's
		added            = make([]bool, redisDedupBatch)
		errs             = make([]error, redisDedupBatch)
		linesIn, dropped uint64
		written          uint64
		// flushed is the last line (counted over all inputs) whose
		// batch's output was flushed without error: every line up to it
		// that was to be printed is in the output. Each batch flushes its
		// lines, so that a failed write names the lines after it, the
		// only ones that may be recorded in Redis and not printed.
		flushed uint64
		start   = time.Now()

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
	// whatever happened to the others, and flushes them. The others stop
	// the run after those lines are written, and the error names each of
	// them (see unsettled): lines whose outcome is unknown (Redis did not
	// confirm them within --redis-wait: they may be recorded), lines Redis
	// did not record (it refused them, the filter is full, they could not
	// be sent), and the first line not sent. final says no line follows
	// the batch; stop, that the run stops after it, at the next line, for
	// that reason (a line that is not a time, an input that cannot be
	// read): then the error says so too, and send returns stop itself
	// when Redis answered for every line.
	send := func(final bool, stop *stopReason) error {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return errStopped
		}
		n := len(held)
		if n == 0 {
			return stop.error()
		}
		firstLine := linesIn - uint64(n) + 1
		added, errs = added[:n], errs[:n]
		seen.addUnique(ctx, keys, lineTimes, added, errs)
		// The batch's last keys not sent, after the call it could not
		// confirm (or the interrupt): the run goes on from there.
		tail := n
		for tail > 0 && errors.Is(errs[tail-1], redisfilter.ErrNotSent) {
			tail--
		}
		var u unsettled
		for _, err := range errs[:tail] {
			if err != nil {
				u.track()
				break
			}
		}
		for i := range tail {
			line := held[i]
			if u.tracking() {
				u.note(keys[i], line, firstLine+uint64(i), added[i], errs[i])
			}
			if errs[i] != nil {
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
		u.sort()
		switch {
		case tail < n:
			u.notSent = firstLine + uint64(tail)
		case !u.empty() && (!final || stop != nil):
			u.notSent = linesIn + 1 // the run stops reading here
		}
		// Each batch flushes its lines: a failed write shows in the batch
		// that made it, and the lines from the first one not flushed on
		// may be recorded in Redis and not printed.
		if err := out.Flush(); err != nil {
			return batchLinesErr(dataErr(remedyWrite, "writing the output: %v", cause(err)), flushed+1, linesIn)
		}
		flushed = linesIn
		err := stop.error()
		if !u.empty() {
			// The saved lines are the arena's: saved before it is reused.
			err = u.stopErr(e, &f.redis, interrupted.Load(), stop)
		}
		// The lines go, and the long ones' memory with them.
		clear(held)
		clear(keys)
		if cap(arena) > 2*redisDedupBudget {
			arena = nil // left by keys longer than their lines
		}
		if heldBytes > redisDedupCollectAfter {
			runtime.GC()
		}
		arena, held, keys, heldBytes, lineTimes = arena[:0], held[:0], keys[:0], 0, lineTimes[:0]
		if err != nil && interrupted.Load() {
			stopNote = err.Error()
			return errStopped
		}
		return err
	}
	var sendErr error
	runErr := readBatches(e, ins, kr, lines[:], keyBuf[:], func(n int) error {
		for j := range n {
			if times != nil {
				at, err := times.Time(dedup.Content(lines[j]))
				if err != nil {
					// The lines before it are deduplicated; the run stops
					// at it, and the error names it, and the lines of the
					// batch Redis did not answer for, if any.
					fix := fmt.Sprintf("mend line %d (or drop it)", linesIn+1)
					terr := dataErr(fix+", then run dedup again on the lines from it on",
						"line %d (counted over all inputs): %v", linesIn+1, err)
					sendErr = send(true, &stopReason{alone: terr, fix: fix})
					return sendErr
				}
				lineTimes = append(lineTimes, at)
			}
			linesIn++
			line := lines[j]
			if kr.Keep(line) {
				// The batch holds the line alone, so that it goes when
				// the batch does, before the next long line is read.
				lines[j], keyBuf[j] = nil, nil
			} else {
				// A slice of a grown arena still holds its line: the
				// arrays the arena leaves behind as it grows live on
				// until the batch is sent.
				start := len(arena)
				arena = append(arena, line...)
				line = arena[start:len(arena):len(arena)]
			}
			heldBytes += len(line)
			key := dedup.Content(line)
			if keyer != nil {
				key = keyer.Key(key)
				if !keyer.SlicesContent() {
					if len(key) > dedup.DefaultBufferSize {
						// A long key built in the extractor's scratch buffer,
						// which the next key overwrites: the batch takes the
						// buffer, and the run a new extractor, rather than a
						// copy (and a scratch buffer of its size after it).
						keyer = keyer.Clone()
					} else {
						start := len(arena)
						arena = append(arena, key...)
						key = arena[start:len(arena):len(arena)]
					}
					heldBytes += len(key)
				}
			}
			held = append(held, line)
			keys = append(keys, key)
		}
		if len(held) >= redisDedupBatch-dedup.MaxBatch || heldBytes >= redisDedupBudget {
			sendErr = send(false, nil)
		}
		return sendErr
	})
	if sendErr == nil {
		// The last batch, and after a read error the lines read before
		// it: then the error names both the read error and the lines of
		// the batch Redis did not answer for.
		var stop *stopReason
		if runErr != nil {
			// "The lines before the error were processed" is not so for
			// those Redis did not answer for, which the message names.
			stop = &stopReason{alone: runErr, fix: remedyRead}
			if ce, ok := runErr.(*cliError); ok {
				stop.fix = strings.TrimSuffix(ce.remedy, readProcessed)
			}
		}
		if err := send(true, stop); err != nil {
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
		fmt.Fprintf(e.stderr, "cuckoo dedup: %s in, %s out, %s dropped as seen (by this or another process); %s %q in Redis, %s; %.2f s, %s lines/s\n",
			units.Counted(linesIn, "line"), units.Count(written), units.Count(dropped), seen.kind(), f.redis.name, units.Counted(uint64(seen.segments()), "segment"), secs, units.SI(float64(linesIn)/secs))
		if w := seen.window; w != nil {
			fmt.Fprintf(e.stderr, "cuckoo dedup: window %v (keys are forgotten between %v and %v after their last line, by %s)\n",
				w.Window(), w.Window(), (w.Window() + w.Granularity()).Round(time.Millisecond), seen.clock(times != nil))
		}
	}
	return nil
}

// redisSeen is the seen-set of a dedup --redis: a cuckoo filter, or a
// window filter with --window.
type redisSeen struct {
	filter *redisfilter.Filter
	window *redisfilter.Window
}

// openRedisSeen opens the seen-set the flags name, creating it with
// --capacity (and opts).
func openRedisSeen(ctx context.Context, rdb redis.UniversalClient, f *dedupFlags, opts []redisfilter.Option, wait redisfilter.Option) (*redisSeen, error) {
	var s redisSeen
	var err error
	name, capacity := f.redis.name, &f.filter.capacity
	switch {
	case f.window.window.set && capacity.set:
		s.window, err = redisfilter.NewWindow(ctx, rdb, name, capacity.n, f.window.window.d, opts...)
	case f.window.window.set:
		s.window, err = redisfilter.OpenWindow(ctx, rdb, name, wait)
		if err == nil && s.window.Window() != f.window.window.d {
			return nil, usageErr("give --window "+s.window.Window().String()+", or another --name",
				"the window filter %q in Redis at %s keeps a window of %v, not %v", name, f.redis.url, s.window.Window(), f.window.window.d)
		}
	case capacity.set:
		s.filter, err = redisfilter.New(ctx, rdb, name, capacity.n, opts...)
	default:
		s.filter, err = redisfilter.Open(ctx, rdb, name, wait)
	}
	if errors.Is(err, redisfilter.ErrNotFound) {
		// A filter of the other kind under the name is a likelier mistake
		// than none.
		if f.window.window.set {
			if _, oerr := redisfilter.Open(ctx, rdb, name, wait); oerr == nil {
				return nil, usageErr("drop --window to use it, or give another --name",
					"%q in Redis at %s is a cuckoo filter, not a window filter", name, f.redis.url)
			}
			return nil, dataErr("give --capacity N (keys a window) to create it", "no window filter %q in Redis at %s", name, f.redis.url)
		}
		if w, oerr := redisfilter.OpenWindow(ctx, rdb, name, wait); oerr == nil {
			return nil, usageErr("give --window "+w.Window().String()+" to use it, or another --name",
				"%q in Redis at %s is a window filter", name, f.redis.url)
		}
		return nil, dataErr("give --capacity N to create it", "no filter %q in Redis at %s", name, f.redis.url)
	}
	if err != nil {
		return nil, redisErr(&f.redis, err)
	}
	return &s, nil
}

// addUnique tests and inserts keys, as AddUniqueBatch does: a window
// touches them (every line counts as seen), at their lines' times when
// at is not nil, and reports added for the keys it did not hold.
func (s *redisSeen) addUnique(ctx context.Context, keys [][]byte, at []time.Time, added []bool, errs []error) {
	if s.filter != nil {
		s.filter.AddUniqueBatch(ctx, keys, added, errs)
		return
	}
	if at != nil {
		s.window.TouchBatchAt(ctx, keys, at, added, errs)
	} else {
		s.window.TouchBatch(ctx, keys, added, errs)
	}
	for i := range added {
		added[i] = !added[i] && errs[i] == nil
	}
}

func (s *redisSeen) segments() int {
	if s.filter != nil {
		return s.filter.Segments()
	}
	return s.window.Segments()
}

func (s *redisSeen) kind() string {
	if s.filter != nil {
		return "filter"
	}
	return "window filter"
}

// clock names what the window's time is.
func (s *redisSeen) clock(eventTime bool) string {
	if eventTime {
		return "the lines' times (--time-field)"
	}
	return "Redis's clock"
}

// stopReason is why a dedup --redis run stops reading before the end of
// its input: a line whose field is not a time, an input that cannot be
// read.
type stopReason struct {
	// alone is the run's error when Redis answered for every line of the
	// last batch.
	alone error
	// fix is what to do before dedup runs again from the line, in a
	// message that also names lines Redis did not answer for.
	fix string
}

// error returns the error of the stop alone (nil for none).
func (s *stopReason) error() error {
	if s == nil {
		return nil
	}
	return s.alone
}

// problem is the stop's problem, without its remedy.
func (s *stopReason) problem() string {
	if ce, ok := s.alone.(*cliError); ok {
		return ce.msg
	}
	return s.alone.Error()
}

// errStopped is what a batch sent after an interrupt returns.
var errStopped = errors.New("stopped by an interrupt")

// unsettled holds the lines of a batch whose keys Redis did not answer
// for, as the run stops: what is known of each, and where each is, so
// that following the message loses none of them.
type unsettled struct {
	// unconfirmed: sent, and not confirmed: they may or may not be
	// recorded in Redis (a copy may even run later).
	unconfirmed lineSet
	// notRecorded: not recorded in Redis (refused, the filter full,
	// never sent).
	notRecorded lineSet
	// notSent is the first line of the run's last lines, none of which
	// was sent (0: none).
	notSent uint64
	// The first error of each set.
	unconfirmedErr, notRecordedErr error

	// While the batch is read (track): each distinct key's first line
	// and what its answers, in input order, say of it.
	// index finds a key's fate by a hash of the key: the fate's index
	// plus one, the first of a chain (keyFate.next) of the keys with that
	// hash. A map by the key itself would hold a copy of each key, a long
	// line's size again.
	fates []keyFate
	index map[uint64]int
	seed  maphash.Seed
}

// keyFate is what a batch's answers say of one distinct key.
type keyFate struct {
	key  []byte // the batch's
	next int    // the next fate whose key has the same hash, plus one (0: none)
	line []byte // its first line
	num  uint64
	fate fate
	err  error // the error that made it unconfirmed or not recorded
}

type fate uint8

const (
	// settled: printed, or seen before the batch (or in it).
	settled fate = iota
	// unconfirmedFate: a write of it may have run, unconfirmed; whether
	// it was new is unknown.
	unconfirmedFate
	// notRecordedFate: no write of it was recorded.
	notRecordedFate
)

// lineSet is lines of the input and their numbers (counted over all
// inputs), in input order.
type lineSet struct {
	lines [][]byte
	nums  []uint64
}

func (s *lineSet) add(line []byte, num uint64) {
	s.lines = append(s.lines, line)
	s.nums = append(s.nums, num)
}

func (u *unsettled) empty() bool {
	return len(u.unconfirmed.nums) == 0 && len(u.notRecorded.nums) == 0 && u.notSent == 0
}

// track starts noting the batch's keys (a batch with errors: the others
// need no note).
func (u *unsettled) track() { u.index, u.seed = map[uint64]int{}, maphash.MakeSeed() }

func (u *unsettled) tracking() bool { return u.index != nil }

// note notes the answer for key, on line number num: added, and err.
// Redis runs the writes of one key (one segment) in input order, so a
// key's first answer that is known decides for the lines after it: a
// key added or present is settled, and its later lines are repeats;
// after an unconfirmed write, "added" means that write did not add it
// (the line was printed), and "present" leaves it unknown.
func (u *unsettled) note(key, line []byte, num uint64, added bool, err error) {
	h := maphash.Bytes(u.seed, key)
	i := u.index[h] - 1
	for i >= 0 && !bytes.Equal(u.fates[i].key, key) {
		i = u.fates[i].next - 1
	}
	if i < 0 {
		f := keyFate{key: key, next: u.index[h], line: line, num: num, err: err}
		switch {
		case err == nil:
			f.fate = settled
		case errors.Is(err, redisfilter.ErrUnconfirmed):
			f.fate = unconfirmedFate
		default:
			f.fate = notRecordedFate
		}
		u.fates = append(u.fates, f)
		u.index[h] = len(u.fates)
		return
	}
	f := &u.fates[i]
	switch {
	case f.fate == settled:
		// A repeat of a key already answered for.
	case err == nil && (added || f.fate == notRecordedFate):
		// Printed here, or present without any write of this batch.
		f.fate = settled
	case err == nil:
		// Present after an unconfirmed write: that write may have added
		// it, so it stays unconfirmed.
	case errors.Is(err, redisfilter.ErrUnconfirmed):
		f.fate, f.err = unconfirmedFate, err
	}
}

// sort files the noted keys' first lines by fate.
func (u *unsettled) sort() {
	for _, f := range u.fates {
		switch f.fate {
		case unconfirmedFate:
			u.unconfirmed.add(f.line, f.num)
			u.unconfirmedErr = cmpErr(u.unconfirmedErr, f.err)
		case notRecordedFate:
			u.notRecorded.add(f.line, f.num)
			u.notRecordedErr = cmpErr(u.notRecordedErr, f.err)
		}
	}
	u.fates, u.index = nil, nil
}

// stopErr saves the lines to files (or, if none can be made, to standard
// error) and returns the error that says what is known of each line,
// where it is, and what to do to lose none: print the unconfirmed lines
// after the output, and dedup the lines not recorded and those not sent
// again. interrupted says that an interrupt stopped the wait; stop, if
// not nil, why the run stopped reading after the batch: the message
// names it too, and its fix comes before running dedup again.
func (u *unsettled) stopErr(e *env, f *redisFlags, interrupted bool, stop *stopReason) error {
	var msgs []string
	code := exitData
	remedy := "check the server"
	var again []string // what to run dedup on again
	if n := len(u.notRecorded.nums); n > 0 {
		why := redisErr(f, u.notRecordedErr).(*cliError)
		switch {
		case errors.Is(u.notRecordedErr, redisfilter.ErrFull):
			code, remedy = exitFull, "give the filter room (push a larger one, or use another --name)"
		case why.code == exitUsage:
			code, remedy = exitUsage, why.remedy
		case errors.Is(u.notRecordedErr, redisfilter.ErrNotSent):
			why.msg = fmt.Sprintf("they could not be sent to Redis at %s (%v)", f.url, lastCause(u.notRecordedErr))
		}
		where := saveLines(e, "not-recorded", "the lines Redis did not record", u.notRecorded.lines)
		msgs = append(msgs, fmt.Sprintf("%s %s not recorded in Redis, nor printed: %s; %s %s",
			lineCount(u.notRecorded.nums), wereOrWas(n), why.msg, theyOrIt(n), where))
		again = append(again, "the lines "+where)
	}
	if n := len(u.unconfirmed.nums); n > 0 {
		cause := lastCause(u.unconfirmedErr)
		why := fmt.Sprintf("Redis at %s did not answer within --redis-wait %v (%v)", f.url, f.wait.d, cause)
		var refusal redis.Error
		switch {
		case errors.As(cause, &refusal):
			why = fmt.Sprintf("an earlier copy got no reply, and Redis at %s refused a later one (%v)", f.url, cause)
		case interrupted:
			why = fmt.Sprintf("Redis at %s had not confirmed %s when the run was interrupted", f.url, themOrIt(n))
		}
		where := saveLines(e, "unconfirmed", "the lines Redis did not confirm", u.unconfirmed.lines)
		msgs = append(msgs, fmt.Sprintf("%s %s sent and not printed, and may or may not be recorded in Redis as seen: %s; %s %s",
			lineCount(u.unconfirmed.nums), wereOrWas(n), why, theyOrIt(n), where))
		code = exitData
		if n == 1 {
			remedy += "; to lose nothing, print the line " + where + " after the output (if it was seen before, it is then printed twice)"
		} else {
			remedy += "; to lose none of them, print the lines " + where + " after the output (a line among them seen before is then printed twice)"
		}
	}
	if u.notSent != 0 {
		msgs = append(msgs, fmt.Sprintf("no line from line %d on (counted over all inputs) was sent", u.notSent))
		again = append(again, fmt.Sprintf("the lines from line %d on", u.notSent))
	}
	if stop != nil {
		msgs = append(msgs, stop.problem())
		if stop.fix != "" {
			remedy += "; " + stop.fix
		}
	}
	if len(again) > 0 {
		remedy += "; run dedup again on " + strings.Join(again, ", then on ")
	}
	return &cliError{code: code, msg: strings.Join(msgs, "; "), remedy: remedy}
}

// lastCause returns the last error err wraps (a timeout, a closed
// connection, a refusal): the cause, without this module's words.
func lastCause(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() []error })
		if !ok {
			return err
		}
		errs := u.Unwrap()
		err = errs[len(errs)-1]
	}
}

// lineCount names the lines numbered nums and, for several, how many.
func lineCount(nums []uint64) string {
	if len(nums) == 1 {
		return lineList(nums, 20)
	}
	return fmt.Sprintf("%s (%s lines)", lineList(nums, 20), units.Count(uint64(len(nums))))
}

func wereOrWas(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

func theyOrIt(n int) string {
	if n == 1 {
		return "it is"
	}
	return "they are"
}

func themOrIt(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// cmpErr returns the first non-nil of a and b.
func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// saveLines writes lines, each ended by a newline, to a new file in the
// temporary directory named after kind, and returns where they are ("in
// FILE"); if it cannot, it writes them to standard error after a line
// naming them as what, and returns "on standard error, above". The lines
// are written as they are, through a small buffer, not joined first: a
// copy of them would cost a batch of long lines its size again.
func saveLines(e *env, kind, what string, lines [][]byte) string {
	f, err := os.CreateTemp("", "cuckoo-dedup-"+kind+"-*.txt")
	if err == nil {
		err = writeLines(f, lines)
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
	fmt.Fprintf(e.stderr, "cuckoo dedup: %s (%v saving them to a file):\n", what, err)
	writeLines(e.stderr, lines)
	return "on standard error, above"
}

// writeLines writes lines to w, each ended by a newline.
func writeLines(w io.Writer, lines [][]byte) error {
	b := bufio.NewWriter(w)
	for _, l := range lines {
		b.Write(l)
		if len(l) == 0 || l[len(l)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Flush()
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
