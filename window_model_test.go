package cuckoo_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/hash"
)

// windowModel is the exact reference of a Window: a map from each entry's
// identity (bucket pair and fingerprint, so that colliding keys share an
// entry as they do in the table) to the epoch it was last written in, and
// the Window's time, the latest epoch its clock has shown a writer. An
// entry is live while the reader's epoch, the later of its clock's and the
// Window's, is at most WindowEpochs past the entry's. Because it models
// collisions, it predicts every answer exactly, false positives included.
type windowModel struct {
	w     *cuckoo.Window
	g     int64 // epoch length, ns
	epoch int64
	live  map[uint64]int64
}

func newWindowModel(w *cuckoo.Window) *windowModel {
	epoch, g := w.EpochForTest()
	return &windowModel{w: w, g: g, epoch: epoch, live: map[uint64]int64{}}
}

func (m *windowModel) id(k []byte) uint64 { return m.w.IdentityForTest(hash.Sum64(k, m.w.Seed())) }

// epochOf is the epoch of t: times beyond ±2^62 ns of the Unix epoch
// count as that bound, as the Window documents.
func (m *windowModel) epochOf(t time.Time) int64 {
	const limit = 1 << 62
	var ns int64
	switch s := t.Unix(); {
	case s >= limit/int64(time.Second):
		ns = limit
	case s <= -limit/int64(time.Second):
		ns = -limit
	default:
		ns = min(max(t.UnixNano(), -limit), limit)
	}
	q := ns / m.g
	if ns%m.g != 0 && ns < 0 {
		q--
	}
	return q
}

// isLive reports whether the entry of identity id is live at time t.
func (m *windowModel) isLive(id uint64, t time.Time) bool {
	e, ok := m.live[id]
	return ok && max(m.epochOf(t), m.epoch)-e <= cuckoo.WindowEpochs
}

// write moves the Window's time to t, as every write does first.
func (m *windowModel) write(t time.Time) { m.epoch = max(m.epoch, m.epochOf(t)) }

// liveCount is what Len should say at time t.
func (m *windowModel) liveCount(t time.Time) uint64 {
	var n uint64
	for id := range m.live {
		if m.isLive(id, t) {
			n++
		}
	}
	return n
}

// windowOp is one step of a model run.
type windowOp uint8

const (
	opAdd windowOp = iota
	opTouch
	opAddUnique
	opDelete
	opContains
	opTick      // a few seconds
	opEpoch     // one to three epochs
	opIdle      // 13 to 40 epochs without a write
	opBack      // the clock goes back a little or a lot
	opFarAhead  // years ahead (and, later, back)
	opRoundTrip // encode and decode into the same Window
	opReset
	opBatch // AddUniqueBatch and TouchBatch of a few keys
	numWindowOps
)

// windowRun applies ops to a Window whose clock reads *now, checking each
// answer against the model and the invariants after each step. key picks
// the step's key, arg its parameter.
type windowRun struct {
	t    testing.TB
	w    *cuckoo.Window
	m    *windowModel
	now  *time.Time
	base time.Time
}

