package cuckoo

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dedupkit/cuckoo/internal/table"
	"github.com/dedupkit/cuckoo/internal/table/concurrent"
)

// Concurrent is a cuckoo filter that any number of goroutines may use at
// once, for any mix of operations. It has the methods of [Filter], with the
// same guarantees: no false negatives (also while other goroutines move
// fingerprints to make room), duplicates without limit, ErrFull leaving
// every stored item in place, and the same encoding.
//
// # How it scales
//
// Lookups take no lock: they read the two buckets with atomic loads and
// check two version counters that a displacement changes, reading again
// in the rare case one did. In a fixed-capacity filter most inserts take
// no lock either: while one of the key's buckets has an empty slot, the
// insert claims it with one compare-and-swap. Displacements, deletes, AddUnique and the tables of a
// growing filter lock the stripes (1 of up to 1024) of the buckets they
// change, so writers of different keys still run in parallel. The engine's
// concurrent table (internal/table/concurrent) explains why a reader
// racing a displacement still finds its key, and why lock-free inserts and
// locked writers never write one slot.
//
// Lookups scale with the cores: they write nothing shared. Inserts scale
// less, as every insert makes a cache line dirty that another core may
// then have to fetch. The struct and the data every lookup reads have
// cache lines of their own (see table.CacheLine), so that no other object a
// program writes slows them down. docs/benchmarks.md has the measured
// scaling (BenchmarkConcurrent_Contains, _Mixed, _Add and _Serial).
//
// Delete and Count lock the key's two stripes; Len, LoadFactor and
// FalsePositiveRate add up 64 counters per table that writers keep, each
// goroutine mostly its own, so with writers running they are a moment's
// figures.
//
// # Growing
//
// Given [WithGrowth], NewConcurrent makes a filter that grows like a
// [Scalable] instead of returning ErrFull: a chain of tables, the newest
// taking new keys, with the same false-positive bound. Like a Scalable's,
// its Add returns ErrFull only when the next table cannot be made (on a
// 32-bit platform, a table of more than 2 GiB). Its tables are
// allocated whole (a Scalable's newest grows in place, which would need
// its splits made safe for lock-free readers), so while its newest table
// fills it takes more memory than a Scalable: up to twice the tables'
// fill, about 1.4 times a Scalable's averaged over a growth. Adding a
// table briefly stops writers of the full one; readers never wait.
//
// # Snapshots
//
// MarshalBinary and WriteTo encode a consistent snapshot: they stop
// writers for the time it takes to copy the tables in memory (a plain
// memory copy: BenchmarkConcurrent_Snapshot), never readers, and encode
// the copy afterwards. A fixed-capacity
// Concurrent encodes as a Filter (kind 1), so a snapshot loads with
// [Filter.UnmarshalBinary] too; a growing one encodes as a Scalable.
// UnmarshalBinary, ReadFrom and Reset take effect at once for writers: an
// operation that overlaps them acts on the state before or after (a
// reader overlapping a Reset may see part of the old state).
//
// Semi-sorted buckets ([WithSemiSorting]) are not supported: a lookup
// could not read a semi-sorted bucket in one consistent step.
//
// # Zero value
//
// The zero Concurrent is empty and has no table, like the zero [Filter]:
// lookups report nothing present, Delete nothing deleted, and every insert
// returns an error wrapping [ErrUninitialized] (create filters with
// [NewConcurrent]). It can decode.
type Concurrent struct {
	// Every lookup reads st. With 56 bytes before it and 64 after, the
	// cache line that holds it lies inside the struct wherever an 8-byte
	// aligned Concurrent is placed: allocated alone, in a caller's struct
	// or on a stack, it shares that line with nothing (see table.CacheLine).
	_     [table.CacheLine - 8]byte
	st    atomic.Pointer[cchain]
	mu    sync.Mutex // serializes changes of the chain: growth, release, Reset, decoding
	epoch atomic.Uint64
	pause atomic.Int64 // nanoseconds writers waited for the last snapshot
	_     [table.CacheLine - 24]byte
}

