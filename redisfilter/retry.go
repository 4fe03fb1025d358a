package redisfilter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Retries. A client that gets no reply to a command cannot tell whether
// the server ran it: the reply may be lost, or the command may wait in
// the socket of a stalled server that will run it later. A copy sent
// again (by go-redis, which by default sends a command or a whole
// pipeline up to three times more, or by this package) then runs after
// the first when the server wakes. A write whose reply depends on the
// filter's state (an insert says added, full or present; a delete says
// whether there was a copy) would then answer the last copy's question:
// "present", about the key its own first copy added.
//
// So every write call carries a request id, unique to the call, and the
// segment remembers the reply of the call's first run for a window W (the
// record key R, see cuckoo.lua): a copy that finds it returns the first
// run's reply and changes nothing. The client sends a call whose outcome
// is unknown again, with the same id, until a horizon H after its first
// send, and believes a reply only if it arrived within 0.9·W of the first
// send. That reply is right: the call's first run (which stored the
// reply) came after the first send, so the record was still there when
// the copy that replied ran, at most 0.9·W later. The tenth of W spared
// covers a server clock that runs fast.
//
// Only a copy that runs consults the record. A copy Redis refuses (out
// of memory, busy with a script, loading) says nothing of an earlier one,
// which may have run: so a write one of whose copies went unanswered
// gets an error wrapping ErrUnconfirmed whatever a later copy is told,
// and an error Redis replied means "not applied" only when every copy
// got one. That needs every copy to be counted: settle sends them all
// itself, and go-redis sends none again on its own (sentOnce).
//
// A refusal can also answer one command of a pipeline and not the next.
// So a batch's later call of a segment names the record of the call
// before it, and Redis refuses it (CKFORDER, a refusal for now like BUSY)
// until that call has run (writeBatch); and a checked read sent again
// takes its segment's check with it (lookupRound).
//
// After H, or when the context ends, the keys of a call that may have run
// get an error wrapping ErrUnconfirmed: the write may have been applied,
// or may be yet. A copy that waits in a stalled server longer than W
// after the first run (a stall longer than W) runs again: it changes
// nothing for AddUnique (the key is there), adds a copy for Add and
// removes one for Delete. W bounds that stall, and the memory the records
// take (docs/redis.md).

// Defaults of WithRetryWindow and WithRetryHorizon.
const (
	DefaultRetryWindow  = time.Minute
	DefaultRetryHorizon = 30 * time.Second
)

// retryPolicy is how long a handle's calls are remembered and resent.
type retryPolicy struct {
	window  time.Duration // W: how long a segment remembers a call's reply
	horizon time.Duration // H: how long the client resends a call
}

// trust is how long after a call's first send a reply to it is believed.
func (p retryPolicy) trust() time.Duration { return p.window - p.window/10 }

// resolveRetry fills in the defaults of c's retry options and checks them.
func (c *config) resolveRetry() (retryPolicy, error) {
	p := retryPolicy{window: c.window, horizon: c.horizon}
	if !c.horizonSet {
		p.horizon = DefaultRetryHorizon
		if p.window != 0 {
			p.horizon = min(p.horizon, p.window/2)
		}
	}
	if p.window == 0 {
		p.window = max(DefaultRetryWindow, 2*p.horizon)
	}
	if p.horizon > p.window/2 {
		return p, fmt.Errorf("%w: retry horizon %v above half the retry window %v", ErrInvalidParameter, p.horizon, p.window)
	}
	return p, nil
}

// idSource makes request ids: a random prefix, drawn for each handle,
// and a counter.
type idSource struct {
	prefix string
	n      atomic.Uint64
}

func newIDSource() *idSource {
	var b [8]byte
	rand.Read(b[:])
	return &idSource{prefix: hex.EncodeToString(b[:])}
}

// next returns a new request id.
func (s *idSource) next() string {
	return s.prefix + strconv.FormatUint(s.n.Add(1), 16)
}

// sendKind says what settle sends, and so what it may send again.
type sendKind uint8

const (
	// reads: no reply past the horizon is an error saying so.
	reads sendKind = iota
	// idempotentWrites (the Bloom filter's: setting bits) may run any
	// number of times; no reply past the horizon is ErrUnconfirmed.
	idempotentWrites
	// rememberedWrites are function calls with a request id, run once
	// however often they are sent; a reply is believed only within
	// trust() of the first send.
	rememberedWrites
)

// settle sends cmds with send and sends again each command whose outcome
// is unknown (no reply), or that the server could not run for now (it is
// loading, busy, failing over, or moving the slot), until each has a
// reply that can be believed, the horizon has passed or ctx is done. It
// returns each command's error: nil (its reply is in it), or
//
//   - for a write one of whose copies may have run (a copy reached Redis
//     and got no reply, or a reply too late to believe), an error wrapping
//     ErrUnconfirmed, whatever a later copy answered: a refusal of a later
//     copy says nothing of the earlier one;
//   - for a write no copy of which may have run, the last copy's error:
//     a refusal Redis replied, or one wrapping ErrNotSent when no copy
//     reached Redis (no connection could be made);
//   - for a read, an error Redis replied, or one saying that no reply
//     came.
//
// That rule is the whole of what a write's error means, in one place: the
// writes of every filter go through settle. It holds because settle sends
// every copy itself: go-redis does not send a write again on its own
// (sentOnce), so a copy settle did not count cannot exist.
//
// gaveUp is true when some command had no reply in the end. short is
// send's ErrNotReplicated, if it returned one. send must leave in each
// command its reply, or an error: one Redis replied, or why no reply
// came.
func (p retryPolicy) settle(ctx context.Context, cmds []redis.Cmder, kind sendKind, send func([]redis.Cmder) error) (errs []error, gaveUp bool, short error) {
	return p.settleWith(ctx, cmds, kind, send, nil)
}

