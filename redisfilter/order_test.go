package redisfilter_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// busyRefusal is the reply of a server busy with a script: it did not
// run the command.
type busyRefusal struct{}

func (busyRefusal) Error() string { return "BUSY Redis is busy running a script." }
func (busyRefusal) RedisError()   {}

// refuseFirst is a hook that answers the first command matching target
// go-redis is asked to send after armed is set with a BUSY refusal,
// without sending it, sends the rest of its pipeline, and then calls
// after (if set): what a server does that finishes a slow script
// between reading two commands of one pipeline (the first read is
// refused BUSY, the second runs), or that is promoted, or gets its
// functions loaded, between them.
//
// With err set, the refusal is err instead; with always, every command
// matching target is refused while armed (not just the first).
type refuseFirst struct {
	target  func(args []any) bool
	after   func()
	err     error
	always  bool
	armed   atomic.Bool
	refused atomic.Int64
}

// isCall reports whether args are a call of function fn.
func isCall(fn string) func(args []any) bool {
	return func(args []any) bool {
		return len(args) > 1 && fmt.Sprint(args[0]) == "fcall" && fmt.Sprint(args[1]) == fn
	}
}

func (h *refuseFirst) refuse(c redis.Cmder) bool {
	if !h.target(c.Args()) {
		return false
	}
	if h.always && !h.armed.Load() || !h.always && !h.armed.CompareAndSwap(true, false) {
		return false
	}
	h.refused.Add(1)
	var err error = busyRefusal{}
	if h.err != nil {
		err = h.err
	}
	c.SetErr(err)
	return true
}

// finalRefusal is an error reply that says the command did not run and
// will not run if sent again, as Redis's replies to a call it could not
// parse or a script that failed do.
type finalRefusal struct{}

func (finalRefusal) Error() string { return "ERR refused for good (test)" }
func (finalRefusal) RedisError()   {}

// isLaterCall reports whether args are a call of fn that names the call
// before it (a batch's later call of a segment: four keys).
func isLaterCall(fn string) func(args []any) bool {
	return func(args []any) bool {
		return isCall(fn)(args) && fmt.Sprint(args[2]) == "4"
	}
}

func (h *refuseFirst) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *refuseFirst) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.refuse(cmd) {
			if h.after != nil {
				h.after()
			}
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}
func (h *refuseFirst) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for i, c := range cmds {
			if h.refuse(c) {
				rest := append(append([]redis.Cmder(nil), cmds[:i]...), cmds[i+1:]...)
				err := next(ctx, rest)
				if h.after != nil {
					h.after()
				}
				return err
			}
		}
		return next(ctx, cmds)
	}
}

// checkedFilter is what these tests ask of a Filter and a Window.
type checkedFilter interface {
	Add(ctx context.Context, key []byte) error
	AddUniqueBatch(ctx context.Context, keys [][]byte, added []bool, errs []error) error
	ContainsChecked(ctx context.Context, key []byte) (bool, error)
	ContainsBatchChecked(ctx context.Context, keys [][]byte, found []bool, errs []error) error
	Drop(ctx context.Context) error
}

// filterKinds are a Filter and a Window of one segment, their write
// function, and a way to open the one named name again.
type filterKind struct {
	kind  string
	write string
	make  func(ctx context.Context, rdb redis.UniversalClient, name string) (checkedFilter, error)
	open  func(ctx context.Context, rdb redis.UniversalClient, name string) (checkedFilter, error)
	// openWith opens it with options.
	openWith func(ctx context.Context, rdb redis.UniversalClient, name string, opts ...redisfilter.Option) (checkedFilter, error)
}

var filterKinds = []filterKind{
	{"filter", "ckf2_add",
		func(ctx context.Context, rdb redis.UniversalClient, name string) (checkedFilter, error) {
			return redisfilter.New(ctx, rdb, name, 1000, redisfilter.WithSegments(1))
		},
		func(ctx context.Context, rdb redis.UniversalClient, name string) (checkedFilter, error) {
			return redisfilter.Open(ctx, rdb, name)
		},
		func(ctx context.Context, rdb redis.UniversalClient, name string, opts ...redisfilter.Option) (checkedFilter, error) {
			return redisfilter.Open(ctx, rdb, name, opts...)
		}},
	{"window", "ckf2_wadd",
		func(ctx context.Context, rdb redis.UniversalClient, name string) (checkedFilter, error) {
			return redisfilter.NewWindow(ctx, rdb, name, 1000, time.Hour, redisfilter.WithSegments(1))
		},
		func(ctx context.Context, rdb redis.UniversalClient, name string) (checkedFilter, error) {
			return redisfilter.OpenWindow(ctx, rdb, name)
		},
		func(ctx context.Context, rdb redis.UniversalClient, name string, opts ...redisfilter.Option) (checkedFilter, error) {
			return redisfilter.OpenWindow(ctx, rdb, name, opts...)
		}},
}

