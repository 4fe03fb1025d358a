package cuckoo

import (
	"fmt"
	"math"
	"time"

	"github.com/dedupkit/cuckoo/internal/hash"
	"github.com/dedupkit/cuckoo/internal/invariants"
	"github.com/dedupkit/cuckoo/internal/table/stamped"
)

// Window is a cuckoo filter that forgets: it answers "was this key added
// within the last window?" ("seen in the last 24 hours", "alerted for this
// host in the last hour"), and a key older than that reads as absent but
// for false positives. It holds the keys of one window in one table: a
// lookup reads the key's two buckets as a [Filter]'s does, and expired
// entries are free slots that inserts take over. Nothing runs in the
// background to age keys: a Window reads its clock when it is used (the
// default clock keeps a goroutine for lookups; see below).
//
// # Ages
//
// Time is cut into epochs of g = ⌈window/14⌉ (the granularity) counted
// from the Unix epoch, and each slot carries beside its fingerprint a 4-bit
// stamp: the epoch of its key's last Add, modulo 16. An entry is live while
// the current epoch is at most 14 past its own, so a key is found for at
// least window after its last Add and never more than window + G after it,
// where G = 15g − window ([Window.Granularity], about window/14). Between
// the two it is found or not depending on where the epochs fall.
//
// Sixteen stamp values cover 15 live epochs and one expired one; stamps
// repeat every 16 epochs, so an entry nobody overwrites would look young
// again 16 epochs after its Add unless it is emptied first. The writers
// keep this from happening (the proof is in the comment of
// [Window.advance]): each write empties the expired slots of the next few
// buckets (a sweep that makes one pass over the table per epoch), and the
// first write of a new epoch finishes the pass; after an idle spell of more
// than one epoch it makes a full pass, and after one of more than 15 it
// clears the table, whose entries have all expired. Readers never write:
// they compare each stamp with the epoch of the last write and with the
// clock.
//
// The Window's time never runs backwards: it is the latest time its clock
// has shown a writer (a new Window has none until its first write). A
// clock that goes back (a stepped wall clock, an event that arrives late)
// holds the Window's time until it catches up, which keeps keys longer,
// never shorter; [Window.Reset] lets a Window whose clock jumped far ahead
// by mistake start over.
//
// # Capacity and memory
//
// errZeroWindow is the error of an insert on the zero Window, naming what makes
// one.
var errZeroWindow = fmt.Errorf("%w: the zero Window has no table; create it with NewWindow, or decode into it", ErrUninitialized)

