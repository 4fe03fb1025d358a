package server

// Window filters, an extension of RedisBloom's CF.* commands:
// CF.RESERVE key capacity WINDOW seconds makes key a cuckoo.Window, a
// cuckoo filter that forgets items older than the window (capacity is then
// the most distinct items a window holds). The other CF commands work on
// it with the same replies: CF.ADD adds an item or refreshes its age,
// CF.ADDNX and CF.INSERTNX add only items not in the window (and leave the
// age of those that are), CF.EXISTS, CF.MEXISTS and CF.COUNT (0 or 1)
// answer for the window, CF.DEL removes an item, CF.INFO adds "Window" and
// "Granularity" (in milliseconds) after RedisBloom's fields. Snapshots,
// dumps and the log keep them like the other filters, with a flag of the
// object encoding (objFlagWindow).
//
// Time and the log. A window's answers depend on when each item was
// written, so the log records the time of a window's writes: before the
// first write of each epoch of the window (and the first after each
// snapshot) it appends CF.WINDOWAT key unix-ns, which a replay hands to the
// key's window as the time of the writes that follow it. Within an epoch a
// window stores nothing finer than the epoch, so the replayed window holds
// the same items with the same ages. Writes that change nothing (CF.ADDNX
// of an item in the window, CF.DEL of one that is not) leave the window
// alone, as they are not logged. A failed CF.ADD may have emptied expired
// slots before it failed; the replay, which does not see it, answers the
// same, and its bytes may differ only in those slots.

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/dedupkit/cuckoo"
)

// objFlagWindow marks a window filter in the object encoding (the filter
// is a cuckoo.Window encoding). Frozen.
const objFlagWindow = 2

// cfMaxWindowSeconds bounds WINDOW: about a century.
const cfMaxWindowSeconds = 100 * 365 * 24 * 3600

// Replies of the extension (RedisBloom has no WINDOW).
const (
	errCFWindowRange     replyError = "WINDOW: value must be an integer number of seconds between 1 and 3153600000, inclusive."
	errCFWindowExpansion replyError = "WINDOW: a window filter does not expand; give no EXPANSION, or EXPANSION 0"
)

var windowCommands = []*command{
	{name: "cf.windowat", arity: 3, flags: flagWrite | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "The log's record of the time of a window filter's writes (replayed by recovery only)", exec: handle(parseCFWindowAt)},
}

// parseWindowOption parses CF.RESERVE's WINDOW value into p.
func (p *cfParams) parseWindowOption(val []byte) error {
	n, ok := parseInt(val)
	if !ok || n < 1 || n > cfMaxWindowSeconds {
		return errCFWindowRange
	}
	p.window = time.Duration(n) * time.Second
	return nil
}

// checkWindow checks CF.RESERVE's options once they are all parsed: a
// window filter takes no EXPANSION but 0 (and does not grow).
func (p *cfParams) checkWindow(args [][]byte) error {
	if p.window == 0 {
		return nil
	}
	for i := 3; i+1 < len(args); i += 2 {
		if is(args[i], "EXPANSION") && string(args[i+1]) != "0" {
			return errCFWindowExpansion
		}
	}
	p.expansion = 0
	return nil
}

// windowReserveArgs is the WINDOW option of reserveArgs.
func (p *cfParams) windowReserveArgs() [][]byte {
	if p.window == 0 {
		return nil
	}
	return [][]byte{[]byte("WINDOW"), strconv.AppendInt(nil, int64(p.window/time.Second), 10)}
}

// newWindowObject is newObject for CF.RESERVE ... WINDOW.
func (p *cfParams) newWindowObject(c *call) (*object, error) {
	if !p.seeded {
		p.seed, p.seeded = rand.Uint64(), true
	}
	opts := p.options() // expansion is 0: no growth
	// The table's size, before it is allocated: the slots of a Filter
	// sized for the items of a window and a granularity, each wider by
	// the 4-bit age.
	live := p.capacity + (p.capacity+cuckoo.WindowEpochs-1)/cuckoo.WindowEpochs + 1
	plan, err := cuckoo.NewPlan(live, opts...)
	if err != nil {
		return nil, errCFCreate
	}
	size := int64(plan.SizeInBytes) * int64(plan.FingerprintBits+4) / int64(plan.FingerprintBits)
	if !c.replay && size > c.s.cfg.MaxFilterBytes {
		return nil, errNoMemoryFilter
	}
	if !c.replay && c.s.overMemory(size) {
		return nil, errOOM
	}
	v := &windowValue{}
	if v.w, err = cuckoo.NewWindow(p.capacity, p.window, append(opts, cuckoo.WithClock(v.now))...); err != nil {
		return nil, errCFCreate
	}
	// The log records the width built, not the rate it came from.
	p.fingerprint, p.fpr = v.w.FingerprintBits(), 0
	return &object{kind: kindCF, cf: &cfValue{win: v}}, nil
}