// TestRefusedCallRunsBeforeLaterCallsOfItsSegment refuses (BUSY) the
// first call of a batch whose keys fill two calls of one segment, while
// the second call runs: the first is sent again, and must still run
// before the second, or the answers of a key that appears in both are
// swapped (AddUniqueBatch would say its second occurrence was added, its
// first already there, and DeleteBatch would say which copy went the
// other way round).
func TestRefusedCallRunsBeforeLaterCallsOfItsSegment(t *testing.T) {
	t.Parallel()
	eachKind(t, func(ctx context.Context, t *testing.T, fk filterKind) {
		hook := &refuseFirst{target: isCall(fk.write)}
		f, _, _ := hookedFilter(ctx, t, fk, hook)
		// 40 keys: a call of keys 0 to 31, one of 32 to 39; key 35
		// is key 0.
		in, added, errs, err := batchWithRepeat(ctx, t, f, hook, "order")
		if err != nil {
			t.Fatal(err)
		}
		wantRepeatNotAdded(t, in, added, errs)
	})
}

// TestRefusedReadRunsBeforeItsCheck refuses (BUSY) the bucket read of a
// checked lookup while the segment check after it runs, and drops the
// filter before the read is sent again: the check must be sent again
// with the read, after it, and see the filter gone. A read that runs
// after its check reads a dropped segment's zeros as "absent", the
// answer ContainsChecked exists to tell from "gone" (and a window's
// read, judged by a time read before it, could count a generation that
// had already ended).
func TestRefusedReadRunsBeforeItsCheck(t *testing.T) {
	t.Parallel()
	for _, fk := range filterKinds {
		for _, batch := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/batch=%v", fk.kind, batch), func(t *testing.T) {
				t.Parallel()
				ctx := ctxOf(t)
				rdb := singleClient(t)
				name := uniqueName(t)
				f, err := fk.make(ctx, rdb, name)
				if err != nil {
					t.Fatal(err)
				}
				k := []byte("kept")
				if err := f.Add(ctx, k); err != nil {
					t.Fatal(err)
				}
				dropper, err := fk.open(ctx, singleClient(t), name)
				if err != nil {
					t.Fatal(err)
				}
				hook := &refuseFirst{target: func(args []any) bool { return fmt.Sprint(args[0]) == "bitfield_ro" }}
				hook.after = func() {
					if err := dropper.Drop(ctx); err != nil {
						t.Error(err)
					}
				}
				rdb.AddHook(hook)
				hook.armed.Store(true)
				var found bool
				if batch {
					var fs [1]bool
					var errs [1]error
					f.ContainsBatchChecked(ctx, [][]byte{k}, fs[:], errs[:])
					found, err = fs[0], errs[0]
				} else {
					found, err = f.ContainsChecked(ctx, k)
				}
				if hook.refused.Load() != 1 {
					t.Fatalf("the hook refused %d reads, want 1", hook.refused.Load())
				}
				if !errors.Is(err, redisfilter.ErrNotFound) {
					t.Errorf("found = %v, %v after the filter was dropped; want ErrNotFound", found, err)
				}
			})
		}
	}
}

// TestRefusedForGoodCallDoesNotHoldItsSegment refuses the first call of
// a batch's segment for good (an error reply, every copy: it never runs)
// while the second call of the segment, which must follow it, is refused
// by Redis (CKFORDER) for want of it: the second call must then run
// after all, with its own outcome, and not wait for the first until the
// retry horizon. The first call's keys get its error; a key in both
// calls is added by the second.
func TestRefusedForGoodCallDoesNotHoldItsSegment(t *testing.T) {
	t.Parallel()
	eachKind(t, func(ctx context.Context, t *testing.T, fk filterKind) {
		hook := &refuseFirst{target: isCall(fk.write), err: finalRefusal{}}
		f, _, _ := hookedFilter(ctx, t, fk, hook)
		in, added, errs, _ := batchWithRepeat(ctx, t, f, hook, "good")
		for i := range in {
			switch {
			case i < 32 && i != 35:
				if added[i] || errs[i] == nil || errs[i].Error() != (finalRefusal{}).Error() {
					t.Errorf("key %d (%s), of the refused call: added = %v, %v; want false, the refusal", i, in[i], added[i], errs[i])
				}
			case added[i] != true || errs[i] != nil:
				t.Errorf("key %d (%s), of the second call: added = %v, %v; want true, nil", i, in[i], added[i], errs[i])
			}
		}
		found, err := f.ContainsChecked(ctx, in[1])
		if err != nil || found {
			t.Fatalf("a key of the refused call: found = %v, %v; want false, nil", found, err)
		}
	})
}