func (r *windowRun) step(i int, op windowOp, k []byte, arg uint64) {
	t, w, m := r.t, r.w, r.m
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("step %d (%d, key %x, arg %d, time %v): %s", i, op, k, arg, r.now.Sub(r.base), fmt.Sprintf(format, args...))
	}
	id := m.id(k)
	switch op {
	case opAdd, opTouch:
		m.write(*r.now)
		want := m.isLive(id, *r.now)
		var seen bool
		var err error
		if op == opAdd {
			err = w.Add(k)
			seen = want
		} else {
			seen, err = w.Touch(k)
		}
		if err != nil {
			fail("%v", err)
		}
		if seen != want {
			fail("Touch = %v, model %v", seen, want)
		}
		m.live[id] = m.epoch
	case opAddUnique:
		m.write(*r.now)
		want := !m.isLive(id, *r.now)
		added, err := w.AddUnique(k)
		if err != nil {
			fail("%v", err)
		}
		if added != want {
			fail("AddUnique = %v, model %v", added, want)
		}
		if added {
			m.live[id] = m.epoch
		}
	case opDelete:
		m.write(*r.now)
		want := m.isLive(id, *r.now)
		if got := w.Delete(k); got != want {
			fail("Delete = %v, model %v", got, want)
		}
		delete(m.live, id)
	case opContains:
		if got, want := w.Contains(k), m.isLive(id, *r.now); got != want {
			fail("Contains = %v, model %v", got, want)
		}
	case opTick:
		*r.now = r.now.Add(time.Duration(arg%5000) * time.Millisecond)
	case opEpoch:
		*r.now = r.now.Add(time.Duration(m.g * int64(1+arg%3)))
	case opIdle:
		*r.now = r.now.Add(time.Duration(m.g * int64(13+arg%28)))
	case opBack:
		if arg%2 == 0 {
			*r.now = r.now.Add(-time.Duration(arg%7000) * time.Millisecond)
		} else {
			*r.now = r.now.Add(-time.Duration(m.g * int64(1+arg%40)))
		}
	case opFarAhead:
		// Years ahead (past 2116, where times are taken as that bound,
		// after a few), or back to where the run began.
		if arg%3 == 0 {
			*r.now = r.base
		} else {
			*r.now = r.now.AddDate(int(1+arg%50), 0, 0)
		}
	case opRoundTrip:
		data, err := w.MarshalBinary()
		if err != nil {
			fail("%v", err)
		}
		if int64(len(data)) != w.EncodedSize() {
			fail("encoded %d bytes, EncodedSize %d", len(data), w.EncodedSize())
		}
		if arg%2 == 0 {
			err = w.UnmarshalBinary(data)
		} else {
			_, err = w.ReadFrom(bytes.NewReader(data))
		}
		if err != nil {
			fail("decoding: %v", err)
		}
		if again, _ := w.MarshalBinary(); !bytes.Equal(again, data) {
			fail("decoded Window encodes differently")
		}
	case opReset:
		w.Reset()
		m.live = map[uint64]int64{}
		m.epoch, _ = w.EpochForTest() // no time until the next write
	case opBatch:
		// Two keys around k, one of them twice: a batch sees its own
		// earlier keys.
		k2 := append(bytes.Clone(k), 'b')
		keys := [][]byte{k, k2, k}
		out := make([]bool, len(keys))
		m.write(*r.now)
		if arg%2 == 0 {
			if n, err := w.AddUniqueBatch(keys, out); err != nil || n != len(keys) {
				fail("AddUniqueBatch = %d, %v", n, err)
			}
		} else if n, err := w.TouchBatch(keys, out); err != nil || n != len(keys) {
			fail("TouchBatch = %d, %v", n, err)
		}
		for j, kj := range keys {
			idj := m.id(kj)
			live := m.isLive(idj, *r.now)
			want := live
			if arg%2 == 0 {
				want = !live
			}
			if out[j] != want {
				fail("batch key %d: %v, model %v", j, out[j], want)
			}
			if arg%2 == 1 || !live {
				m.live[idj] = m.epoch
			}
		}
	}
	if got, want := w.Len(), m.liveCount(*r.now); got != want {
		fail("Len = %d, model %d", got, want)
	}
	if err := w.CheckInvariants(); err != nil {
		fail("%v", err)
	}
}

// checkAll compares every key of the universe with the model.
func (r *windowRun) checkAll(universe int, keyOf func(int) []byte) {
	found := make([]bool, universe)
	keys := make([][]byte, universe)
	for i := range keys {
		keys[i] = keyOf(i)
	}
	r.w.ContainsBatch(keys, found)
	for i, k := range keys {
		want := r.m.isLive(r.m.id(k), *r.now)
		if r.w.Contains(k) != want || found[i] != want {
			r.t.Fatalf("key %d: Contains %v, ContainsBatch %v, model %v", i, r.w.Contains(k), found[i], want)
		}
	}
}

