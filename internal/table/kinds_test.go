package table_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dedupkit/cuckoo/internal/table"
	"github.com/dedupkit/cuckoo/internal/table/chain"
	"github.com/dedupkit/cuckoo/internal/table/concurrent"
	"github.com/dedupkit/cuckoo/internal/table/stamped"
	"github.com/dedupkit/cuckoo/internal/testseed"
)

// The conformance of every kind of table: the plain one (table.Multiset,
// plain or semi-sorted buckets), the table growing in place
// (chain.Growing, in a chain.Level that counts the copies it has no slot
// for), the table goroutines share (concurrent.Table) and the Window's
// stamped one (stamped.Table, its entries all live). Each is driven by
// hashes, as its filter drives it, and must answer as a Go map does.
//
// The model is exact, not an upper bound. Every kind locates a hash as a
// plain table of the same buckets and fingerprint width does (a growing
// table by its final buckets), and a fingerprint in a bucket belongs to
// the one bucket pair that bucket and fingerprint make. So a table holds
// a key's fingerprint exactly when it holds an entry of the key's identity
// (its bucket pair and fingerprint), and the model counts identities:
// Contains is true exactly for the identities the model holds (false
// positives included: keys whose identity another key made), Count is
// the identity's copies (one for the Window's table, which holds a key
// once), and Delete takes one copy (the Window's table: the entry). An Add
// that finds no room leaves the answers as they were. Kinds given the same
// operations with no refusal therefore give the same answers, and each
// kind's search for room keeps the Kind contract (kindContract).

// kindMaxKicks is the bound on moves of every kind's inserts
// (DefaultMaxKicks).
const kindMaxKicks = 500

// kindUnderTest is a kind of table driven by hashes.
type kindUnderTest interface {
	// add adds a copy of the key of hash h (a set kind: its entry), and
	// reports false when no room could be made.
	add(h uint64) bool
	contains(h uint64) bool
	del(h uint64) bool
	count(h uint64) uint64
	// multiset reports whether the kind counts copies (a set kind holds a
	// key once).
	multiset() bool
	// kind returns the kind as the search for room sees it, and how many
	// buckets it has now.
	kind() (table.Kind, uint64)
	// free reports whether value v, as AppendBucket gives it, leaves its
	// slot free for an insert.
	free(v uint64) bool
	// check checks the kind's own invariants.
	check() error
}

// kindShape is the geometry every kind of a test shares: buckets (a
// multiple of 32, as a growing table's generation needs), slots, and
// fingerprint bits.
type kindShape struct {
	m, slots, fpBits uint64
	semi             bool // the plain kind's buckets semi-sorted (4 slots)
}

func (s kindShape) String() string {
	return fmt.Sprintf("m=%d/b=%d/f=%d/semi=%v", s.m, s.slots, s.fpBits, s.semi)
}

// kinds returns a table of each kind of the shape, empty, named.
func kinds(s kindShape) map[string]kindUnderTest {
	ks := map[string]kindUnderTest{
		"plain":      &plainKind{m: table.Multiset{T: table.New(s.m, s.slots, s.fpBits, false)}},
		"growing":    newGrowingKind(s),
		"concurrent": &concurrentKind{t: concurrent.New(s.m, s.slots, s.fpBits, kindMaxKicks, concurrent.Gen{Capacity: 1, Limit: s.m * s.slots})},
	}
	if s.semi {
		ks["semi-sorted"] = &plainKind{m: table.Multiset{T: table.New(s.m, s.slots, s.fpBits, true)}}
	}
	if s.slots == 2 || s.slots == 4 || s.slots == 8 {
		t := stamped.New(s.m, s.slots, s.fpBits)
		ks["stamped"] = &stampedKind{t: &t}
	}
	return ks
}

// The plain kind: a Filter's table.

type plainKind struct{ m table.Multiset }

func (k *plainKind) add(h uint64) bool {
	words, items := slices.Clone(k.m.T.Words), k.m.Items
	if k.m.Add(h, kindMaxKicks) {
		return true
	}
	if !slices.Equal(words, k.m.T.Words) || items != k.m.Items {
		panic("a refused Add changed the table") // Multiset.Add: exactly as it was
	}
	return false
}
func (k *plainKind) contains(h uint64) bool     { return k.m.Contains(h) }
func (k *plainKind) del(h uint64) bool          { return k.m.Delete(h) }
func (k *plainKind) count(h uint64) uint64      { return k.m.Count(h) }
func (k *plainKind) multiset() bool             { return true }
func (k *plainKind) kind() (table.Kind, uint64) { return &k.m.T, k.m.T.NumBuckets }
func (k *plainKind) free(v uint64) bool         { return v == 0 }
func (k *plainKind) check() error               { return k.m.Validate(true) }

