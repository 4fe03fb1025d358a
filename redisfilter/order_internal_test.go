package redisfilter

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestCallAfterWaitsForItsPredecessor holds the write functions of
// revision 6 to their contract for a call that names the record of the
// call before it (a batch's later call of a segment): Redis refuses it
// (CKFORDER, which the client takes as "not run, send again") and it
// changes nothing until that call has run; then it runs, once. A copy of
// a call that ran is answered from its record even when the record it
// names is gone, and a call naming three keys (a client of revision 5)
// runs as before.
func TestCallAfterWaitsForItsPredecessor(t *testing.T) {
	t.Parallel()
	_, rdb, ctx := testServer(t)
	for _, kind := range []string{"filter", "window"} {
		t.Run(kind, func(t *testing.T) {
			var h *segments
			fn := fnAdd
			head := []any{1} // unique
			var w *Window
			if kind == "filter" {
				f, err := New(ctx, rdb, "after-"+kind, 1000, WithSegments(1))
				if err != nil {
					t.Fatal(err)
				}
				h = &f.segments
			} else {
				var err error
				w, err = NewWindow(ctx, rdb, "after-"+kind, 1000, time.Hour, WithSegments(1))
				if err != nil {
					t.Fatal(err)
				}
				h = &w.segments
				fn = fnWAdd
				head = []any{w.gh, w.gl, 1, 0} // unique, not timed
			}
			args := func(k string) []any {
				var l located
				l.segment, l.i1, l.i2, l.fp, l.h = h.g.locateHash([]byte(k))
				a := append([]any(nil), head...)
				if kind == "filter" {
					return cuckooKeyArgs(a, &l, 0)
				}
				return w.putArgs(a, &l)
			}
			send := func(cmd *redis.Cmd) ([]int64, error) {
				t.Helper()
				if err := h.run(ctx, []redis.Cmder{cmd}); err != nil {
					t.Fatal(err)
				}
				return cmd.Int64Slice()
			}
			first, second := h.recordKey(0), h.recordKey(0)
			for range 2 {
				_, err := send(h.writeCmdAfter(ctx, fn, 0, second, first, args("b")))
				if err == nil || !strings.HasPrefix(err.Error(), "CKFORDER ") || !refusedForNow(err) {
					t.Fatalf("a call whose predecessor has not run: %v; want a CKFORDER refusal", err)
				}
			}
			if n, err := rdb.Exists(ctx, second).Result(); err != nil || n != 0 {
				t.Fatalf("a refused call left its record (%d, %v)", n, err)
			}
			if codes, err := send(h.writeCmdAfter(ctx, fn, 0, first, "", args("a"))); err != nil || len(codes) != 1 || codes[0] != 1 {
				t.Fatalf("the first call: %v, %v; want [1]", codes, err)
			}
			// "b" was not added by the refused copies: the call adds it.
			if codes, err := send(h.writeCmdAfter(ctx, fn, 0, second, first, args("b"))); err != nil || len(codes) != 1 || codes[0] != 1 {
				t.Fatalf("the second call after the first ran: %v, %v; want [1]", codes, err)
			}
			if err := rdb.Del(ctx, first).Err(); err != nil {
				t.Fatal(err)
			}
			if codes, err := send(h.writeCmdAfter(ctx, fn, 0, second, first, args("b"))); err != nil || len(codes) != 1 || codes[0] != 1 {
				t.Fatalf("a copy of the second call, its predecessor's record gone: %v, %v; want its first run's [1]", codes, err)
			}
			// Revision 5's calls: three keys.
			if codes, err := send(h.writeCmdAfter(ctx, fn, 0, h.recordKey(0), "", args("b"))); err != nil || len(codes) != 1 || codes[0] != 2 {
				t.Fatalf("a call of three keys: %v, %v; want [2] (present)", codes, err)
			}
		})
	}
}