// errZeroConcurrent is the error of an insert on the zero Concurrent, naming what makes
// one.
var errZeroConcurrent = fmt.Errorf("%w: the zero Concurrent has no table; create it with NewConcurrent, or decode into it", ErrUninitialized)

// cchain is an immutable view of a Concurrent's tables; a change of the
// chain publishes a new one. Operations that must retry reload it, and
// start over when its epoch changed (the state was replaced).
type cchain struct {
	_        [table.CacheLine]byte // see table.CacheLine
	tables   []*concurrent.Table   // oldest first; the last takes new fingerprints
	seed     uint64
	maxKicks int
	grow     *schedule // nil: a fixed capacity
	epoch    uint64
	_        [table.CacheLine]byte
}

// NewConcurrent returns an empty concurrent filter that holds at least
// capacity distinct keys, with the options of [New]; with [WithGrowth] it
// grows past capacity like a [Scalable]. It returns an error wrapping
// [ErrInvalidParameter], and no filter, when a parameter is out of range or
// semi-sorting is asked for.
func NewConcurrent(capacity uint64, opts ...Option) (*Concurrent, error) {
	c, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	if c.semi {
		return nil, fmt.Errorf("%w: Concurrent does not support semi-sorted buckets", ErrInvalidParameter)
	}
	if c.segments > 1 {
		return nil, fmt.Errorf("%w: Concurrent does not support segments", ErrInvalidParameter)
	}
	ch := &cchain{seed: c.seed, maxKicks: c.maxKicks}
	if c.growth != 0 {
		if _, err := plan(capacity, c); err != nil {
			return nil, err
		}
		g, err := newGrowth(capacity, c)
		if err == nil {
			err = g.checkFirstTable()
		}
		if err != nil {
			return nil, err
		}
		ch.grow = &g
		ch.tables = []*concurrent.Table{ch.newGeneration(g.at(0))}
	} else {
		p, err := fixedPlan(capacity, c)
		if err == nil {
			err = checkTableBytes(p.SizeInBytes)
		}
		if err != nil {
			return nil, err
		}
		slots := p.NumBuckets * uint64(c.slots)
		g := concurrent.Gen{Capacity: capacity, Limit: slots}
		ch.tables = []*concurrent.Table{concurrent.New(p.NumBuckets, uint64(c.slots), uint64(p.FingerprintBits), ch.maxKicks, g)}
	}
	cf := &Concurrent{}
	cf.publish(ch)
	return cf, nil
}

// newGeneration returns an empty table of generation gen of the growing
// chain ch.
func (ch *cchain) newGeneration(gen generation) *concurrent.Table {
	g := concurrent.Gen{K: gen.k, Capacity: gen.capacity, Limit: gen.limit, Growing: true}
	return concurrent.New(gen.numBuckets, ch.grow.slots, gen.fpBits, ch.maxKicks, g)
}

// publish makes ch, which no other goroutine has seen yet, the state.
// Its table list goes into cache lines of its own first (table.CacheLine):
// every lookup reads it.
func (c *Concurrent) publish(ch *cchain) {
	ch.tables = table.PaddedCopy(ch.tables)
	c.st.Store(ch)
}

// with returns a copy of the chain with other tables.
func (ch *cchain) with(tables []*concurrent.Table) *cchain {
	n := *ch
	n.tables = tables
	return &n
}

// contains probes the tables newest first.
func (ch *cchain) contains(h uint64) bool {
	ts := ch.tables
	for i := len(ts) - 1; i >= 0; i-- {
		if ts[i].Contains(h) {
			return true
		}
	}
	return false
}