// The growing kind: a Scalable's newest table, growing in place to the
// shape's buckets and then plain, its copies beyond the slots counted
// beside it, as a Scalable keeps them.

type growingKind struct{ lv chain.Level }

func newGrowingKind(s kindShape) *growingKind {
	r := min(4, 32-s.fpBits)
	return &growingKind{lv: chain.Level{
		Grow:  chain.NewGrowing(s.m, s.slots, s.fpBits, r, s.semi),
		Limit: s.m * s.slots,
	}}
}

func (k *growingKind) add(h uint64) bool {
	lv := &k.lv
	if lv.SlotCopies(h) >= table.MaxSlotCopies {
		if lv.Grow == nil && lv.Plain.Add(h, kindMaxKicks) {
			return true // into its duplicate counters
		}
		lv.AddOver(h)
		return true
	}
	if lv.Grow != nil {
		if added, _ := lv.AddGrowing(h, kindMaxKicks); added || lv.Grow != nil {
			return added
		}
		return lv.Plain.Add(h, kindMaxKicks) // grown at its limit, taking nothing
	}
	return lv.Plain.Add(h, kindMaxKicks)
}
func (k *growingKind) contains(h uint64) bool { return k.lv.Contains(h) }
func (k *growingKind) del(h uint64) bool {
	return k.lv.NOver > 0 && k.lv.TakeOver(h) || k.lv.Remove(h)
}
func (k *growingKind) count(h uint64) uint64 { return k.lv.Count(h) }
func (k *growingKind) multiset() bool        { return true }
func (k *growingKind) kind() (table.Kind, uint64) {
	if g := k.lv.Grow; g != nil {
		return g, g.T.NumBuckets
	}
	return &k.lv.Plain.T, k.lv.Plain.T.NumBuckets
}
func (k *growingKind) free(v uint64) bool { return v == 0 }
func (k *growingKind) check() error {
	if g := k.lv.Grow; g != nil {
		if j, ok := g.Check(); !ok {
			return fmt.Errorf("bucket %d holds a misplaced tag", j)
		}
		if n := g.T.OccupiedSlots(); n != g.Occupied {
			return fmt.Errorf("%d slots occupied, %d recorded", n, g.Occupied)
		}
	} else if err := k.lv.Plain.Validate(true); err != nil {
		return err
	}
	return k.lv.CheckOver()
}

// The concurrent kind: a fixed-capacity Concurrent's table, from one
// goroutine.

type concurrentKind struct{ t *concurrent.Table }

func (k *concurrentKind) add(h uint64) bool {
	return k.t.Add(h, concurrent.AddMulti) == concurrent.Done
}
func (k *concurrentKind) contains(h uint64) bool { return k.t.Contains(h) }
func (k *concurrentKind) del(h uint64) bool      { return k.t.Remove(h) == concurrent.Deleted }
func (k *concurrentKind) count(h uint64) uint64  { return k.t.Count(h) }
func (k *concurrentKind) multiset() bool         { return true }
func (k *concurrentKind) kind() (table.Kind, uint64) {
	m, _, _ := k.t.Size()
	return k.t, m
}
func (k *concurrentKind) free(v uint64) bool { return v == 0 }
func (k *concurrentKind) check() error {
	buf := k.t.SnapshotBuffer()
	k.t.Exclusive()
	m, over := k.t.SnapshotLocked(buf)
	k.t.EndExclusive()
	if len(over) != 0 {
		return fmt.Errorf("%d overflow counters in a fixed-capacity table", len(over))
	}
	return m.Validate(true)
}

// The stamped kind: a Window's table within one epoch, where no entry has
// expired; it holds a key once.

type stampedKind struct{ t *stamped.Table }

// kindNow and kindExpired are the stamps of the stamped kind's epoch and
// of the entries that expired in it (none).
const kindNow, kindExpired = 0, 1