// NewWindow(n, window) holds n distinct keys added in any window, added at
// any steady pace. The live entries at any moment are the keys added in
// the last 15 epochs, window + g of time, so the table is sized for
// n·15/14 of them (and never fills with expired ones, which are free). A
// key added again takes no new slot: its stamp is refreshed. Keys that
// come in bursts can need more: if n keys come just before the start of an
// epoch and n more fewer than window + g later, all 2n are live for a
// while, and Add returns [ErrFull] when no room can be made (give a larger
// n for such streams). Each slot costs f + 4 bits: at the default 12-bit
// fingerprints (0.19 % false positives) a Window takes about 18.0 bits a
// key, 1.43 times a Filter of the same rate and capacity.
//
// # Concurrency and the clock
//
// Like a [Filter], a Window may be read (Contains, Len, encoding…) by many
// goroutines at once, but any write (Add, Touch, Delete, Reset, decoding)
// needs exclusive access. Contains reads the clock only when a fingerprint
// matches, which for an absent key is about as rare as a false positive;
// a batch reads it once. The default clock is the wall clock read once an
// epoch by a writer and advanced in between by the monotonic clock: ages
// are measured in elapsed time, not moved by steps of the wall clock.
// Writers read the monotonic clock on every call; lookups of a window of
// 5.6 s or more read a copy of it that a goroutine of the Window refreshes
// 8 times an epoch (one atomic load: a late time keeps keys longer, never
// shorter, and [Window.Granularity] counts it). That goroutine starts with
// the first lookup that reads the clock and ends once the Window is
// unreachable. [WithClock] substitutes another clock, read exactly by
// every call: a test's, or the time of the events being deduplicated.
//
// # Zero value
//
// The zero Window is empty and has no table, like the zero [Filter]:
// lookups report nothing present, Delete nothing deleted, and every insert
// or Touch returns an error wrapping [ErrUninitialized] (create windows
// with [NewWindow]). It can decode, with the default clock.
type Window struct {
	t         stamped.Table
	seed      uint64
	perWindow uint64
	window    int64 // ns
	gran      int64 // g: the epoch length in ns, ⌈window/WindowEpochs⌉
	maxKicks  int

	clock  func() time.Time // nil: the default clock (window_clock.go)
	wall   int64            // the default clock's anchor: Unix ns…
	monoAt int64            // …and the same instant in monoNanos
	coarse *coarseClock     // the default clock's for lookups; nil: exact
	fake   *fakeTime        // tests only: the default clock's source

	// epoch is the epoch of the latest write, [start, end) its span in
	// Unix ns. cursor is the next bucket the sweep of the epoch empties.
	//
	// INVARIANT: every non-empty slot holds an entry added (or last
	// refreshed) in an epoch e with epoch − 15 ≤ e ≤ epoch, so its stamp
	// gives its age exactly: epoch − e = (epoch − stamp) mod 16.
	// INVARIANT: in buckets [0, cursor) that age is at most 14.
	epoch      int64
	start, end int64
	cursor     uint64
}

const (
	// WindowEpochs is the number of epochs a Window's window spans: the
	// granularity is about a WindowEpochs-th of the window. An entry is
	// live while its age in epochs is at most WindowEpochs, one stamp
	// value marks the entries that expired in the current epoch, and none
	// is left over (see Window.advance). Frozen: the encoding records it.
	WindowEpochs = stamped.Stamps - 2
	// windowSweep is how many buckets each write sweeps: at the pace of a
	// Window at capacity (n keys a window, about 0.28·n buckets, with the
	// default shape) the pass of an epoch is done by the end of the epoch.
	windowSweep = 4
	// windowLimitNanos bounds the times a Window handles, ±2^62 ns from
	// the Unix epoch (years 1824 to 2116): times beyond are taken as the
	// bound, and differences of epochs fit an int64.
	windowLimitNanos = 1 << 62
	// DefaultWindowFingerprintBits is the fingerprint width of a Window
	// made without WithFingerprintBits or WithFalsePositiveRate: with its
	// 4-bit stamp a slot is 16 bits and a bucket one word, and the rate
	// about 0.19 %.
	DefaultWindowFingerprintBits = 12
	// MaxWindowFingerprintBits is the widest fingerprint of a Window: a
	// slot and its stamp fit 32 bits.
	MaxWindowFingerprintBits = 32 - stamped.AgeBits
	// MaxWindow is the longest window NewWindow accepts.
	MaxWindow = time.Duration(windowLimitNanos)
)