// home returns the index of the oldest of the first n tables that holds
// h's fingerprint, or -1 (see Scalable.home: the same rule keeps a key's
// copies in one table).
func (ch *cchain) home(h uint64, n int) int {
	for i, t := range ch.tables[:n] {
		if t.Contains(h) {
			return i
		}
	}
	return -1
}

// next reloads the chain after an operation had to retry. It reports false
// when the state was replaced: the operation then starts over.
func (c *Concurrent) next(ch *cchain) (*cchain, bool) {
	n := c.st.Load()
	return n, n.epoch == ch.epoch
}

// wait blocks until a change of the chain in progress is published.
func (c *Concurrent) wait() {
	c.mu.Lock()
	c.mu.Unlock() //nolint:staticcheck // empty on purpose: only waits for the holder
}

// Add inserts one copy of key. It returns [ErrFull] when a fixed-capacity
// filter has no room (every item stays in place); a growing filter adds a
// table instead, and returns an error wrapping ErrFull, leaving the filter
// as it was, only when that table cannot be made (on a 32-bit platform, a
// table of more than 2 GiB; on a 64-bit one a growing filter's Add never
// fails). It allocates nothing except for the counters of a key added
// three times or more, and when it adds a table.
func (c *Concurrent) Add(key []byte) error { return c.addKey(bytesKey(key)) }

// AddString is [Concurrent.Add] for a string key, without allocating.
func (c *Concurrent) AddString(key string) error { return c.addKey(stringKey(key)) }

// AddUint64 is [Concurrent.Add] for an integer key: the same as Add of its
// 8 little-endian bytes, computed without building them.
func (c *Concurrent) AddUint64(key uint64) error { return c.addKey(uint64Key(key)) }

// AddHash is [Concurrent.Add] for a key's 64-bit hash (see
// [Filter.AddHash]).
func (c *Concurrent) AddHash(h uint64) error { return c.addKey(hashKey(h)) }

// addKey is Add. The key is hashed with the seed of the state it is added
// to: UnmarshalBinary may replace the state, seed included, meanwhile.
func (c *Concurrent) addKey(k key) error {
	for {
		ch := c.st.Load()
		if ch == nil {
			return errZeroConcurrent
		}
		if ok, err := c.add(ch, k.hash(ch.seed)); ok {
			return err
		}
	}
}

// add is one attempt of Add against the state ch; ok false: the state was
// replaced, start over.
func (c *Concurrent) add(ch *cchain, h uint64) (ok bool, err error) {
	for {
		// A key an older (sealed) table holds gets its copy there; any other
		// goes to the newest, which counts a copy beside itself rather than
		// let it spill into a newer table (addLocked).
		last := len(ch.tables) - 1
		t, kind := ch.tables[last], concurrent.AddMulti
		if i := ch.home(h, last); i >= 0 {
			t, kind = ch.tables[i], concurrent.AddSealed
		}
		switch t.Add(h, kind) {
		case concurrent.Done:
			return true, nil
		case concurrent.NoRoom:
			if ch.grow == nil {
				return true, ErrFull
			}
			if err := c.growFrom(ch); err != nil {
				return true, err
			}
		case concurrent.Reroute:
			c.wait()
		}
		if ch, ok = c.next(ch); !ok {
			return false, nil
		}
	}
}

// AddUnique adds key unless Contains(key) already reports it, and says
// whether it did. Two goroutines adding the same key at once add it once:
// the check and the insert are one atomic step. A false positive makes it
// skip a key never added (see [Filter.AddUnique]). Its error is that of
// [Concurrent.Add]: [ErrFull], with added false, when a key not reported
// finds no room and no table can be added.
func (c *Concurrent) AddUnique(key []byte) (added bool, err error) {
	return c.addUniqueKey(bytesKey(key))
}

// AddUniqueString is [Concurrent.AddUnique] for a string key, without
// allocating.
func (c *Concurrent) AddUniqueString(key string) (added bool, err error) {
	return c.addUniqueKey(stringKey(key))
}