func (k *stampedKind) add(h uint64) bool {
	words, stamps := slices.Clone(k.t.Words()), k.t.Stamps()
	if _, ok := k.t.Put(h, kindNow, kindExpired, true, kindMaxKicks); ok {
		return true
	}
	if !slices.Equal(words, k.t.Words()) || stamps != k.t.Stamps() {
		panic("a refused Put changed the table") // Put: as it was
	}
	return false
}

// contains is the Window's lookup: for a table of one window a bucket, its
// steps (Bucket, Holding, then Young on a match); else HoldsYoung.
func (k *stampedKind) contains(h uint64) bool {
	t := k.t
	i1, fp := t.Locate(h)
	i2 := t.AltIndex(i1, fp)
	if !t.OneWindow() {
		return t.Holds(i1, i2, fp) && t.HoldsYoung(i1, i2, fp, kindNow, 1)
	}
	x, y := t.Bucket(i1), t.Bucket(i2)
	mx, my := t.Holding(x, fp), t.Holding(y, fp)
	return mx|my != 0 && t.Young(x, y, mx, my, kindNow, 1)
}
func (k *stampedKind) del(h uint64) bool { return k.t.Delete(h, kindExpired) }
func (k *stampedKind) count(h uint64) uint64 {
	if k.contains(h) {
		return 1
	}
	return 0
}
func (k *stampedKind) multiset() bool             { return false }
func (k *stampedKind) kind() (table.Kind, uint64) { return k.t.View(kindExpired), k.t.NumBuckets() }
func (k *stampedKind) free(v uint64) bool {
	return v == 0 || v&(stamped.Stamps-1) == kindExpired
}
func (k *stampedKind) check() error { return k.t.Validate(true, kindExpired, 0) }

// identities is the model: the copies of each identity (bucket pair and
// fingerprint) a kind holds, located by a plain table of the shape.
type identities struct {
	at     table.Table // addressing only
	copies map[uint64]uint64
	set    bool // a set kind: at most one copy
}

func newIdentities(s kindShape, set bool) *identities {
	return &identities{at: table.Layout(s.m, s.slots, s.fpBits, false), copies: map[uint64]uint64{}, set: set}
}

func (m *identities) of(h uint64) uint64 {
	i1, i2, fp := m.at.Pair(h)
	return table.PairKey(i1, i2, fp)
}

func (m *identities) add(h uint64) {
	if id := m.of(h); !m.set || m.copies[id] == 0 {
		m.copies[id]++
	}
}

func (m *identities) del(h uint64) bool {
	id := m.of(h)
	switch {
	case m.copies[id] == 0:
		return false
	case m.set || m.copies[id] == 1:
		delete(m.copies, id)
	default:
		m.copies[id]--
	}
	return true
}

// opKind is an operation of a conformance run.
type opKind uint8

const (
	opAdd      opKind = iota // a new key
	opAddAgain               // another copy of a key added before
	opDelete                 // a key added before
	opLookup                 // any key
)

// conform runs ops (operation, key index) on every kind of shape s, the
// keys being keys[index % len(keys)], checking every answer against each
// kind's model and, every checkEvery operations and at the end, every
// kind's invariants and the Kind contract. It returns how many adds each
// kind refused.
func conform(t *testing.T, s kindShape, keys []uint64, ops []kindOp, checkEvery int) map[string]int {
	t.Helper()
	refused := map[string]int{}
	for name, k := range kinds(s) {
		model := newIdentities(s, !k.multiset())
		var added []uint64 // keys added and not deleted, with repeats
		for n, op := range ops {
			h := keys[op.key%len(keys)]
			switch op.op {
			case opAddAgain, opDelete:
				if len(added) == 0 {
					continue
				}
				h = added[op.key%len(added)]
			}
			switch op.op {
			case opAdd, opAddAgain:
				if !k.add(h) {
					refused[name]++
					break
				}
				model.add(h)
				added = append(added, h)
			case opDelete:
				want := model.del(h)
				if got := k.del(h); got != want {
					t.Fatalf("%v %s, op %d: Delete %v, the model %v", s, name, n, got, want)
				}
				added = slices.Delete(added, op.key%len(added), op.key%len(added)+1)
			}
			id := model.of(h)
			if got, want := k.contains(h), model.copies[id] > 0; got != want {
				t.Fatalf("%v %s, op %d (%v): Contains %v, the model %v", s, name, n, op.op, got, want)
			}
			if got, want := k.count(h), model.copies[id]; got != want {
				t.Fatalf("%v %s, op %d (%v): Count %d, the model %d", s, name, n, op.op, got, want)
			}
			if checkEvery > 0 && n%checkEvery == 0 {
				checkKind(t, s, name, k, model, keys)
			}
		}
		checkKind(t, s, name, k, model, keys)
	}
	return refused
}