// NewWindow returns an empty Window that holds perWindow distinct keys
// added within any one window (see the type's documentation for bursts).
// It takes the options of [New] that describe a table
// ([WithFalsePositiveRate], [WithFingerprintBits] up to 28,
// [WithBucketSize] of 2, 4 or 8 slots, [WithSeed], [WithMaxKicks]) and
// [WithClock]; without a rate or a width
// its fingerprints are 12 bits (about 0.19 % false positives). window must
// be positive and at most [MaxWindow]. It returns an error wrapping
// [ErrInvalidParameter], and no Window, when a parameter is out of range or
// the table would need more than 2^32 buckets (or, on a 32-bit platform,
// more than 2 GiB).
func NewWindow(perWindow uint64, window time.Duration, opts ...Option) (*Window, error) {
	c, err := resolveWindow(opts)
	if err != nil {
		return nil, err
	}
	if window <= 0 || window > MaxWindow {
		return nil, fmt.Errorf("%w: window %v outside (0, %v]", ErrInvalidParameter, window, MaxWindow)
	}
	m, err := windowBuckets(perWindow, uint64(c.slots), uint64(c.fpBits))
	if err != nil {
		return nil, err
	}
	layout := stamped.Layout(m, uint64(c.slots), uint64(c.fpBits))
	if err := checkTableBytes((layout.PayloadWords() + 1) * 8); err != nil {
		return nil, err
	}
	w := &Window{
		t:         stamped.New(m, uint64(c.slots), uint64(c.fpBits)),
		seed:      c.seed,
		perWindow: perWindow,
		maxKicks:  c.maxKicks,
		clock:     c.clock,
	}
	w.setWindow(int64(window))
	w.setCoarse(nil)
	w.restart()
	return w, nil
}

// resolveWindow is resolve for a Window: the options that shape a table,
// a default fingerprint width of its own, and a refusal of the options a
// Window has no use for.
func resolveWindow(opts []Option) (config, error) {
	var given config
	for _, o := range opts {
		if o != nil {
			if err := o(&given); err != nil {
				return given, err
			}
		}
	}
	if given.fpBits == 0 && given.fpr == 0 {
		opts = append(opts[:len(opts):len(opts)], WithFingerprintBits(DefaultWindowFingerprintBits))
	}
	c, err := resolve(opts)
	switch {
	case err != nil:
		return c, err
	case c.slots != 2 && c.slots != 4 && c.slots != 8:
		return c, fmt.Errorf("%w: a Window's buckets have 2, 4 or 8 slots, not %d", ErrInvalidParameter, c.slots)
	case c.fpBits > MaxWindowFingerprintBits:
		return c, fmt.Errorf("%w: a Window's fingerprints have at most %d bits (a rate of about %.1e), not %d",
			ErrInvalidParameter, MaxWindowFingerprintBits,
			expectedFPR(targetLoad(uint64(c.slots), MaxWindowFingerprintBits), uint64(c.slots), MaxWindowFingerprintBits), c.fpBits)
	case c.semi, c.segments > 1, c.buckets != 0, c.growth != 0:
		return c, fmt.Errorf("%w: a Window takes no semi-sorting, segments, bucket count or growth", ErrInvalidParameter)
	}
	return c, nil
}

// windowLive is the number of live entries a Window of perWindow keys a
// window is sized for: the keys of 15 epochs at the pace of perWindow per
// 14, and one more for where the epochs fall.
func windowLive(perWindow uint64) uint64 {
	return perWindow + (perWindow+WindowEpochs-1)/WindowEpochs + 1
}

// windowBuckets returns the bucket count of a Window: what holds its live
// entries at the target load, raised so that the alternate offsets spread,
// as New plans a Filter's.
func windowBuckets(perWindow, slots, fpBits uint64) (uint64, error) {
	least, ok := windowLeastBuckets(perWindow, slots, fpBits)
	if !ok {
		return 0, fmt.Errorf("%w: %d keys a window: capacity 0, or more than 2^32 buckets", ErrInvalidParameter, perWindow)
	}
	return plannedBuckets(least, 1), nil
}

// windowLeastBuckets is the least bucket count of a Window; decoders
// require it.
func windowLeastBuckets(perWindow, slots, fpBits uint64) (uint64, bool) {
	if perWindow == 0 || perWindow > math.MaxUint64/2 {
		return 0, false
	}
	return bucketsFor(windowLive(perWindow), slots, fpBits)
}

// setWindow sets the window and the epoch length it implies.
func (w *Window) setWindow(window int64) {
	w.window = window
	w.gran = (window + WindowEpochs - 1) / WindowEpochs
}