func (c *Concurrent) addUniqueKey(k key) (bool, error) {
	for {
		ch := c.st.Load()
		if ch == nil {
			return false, errZeroConcurrent
		}
		if ok, a, err := c.addUnique(ch, k.hash(ch.seed)); ok {
			return a, err
		}
	}
}

func (c *Concurrent) addUnique(ch *cchain, h uint64) (ok, inserted bool, err error) {
	for {
		// Older tables take no new fingerprints, so once a key is absent
		// from them it stays absent; the newest is checked again under its
		// locks, in the same step as the insert.
		if ch.contains(h) {
			return true, false, nil
		}
		t := ch.tables[len(ch.tables)-1]
		switch t.Add(h, concurrent.AddUnique) {
		case concurrent.Done:
			return true, true, nil
		case concurrent.Present:
			return true, false, nil
		case concurrent.NoRoom:
			if ch.grow == nil {
				return true, false, ErrFull
			}
			if err := c.growFrom(ch); err != nil {
				return true, false, err
			}
		case concurrent.Reroute:
			c.wait()
		}
		if ch, ok = c.next(ch); !ok {
			return false, false, nil
		}
	}
}

// Contains reports whether key may be in the filter: always true for a key
// added and not deleted, also while other goroutines add, delete and move
// fingerprints; true with a small probability for any other key. It takes
// no lock and allocates nothing.
func (c *Concurrent) Contains(key []byte) bool { return c.containsKey(bytesKey(key)) }

// ContainsString is [Concurrent.Contains] for a string key, without
// allocating.
func (c *Concurrent) ContainsString(key string) bool { return c.containsKey(stringKey(key)) }

// ContainsUint64 is [Concurrent.Contains] for an integer key (see
// [Concurrent.AddUint64]).
func (c *Concurrent) ContainsUint64(key uint64) bool { return c.containsKey(uint64Key(key)) }

// ContainsHash is [Concurrent.Contains] for a key's 64-bit hash.
func (c *Concurrent) ContainsHash(h uint64) bool { return c.containsKey(hashKey(h)) }

func (c *Concurrent) containsKey(k key) bool {
	ch := c.st.Load()
	return ch != nil && ch.contains(k.hash(ch.seed))
}

// Delete removes one copy of key and reports whether there was one. Delete
// only keys you added (see [Filter.Delete]).
func (c *Concurrent) Delete(key []byte) bool { return c.deleteKey(bytesKey(key)) }

// DeleteString is [Concurrent.Delete] for a string key, without allocating.
func (c *Concurrent) DeleteString(key string) bool { return c.deleteKey(stringKey(key)) }

// DeleteUint64 is [Concurrent.Delete] for an integer key (see
// [Concurrent.AddUint64]).
func (c *Concurrent) DeleteUint64(key uint64) bool { return c.deleteKey(uint64Key(key)) }

// DeleteHash is [Concurrent.Delete] for a key's 64-bit hash.
func (c *Concurrent) DeleteHash(h uint64) bool { return c.deleteKey(hashKey(h)) }

func (c *Concurrent) deleteKey(k key) bool {
	for {
		ch := c.st.Load()
		if ch == nil {
			return false
		}
		if d, ok := c.delete(ch, k.hash(ch.seed)); ok {
			return d
		}
	}
}

func (c *Concurrent) delete(ch *cchain, h uint64) (bool, bool) {
	for {
		i := 0
		if len(ch.tables) > 1 {
			if i = ch.home(h, len(ch.tables)); i < 0 {
				return false, true
			}
		}
		t := ch.tables[i]
		switch t.Remove(h) {
		case concurrent.Deleted:
			return true, true
		case concurrent.NotFound:
			return false, true
		case concurrent.Released:
			c.release(ch)
			return true, true
		}
		var ok bool
		if ch, ok = c.next(ch); !ok {
			return false, false
		}
	}
}