// kindOp is one operation on the key of index key.
type kindOp struct {
	op  opKind
	key int
}

// checkKind checks a kind's invariants, its answers for every key and for
// fresh ones against the model, and the Kind contract.
func checkKind(t *testing.T, s kindShape, name string, k kindUnderTest, model *identities, keys []uint64) {
	t.Helper()
	if err := k.check(); err != nil {
		t.Fatalf("%v %s: %v", s, name, err)
	}
	for j, h := range keys {
		for _, h := range []uint64{h, h ^ uint64(j+1)*0x9e3779b97f4a7c15} {
			id := model.of(h)
			if got, want := k.contains(h), model.copies[id] > 0; got != want {
				t.Fatalf("%v %s: key %d: Contains %v, the model %v", s, name, j, got, want)
			}
			if got, want := k.count(h), model.copies[id]; got != want {
				t.Fatalf("%v %s: key %d: Count %d, the model %d", s, name, j, got, want)
			}
		}
	}
	kindContract(t, s, name, k, keys)
}

// kindContract checks what table.Search needs of a Kind: a bucket's
// values in slot order, HasRoom exactly when one is free, Other an
// involution onto another bucket, and every chain a search finds (from
// the buckets of the keys) a chain of moves that ends in room.
func kindContract(t *testing.T, s kindShape, name string, k kindUnderTest, keys []uint64) {
	t.Helper()
	kd, m := k.kind()
	slots, _ := kd.Shape()
	if slots != s.slots {
		t.Fatalf("%v %s: Shape says %d slots", s, name, slots)
	}
	for b := range m {
		q := kd.AppendBucket(nil, b, slots, -1)
		if uint64(len(q)) != slots {
			t.Fatalf("%v %s: bucket %d: %d values", s, name, b, len(q))
		}
		room := false
		for _, n := range q {
			if uint64(n.Bucket) != b || n.Parent != -1 {
				t.Fatalf("%v %s: bucket %d: node %+v", s, name, b, n)
			}
			if k.free(uint64(n.Tag)) {
				room = true
				continue
			}
			alt, altV := kd.Other(b, uint64(n.Tag))
			if alt == b || alt >= m {
				t.Fatalf("%v %s: bucket %d value %#x: other bucket %d of %d", s, name, b, n.Tag, alt, m)
			}
			if back, v := kd.Other(alt, altV); back != b || v != uint64(n.Tag) {
				t.Fatalf("%v %s: bucket %d value %#x: Other is no involution (%d, %#x, back %d, %#x)", s, name, b, n.Tag, alt, altV, back, v)
			}
		}
		if kd.HasRoom(b) != room {
			t.Fatalf("%v %s: bucket %d: HasRoom %v, its values say %v", s, name, b, !room, room)
		}
	}
	at := table.Layout(s.m, s.slots, s.fpBits, false)
	for _, h := range keys[:min(len(keys), 64)] {
		i1, i2, _ := at.Pair(h)
		if i1 >= m || i2 >= m {
			continue // a growing table's buckets are not the final ones yet
		}
		q, _, end, ok := table.Search(kd, nil, nil, i1, i2, table.Budget(kindMaxKicks, table.WalkLimit))
		if !ok {
			continue
		}
		if end < 0 {
			if !kd.HasRoom(i1) && !kd.HasRoom(i2) {
				t.Fatalf("%v %s: a search from %d, %d found room in full buckets", s, name, i1, i2)
			}
			continue
		}
		if !kd.HasRoom(uint64(q[end].Alt)) {
			t.Fatalf("%v %s: a search from %d, %d ends at bucket %d, which has no room", s, name, i1, i2, q[end].Alt)
		}
		for j := end; j >= 0; j = int(q[j].Parent) {
			n := q[j]
			if alt, _ := kd.Other(uint64(n.Bucket), uint64(n.Tag)); uint32(alt) != n.Alt {
				t.Fatalf("%v %s: chain node %d moves %#x from %d to %d, not to its other bucket %d", s, name, j, n.Tag, n.Bucket, n.Alt, alt)
			}
			switch p := n.Parent; {
			case p >= 0 && q[p].Alt != n.Bucket:
				t.Fatalf("%v %s: chain node %d in bucket %d, its parent moves to %d", s, name, j, n.Bucket, q[p].Alt)
			case p < 0 && uint64(n.Bucket) != i1 && uint64(n.Bucket) != i2:
				t.Fatalf("%v %s: chain starts in bucket %d, not the key's %d or %d", s, name, n.Bucket, i1, i2)
			}
		}
	}
}