// restart empties the table and sets the epoch to the earliest there is,
// as a new Window starts: the first write sets the Window's time from its
// clock (which NewWindow does not read: an event clock may have no time
// yet).
func (w *Window) restart() {
	w.t.Reset()
	w.anchor()
	w.setEpoch(floorDiv(-windowLimitNanos, w.gran))
}

// fakeTime replaces the default clock's sources in tests: wall is the
// wall clock's time at monotonic time 0, mono the monotonic time.
type fakeTime struct{ wall, mono int64 }

// setCoarse gives a Window of the default clock the coarse clock of its
// lookups, keeping old (the one it had) if it ticks as needed.
func (w *Window) setCoarse(old *coarseClock) {
	w.coarse = nil
	if tick := coarseTick(w.gran); w.clock == nil && tick > 0 {
		if old != nil && old.tick == tick {
			w.coarse = old
		} else {
			w.coarse = &coarseClock{tick: tick}
		}
	}
}

// anchor reads the wall clock for the default clock.
func (w *Window) anchor() {
	switch {
	case w.clock != nil:
	case w.fake != nil:
		w.wall, w.monoAt = w.fake.wall+w.fake.mono, w.fake.mono
	default:
		now := time.Now()
		w.wall, w.monoAt = unixNanos(now), int64(now.Sub(monoBase))
	}
}

// nanos returns the clock's exact time in Unix ns, within
// ±windowLimitNanos: the time writers read.
func (w *Window) nanos() int64 {
	if w.clock != nil {
		return unixNanos(w.clock())
	}
	mono := monoNanos()
	if w.fake != nil {
		mono = w.fake.mono
	}
	return w.sinceAnchor(mono)
}

// sinceAnchor returns the Unix ns of the default clock's monotonic time
// mono.
func (w *Window) sinceAnchor(mono int64) int64 {
	return min(w.wall+(mono-w.monoAt), windowLimitNanos)
}

// readNanos returns the time lookups read, in Unix ns: the coarse clock's
// when the Window has one (never later than the exact time, and less than
// Granularity's allowance for it earlier), else the exact time. Any number
// of goroutines may call it at once.
func (w *Window) readNanos() int64 {
	if w.coarse != nil {
		return w.sinceAnchor(w.coarse.read())
	}
	return w.nanos()
}

// unixNanos returns t in Unix ns, within ±windowLimitNanos.
func unixNanos(t time.Time) int64 {
	const limitSeconds = windowLimitNanos / int64(time.Second)
	switch s := t.Unix(); {
	case s >= limitSeconds:
		return windowLimitNanos
	case s <= -limitSeconds:
		return -windowLimitNanos
	default: // |s| < limitSeconds: the sum stays within the limits
		return s*int64(time.Second) + int64(t.Nanosecond())
	}
}

// floorDiv is ⌊a/b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func (w *Window) setEpoch(e int64) {
	w.epoch, w.cursor = e, 0
	w.start, w.end = e*w.gran, (e+1)*w.gran
}

// lag returns how many epochs the clock's time ns is past the epoch of the
// latest write (0 when it is not past it: the Window's time never runs
// backwards).
func (w *Window) lag(ns int64) int64 {
	if ns < w.end {
		return 0
	}
	return floorDiv(ns, w.gran) - w.epoch
}

// stamps returns the stamp of the current epoch and the one of the
// entries that expired in it.
func (w *Window) stamps() (now, expired uint64) {
	return uint64(w.epoch) & (stamped.Stamps - 1), uint64(w.epoch+1) & (stamped.Stamps - 1)
}

// advanceTo brings the Window's epoch to the one of the clock's time ns,
// if that is later: what every write does first. With the default clock
// it rereads the wall clock when an epoch ends.
func (w *Window) advanceTo(ns int64) {
	if ns < w.end {
		return
	}
	if w.clock == nil {
		w.anchor()
		if ns = w.wall; ns < w.end {
			return
		}
	}
	w.advance(floorDiv(ns, w.gran))
}

