package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Batch sizes. A round is the keys one pipeline carries (bounding the
// memory of the commands being built); a command carries up to
// lookupChunk keys for lookups (one BITFIELD_RO) and writeChunk for
// writes (one function call, during which the segment's server does nothing
// else: well under a millisecond below 90 % load, a few milliseconds when
// a full segment makes its keys search and walk for room).
const (
	roundKeys = 1 << 13
	// roundsInFlight is how many rounds of reads overlap.
	roundsInFlight = 3
	lookupChunk    = 128
	writeChunk     = 32
	// writeRound is the keys one pipeline of writes carries: go-redis
	// gives a pipeline's replies one read deadline (ReadTimeout, 3 s by
	// default), and writes to a nearly full filter run at a few thousand
	// keys a second on a busy server.
	writeRound = 1 << 12
)

// located is a key's place: its segment, buckets and fingerprint.
type located struct {
	segment    int
	i1, i2, fp uint64
	h          uint64 // the key's hash
}

// orderBySegment returns the indexes of loc ordered by segment (a stable
// counting sort: keys of a segment stay in input order).
func orderBySegment(loc []located, segments int) []int32 {
	counts := make([]int32, segments+1)
	for i := range loc {
		counts[loc[i].segment+1]++
	}
	for s := 1; s <= segments; s++ {
		counts[s] += counts[s-1]
	}
	order := make([]int32, len(loc))
	for i := range loc {
		s := loc[i].segment
		order[counts[s]] = int32(i)
		counts[s]++
	}
	return order
}

// chunks calls fn for each run of at most n indexes of order that share a
// segment.
func chunks(loc []located, order []int32, n int, fn func(segment int, idx []int32)) {
	for lo := 0; lo < len(order); {
		s := loc[order[lo]].segment
		hi := lo + 1
		for hi < len(order) && hi-lo < n && loc[order[hi]].segment == s {
			hi++
		}
		fn(s, order[lo:hi])
		lo = hi
	}
}

// checkBatch returns an error unless every result slice holds a result
// for each of n keys.
func checkBatch(n int, results ...int) error {
	for _, r := range results {
		if r < n {
			return fmt.Errorf("%w: results for %d keys, want %d", ErrInvalidParameter, r, n)
		}
	}
	return nil
}

// markNotSent sets the error of every key from i on to ErrNotSent.
func markNotSent(errs []error, i int) {
	for ; i < len(errs); i++ {
		errs[i] = ErrNotSent
	}
}

// ContainsBatch sets found[i] to Contains(keys[i]) and errs[i] to nil
// for every key it read; a key it could not read gets found[i] = false
// and the error in errs[i] (no reply within the retry horizon; or
// [ErrNotSent], for the keys after the batch stopped). It returns the
// first of those errors. It groups the keys by segment, reads each group's
// buckets with one BITFIELD_RO per 128 keys, and sends the commands in
// pipelines (one per node of a cluster, in parallel) of up to 8,192
// keys, up to three pipelines in flight at once. found and errs must be
// at least as long as keys.
func (f *Filter) ContainsBatch(ctx context.Context, keys [][]byte, found []bool, errs []error) error {
	return f.lookupBatch(ctx, f, keys, found, errs, false)
}

// overlapRounds calls round for each run [lo, hi) of at most roundKeys of
// n keys, with up to roundsInFlight calls running at once, until one
// returns stop. It returns the end of the runs it started (the keys from
// there on were not sent) and the first error a round returned. Lookups
// use it, and the Bloom filter's adds (setting bits commutes): while the
// servers answer one round, the client builds the next and decodes the
// last, so a single node's server is not left idle between pipelines.
// The cuckoo filter's writes do not: their keys of a segment are added in
// input order.
func overlapRounds(n int, round func(lo, hi int) (stop bool, err error)) (sent int, err error) {
	if n <= roundKeys {
		_, err := round(0, n)
		return n, err
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		first   error
		stopped bool
		slots   = make(chan struct{}, roundsInFlight)
	)
	lo := 0
	for ; lo < n; lo += roundKeys {
		slots <- struct{}{}
		mu.Lock()
		halt := stopped
		mu.Unlock()
		if halt {
			<-slots
			break
		}
		wg.Add(1)
		go func(lo, hi int) {
			defer func() { <-slots; wg.Done() }()
			stop, err := round(lo, hi)
			mu.Lock()
			first = cmp(first, err)
			stopped = stopped || stop
			mu.Unlock()
		}(lo, min(lo+roundKeys, n))
	}
	wg.Wait()
	return min(lo, n), first
}

// AddBatch adds every key, as Add does, and sets errs[i] to key i's
// result: nil (added), [ErrFull] (not added), an error wrapping
// [ErrUnconfirmed] (a copy of its call may have run, and no reply to
// believe came within the retry horizon: maybe added), one wrapping
// [ErrNotSent] (not sent: not added), or another error, such as a
// refusal Redis replied to every copy of its call (not added; for a key
// of a segment's later call, a CKFORDER refusal when the call before it
// was refused until the horizon).
// It returns the first error other than ErrFull, if any. It groups the
// keys by segment and calls the insert function once per 32 keys of a
// segment, in pipelines (one per node of a cluster, in parallel) of up to
// 4,096 keys; keys of one segment are added in their order in keys, even
// when Redis refuses a call for now and runs the next one (that one then
// waits for it: see docs/redis.md, "Order within a batch"). Each call
// runs once however often it is sent; a pipeline is sent until each of
// its calls has a reply or the retry horizon passes, and then, if some
// call has none, the batch stops. errs must be at least as long as
// keys.
func (f *Filter) AddBatch(ctx context.Context, keys [][]byte, errs []error) error {
	if err := checkBatch(len(keys), len(errs)); err != nil {
		return err
	}
	return f.writeBatch(ctx, fnAdd, []any{0}, cuckooKeyArgs, keys, nil, errs, func(code int64) (bool, error) {
		if code == 0 {
			return false, ErrFull
		}
		return true, nil
	})
}

// AddUniqueBatch adds each key that the filter does not report already,
// as AddUnique does (each test-and-insert atomic), and sets added[i] to
// whether key i was added, errs[i] to its error as [Filter.AddBatch]
// does: added[i] is false with a nil error only for a key the filter held
// before the batch (or that appears earlier in keys: a key that appears
// twice is added once). Errors as for AddBatch; added and errs must be at
// least as long as keys.
func (f *Filter) AddUniqueBatch(ctx context.Context, keys [][]byte, added []bool, errs []error) error {
	if err := checkBatch(len(keys), len(added), len(errs)); err != nil {
		return err
	}
	return f.writeBatch(ctx, fnAdd, []any{1}, cuckooKeyArgs, keys, added, errs, func(code int64) (bool, error) {
		if code == 0 {
			return false, ErrFull
		}
		return code == 1, nil
	})
}

// DeleteBatch deletes one copy of every key, as Delete does, and sets
// deleted[i] to whether key i had one, errs[i] to its error as
// [Filter.AddBatch] does (never ErrFull): deleted[i] is false with a nil
// error only for a key that had no copy. deleted and errs must be at
// least as long as keys.
func (f *Filter) DeleteBatch(ctx context.Context, keys [][]byte, deleted []bool, errs []error) error {
	if err := checkBatch(len(keys), len(deleted), len(errs)); err != nil {
		return err
	}
	return f.writeBatch(ctx, fnDel, nil, cuckooKeyArgs, keys, deleted, errs, func(code int64) (bool, error) { return code == 1, nil })
}

// writeBatch calls write function fn for keys, in chunks of one segment and
// rounds of writeRound keys, and sets each key's out[i] (if out is not
// nil) and errs[i] from its reply code by result, or to false and the
// error of its call. A call's arguments after the table's are head, then
// keyArgs of each of its keys (i: the key's index in keys). A round
// whose calls do not all settle ends the batch.
//
// A round's calls go in one pipeline, and each call after the first of
// its segment names the record of the call before it, so that it runs
// only after that one (ckf2 revision 6; rechain says what a call waits
// for when sent again). Redis may refuse a call and run the next one of
// its pipeline (BUSY or LOADING read before the script or the load
// ended, READONLY before a promotion, no function before another client
// loaded it, a TRYAGAIN beside a MOVED that go-redis follows at once):
// the next one is then refused too (CKFORDER), and both are sent again,
// in order. Without that a key in both would get the answers of the
// other order (AddUniqueBatch: its later occurrence added, its first
// already there).
func (h *segments) writeBatch(ctx context.Context, fn string, head []any, keyArgs func(args []any, l *located, i int) []any,
	keys [][]byte, out []bool, errs []error, result func(code int64) (bool, error)) error {
	var retErr error
	set := func(i int, ok bool, err error) {
		if out != nil {
			out[i] = ok
		}
		errs[i] = err
	}
	for lo := 0; lo < len(keys); lo += writeRound {
		if err := ctx.Err(); err != nil {
			for i := lo; i < len(keys); i++ {
				set(i, false, ErrNotSent)
			}
			return cmp(retErr, err)
		}
		hi := min(lo+writeRound, len(keys))
		loc, order := h.group(keys[lo:hi])
		var cmds []redis.Cmder
		var calls []writeCall
		last := -1 // the segment of the last call
		chunks(loc, order, writeChunk, func(s int, idx []int32) {
			args := make([]any, 0, len(head)+6*len(idx))
			args = append(args, head...)
			for _, i := range idx {
				args = keyArgs(args, &loc[i], lo+int(i))
			}
			// chunks gives a segment's calls one after another.
			cl := writeCall{segment: s, idx: idx, args: args, record: h.recordKey(s), prev: -1}
			if s == last {
				cl.prev = len(calls) - 1
			}
			cl.after = cl.prev
			calls = append(calls, cl)
			cmds = append(cmds, h.callCmd(ctx, fn, calls, len(calls)-1))
			last = s
		})
		cerrs, gaveUp, short := h.retry.settleWith(ctx, cmds, rememberedWrites, h.sender(ctx), func(again []int, errs []error) []int {
			h.rechain(ctx, fn, calls, cmds, again, errs)
			return again
		})
		for c, cmd := range cmds {
			idx := calls[c].idx
			err := cerrs[c]
			var codes []int64
			if err == nil {
				codes, err = cmd.(*redis.Cmd).Int64Slice()
				if err == nil && len(codes) != len(idx) {
					err = fmt.Errorf("%w: %s replied %d codes for %d keys", ErrCorrupt, fn, len(codes), len(idx))
				}
			}
			if err != nil {
				err = replyErr(err)
				if a := calls[c].after; a >= 0 && cerrs[a] != nil && orderRefusal(err) {
					// Refused until the horizon for want of the call
					// before it: that call's error says why.
					err = fmt.Errorf("%w (the call before it, of the same segment: %v)", err, replyErr(cerrs[a]))
				}
				retErr = cmp(retErr, err)
				for _, i := range idx {
					set(lo+int(i), false, err)
				}
				continue
			}
			for k, i := range idx {
				ok, err := result(codes[k])
				set(lo+int(i), ok, err)
			}
		}
		retErr = cmp(retErr, short)
		if gaveUp {
			for i := hi; i < len(keys); i++ {
				set(i, false, ErrNotSent)
			}
			return retErr
		}
	}
	return retErr
}

// orderRefusal reports whether err is the refusal of a call run before
// the call it must follow (Lua: CKFORDER).
func orderRefusal(err error) bool {
	return isReply(err) && strings.HasPrefix(err.Error(), "CKFORDER ")
}

// writeCall is a call of a batch write: its segment, its keys (indexes
// into the round), its arguments after the table's, its record key (the
// request id), the index of the call before it of its segment in the
// round (prev, -1 for none) and of the call it must follow (after: prev,
// or an earlier call of the segment when those between surely did not
// run; -1 for none).
type writeCall struct {
	segment     int
	idx         []int32
	args        []any
	record      string
	prev, after int
}

// callCmd returns the command of calls[c]: it names the record of the
// call it must follow, if any.
func (h *segments) callCmd(ctx context.Context, fn string, calls []writeCall, c int) *redis.Cmd {
	prev := ""
	if a := calls[c].after; a >= 0 {
		prev = calls[a].record
	}
	return h.writeCmdAfter(ctx, fn, calls[c].segment, calls[c].record, prev, calls[c].args)
}

// rechain is what writeBatch's calls do before they are sent again
// (again: the indexes of those to be sent, errs: each call's error so
// far, final for the others). Each call names the record of the one it
// must follow (Lua: CKFORDER), so that a call Redis refused for now and
// ran the next of its segment (a script or a load that ended between its
// reads of the two) still runs first when sent again, and the next one
// then after it. A call whose predecessor is settled no longer waits for
// it: not at all when it ran (its reply came: the order holds already,
// and its record, which may be lost since, as by a failover, is not
// needed), and for the call before it when every copy of it was refused
// for good (it never ran, and never will: its keys get its error; this
// call then gets its own outcome, as every call of a batch did before
// revision 6). A predecessor that may have run (ErrUnconfirmed) is still
// waited for: if it did not run, this call is refused until the horizon,
// and so not applied.
func (h *segments) rechain(ctx context.Context, fn string, calls []writeCall, cmds []redis.Cmder, again []int, errs []error) {
	pending := make(map[int]bool, len(again))
	for _, c := range again {
		pending[c] = true
	}
	for _, c := range again {
		a := calls[c].prev
		for a >= 0 && !pending[a] && errs[a] != nil && !errors.Is(errs[a], ErrUnconfirmed) {
			a = calls[a].prev // never ran
		}
		if a >= 0 && !pending[a] && errs[a] == nil {
			a = -1 // ran
		}
		if a != calls[c].after {
			calls[c].after = a
			cmds[c] = h.callCmd(ctx, fn, calls, c)
		}
	}
}

// cuckooKeyArgs are a cuckoo filter's arguments for a key: its first
// bucket and its fingerprint.
func cuckooKeyArgs(args []any, l *located, _ int) []any { return append(args, l.i1, l.fp) }

// cmp returns the first non-nil of a and b.
func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