func TestWindowModel(t *testing.T) {
	rng := testRand(t)
	shapes := []struct{ b, f int }{{4, 12}, {2, 4}, {2, 28}, {4, 5}, {4, 13}, {8, 4}, {8, 9}, {4, 28}}
	for _, s := range shapes {
		for _, capacity := range []uint64{3, 40, 300} {
			t.Run(fmt.Sprintf("b=%d/f=%d/n=%d", s.b, s.f, capacity), func(t *testing.T) {
				now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(time.Hour))))
				w, err := cuckoo.NewWindow(capacity, time.Duration(1+rng.Int64N(int64(48*time.Hour))),
					cuckoo.WithBucketSize(s.b), cuckoo.WithFingerprintBits(s.f), cuckoo.WithSeed(rng.Uint64()),
					cuckoo.WithClock(func() time.Time { return now }))
				if err != nil {
					t.Fatal(err)
				}
				r := &windowRun{t: t, w: w, m: newWindowModel(w), now: &now, base: now}
				universe := int(capacity) // never more live keys than the capacity
				keyOf := func(i int) []byte { return key(0, uint64(i)) }
				steps := 3000
				if testing.Short() {
					steps = 800
				}
				for i := range steps {
					var op windowOp
					switch x := rng.IntN(100); {
					case x < 25:
						op = opTouch
					case x < 35:
						op = opAdd
					case x < 45:
						op = opAddUnique
					case x < 50:
						op = opDelete
					case x < 75:
						op = opContains
					case x < 83:
						op = opTick
					case x < 91:
						op = opEpoch
					case x < 93:
						op = opIdle
					case x < 95:
						op = opBack
					case x < 96:
						op = opFarAhead
					case x < 97:
						op = opReset
					case x < 98:
						op = opRoundTrip
					default:
						op = opBatch
					}
					r.step(i, op, keyOf(rng.IntN(universe)), rng.Uint64())
					if i%200 == 0 {
						r.checkAll(universe, keyOf)
					}
				}
				r.checkAll(universe, keyOf)
			})
		}
	}
}

// FuzzWindowOperations reads a sequence of operations (one byte each: the
// operation, the key) on a small Window and checks every answer against
// the exact model.
func FuzzWindowOperations(f *testing.F) {
	f.Add(uint8(4), uint8(12), []byte{0, 1, 2, 0x30, 0x40, 0x61, 0x70, 0x81, 0x90, 0x22})
	f.Add(uint8(2), uint8(4), bytes.Repeat([]byte{0x00, 0x41, 0x62, 0x73, 0x74, 0x25}, 20))
	f.Add(uint8(8), uint8(28), []byte("the quick brown fox jumps over the lazy dog"))
	f.Add(uint8(4), uint8(7), []byte{0x07, 0x17, 0x27, 0x77, 0x87, 0x97, 0x07, 0xa7, 0xb7, 0xc7, 0x07})
	f.Fuzz(func(t *testing.T, bshape, bits uint8, ops []byte) {
		b := []int{2, 4, 8}[int(bshape)%3]
		fb := 4 + int(bits)%(cuckoo.MaxWindowFingerprintBits-3)
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		w, err := cuckoo.NewWindow(16, time.Hour, cuckoo.WithBucketSize(b), cuckoo.WithFingerprintBits(fb),
			cuckoo.WithSeed(uint64(bits)), cuckoo.WithClock(func() time.Time { return now }))
		if err != nil {
			t.Fatal(err)
		}
		r := &windowRun{t: t, w: w, m: newWindowModel(w), now: &now, base: now}
		for i, o := range ops {
			r.step(i, windowOp(o>>4)%numWindowOps, key(0, uint64(o&0xf)), uint64(o)*0x9e3779b97f4a7c15>>40)
		}
		r.checkAll(16, func(i int) []byte { return key(0, uint64(i)) })
	})
}

// TestWindowModelErrors pins that the model runner's errors carry what a
// replay needs (it would be silent otherwise).
func TestWindowFullIsReported(t *testing.T) {
	now := time.Unix(0, 0)
	w, err := cuckoo.NewWindow(10, time.Hour, cuckoo.WithSeed(3), cuckoo.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	var full error
	for i := range 10_000 {
		if err := w.Add(key(0, uint64(i))); err != nil {
			full = err
			break
		}
	}
	if !errors.Is(full, cuckoo.ErrFull) {
		t.Fatalf("10,000 keys at one instant in a Window of 10: %v, want ErrFull", full)
	}
}
