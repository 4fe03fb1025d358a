package redisfilter

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Lookups read a key's two buckets with BITFIELD_RO (no script), so a
// replica may serve them. A reader is what a kind of filter adds to that
// read: nothing, for a cuckoo filter (a checked lookup reads the segment's
// id and length after it); for a window, the segment's epoch, read with
// the buckets in each BITFIELD_RO, and the server's time, read after the
// segment's buckets (window.go).
type reader interface {
	// head returns the fields each BITFIELD_RO reads before the keys'
	// buckets; their replies come first.
	head() []any
	// tail appends the commands that follow segment s's reads in the
	// pipeline (same slot, so same node and round trip).
	tail(ctx context.Context, cmds []redis.Cmder, s int, check bool) []redis.Cmder
	// tailLen is the number of commands tail appends.
	tailLen(check bool) int
	// state returns what match needs of segment s's tail replies (a
	// window's time, in Unix ns), or the error that fails the segment's
	// keys: the tail's, or the check's (the segment is gone).
	state(s int, cmds []redis.Cmder, errs []error, check bool) (int64, error)
	// match reports whether key l is found, given its buckets' bytes and
	// first bits, the replies to the command's head fields and the
	// segment's state.
	match(l *located, bb1 []byte, sh1 uint, bb2 []byte, sh2 uint, head []int64, state int64) bool
}

// lookupOne looks key up: one BITFIELD_RO of its two buckets, then r's
// tail, in one pipeline.
func (h *segments) lookupOne(ctx context.Context, r reader, key []byte, check bool) (bool, error) {
	var l located
	l.segment, l.i1, l.i2, l.fp, l.h = h.g.locateHash(key)
	hd := r.head()
	args := make([]any, 0, 2+len(hd)+3*(h.g.fields(l.i1)+h.g.fields(l.i2)))
	args = append(args, "bitfield_ro", h.tables[l.segment])
	args = append(args, hd...)
	args = h.g.appendFields(args, l.i1)
	args = h.g.appendFields(args, l.i2)
	cmd := redis.NewIntSliceCmd(ctx, args...)
	cmd.SetFirstKeyPos(1)
	cmds := r.tail(ctx, []redis.Cmder{cmd}, l.segment, check)
	errs, _, _ := h.retry.settleWith(ctx, cmds, reads, h.sender(ctx), func(again []int, _ []error) []int {
		if again[0] != 0 {
			return again
		}
		// The read goes again: its tail with it, after it.
		all := make([]int, len(cmds))
		for i := range all {
			all[i] = i
		}
		return all
	})
	if errs[0] != nil {
		return false, errs[0]
	}
	st, err := r.state(l.segment, cmds[1:], errs[1:], check)
	if err != nil {
		return false, err
	}
	vals := cmd.Val()
	head, vals := vals[:len(hd)/3], vals[len(hd)/3:]
	var buf1, buf2 [maxBucketBytes]byte
	bb1, sh1, vals := h.g.bucketBytes(buf1[:], vals, l.i1)
	bb2, sh2, _ := h.g.bucketBytes(buf2[:], vals, l.i2)
	return r.match(&l, bb1, sh1, bb2, sh2, head, st), nil
}

// lookupBatch is ContainsBatch (and ContainsBatchChecked, with check) of
// a reader r: rounds of up to roundKeys keys, up to roundsInFlight at
// once.
func (h *segments) lookupBatch(ctx context.Context, r reader, keys [][]byte, found []bool, errs []error, check bool) error {
	if err := checkBatch(len(keys), len(found), len(errs)); err != nil {
		return err
	}
	sent, err := overlapRounds(len(keys), func(lo, hi int) (bool, error) {
		return h.lookupRound(ctx, r, keys[lo:hi], found[lo:hi], errs[lo:hi], check)
	})
	markNotSent(errs[sent:len(keys)], 0)
	return err
}