// TestLaterCallRunsWhenItsPredecessorsRecordIsGone lets the first call of
// a batch's segment run and refuses (BUSY) the second, and then deletes
// every record of its filter (as a failover to a replica that had not received them,
// or an eviction, may): the second call, sent again, must run, as the
// call it follows is known to have run; it must not wait for a record
// that will not come back.
func TestLaterCallRunsWhenItsPredecessorsRecordIsGone(t *testing.T) {
	t.Parallel()
	eachKind(t, func(ctx context.Context, t *testing.T, fk filterKind) {
		other := singleClient(t)
		hook := &refuseFirst{target: isLaterCall(fk.write)}
		var name string
		hook.after = func() {
			// This filter's records only (key: ...:r:<id>:<name>): the
			// tests beside it, on the same server, keep theirs.
			recs, err := other.Keys(ctx, "*:r:*:"+name).Result()
			if err == nil && len(recs) > 0 {
				err = other.Del(ctx, recs...).Err()
			}
			if err != nil || len(recs) == 0 {
				t.Errorf("deleting the records: %d, %v", len(recs), err)
			}
		}
		f, _, n := hookedFilter(ctx, t, fk, hook)
		name = n
		in, added, errs, err := batchWithRepeat(ctx, t, f, hook, "gone")
		if err != nil {
			t.Fatal(err)
		}
		wantRepeatNotAdded(t, in, added, errs)
	})
}

// TestRefusedUntilHorizonStopsItsSegment refuses (BUSY) every copy of a
// batch's first call of a segment until the retry horizon: the second
// call, refused by Redis (CKFORDER) for want of the first, must end with
// it, and neither may be reported as applied or as maybe applied (no
// copy of either ran): the keys of both get a refusal, not
// ErrUnconfirmed, and are not in the filter.
func TestRefusedUntilHorizonStopsItsSegment(t *testing.T) {
	t.Parallel()
	eachKind(t, func(ctx context.Context, t *testing.T, fk filterKind) {
		first := isCall(fk.write)
		hook := &refuseFirst{always: true, target: func(args []any) bool { return first(args) && fmt.Sprint(args[2]) == "3" }}
		f, rdb, name := hookedFilter(ctx, t, fk, hook)
		short, err := fk.openWith(ctx, rdb, name, redisfilter.WithRetryHorizon(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		in := keys("horizon", 40)
		added := make([]bool, len(in))
		errs := make([]error, len(in))
		hook.armed.Store(true)
		if err := short.AddUniqueBatch(ctx, in, added, errs); err == nil {
			t.Fatal("AddUniqueBatch returned no error")
		}
		hook.armed.Store(false)
		if hook.refused.Load() < 1 {
			t.Fatalf("the hook refused %d calls; want the first call's copies", hook.refused.Load())
		}
		for i := range in {
			if added[i] || errs[i] == nil || errors.Is(errs[i], redisfilter.ErrUnconfirmed) {
				t.Errorf("key %d (%s): added = %v, %v; want false, a refusal", i, in[i], added[i], errs[i])
			}
			if errs[i] != nil && !strings.Contains(errs[i].Error(), busyRefusal{}.Error()) {
				t.Errorf("key %d (%s): %v; want the first call's refusal named", i, in[i], errs[i])
			}
			found, err := f.ContainsChecked(ctx, in[i])
			if err != nil || found {
				t.Errorf("key %d (%s): found = %v, %v; want false, nil", i, in[i], found, err)
			}
		}
	})
}

// wantRepeatNotAdded checks what batchWithRepeat's batch said: every key
// added, without error, but key 35, key 0 again.
func wantRepeatNotAdded(t *testing.T, in [][]byte, added []bool, errs []error) {
	t.Helper()
	for i := range in {
		if want := i != 35; added[i] != want || errs[i] != nil {
			t.Errorf("key %d (%s): added = %v, %v; want %v, nil", i, in[i], added[i], errs[i], want)
		}
	}
}

// batchWithRepeat adds 40 keys named prefix with AddUniqueBatch, hook
// armed: a call of keys 0 to 31 and one of 32 to 39, key 35 being key 0.
// It checks that the hook refused one call, and returns the keys, what
// the batch said of each, and its error.
func batchWithRepeat(ctx context.Context, t *testing.T, f checkedFilter, hook *refuseFirst, prefix string) (in [][]byte, added []bool, errs []error, err error) {
	t.Helper()
	in = keys(prefix, 40)
	in[35] = in[0]
	added, errs = make([]bool, len(in)), make([]error, len(in))
	hook.armed.Store(true)
	err = f.AddUniqueBatch(ctx, in, added, errs)
	if hook.refused.Load() != 1 {
		t.Fatalf("the hook refused %d calls, want 1", hook.refused.Load())
	}
	return in, added, errs, err
}

// eachKind runs test for each of filterKinds, in parallel.
func eachKind(t *testing.T, test func(ctx context.Context, t *testing.T, fk filterKind)) {
	for _, fk := range filterKinds {
		t.Run(fk.kind, func(t *testing.T) {
			t.Parallel()
			test(ctxOf(t), t, fk)
		})
	}
}

// hookedFilter makes a filter of kind fk, named by the test, on a client
// of its own with hook, and returns it, the client and its name.
func hookedFilter(ctx context.Context, t *testing.T, fk filterKind, hook redis.Hook) (checkedFilter, *redis.Client, string) {
	t.Helper()
	rdb := singleClient(t)
	rdb.AddHook(hook)
	name := uniqueName(t)
	f, err := fk.make(ctx, rdb, name)
	if err != nil {
		t.Fatal(err)
	}
	return f, rdb, name
}