// advance moves the epoch on to e > w.epoch, emptying the slots whose
// stamps would otherwise be misread.
//
// Why stamps never come back to life. Write E for the epoch before, E' = e,
// j = E' − E, and d = (E − stamp) mod 16 for a slot's age under E. By the
// invariants of the Window, every non-empty slot's true age under E is d,
// d ≤ 15, and d ≤ 14 in buckets below the cursor. Under E' its true age
// is d + j, which its stamp gives exactly if d + j ≤ 15. So:
//   - j = 1: the slots from the cursor on with d = 15 are emptied (those
//     below it have d ≤ 14 already): the rest of the epoch's pass.
//   - 2 ≤ j ≤ 14: every slot with d ≥ 16 − j is emptied, in the whole table
//     (one pass; it happens only after an epoch without writes).
//   - j ≥ 15: every entry has expired (live means an age of at most 14);
//     the table is cleared.
//
// Afterwards every slot's age is at most 15 under E', and the cursor is 0,
// so the invariants hold. Between advances, writes stamp E' (age 0), moves
// carry live entries only (a slot of age 15 is free, so a bucket an insert
// moves entries out of holds none), and the sweep empties the slots of age
// 15 below the cursor it advances. A reader at the clock's epoch C ≥ E'
// (the Window's time is max(C, E')) sees an entry of age d under E' live
// iff d + (C − E') ≤ 14: exact, so an expired entry is never reported, and
// a live one always is.
func (w *Window) advance(e int64) {
	j := e - w.epoch
	ref := uint64(w.epoch) & (stamped.Stamps - 1)
	switch {
	case j > WindowEpochs:
		w.t.Reset()
	case j == 1:
		// The slots of age 15 are those the epoch's sweep empties.
		w.t.SweepRange(w.cursor, w.t.NumBuckets(), (ref+1)&(stamped.Stamps-1))
	default:
		w.t.Age(0, ref, uint64(stamped.Stamps-j))
	}
	w.setEpoch(e)
}

// sweepStep empties the expired slots of the next windowSweep buckets of
// the epoch's pass.
func (w *Window) sweepStep(expired uint64) {
	if w.cursor >= w.t.NumBuckets() {
		return
	}
	end := min(w.cursor+windowSweep, w.t.NumBuckets())
	w.t.SweepRange(w.cursor, end, expired)
	w.cursor = end
}

// putMode says what a write does with a key that is in the window.
type putMode uint8

const (
	putRefresh putMode = iota // refresh its stamp (Add, Touch)
	putUnique                 // leave it (AddUnique)
)

// put writes the key of hash h at the clock's time ns and reports whether
// it was in the window.
func (w *Window) put(h uint64, ns int64, mode putMode) (seen bool, err error) {
	if w.t.NumBuckets() == 0 {
		return false, errZeroWindow
	}
	w.advanceTo(ns)
	now, expired := w.stamps()
	seen, ok := w.t.Put(h, now, expired, mode == putRefresh, w.maxKicks)
	if !ok {
		return false, ErrFull
	}
	w.sweepStep(expired)
	if invariants.Enabled {
		w.checkInvariants()
	}
	return seen, nil
}

// Add adds key to the window, or refreshes its age if it is in the window
// already: it is then found for at least the window's length from now. A
// key takes one slot however often it is added.
//
// It returns [ErrFull] when no room can be made for a new key: with more
// keys in the window than the Window was made for, or, rarely, with fewer,
// as a Filter may refuse one of the keys it was made for (the package
// documentation says how rarely; 2-slot buckets most often). The keys in
// the window are then as they were. Add allocates nothing once the table has needed its
// longest chain of moves.
func (w *Window) Add(key []byte) error {
	_, err := w.put(hash.Sum64(key, w.seed), w.nanos(), putRefresh)
	return err
}