// Count returns how many copies of key's fingerprint the table holding the
// key's copies has: never less than the number of times key was added and
// not deleted.
func (c *Concurrent) Count(key []byte) uint64 { return c.countKey(bytesKey(key)) }

// CountString is [Concurrent.Count] for a string key, without allocating.
func (c *Concurrent) CountString(key string) uint64 { return c.countKey(stringKey(key)) }

// CountUint64 is [Concurrent.Count] for an integer key (see
// [Concurrent.AddUint64]).
func (c *Concurrent) CountUint64(key uint64) uint64 { return c.countKey(uint64Key(key)) }

// CountHash is [Concurrent.Count] for a key's 64-bit hash.
func (c *Concurrent) CountHash(h uint64) uint64 { return c.countKey(hashKey(h)) }

func (c *Concurrent) countKey(k key) uint64 {
	ch := c.st.Load()
	if ch == nil {
		return 0
	}
	return ch.count(k.hash(ch.seed))
}

func (ch *cchain) count(h uint64) uint64 {
	i := 0
	if len(ch.tables) > 1 {
		if i = ch.home(h, len(ch.tables)); i < 0 {
			return 0
		}
	}
	return ch.tables[i].Count(h)
}

// growFrom adds the next table to a growing filter whose newest table in
// chain ch is full, unless another goroutine changed the chain first. When
// the chain cannot add that table (schedule.nextTable: on a 32-bit
// platform, one of more than 2 GiB) it returns the error, an ErrFull, and
// changes nothing: the full table stays open, for copies of the keys it
// holds and for keys once deletes make room.
func (c *Concurrent) growFrom(ch *cchain) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st.Load() != ch {
		return nil
	}
	last := ch.tables[len(ch.tables)-1]
	gen, err := ch.grow.nextTable(last.Gen().K, false)
	if err != nil {
		return err
	}
	last.Seal()
	tables := append(ch.tables[:len(ch.tables):len(ch.tables)], ch.newGeneration(gen))
	c.publish(ch.with(dropLeading(tables)))
	return nil
}

// release drops the oldest tables of the current chain while they are
// empty, after a delete emptied a sealed table.
func (c *Concurrent) release(ch *cchain) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.st.Load()
	if cur.epoch != ch.epoch {
		return
	}
	if ts := dropLeading(cur.tables); len(ts) != len(cur.tables) {
		c.publish(cur.with(ts))
	}
}

// dropLeading releases the oldest sealed tables while they hold nothing
// and returns the rest.
func dropLeading(ts []*concurrent.Table) []*concurrent.Table {
	n := 0
	for n < len(ts)-1 && ts[n].Drop() {
		n++
	}
	return ts[n:]
}

// Len returns the number of items stored, copies included. With writers
// running it is a moment's figure.
func (c *Concurrent) Len() uint64 {
	var n uint64
	if ch := c.st.Load(); ch != nil {
		for _, t := range ch.tables {
			n += t.Items()
		}
	}
	return n
}

// Capacity returns the number of distinct keys the filter (for a growing
// one, its current tables) was sized for.
func (c *Concurrent) Capacity() uint64 {
	var n uint64
	if ch := c.st.Load(); ch != nil {
		for _, t := range ch.tables {
			n += t.Gen().Capacity
		}
	}
	return n
}

// InitialCapacity returns the capacity of the first table: for a growing
// filter, the one [WithGrowth]'s chain starts from (see
// [Scalable.InitialCapacity]); for a fixed one, its Capacity.
func (c *Concurrent) InitialCapacity() uint64 {
	ch := c.st.Load()
	switch {
	case ch == nil:
		return 0
	case ch.grow != nil:
		return ch.grow.initial
	}
	return ch.tables[0].Gen().Capacity
}