// kindShapes are the shapes the conformance runs cover: the bucket sizes
// the Window's table takes and others, fingerprints from narrow (many
// colliding identities) to wide.
var kindShapes = []kindShape{
	{64, 4, 12, true}, {64, 2, 8, false}, {32, 8, 12, false}, {96, 4, 16, false},
	{64, 4, 5, true}, {32, 3, 10, false}, {64, 1, 16, false}, {128, 2, 28, false},
}

// TestKindsConform drives every kind of table of every shape through one
// random sequence of adds (to past the tables' room), repeated adds,
// deletes and lookups, against the model.
func TestKindsConform(t *testing.T) {
	rng := testseed.Rand(t)
	for _, s := range kindShapes {
		t.Run(s.String(), func(t *testing.T) {
			keys := make([]uint64, s.m*s.slots*5/4)
			for i := range keys {
				keys[i] = rng.Uint64()
			}
			var ops []kindOp
			for range 6 * len(keys) {
				op := kindOp{opKind(rng.IntN(4)), rng.IntN(1 << 20)}
				if rng.IntN(3) == 0 {
					op.op = opAdd // more adds than deletes: the tables fill
				}
				ops = append(ops, op)
			}
			refused := conform(t, s, keys, ops, 64)
			t.Logf("refused adds: %v", refused)
		})
	}
}

// TestKindsAgree runs every kind of a shape through the same adds, below
// the load any kind refuses at: with no refusal the models are the same,
// so every kind must give the same answers, key by key and for keys never
// added; and again after deletes, for the kinds that count copies (a set
// kind's Delete takes a key's identity whole, so it answers otherwise for
// a key whose identity another key made too).
func TestKindsAgree(t *testing.T) {
	rng := testseed.Rand(t)
	for _, s := range kindShapes {
		if s.slots < 2 {
			continue // 1-slot buckets refuse keys from low loads
		}
		keys := make([]uint64, s.m*s.slots/2)
		for i := range keys {
			keys[i] = rng.Uint64()
		}
		ks := kinds(s)
		for _, h := range keys {
			for name, k := range ks {
				if !k.add(h) {
					t.Fatalf("%v %s: refused a key at half load", s, name)
				}
			}
		}
		agree(t, s, ks, keys, rng)
		for name, k := range ks {
			if !k.multiset() {
				delete(ks, name)
			}
		}
		for i, h := range keys {
			if i%2 == 0 {
				for _, k := range ks {
					k.del(h)
				}
			}
		}
		agree(t, s, ks, keys, rng)
	}
}

// agree checks that the kinds give the same answers for keys and for as
// many random hashes again three times.
func agree(t *testing.T, s kindShape, ks map[string]kindUnderTest, keys []uint64, rng *rand.Rand) {
	t.Helper()
	for i := range 4 * len(keys) {
		h := rng.Uint64()
		if i < len(keys) {
			h = keys[i]
		}
		var first string
		var want bool
		for name, k := range ks {
			got := k.contains(h)
			if first == "" {
				first, want = name, got
			} else if got != want {
				t.Fatalf("%v: hash %#x: %s says %v, %s %v", s, h, first, want, name, got)
			}
		}
	}
}

// FuzzKinds drives every kind of table through the operations the input
// describes, on small tables (so that they fill, displace and refuse),
// against the model.
func FuzzKinds(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte("add add add delete lookup again and again"))
	f.Add(binary.LittleEndian.AppendUint64(make([]byte, 200), 0x123456789abcdef))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		s := kindShapes[int(data[0])%len(kindShapes)]
		s.m = 32 // small: every shape's table fills within the input
		rng := rand.New(rand.NewPCG(uint64(data[1]), uint64(len(data))))
		keys := make([]uint64, 48)
		for i := range keys {
			keys[i] = rng.Uint64()
		}
		var ops []kindOp
		for _, b := range data[2:] {
			ops = append(ops, kindOp{opKind(b & 3), int(b >> 2)})
		}
		conform(t, s, keys, ops, 16)
	})
}
