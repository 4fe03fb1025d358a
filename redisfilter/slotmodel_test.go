package redisfilter_test

import (
	"bytes"
	"fmt"
	"maps"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
	"github.com/dedupkit/cuckoo/redisfilter"
)

// TestFunctionsMatchSlotModelEveryWidth holds ckf2_add and ckf2_del to a
// model of the filter's slots at every fingerprint width the package
// takes (4 to 32 bits), with bucket sizes that put buckets and slots
// across byte boundaries, in one segment of a bucket count that is not a
// power of two. The calls name (first bucket, fingerprint) pairs chosen
// by the test: fingerprints 1 and 2^f−1 (all ones, next to slots whose
// bits must survive), the first and last buckets of the string, repeated
// fingerprints (counted copies), and enough of them to fill the segment
// until inserts search, walk and are refused.
//
// After a call of one key whose outcome the rules fix without moving
// other fingerprints (placement in the bucket with more empty slots, the
// first on a tie; a counted copy; a delete of the first copy, counted
// copies first; a refusal, which changes nothing), the segment's bytes
// must be the model's, bit for bit: the model writes slots bit by bit,
// sharing no code with the package. After every call, one key or up to
// 32, the segment must hold what its replies say: each (bucket pair,
// fingerprint) as many copies as added and not deleted (two in slots of
// its buckets, the rest counted), no other fingerprint, zeros past the
// last bucket, and the item count.
func TestFunctionsMatchSlotModelEveryWidth(t *testing.T) {
	t.Parallel()
	rdb := singleClient(t)
	for f := 4; f <= 32; f++ {
		// Two bucket sizes a width, one of them odd; one slot a bucket
		// only from 16 bits (the library refuses narrower).
		sizes := []int{2 + f%3, []int{3, 5, 7, 8}[f%4]}
		if f >= 16 && f%2 == 0 {
			sizes[0] = 1
		}
		if !testlong.Enabled() {
			// One bucket size a width; the long run has both.
			sizes = sizes[:1]
		}
		for _, b := range sizes {
			t.Run(fmt.Sprintf("b%d-f%d", b, f), func(t *testing.T) {
				t.Parallel()
				ctx := ctxOf(t)
				rng := testseed.Rand(t)
				opts := []redisfilter.Option{redisfilter.WithBucketSize(b), redisfilter.WithFingerprintBits(f),
					redisfilter.WithSegments(1), redisfilter.WithMaxKicks(8)}
				// The least capacity whose table has 48 slots or more in
				// buckets whose count is not a power of two.
				capacity := uint64(1)
				for ; ; capacity++ {
					p, err := redisfilter.NewPlan(capacity, opts...)
					if err != nil {
						t.Fatal(err)
					}
					if bits.OnesCount64(p.NumBuckets) > 1 && p.NumBuckets*uint64(b) >= 48 {
						break
					}
				}
				rf, err := redisfilter.New(ctx, rdb, uniqueName(t), capacity, opts...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { rf.Drop(ctx) })
				sm := newSlotModel(t, rf)
				sm.run(rng)
			})
		}
	}
}

// pairKey names the copies of fingerprint fp in the bucket pair whose
// lower bucket is lo.
type pairKey struct{ lo, fp uint64 }

// slotModel is the segment a test expects: its bytes (exact while the
// test can say where each fingerprint lies) and the copies of each
// (bucket pair, fingerprint).
type slotModel struct {
	t      *testing.T
	rf     *redisfilter.Filter
	b, f   uint64
	m      uint64
	table  []byte
	copies map[pairKey]uint64
	items  uint64
	// placed, counted, refused, moved: single-key inserts so settled.
	placed, counted, refused, moved int
}

func newSlotModel(t *testing.T, rf *redisfilter.Filter) *slotModel {
	st, err := redisfilter.SegmentState(ctxOf(t), rf, 0)
	if err != nil {
		t.Fatal(err)
	}
	sm := &slotModel{t: t, rf: rf, b: uint64(rf.BucketSize()), f: uint64(rf.FingerprintBits()), m: rf.NumBuckets(),
		table: st.Table, copies: map[pairKey]uint64{}}
	if !bytes.Equal(st.Table, make([]byte, len(st.Table))) || st.Items != 0 || len(st.Counters) != 0 {
		t.Fatal("a new segment that is not empty")
	}
	return sm
}