// TargetFalsePositiveRate returns the rate the filter keeps at or below:
// for a growing filter, the bound it keeps as it grows (see
// [Scalable.TargetFalsePositiveRate]); for a fixed one, the rate its
// fingerprints give at its capacity (the Plan's FalsePositiveRate).
func (c *Concurrent) TargetFalsePositiveRate() float64 {
	ch := c.st.Load()
	switch {
	case ch == nil:
		return 0
	case ch.grow != nil:
		return ch.grow.bound
	}
	t := ch.tables[0]
	m, b, f := t.Size()
	return expectedFPR(float64(t.Gen().Capacity)/float64(m*b), b, f)
}

// LoadFactor returns the fraction of slots that hold a fingerprint.
func (c *Concurrent) LoadFactor() float64 {
	var used, slots uint64
	if ch := c.st.Load(); ch != nil {
		for _, t := range ch.tables {
			m, b, _ := t.Size()
			used += t.SlotsUsed()
			slots += m * b
		}
	}
	if slots == 0 {
		return 0
	}
	return float64(used) / float64(slots)
}

// FalsePositiveRate returns the expected probability that Contains reports
// a key never added, at the current load (see [Filter.FalsePositiveRate]
// and [Scalable.FalsePositiveRate]).
func (c *Concurrent) FalsePositiveRate() float64 {
	miss := 1.0
	if ch := c.st.Load(); ch != nil {
		for _, t := range ch.tables {
			m, b, f := t.Size()
			load := float64(t.SlotsUsed()) / float64(m*b)
			miss *= 1 - expectedFPR(load, b, f)
		}
	}
	return 1 - miss
}

// SizeInBytes returns the memory the filter holds: tables, locks, version
// counters, duplicate counters (estimated) and the fixed parts.
func (c *Concurrent) SizeInBytes() uint64 {
	const fixed = 512
	n := uint64(fixed)
	if ch := c.st.Load(); ch != nil {
		for _, t := range ch.tables {
			n += t.Bytes()
		}
	}
	return n
}

// NumTables returns the number of tables: 1 for a fixed-capacity filter.
func (c *Concurrent) NumTables() int {
	if ch := c.st.Load(); ch != nil {
		return len(ch.tables)
	}
	return 0
}

// Growth returns the growth factor, or 0 for a fixed-capacity filter.
func (c *Concurrent) Growth() float64 {
	if ch := c.st.Load(); ch != nil && ch.grow != nil {
		return ch.grow.factor
	}
	return 0
}

// FingerprintBits returns the fingerprint width (of the first table, for a
// growing filter).
func (c *Concurrent) FingerprintBits() int {
	if ch := c.st.Load(); ch != nil {
		if ch.grow != nil {
			return int(ch.grow.f0)
		}
		_, _, f := ch.tables[0].Size()
		return int(f)
	}
	return 0
}

// BucketSize returns the number of slots per bucket.
func (c *Concurrent) BucketSize() int {
	if ch := c.st.Load(); ch != nil {
		_, b, _ := ch.tables[0].Size()
		return int(b)
	}
	return 0
}

// Seed returns the hash seed.
func (c *Concurrent) Seed() uint64 {
	if ch := c.st.Load(); ch != nil {
		return ch.seed
	}
	return 0
}

// MaxKicks returns the bound on displacements per insert: the search for
// a chain of moves explores up to 4×MaxKicks slots.
func (c *Concurrent) MaxKicks() int {
	if ch := c.st.Load(); ch != nil {
		return ch.maxKicks
	}
	return 0
}

// Reset removes every item. A fixed-capacity filter keeps its memory; a
// growing one returns to one table of its initial capacity.
func (c *Concurrent) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.st.Load()
	if ch == nil {
		return
	}
	if ch.grow == nil {
		ch.tables[0].Reset()
		return
	}
	n := ch.with([]*concurrent.Table{ch.newGeneration(ch.grow.at(0))})
	n.epoch = c.epoch.Add(1)
	c.publish(n)
}