// lookupRound looks up one round's keys: one BITFIELD_RO per lookupChunk
// keys of a segment, each segment's reads followed by r's tail; a segment
// whose tail fails (no reply, or the check says the segment is gone) fails
// its keys.
func (h *segments) lookupRound(ctx context.Context, r reader, keys [][]byte, found []bool, errs []error, check bool) (stop bool, err error) {
	loc, order := h.group(keys)
	hd := r.head()
	tailLen := r.tailLen(check)
	var cmds []redis.Cmder
	// groups[c] is the keys of command c, nil for a tail command; tails[s]
	// is the index in cmds of segment s's tail, which follows its reads.
	var groups [][]int32
	tails := make(map[int]int)
	last := -1
	addTail := func() {
		if last >= 0 && tailLen > 0 {
			tails[last] = len(cmds)
			cmds = r.tail(ctx, cmds, last, check)
			for range tailLen {
				groups = append(groups, nil)
			}
		}
	}
	chunks(loc, order, lookupChunk, func(s int, idx []int32) {
		if s != last {
			addTail()
			last = s
		}
		n := 2 + len(hd)
		for _, i := range idx {
			n += 3 * (h.g.fields(loc[i].i1) + h.g.fields(loc[i].i2))
		}
		args := make([]any, 0, n)
		args = append(args, "bitfield_ro", h.tables[s])
		args = append(args, hd...)
		for _, i := range idx {
			args = h.g.appendFields(args, loc[i].i1)
			args = h.g.appendFields(args, loc[i].i2)
		}
		cmd := redis.NewIntSliceCmd(ctx, args...)
		cmd.SetFirstKeyPos(1)
		cmds = append(cmds, cmd)
		groups = append(groups, idx)
	})
	addTail()
	// A read sent again takes its segment's tail with it: the tail (a
	// checked lookup's check of the segment, a window's time) must be
	// read after the buckets it vouches for, not before.
	resend := func(again []int, _ []error) []int {
		if tailLen == 0 {
			return again
		}
		out := make([]int, 0, len(again)+tailLen)
		next := 0 // the first index of cmds not yet in out
		for x := 0; x < len(again); x++ {
			c := again[x]
			if c < next {
				continue
			}
			if groups[c] == nil {
				out = append(out, c)
				next = c + 1
				continue
			}
			// A read: it and the reads of its segment after it in
			// again, then the segment's tail.
			k := tails[loc[groups[c][0]].segment]
			for ; x < len(again) && again[x] < k; x++ {
				out = append(out, again[x])
			}
			x--
			for j := k; j < k+tailLen; j++ {
				out = append(out, j)
			}
			next = k + tailLen
		}
		return out
	}
	cerrs, stop, _ := h.retry.settleWith(ctx, cmds, reads, h.sender(ctx), resend)
	var buf1, buf2 [maxBucketBytes]byte
	for c, cmd := range cmds {
		if groups[c] == nil {
			continue // a tail, read with its segment's reads
		}
		cerr := cerrs[c]
		var st int64
		if cerr == nil && tailLen > 0 {
			s := loc[groups[c][0]].segment
			k := tails[s]
			st, cerr = r.state(s, cmds[k:k+tailLen], cerrs[k:k+tailLen], check)
		}
		if cerr != nil {
			err = cmp(err, cerr)
			for _, i := range groups[c] {
				found[i], errs[i] = false, cerr
			}
			continue
		}
		vals := cmd.(*redis.IntSliceCmd).Val()
		head, vals := vals[:len(hd)/3], vals[len(hd)/3:]
		for _, i := range groups[c] {
			l := &loc[i]
			var bb1, bb2 []byte
			var sh1, sh2 uint
			bb1, sh1, vals = h.g.bucketBytes(buf1[:], vals, l.i1)
			bb2, sh2, vals = h.g.bucketBytes(buf2[:], vals, l.i2)
			found[i], errs[i] = r.match(l, bb1, sh1, bb2, sh2, head, st), nil
		}
	}
	return stop, err
}

// A cuckoo filter's lookups read the buckets alone; a checked one reads
// the segment's id and length after them (checked.go).

func (f *Filter) head() []any { return nil }

func (f *Filter) tail(ctx context.Context, cmds []redis.Cmder, s int, check bool) []redis.Cmder {
	if !check {
		return cmds
	}
	return f.appendSegmentCheck(ctx, cmds, s)
}

func (f *Filter) tailLen(check bool) int {
	if check {
		return segmentChecks
	}
	return 0
}

func (f *Filter) state(s int, cmds []redis.Cmder, errs []error, check bool) (int64, error) {
	if !check {
		return 0, nil
	}
	return 0, f.segmentCheck(s, cmds, errs)
}

func (f *Filter) match(l *located, bb1 []byte, sh1 uint, bb2 []byte, sh2 uint, _ []int64, _ int64) bool {
	return f.g.has(bb1, sh1, l.fp) || f.g.has(bb2, sh2, l.fp)
}