// slot returns slot j of bucket i of table, read bit by bit.
func (sm *slotModel) slot(table []byte, i, j uint64) uint64 {
	p := (i*sm.b + j) * sm.f
	var x uint64
	for k := range sm.f {
		q := p + k
		x |= uint64(table[q/8]>>(q%8)&1) << k
	}
	return x
}

// setSlot writes x into slot j of bucket i of sm.table, bit by bit.
func (sm *slotModel) setSlot(i, j, x uint64) {
	p := (i*sm.b + j) * sm.f
	for k := range sm.f {
		q := p + k
		sm.table[q/8] = sm.table[q/8]&^(1<<(q%8)) | byte(x>>k&1)<<(q%8)
	}
}

func (sm *slotModel) pair(i, fp uint64) pairKey {
	return pairKey{min(i, redisfilter.Alt(sm.rf, i, fp)), fp}
}

// run sends random calls and checks the segment after each.
func (sm *slotModel) run(rng *rand.Rand) {
	t := sm.t
	fpMax := uint64(1)<<sm.f - 1
	// The keys: a pool of (first bucket, fingerprint) pairs, more than the
	// slots, with the extreme buckets and fingerprints over-represented.
	pool := make([][2]uint64, 3*sm.m*sm.b/2)
	for k := range pool {
		i := rng.Uint64N(sm.m)
		switch rng.IntN(8) {
		case 0:
			i = 0
		case 1:
			i = sm.m - 1
		}
		fp := 1 + rng.Uint64N(fpMax)
		switch rng.IntN(6) {
		case 0:
			fp = fpMax
		case 1:
			fp = 1
		case 2:
			fp = fpMax &^ (1 << rng.IntN(int(sm.f))) // all ones but one
			if fp == 0 {
				fp = 1
			}
		}
		pool[k] = [2]uint64{i, fp}
	}
	var live [][2]uint64 // keys added and not deleted, a copy each
	steps := 60 + int(sm.m*sm.b)/2
	if testlong.Enabled() {
		steps *= 4
	}
	for step := range steps {
		n := 1
		if rng.IntN(3) == 0 {
			n = 2 + rng.IntN(31)
		}
		del := step > steps/3 && rng.IntN(3) == 0
		unique := !del && rng.IntN(4) == 0
		var pairs []uint64
		for range n {
			k := pool[rng.IntN(len(pool))]
			if len(live) > 0 && rng.IntN(6) == 0 {
				k = live[rng.IntN(len(live))]
			}
			pairs = append(pairs, k[0], k[1])
		}
		var exact []byte // the bytes the call must leave, if known
		if n == 1 {
			exact = sm.predict(pairs[0], pairs[1], del, unique)
		}
		before := sm.table
		var codes []int64
		var err error
		if del {
			codes, err = redisfilter.CallDel(ctxOf(t), sm.rf, 0, pairs...)
		} else {
			codes, err = redisfilter.CallAdd(ctxOf(t), sm.rf, 0, unique, pairs...)
		}
		if err != nil || len(codes) != n {
			t.Fatalf("step %d: codes %v, %v", step, codes, err)
		}
		for k, c := range codes {
			i1, fp := pairs[2*k], pairs[2*k+1]
			pk := sm.pair(i1, fp)
			had := sm.copies[pk]
			switch {
			case del && c == 1 && had > 0:
				sm.copies[pk]--
				sm.items--
				for x, l := range live {
					if sm.pair(l[0], l[1]) == pk {
						live = append(live[:x], live[x+1:]...)
						break
					}
				}
			case del && c == 0 && had == 0:
			case !del && c == 1 && (!unique || had == 0):
				sm.copies[pk]++
				sm.items++
				live = append(live, [2]uint64{i1, fp})
			case !del && c == 2 && unique && had > 0:
			case !del && c == 0 && had < 2 && (!unique || had == 0):
			default:
				t.Fatalf("step %d, key %d of %d (bucket %d, fingerprint %#x, delete %v, unique %v): code %d with %d copies held",
					step, k, n, i1, fp, del, unique, c, had)
			}
		}
		st, err := redisfilter.SegmentState(ctxOf(t), sm.rf, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 && !del && codes[0] == 0 {
			sm.moved--
			sm.refused++
			if !bytes.Equal(st.Table, before) {
				t.Fatalf("step %d: a refused insert (bucket %d, fingerprint %#x) changed the segment", step, pairs[0], pairs[1])
			}
		}
		if exact != nil && !bytes.Equal(st.Table, exact) {
			sm.diff(step, exact, st.Table)
		}
		sm.table = st.Table
		sm.check(step, st)
	}
	t.Logf("%d buckets of %d slots of %d bits, %d steps: inserts of one key placed %d, counted %d, moved others %d, refused %d; %d copies held",
		sm.m, sm.b, sm.f, steps, sm.placed, sm.counted, sm.moved, sm.refused, sm.items)
	if sm.refused == 0 {
		t.Fatalf("the sequence filled the segment without a refusal")
	}
}

// predict returns the bytes a call of one key must leave when the rules
// fix them without a search for room (counting that insert), or nil.
func (sm *slotModel) predict(i1, fp uint64, del, unique bool) []byte {
	i2 := redisfilter.Alt(sm.rf, i1, fp)
	pk := sm.pair(i1, fp)
	next := bytes.Clone(sm.table)
	keep := sm.table
	defer func() { sm.table = keep }()
	sm.table = next
	if del {
		if sm.copies[pk] > 2 {
			return next // a counted copy goes
		}
		for _, i := range []uint64{i1, i2} {
			for j := range sm.b {
				if sm.slot(next, i, j) == fp {
					sm.setSlot(i, j, 0)
					return next
				}
			}
		}
		return next
	}
	var held, n1, n2 uint64
	e1, e2 := uint64(sm.b), uint64(sm.b)
	for j := range sm.b {
		for _, x := range []struct {
			i    uint64
			n, e *uint64
		}{{i1, &n1, &e1}, {i2, &n2, &e2}} {
			switch sm.slot(next, x.i, j) {
			case fp:
				held++
			case 0:
				*x.n++
				*x.e = min(*x.e, j)
			}
		}
	}
	switch {
	case unique && held > 0:
	case held >= 2:
		sm.counted++
	case n2 > n1:
		sm.setSlot(i2, e2, fp)
		sm.placed++
	case n1 > 0:
		sm.setSlot(i1, e1, fp)
		sm.placed++
	default:
		sm.moved++ // or refused: undone below if so
		return nil
	}
	return next
}

// diff fails the test, naming the slots that differ.
func (sm *slotModel) diff(step int, want, got []byte) {
	sm.t.Helper()
	for i := range sm.m {
		for j := range sm.b {
			if w, g := sm.slot(want, i, j), sm.slot(got, i, j); w != g {
				sm.t.Errorf("step %d: bucket %d slot %d holds %#x, want %#x", step, i, j, g, w)
			}
		}
	}
	sm.t.Fatalf("step %d: the segment's bytes differ from the model's", step)
}

// check compares the segment with the model's copies.
func (sm *slotModel) check(step int, st redisfilter.Segment) {
	t := sm.t
	slots := map[pairKey]uint64{}
	for i := range sm.m {
		for j := range sm.b {
			if x := sm.slot(st.Table, i, j); x != 0 {
				slots[sm.pair(i, x)]++
			}
		}
	}
	for q := sm.m * sm.b * sm.f; q < uint64(8*len(st.Table)); q++ {
		if st.Table[q/8]>>(q%8)&1 != 0 {
			t.Fatalf("step %d: bit %d, past the last bucket, is set", step, q)
		}
	}
	counted := map[pairKey]uint64{}
	for k, c := range st.Counters {
		counted[pairKey{k >> 32, k & 0xffffffff}] = c
	}
	wantSlots, wantCounted := map[pairKey]uint64{}, map[pairKey]uint64{}
	for pk, c := range sm.copies {
		if c > 0 {
			wantSlots[pk] = min(c, 2)
		}
		if c > 2 {
			wantCounted[pk] = c - 2
		}
	}
	if !maps.Equal(slots, wantSlots) || !maps.Equal(counted, wantCounted) || st.Items != sm.items {
		for pk, c := range wantSlots {
			if slots[pk] != c {
				t.Errorf("step %d: pair %d fingerprint %#x: %d slot copies, want %d", step, pk.lo, pk.fp, slots[pk], c)
			}
		}
		for pk, c := range slots {
			if wantSlots[pk] == 0 {
				t.Errorf("step %d: pair %d fingerprint %#x: %d slot copies, want none", step, pk.lo, pk.fp, c)
			}
		}
		t.Fatalf("step %d: counted copies %v, want %v; items %d, want %d", step, counted, wantCounted, st.Items, sm.items)
	}
}