// AddString is [Window.Add] for a string key, without allocating.
func (w *Window) AddString(key string) error {
	_, err := w.put(hash.Sum64String(key, w.seed), w.nanos(), putRefresh)
	return err
}

// AddUint64 is [Window.Add] for an integer key: the same as Add of its 8
// little-endian bytes.
func (w *Window) AddUint64(key uint64) error {
	_, err := w.put(hash.Sum64Uint64(key, w.seed), w.nanos(), putRefresh)
	return err
}

// AddHash is [Window.Add] for a caller that already holds a well-mixed
// 64-bit hash of its key (see [Filter.AddHash]).
func (w *Window) AddHash(h uint64) error {
	_, err := w.put(h, w.nanos(), putRefresh)
	return err
}

// Touch is [Window.Add] that also reports whether key was in the window
// (or a false positive said so): "drop this event if its id was seen in
// the last 24 hours", where every sighting, dropped or not, counts as
// seen. Use [Window.AddUnique] when a repeat should not extend the key's
// life ("alert once per host per hour").
func (w *Window) Touch(key []byte) (seen bool, err error) {
	return w.put(hash.Sum64(key, w.seed), w.nanos(), putRefresh)
}

// TouchString is [Window.Touch] for a string key, without allocating.
func (w *Window) TouchString(key string) (seen bool, err error) {
	return w.put(hash.Sum64String(key, w.seed), w.nanos(), putRefresh)
}

// TouchUint64 is [Window.Touch] for an integer key (see [Window.AddUint64]).
func (w *Window) TouchUint64(key uint64) (seen bool, err error) {
	return w.put(hash.Sum64Uint64(key, w.seed), w.nanos(), putRefresh)
}

// TouchHash is [Window.Touch] for a key's 64-bit hash (see [Window.AddHash]).
func (w *Window) TouchHash(h uint64) (seen bool, err error) {
	return w.put(h, w.nanos(), putRefresh)
}

// AddUnique adds key unless it is in the window (Contains reports it), and
// says whether it did. A key in the window keeps its age: a key that comes
// back every minute is added again once a window ("alert once per host per
// hour"). A false positive makes it skip a key that is not in the window.
func (w *Window) AddUnique(key []byte) (added bool, err error) {
	seen, err := w.put(hash.Sum64(key, w.seed), w.nanos(), putUnique)
	return !seen && err == nil, err
}

// AddUniqueString is [Window.AddUnique] for a string key, without
// allocating.
func (w *Window) AddUniqueString(key string) (added bool, err error) {
	seen, err := w.put(hash.Sum64String(key, w.seed), w.nanos(), putUnique)
	return !seen && err == nil, err
}

// AddUniqueUint64 is [Window.AddUnique] for an integer key (see
// [Window.AddUint64]).
func (w *Window) AddUniqueUint64(key uint64) (added bool, err error) {
	seen, err := w.put(hash.Sum64Uint64(key, w.seed), w.nanos(), putUnique)
	return !seen && err == nil, err
}

// AddUniqueHash is [Window.AddUnique] for a key's 64-bit hash (see
// [Window.AddHash]).
func (w *Window) AddUniqueHash(h uint64) (added bool, err error) {
	seen, err := w.put(h, w.nanos(), putUnique)
	return !seen && err == nil, err
}

// Contains reports whether key was added within the window: always true
// for a key added (or refreshed) at most the window's length ago, false
// for one last added more than window + [Window.Granularity] ago but with
// the false-positive probability, like any key never added. It allocates
// nothing, writes nothing and may run concurrently with other readers; it
// reads the clock only when a fingerprint in the key's buckets matches.
func (w *Window) Contains(key []byte) bool { return w.ContainsHash(hash.Sum64(key, w.seed)) }

// ContainsString is [Window.Contains] for a string key, without allocating.
func (w *Window) ContainsString(key string) bool {
	return w.ContainsHash(hash.Sum64String(key, w.seed))
}