// windowValue is a window filter, with the time its writes are made at.
//
// Invariants: at is set (not 0) while a write runs (pinned), and in a
// replay from the window's first CF.WINDOWAT record on; at is only read
// and written under the object's write lock, and pinned is false
// whenever the lock is released.
type windowValue struct {
	w      *cuckoo.Window
	at     int64 // the time of the writes, Unix ns
	pinned bool  // a write runs: the window's clock reads at
	// The latest CF.WINDOWAT logged: for which log epoch (a snapshot
	// starts a new one, and a replay starts from a snapshot) and which
	// epoch of the window.
	logged      bool
	loggedTag   uint64
	loggedEpoch int64
}

// now is the window's clock: the time of the write under way, or the
// wall clock for lookups.
func (v *windowValue) now() time.Time {
	if v.pinned {
		return time.Unix(0, v.at)
	}
	return time.Now()
}

// epochOf returns the window's epoch of a time, as cuckoo.Window counts
// them: Unix ns / ⌈window/WindowEpochs⌉, rounded down.
func (v *windowValue) epochOf(ns int64) int64 {
	g := (int64(v.w.Window()) + cuckoo.WindowEpochs - 1) / cuckoo.WindowEpochs
	q := ns / g
	if ns%g != 0 && ns < 0 {
		q--
	}
	return q
}

// windowWrite prepares a write command to key's filter o, when it is a
// window: it takes the time of the write, the clock's or (in a replay) the
// one the log recorded, and logs it when a replay could not know it.
func windowWrite(c *call, o *object, key []byte, tag uint64) error {
	if o == nil || o.cf == nil || o.cf.win == nil {
		return nil
	}
	v := o.cf.win
	if c.replay {
		if v.at == 0 {
			return errCFWindowNoTime
		}
		return nil
	}
	v.at = time.Now().UnixNano()
	if e := v.epochOf(v.at); !v.logged || v.loggedTag != tag || v.loggedEpoch != e {
		c.log(tag, [][]byte{[]byte("CF.WINDOWAT"), key, strconv.AppendInt(nil, v.at, 10)})
		v.logged, v.loggedTag, v.loggedEpoch = true, tag, e
	}
	return nil
}

// errCFWindowNoTime is a replay's error for a window's write the log gave
// no time for.
const errCFWindowNoTime replyError = "ERR window filter write without a logged time"

// write runs a write of the window at the time windowWrite took.
func (v *windowValue) write(fn func(w *cuckoo.Window)) {
	v.pinned = true
	fn(v.w)
	v.pinned = false
}

func (v *windowValue) add(item []byte) (err error) {
	v.write(func(w *cuckoo.Window) { err = w.Add(item) })
	return err
}

// addUnique adds an item not in the window; one that is, it leaves alone
// without writing (see the file's comment on the log).
func (v *windowValue) addUnique(item []byte) (added bool, err error) {
	v.write(func(w *cuckoo.Window) {
		if !w.Contains(item) {
			added, err = w.AddUnique(item)
		}
	})
	return added, err
}

func (v *windowValue) del(item []byte) (ok bool) {
	v.write(func(w *cuckoo.Window) { ok = w.Contains(item) && w.Delete(item) })
	return ok
}

func (v *windowValue) count(item []byte) uint64 {
	if v.w.Contains(item) {
		return 1
	}
	return 0
}

// info is what CF.INFO adds for a window: its window and granularity, in
// milliseconds.
func (v *windowValue) info() [2]uint64 {
	return [2]uint64{uint64(v.w.Window().Milliseconds()), uint64(v.w.Granularity().Milliseconds())}
}

// decodeWindowValue decodes the cuckoo.Window encoding of an object.
func decodeWindowValue(p []byte) (*windowValue, error) {
	v := &windowValue{}
	w, err := cuckoo.NewWindow(1, time.Second, cuckoo.WithClock(v.now))
	if err != nil {
		return nil, err
	}
	if err := w.UnmarshalBinary(p); err != nil {
		return nil, err
	}
	v.w = w
	return v, nil
}

// CF.WINDOWAT key unix-ns: recovery's record of the time of a window's
// writes (see the file's comment). Clients cannot send it.

type cfWindowAt struct {
	key []byte
	at  int64
}

func parseCFWindowAt(args [][]byte) (cfWindowAt, error) {
	n, ok := parseInt(args[2])
	if !ok || n == 0 {
		return cfWindowAt{}, errUnknownArgument
	}
	return cfWindowAt{key: args[1], at: n}, nil
}

func (r cfWindowAt) run(c *call) {
	if !c.replay {
		c.fail(unknownCommand(c.args))
		return
	}
	o, _, err := c.s.ks.writeLock(r.key, kindCF)
	if err != nil || o == nil {
		c.w.OK() // the key went away before the write it dated
		return
	}
	if o.cf.win != nil {
		o.cf.win.at = r.at
	}
	c.s.ks.unlockWrite(o)
	c.w.OK()
}