// settleWith is settle, but before each command is sent again resend
// is called with again, the indexes of the commands to be sent again
// (ascending), and errs, each command's error so far (final for those
// not in again); it returns the indexes to send, ascending (commands go
// out in the order of cmds), and may replace commands of again in cmds
// by others (the same request, with other arguments). A checked read
// sends its segment's check again with a read sent again, so that the
// check runs after the read it vouches for; a batch write names again
// the call it must follow (writeBatch).
func (p retryPolicy) settleWith(ctx context.Context, cmds []redis.Cmder, kind sendKind, send func([]redis.Cmder) error,
	resend func(again []int, errs []error) []int) (errs []error, gaveUp bool, short error) {
	errs = make([]error, len(cmds))
	pending := make([]int, len(cmds))
	for i := range pending {
		pending[i] = i
	}
	// maybeRan[i]: a copy of command i reached Redis and was not answered
	// in time, so it may have run, or may run yet.
	maybeRan := make([]bool, len(cmds))
	start := time.Now()
	backoff := 20 * time.Millisecond
	batch := make([]redis.Cmder, 0, len(cmds))
	for {
		if ctx.Err() != nil {
			// Ended before this send (or while waiting to make it).
			elapsed := time.Since(start).Round(time.Millisecond)
			for _, i := range pending {
				errs[i] = giveUp(ctx, kind, errs[i], maybeRan[i], elapsed)
			}
			return errs, true, short
		}
		batch = batch[:0]
		for _, i := range pending {
			cmds[i].SetErr(nil)
			if kind == reads {
				batch = append(batch, cmds[i])
			} else {
				batch = append(batch, sentOnce{cmds[i]})
			}
		}
		if err := send(batch); errors.Is(err, ErrNotReplicated) {
			short = cmp(short, err)
		}
		late := kind == rememberedWrites && time.Since(start) >= p.trust()
		var again []int
		for _, i := range pending {
			err := cmds[i].Err()
			switch {
			case err == nil && !late:
				errs[i] = nil
			case err == nil:
				// Too late to believe: the record may have expired
				// before this copy ran.
				errs[i] = fmt.Errorf("the reply came %v after the first send, past 0.9 of the retry window %v", time.Since(start).Round(time.Millisecond), p.window)
				maybeRan[i] = true
				again = append(again, i)
			case refusedForNow(err) || notSent(err):
				// This copy did nothing; a later one may run.
				errs[i] = err
				again = append(again, i)
			case isReply(err) || errors.Is(err, redis.ErrClosed):
				// This copy did nothing, and a later one would do no
				// better: final, unless an earlier copy may have run.
				errs[i] = err
				if maybeRan[i] && kind != reads {
					errs[i] = fmt.Errorf("%w: an earlier copy may have run, and a later one got: %w", ErrUnconfirmed, err)
				}
			default:
				errs[i] = err
				maybeRan[i] = true
				again = append(again, i)
			}
		}
		if len(again) == 0 {
			return errs, false, short
		}
		elapsed := time.Since(start)
		if late || elapsed >= p.horizon {
			elapsed = elapsed.Round(time.Millisecond)
			for _, i := range again {
				errs[i] = giveUp(ctx, kind, errs[i], maybeRan[i], elapsed)
			}
			return errs, true, short
		}
		wait := min(backoff, p.horizon-elapsed)
		backoff = min(2*backoff, time.Second)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		if resend != nil {
			again = resend(again, errs)
		}
		pending = again
	}
}

// giveUp returns the error of a command settle stops sending (at the
// horizon, or when ctx is done) with no reply to believe, elapsed after
// its first send: last is the last copy's error (nil if none was sent),
// maybeRan whether some copy may have run.
func giveUp(ctx context.Context, kind sendKind, last error, maybeRan bool, elapsed time.Duration) error {
	cause := last
	if err := ctx.Err(); err != nil {
		cause = err
		if last != nil {
			cause = fmt.Errorf("%w (the last copy: %w)", err, last)
		}
	}
	switch {
	case isReply(last) && !maybeRan && ctx.Err() == nil:
		// Every copy was refused: the last refusal says why.
		return last
	case kind == reads:
		return fmt.Errorf("redisfilter: no reply after %v: %w", elapsed, cause)
	case maybeRan:
		return fmt.Errorf("%w after %v: %w", ErrUnconfirmed, elapsed, cause)
	case last == nil || notSent(last):
		return fmt.Errorf("%w: %w", ErrNotSent, cause)
	default:
		// Refused until ctx ended: not applied either.
		return cause
	}
}

// sentOnce is a write as settle sends it: go-redis does not send it
// again by itself (NoRetry, as it would after a timeout, a lost
// connection or a LOADING reply), so every copy of a write that reaches
// Redis is one that settle sent and knows of.
type sentOnce struct{ redis.Cmder }

// NoRetry tells go-redis not to send the command again.
func (sentOnce) NoRetry() bool { return true }

// isReply reports whether err is an error reply of Redis.
func isReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// notSent reports whether err says that the command never reached Redis:
// no connection could be made (go-redis dials before it writes) or none
// was free in time.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" || errors.Is(err, redis.ErrPoolTimeout)
}

// refusedForNow reports whether err is a reply of Redis saying that it
// did not run the command and may run it later (CKFORDER: once the call
// it follows has run, see writeBatch).
func refusedForNow(err error) bool {
	if !isReply(err) {
		return false
	}
	msg := err.Error()
	for _, p := range []string{"LOADING ", "BUSY ", "TRYAGAIN ", "CLUSTERDOWN ", "MASTERDOWN ", "READONLY ", "NOREPLICAS ", "MOVED ", "ASK ", "CKFORDER "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