// ContainsUint64 is [Window.Contains] for an integer key (see
// [Window.AddUint64]).
func (w *Window) ContainsUint64(key uint64) bool {
	return w.ContainsHash(hash.Sum64Uint64(key, w.seed))
}

// ContainsHash is [Window.Contains] for a key's 64-bit hash (see
// [Window.AddHash]).
func (w *Window) ContainsHash(h uint64) bool {
	t := &w.t
	if t.NumBuckets() == 0 {
		return false
	}
	i1, fp := t.Locate(h)
	i2 := t.AltIndex(i1, fp)
	if !t.OneWindow() {
		return w.holdsYoung(i1, i2, fp, &lazyClock{})
	}
	// One window a bucket (the default shape among others): both read
	// before either is tested, and the clock only on a match, in steps of
	// the table that inline here (stamped.Table.Bucket).
	x, y := t.Bucket(i1), t.Bucket(i2)
	mx, my := t.Holding(x, fp), t.Holding(y, fp)
	if mx|my == 0 {
		return false
	}
	var ns int64 // readNanos, inlined
	switch k := w.coarse; {
	case k != nil:
		ns = w.sinceAnchor(k.read())
	case w.clock != nil:
		ns = unixNanos(w.clock())
	default:
		ns = w.nanos()
	}
	ref, c, ok := w.youngAt(ns)
	return ok && t.Young(x, y, mx, my, ref, c)
}

// youngAt returns what the table's Young and HoldsYoung need to tell the
// live entries at the clock's time ns: the stamp of the latest write's
// epoch and 1 + the lag;
// ok is false when the lag is so long that nothing is live.
func (w *Window) youngAt(ns int64) (ref, c uint64, ok bool) {
	lag := w.lag(ns)
	if lag > WindowEpochs {
		return 0, 0, false
	}
	return uint64(w.epoch) & (stamped.Stamps - 1), uint64(lag) + 1, true
}

// holdsYoung is ContainsHash for every shape, reading the clock through
// clk only when a fingerprint matches.
func (w *Window) holdsYoung(i1, i2, fp uint64, clk *lazyClock) bool {
	if !w.t.Holds(i1, i2, fp) {
		return false
	}
	ref, c, ok := w.youngAt(clk.nanos(w))
	return ok && w.t.HoldsYoung(i1, i2, fp, ref, c)
}

// lazyClock reads a Window's clock once, when first asked: a lookup reads
// it only on a match, a batch once for all its keys.
type lazyClock struct {
	ns   int64
	read bool
}

func (c *lazyClock) nanos(w *Window) int64 {
	if !c.read {
		c.ns, c.read = w.readNanos(), true
	}
	return c.ns
}

// Delete removes key from the window and reports whether it was there. A
// key shares its slot with any other key of the same buckets and
// fingerprint (the false-positive collisions), so deleting a key that was
// never added may remove another one, and deleting one of two colliding
// keys removes both.
func (w *Window) Delete(key []byte) bool { return w.DeleteHash(hash.Sum64(key, w.seed)) }

// DeleteString is [Window.Delete] for a string key, without allocating.
func (w *Window) DeleteString(key string) bool {
	return w.DeleteHash(hash.Sum64String(key, w.seed))
}

// DeleteUint64 is [Window.Delete] for an integer key (see
// [Window.AddUint64]).
func (w *Window) DeleteUint64(key uint64) bool {
	return w.DeleteHash(hash.Sum64Uint64(key, w.seed))
}

// DeleteHash is [Window.Delete] for a key's 64-bit hash (see
// [Window.AddHash]).
func (w *Window) DeleteHash(h uint64) bool {
	if w.t.NumBuckets() == 0 {
		return false
	}
	w.advanceTo(w.nanos())
	_, expired := w.stamps()
	ok := w.t.Delete(h, expired)
	if invariants.Enabled {
		w.checkInvariants()
	}
	return ok
}

// Len returns the number of entries in the window now: the distinct keys
// added within it, less those that share a slot with another (false
// positives), plus those added up to a granularity before it.
func (w *Window) Len() uint64 {
	if w.t.NumBuckets() == 0 {
		return 0
	}
	ref, c, ok := w.youngAt(w.readNanos())
	if !ok {
		return 0
	}
	var n uint64
	for v, k := range w.t.Stamps() {
		if (ref-uint64(v))&(stamped.Stamps-1)+c < stamped.Stamps {
			n += k
		}
	}
	return n
}

// Capacity returns the number of distinct keys a window may hold, as
// NewWindow was given.
func (w *Window) Capacity() uint64 { return w.perWindow }

// Window returns the window's length.
func (w *Window) Window() time.Duration { return time.Duration(w.window) }

// Granularity returns how much longer than the window a key may be found:
// a key added at time t is found until at least t + Window() and never
// after t + Window() + Granularity(). It is about a fourteenth of the
// window; with the default clock, and windows of 5.6 s and more, lookups
// read a clock that ticks 8 times an epoch, and it is a quarter of an
// epoch more (about 5/56 of the window), provided that clock's goroutine
// is never a tick late.
func (w *Window) Granularity() time.Duration {
	g := time.Duration((WindowEpochs+1)*w.gran - w.window)
	if w.coarse != nil {
		g += 2 * w.coarse.tick
	}
	return g
}

// LoadFactor returns the fraction of slots that hold a key in the window
// now.
func (w *Window) LoadFactor() float64 {
	if w.t.NumBuckets() == 0 {
		return 0
	}
	return float64(w.Len()) / float64(w.t.NumBuckets()*w.t.Slots())
}

// FalsePositiveRate returns the expected probability that Contains reports
// a key not in the window, at the current load: about 2·b·load/2^f, as for
// a [Filter] (expired entries do not count).
func (w *Window) FalsePositiveRate() float64 {
	return expectedFPR(w.LoadFactor(), w.t.Slots(), w.t.FPBits())
}

// SizeInBytes returns the memory the Window holds: its table, the scratch
// of its inserts, and the fixed parts.
func (w *Window) SizeInBytes() uint64 {
	const fixed = 320 // the struct and slice headers, rounded up
	return w.t.Bytes() + fixed
}

// FingerprintBits returns the fingerprint width f in bits (each slot holds
// f + 4 bits with its stamp).
func (w *Window) FingerprintBits() int { return int(w.t.FPBits()) }

// BucketSize returns the number of slots per bucket.
func (w *Window) BucketSize() int { return int(w.t.Slots()) }

// NumBuckets returns the number of buckets in the table.
func (w *Window) NumBuckets() uint64 { return w.t.NumBuckets() }

// Seed returns the hash seed (see [Filter.Seed]).
func (w *Window) Seed() uint64 { return w.seed }

// MaxKicks returns the bound on displacements per insert.
func (w *Window) MaxKicks() int { return w.maxKicks }

// Reset forgets every key and the Window's time: the next write sets it
// from the clock, even if that is earlier than the Window's time was. It
// keeps the parameters, the seed, the clock and the memory.
func (w *Window) Reset() {
	if w.t.NumBuckets() == 0 {
		return
	}
	w.restart()
}

// checkInvariants panics if an invariant is broken (small tables in full).
func (w *Window) checkInvariants() {
	if err := w.validate(len(w.t.Words()) <= 256); err != nil {
		panic("cuckoo: Window invariant broken: " + err.Error())
	}
}

// validate checks the invariants; full adds the O(table) ones. The decoder
// runs it in full: it must refuse any state the operations cannot reach.
func (w *Window) validate(full bool) error {
	if w.cursor > w.t.NumBuckets() {
		return fmt.Errorf("sweep cursor %d past %d buckets", w.cursor, w.t.NumBuckets())
	}
	_, expired := w.stamps()
	return w.t.Validate(full, expired, w.cursor)
}
