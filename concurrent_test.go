package cuckoo_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo"

	"github.com/dedupkit/cuckoo/internal/testlong"
)

var stressScale = flag.Int("stress", 1, "TestConcurrentStress and TestConcurrentReaders: multiply the work (about 5 s at 1 under -race -short)")

func decodeConcurrent(data []byte) (multiset, error) {
	var c cuckoo.Concurrent
	err := c.UnmarshalBinary(data)
	return &c, err
}

// TestConcurrentModel runs the model test on one goroutine, for a fixed
// filter (Add may fail; a failure changes nothing) and a growing one:
// 2,500 steps each in the long checks (CUCKOO_LONG=1), 700 in the quick
// run, 1,000 with -short.
func TestConcurrentModel(t *testing.T) {
	t.Parallel()
	r := testRand(t)
	steps := sized(2500, 700, 1000, 300)
	for _, b := range []int{2, 4, 8} {
		for _, bits := range []int{4, 8, 13, 32} {
			for _, growing := range []bool{false, true} {
				t.Run(fmt.Sprintf("b=%d/f=%d/growing=%v", b, bits, growing), func(t *testing.T) {
					opts := []cuckoo.Option{cuckoo.WithBucketSize(b), cuckoo.WithFingerprintBits(bits), cuckoo.WithSeed(r.Uint64())}
					capacity := uint64(50 + r.IntN(300))
					universe := capacity * 3 / 2
					if growing {
						capacity /= 8
						opts = append(opts, cuckoo.WithGrowth(2))
					}
					c, err := cuckoo.NewConcurrent(capacity, opts...)
					if err != nil {
						t.Fatal(err)
					}
					sm := &setModel{s: c, decode: decodeConcurrent, growing: growing}
					sm.run(t, r, steps, universe)
				})
			}
		}
	}
}

// TestConcurrentCapacity: NewConcurrent(n) holds n distinct keys, like New
// (up to 10^6 keys in the long checks, CUCKOO_LONG=1; 10^5 otherwise).
func TestConcurrentCapacity(t *testing.T) {
	t.Parallel()
	sizes := []uint64{1, 7, 100, 1000, uint64(sized(1_000_000, 100_000, 100_000, 10_000))}
	for _, b := range []int{2, 4, 8} {
		for _, bits := range []int{4, 8, 12, 16} {
			for _, n := range sizes {
				c, err := cuckoo.NewConcurrent(n, cuckoo.WithBucketSize(b), cuckoo.WithFingerprintBits(bits), cuckoo.WithSeed(n))
				if err != nil {
					t.Fatal(err)
				}
				for i := uint64(0); i < n; i++ {
					if err := c.Add(key(0, i)); err != nil {
						t.Fatalf("b=%d f=%d n=%d: Add %d: %v (load %.3f)", b, bits, n, i, err, c.LoadFactor())
					}
				}
			}
		}
	}
}

// TestConcurrentOverfill adds far past capacity: every key whose Add
// returned nil is still there after many ErrFull.
func TestConcurrentOverfill(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	for _, b := range []int{2, 4, 8} {
		capacity := uint64(size(2000, 2000, 400))
		c, _ := cuckoo.NewConcurrent(capacity, cuckoo.WithBucketSize(b), cuckoo.WithFingerprintBits(12), cuckoo.WithSeed(9))
		var in []uint64
		fulls := 0
		for i := uint64(0); i < 2*capacity; i++ {
			switch err := c.Add(key(0, i)); {
			case err == nil:
				in = append(in, i)
			case errors.Is(err, cuckoo.ErrFull):
				fulls++
			default:
				t.Fatal(err)
			}
		}
		if fulls < int(capacity)/2 {
			t.Fatalf("b=%d: only %d failed inserts", b, fulls)
		}
		for _, i := range in {
			if !c.Contains(key(0, i)) {
				t.Fatalf("b=%d: key %d lost after %d failed inserts", b, i, fulls)
			}
		}
		if c.Len() != uint64(len(in)) {
			t.Fatalf("b=%d: Len %d, %d added", b, c.Len(), len(in))
		}
		t.Logf("b=%d: %d in, %d refused, load %.3f", b, len(in), fulls, c.LoadFactor())
	}
}

// stressKey is key number k of the stress tests' shared universe.
func stressKey(k uint64) []byte { return key(0, k) }

// TestConcurrentStress runs goroutines that add, delete and look up keys
// of one shared universe at once, on a table small enough that most
// inserts displace fingerprints. Each goroutine keeps a model of the copies
// it holds, and deletes only those: the filter holds at least as many
// copies of a key as any one goroutine does, so every key with a copy in a
// goroutine's model must be found by that goroutine, at every step. Now
// and then a goroutine encodes a snapshot: its own keys must be in it.
//
// Fixed tables run with 16-bit fingerprints (4-slot buckets fill a word)
// and 12-bit ones (slots straddle words, which lock-free inserts leave to
// the locked path). Each goroutine does 80,000 operations in the long
// checks (CUCKOO_LONG=1), 10,000 in the quick run, 4,000 under the race
// detector.
func TestConcurrentStress(t *testing.T) {
	t.Parallel()
	for _, shape := range []struct {
		growing bool
		bits    int
	}{{false, 16}, {false, 12}, {true, 16}} {
		growing := shape.growing
		t.Run(fmt.Sprintf("growing=%v/f=%d", growing, shape.bits), func(t *testing.T) {
			t.Parallel()
			capacity := uint64(3000)
			if growing {
				capacity = 200
			}
			opts := append(growingOpts(testRand(t).Uint64(), growing), cuckoo.WithFingerprintBits(shape.bits))
			c, err := cuckoo.NewConcurrent(capacity, opts...)
			if err != nil {
				t.Fatal(err)
			}
			workers := 4
			ops := sized(80_000, 10_000, 40_000, 4_000) * *stressScale
			const universe = 4000
			models := make([]model, workers)
			var wg sync.WaitGroup
			var failed atomic.Bool
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(w), 77))
					m := model{}
					models[w] = m
					held := []uint64{}
					fail := func(format string, args ...any) {
						failed.Store(true)
						t.Errorf("worker %d: "+format, append([]any{w}, args...)...)
					}
					for op := 0; op < ops && !failed.Load(); op++ {
						k := r.Uint64N(universe)
						switch x := r.IntN(100); {
						case x < 35:
							err := c.Add(stressKey(k))
							if err == nil {
								if m[k] == 0 {
									held = append(held, k)
								}
								m[k]++
							} else if growing || !errors.Is(err, cuckoo.ErrFull) {
								fail("Add: %v", err)
							}
						case x < 45:
							added, err := c.AddUnique(stressKey(k))
							if added {
								if m[k] == 0 {
									held = append(held, k)
								}
								m[k]++
							} else if err != nil && (growing || !errors.Is(err, cuckoo.ErrFull)) {
								fail("AddUnique: %v", err)
							}
						case x < 75 && len(held) > 0:
							i := r.IntN(len(held))
							k := held[i]
							if !c.Delete(stressKey(k)) {
								fail("Delete of key %d, %d copies mine, failed", k, m[k])
							}
							if m[k]--; m[k] == 0 {
								delete(m, k)
								held[i] = held[len(held)-1]
								held = held[:len(held)-1]
							}
						case x < 99 && len(held) > 0:
							k := held[r.IntN(len(held))]
							if !c.Contains(stressKey(k)) {
								fail("key %d (%d copies mine) reported absent", k, m[k])
							}
							if n := c.Count(stressKey(k)); n < m[k] {
								fail("Count(key %d) = %d < %d copies mine", k, n, m[k])
							}
						case x == 99 && op%8 == 0:
							data, err := c.MarshalBinary()
							if err != nil {
								fail("snapshot: %v", err)
								break
							}
							var g cuckoo.Concurrent
							if err := g.UnmarshalBinary(data); err != nil {
								fail("snapshot does not decode: %v", err)
								break
							}
							for k := range m {
								if !g.Contains(stressKey(k)) {
									fail("snapshot lacks key %d", k)
									break
								}
							}
						}
					}
				}(w)
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			var total uint64
			for _, m := range models {
				total += m.total()
				for k := range m {
					if !c.Contains(stressKey(k)) {
						t.Fatalf("key %d lost", k)
					}
				}
			}
			if c.Len() != total {
				t.Fatalf("Len %d, the models hold %d", c.Len(), total)
			}
			if err := c.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
			if c.Moves() == 0 {
				t.Fatal("no fingerprint was moved: the test does not test displacement")
			}
			t.Logf("%d workers × %d ops: %d items, %d moves, %d tables, load %.3f", workers, ops, total, c.Moves(), c.NumTables(), c.LoadFactor())
		})
	}
}

// TestConcurrentReaders aims at the hazard itself: readers look up a fixed
// set of resident keys in a loop while writers churn other keys through a
// nearly full table, so that resident fingerprints are moved between their
// two buckets all the time. A reader that read a key's buckets on either
// side of a move would report it absent. The writers churn 6,000 rounds in
// the long checks (CUCKOO_LONG=1), 2,000 in the quick run, 60 under the
// race detector (whose readers spin all the while).
func TestConcurrentReaders(t *testing.T) {
	t.Parallel()
	for _, b := range []int{2, 4, 8} {
		t.Run(fmt.Sprintf("b=%d", b), func(t *testing.T) {
			const capacity = 4000
			c, _ := cuckoo.NewConcurrent(capacity, cuckoo.WithBucketSize(b), cuckoo.WithFingerprintBits(12), cuckoo.WithSeed(uint64(b)))
			// Fill close to the target load, then churn keys in and out
			// around that: most inserts then displace fingerprints.
			fill := map[int]float64{2: 0.82, 4: 0.92, 8: 0.95}[b]
			var resident []uint64
			for i := uint64(0); c.LoadFactor() < fill && i < 2*capacity; i++ {
				if c.Add(key(0, i)) == nil {
					resident = append(resident, i)
				}
			}
			rounds := sized(6000, 2000, 3000, 60) * *stressScale
			var stop atomic.Bool
			var misses atomic.Int64
			var readers sync.WaitGroup
			for r := 0; r < 2; r++ {
				readers.Add(1)
				go func() {
					defer readers.Done()
					for !stop.Load() {
						for _, k := range resident {
							if !c.Contains(key(0, k)) {
								misses.Add(1)
							}
						}
						runtime.Gosched()
					}
				}()
			}
			var writers sync.WaitGroup
			for w := 0; w < 2; w++ {
				writers.Add(1)
				go func(w uint64) {
					defer writers.Done()
					var mine []uint64
					next := uint64(0)
					for i := 0; i < rounds; i++ {
						for len(mine) < 60 {
							k := next
							next++
							if c.Add(key(10+w, k)) == nil {
								mine = append(mine, k)
							}
						}
						for _, k := range mine[:30] {
							c.Delete(key(10+w, k))
						}
						mine = append(mine[:0], mine[30:]...)
					}
				}(uint64(w))
			}
			writers.Wait()
			stop.Store(true)
			readers.Wait()
			if n := misses.Load(); n != 0 {
				t.Fatalf("resident keys reported absent %d times", n)
			}
			if c.Moves() < 1000 {
				t.Fatalf("only %d moves: the test does not test displacement", c.Moves())
			}
			t.Logf("%d resident keys, %d moves, load %.3f", len(resident), c.Moves(), c.LoadFactor())
		})
	}
}

// TestConcurrentInsertRace: goroutines insert at full speed, most of them
// without a lock, while snapshots are taken and checked (every snapshot
// must be a valid filter whose counts match its slots); then every key
// must be there, and the counts exact. Half the keys are added by every
// goroutine at once, so that lock-free inserts of one fingerprint race.
// Each goroutine adds 100,000 keys in the long checks (CUCKOO_LONG=1),
// 25,000 in the quick run, 5,000 under the race detector.
func TestConcurrentInsertRace(t *testing.T) {
	t.Parallel()
	for _, bits := range []int{16, 12, 8} {
		t.Run(fmt.Sprintf("f=%d", bits), func(t *testing.T) {
			const workers = 4
			n := uint64(sized(100_000, 25_000, 40_000, 5_000))
			c, _ := cuckoo.NewConcurrent(4*n, cuckoo.WithFingerprintBits(bits), cuckoo.WithSeed(testRand(t).Uint64()))
			var wg sync.WaitGroup
			var stop atomic.Bool
			var snapshots int
			done := make(chan error, 1)
			go func() {
				for !stop.Load() {
					if err := c.CheckInvariants(); err != nil {
						done <- err
						return
					}
					snapshots++
				}
				done <- nil
			}()
			for w := uint64(0); w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var buf [16]byte
					for i := uint64(0); i < n; i++ {
						putKey(&buf, 1000+w, i) // this worker's own
						if i%2 == 0 {
							putKey(&buf, 999, i) // every worker's
						}
						if err := c.Add(buf[:]); err != nil {
							t.Errorf("worker %d: Add: %v", w, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			stop.Store(true)
			if err := <-done; err != nil {
				t.Fatalf("snapshot %d: %v", snapshots+1, err)
			}
			if t.Failed() {
				return
			}
			if err := c.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
			if want := workers * n; c.Len() != want {
				t.Fatalf("Len %d, %d added", c.Len(), want)
			}
			for i := uint64(0); i < n; i++ {
				for w := uint64(0); w < workers; w++ {
					if i%2 == 1 && !c.Contains(key(1000+w, i)) {
						t.Fatalf("key %d of worker %d lost", i, w)
					}
				}
				if i%2 == 0 && c.Count(key(999, i)) < workers {
					t.Fatalf("shared key %d: Count %d < %d", i, c.Count(key(999, i)), workers)
				}
			}
			for i := uint64(0); i < n; i += 2 {
				for w := 0; w < workers; w++ {
					if !c.Delete(key(999, i)) {
						t.Fatalf("shared key %d: delete %d of %d failed", i, w+1, workers)
					}
				}
			}
			if want := workers * n / 2; c.Len() != want {
				t.Fatalf("Len %d after deleting the shared keys, want %d", c.Len(), want)
			}
			if err := c.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d snapshots checked while inserting; load %.3f", snapshots, c.LoadFactor())
		})
	}
}

// growingOpts returns options with a seed, and growth 2 when growing.
func growingOpts(seed uint64, growing bool) []cuckoo.Option {
	opts := []cuckoo.Option{cuckoo.WithSeed(seed)}
	if growing {
		opts = append(opts, cuckoo.WithGrowth(2))
	}
	return opts
}

// TestConcurrentAddUniqueOnce: goroutines adding the same keys with
// AddUnique add each one once.
func TestConcurrentAddUniqueOnce(t *testing.T) {
	for _, growing := range []bool{false, true} {
		c, _ := cuckoo.NewConcurrent(20_000, growingOpts(4, growing)...)
		const n, workers = 20_000, 4
		wins := make([]atomic.Int32, n)
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < n; i++ {
					k := (i + w*n/workers) % n
					if added, err := c.AddUnique(key(0, uint64(k))); err != nil {
						t.Error(err)
						return
					} else if added {
						wins[k].Add(1)
					}
				}
			}(w)
		}
		wg.Wait()
		once := 0
		for k := range wins {
			switch wins[k].Load() {
			case 0: // a false positive made every goroutine skip it
			case 1:
				once++
			default:
				t.Fatalf("growing=%v: key %d added %d times", growing, k, wins[k].Load())
			}
		}
		if c.Len() != uint64(once) || once < n*99/100 {
			t.Fatalf("growing=%v: %d keys added once, Len %d", growing, once, c.Len())
		}
	}
}

// TestConcurrentGrowth: goroutines fill a growing filter a hundred-fold; no
// Add fails, no key is lost, and the tables are the Scalable's.
func TestConcurrentGrowth(t *testing.T) {
	t.Parallel()
	const initial, workers = 1000, 2
	n := uint64(size(100_000, 100_000, 20_000))
	c, _ := cuckoo.NewConcurrent(initial, cuckoo.WithFingerprintBits(12), cuckoo.WithGrowth(2), cuckoo.WithSeed(6))
	var wg sync.WaitGroup
	for w := uint64(0); w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				if err := c.Add(key(0, i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := uint64(0); i < n; i++ {
		if !c.Contains(key(0, i)) {
			t.Fatalf("key %d lost", i)
		}
	}
	s, _ := cuckoo.NewScalable(initial, cuckoo.WithFingerprintBits(12), cuckoo.WithSeed(6))
	for i := uint64(0); i < n; i++ {
		s.Add(key(0, i))
	}
	if c.NumTables() != s.NumTables() || c.Len() != n {
		t.Fatalf("%d tables, Len %d; a Scalable has %d tables", c.NumTables(), c.Len(), s.NumTables())
	}
	if got, want := c.FalsePositiveRate(), 2*s.TargetFalsePositiveRate(); got > want {
		t.Fatalf("expected rate %.3g > 2ε = %.3g", got, want)
	}
	// Its snapshot is a Scalable.
	data, _ := c.MarshalBinary()
	var g cuckoo.Scalable
	if err := g.UnmarshalBinary(data); err != nil || g.Len() != n {
		t.Fatalf("snapshot as Scalable: %v, Len %d", err, g.Len())
	}
}

// TestConcurrentSnapshotFormats: a fixed filter's snapshot is a Filter
// encoding, and a Filter encoding loads into a Concurrent.
func TestConcurrentSnapshotFormats(t *testing.T) {
	c, _ := cuckoo.NewConcurrent(1000, cuckoo.WithFingerprintBits(12), cuckoo.WithSeed(2))
	for i := uint64(0); i < 900; i++ {
		c.Add(key(0, i))
	}
	for i := 0; i < 5; i++ {
		c.AddString("hot")
	}
	data, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if n, err := c.WriteTo(&buf); err != nil || n != int64(len(data)) || !bytes.Equal(buf.Bytes(), data) {
		t.Fatalf("WriteTo = %d, %v; differs from MarshalBinary", n, err)
	}
	var f cuckoo.Filter
	if err := f.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	// The seed is fixed: no other key's fingerprint shares "hot"'s buckets,
	// so its count is exactly its copies.
	if f.Len() != c.Len() || f.CountString("hot") != 5 {
		t.Fatalf("as a Filter: Len %d, Count %d", f.Len(), f.CountString("hot"))
	}
	var c2 cuckoo.Concurrent
	if n, err := c2.ReadFrom(bytes.NewReader(mustMarshal(t, &f))); err != nil || n != int64(len(data)) {
		t.Fatalf("ReadFrom = %d, %v", n, err)
	}
	if !bytes.Equal(mustMarshal(t, &c2), data) {
		t.Fatal("Filter → Concurrent → encoding changed the bytes")
	}
	// Semi-sorted encodings are valid but not for a Concurrent.
	semi, _ := cuckoo.New(100, cuckoo.WithSemiSorting(), cuckoo.WithFingerprintBits(13))
	if err := c2.UnmarshalBinary(mustMarshal(t, semi)); !errors.Is(err, cuckoo.ErrInvalidParameter) {
		t.Fatalf("semi-sorted encoding: %v", err)
	}
	if _, err := c2.ReadFrom(bytes.NewReader([]byte("CKO"))); !errors.Is(err, cuckoo.ErrCorrupt) {
		t.Fatalf("3 bytes: %v", err)
	}
}

// TestConcurrentDeterministic: one goroutine's operations give the same
// bytes every time.
func TestConcurrentDeterministic(t *testing.T) {
	build := func() []byte {
		c, _ := cuckoo.NewConcurrent(500, cuckoo.WithSeed(8))
		for i := uint64(0); i < 600; i++ {
			c.Add(key(0, i))
		}
		return mustMarshal(t, c)
	}
	if !bytes.Equal(build(), build()) {
		t.Fatal("the same operations gave different encodings")
	}
}

func TestConcurrentZeroValue(t *testing.T) {
	var c cuckoo.Concurrent
	if c.Contains([]byte("a")) || c.Len() != 0 || c.Delete([]byte("a")) || c.Count([]byte("a")) != 0 || c.LoadFactor() != 0 {
		t.Fatal("zero Concurrent is not empty")
	}
	if err := c.Add([]byte("a")); !errors.Is(err, cuckoo.ErrUninitialized) {
		t.Fatalf("Add = %v", err)
	}
	if _, err := c.MarshalBinary(); err == nil {
		t.Fatal("zero Concurrent encoded")
	}
	c.Reset()
}

func TestConcurrentInvalid(t *testing.T) {
	for _, opts := range [][]cuckoo.Option{
		{cuckoo.WithSemiSorting()},
		{cuckoo.WithGrowth(0.5)},
		{cuckoo.WithBucketSize(256)},
	} {
		if c, err := cuckoo.NewConcurrent(100, opts...); !errors.Is(err, cuckoo.ErrInvalidParameter) || c != nil {
			t.Errorf("NewConcurrent = %v, %v", c, err)
		}
	}
}

func TestConcurrentReset(t *testing.T) {
	for _, growing := range []bool{false, true} {
		opts := growingOpts(3, growing)
		c, _ := cuckoo.NewConcurrent(100, opts...)
		for i := uint64(0); i < 90; i++ {
			c.Add(key(0, i))
		}
		if growing {
			for i := uint64(0); i < 1000; i++ {
				c.Add(key(1, i))
			}
		}
		c.Reset()
		fresh, _ := cuckoo.NewConcurrent(100, opts...)
		if c.Len() != 0 || c.NumTables() != 1 || !bytes.Equal(mustMarshal(t, c), mustMarshal(t, fresh)) {
			t.Fatalf("growing=%v: a reset filter differs from a new one", growing)
		}
	}
}

// TestConcurrentAllocs: lookups and inserts allocate nothing once warm.
func TestConcurrentAllocs(t *testing.T) {
	c, _ := cuckoo.NewConcurrent(100_000, cuckoo.WithSeed(1))
	for i := uint64(0); i < 90_000; i++ {
		c.Add(key(0, i))
	}
	k := key(1, 1)
	if a := testing.AllocsPerRun(1000, func() { c.Contains(k) }); a != 0 {
		t.Errorf("Contains: %v allocations", a)
	}
	i := uint64(0)
	if a := testing.AllocsPerRun(1000, func() { c.Add(key(2, i)); i++ }); a != 0 {
		t.Errorf("Add: %v allocations", a)
	}
	if a := testing.AllocsPerRun(1000, func() { i--; c.Delete(key(2, i)) }); a != 0 {
		t.Errorf("Delete: %v allocations", a)
	}
}

// Benchmarks of the scaling figures:
//
//	go test -run '^$' -bench 'Concurrent' -cpu 1,2 -count 6
//
// With -cpu 1 RunParallel runs one goroutine, with -cpu 2 two; ns/op is
// wall time per operation, so the throughput ratio is ns/op at -cpu 1
// over ns/op at -cpu 2.

// fullConcurrent returns a shared fixed filter of capacity n holding the
// keys 0..n-1 (family 0).
func fullConcurrent(b *testing.B, n uint64) *cuckoo.Concurrent {
	return fixture(fmt.Sprint("concurrent/", n), func() *cuckoo.Concurrent {
		c, err := cuckoo.NewConcurrent(n, cuckoo.WithSeed(1))
		if err != nil {
			b.Fatal(err)
		}
		for _, k := range cachedKeys(0, n) {
			if err := c.Add(k); err != nil {
				b.Fatal(err)
			}
		}
		return c
	})
}

// worker numbers the goroutines of a RunParallel body.
var worker atomic.Uint64

// BenchmarkConcurrent_Contains looks keys up from every goroutine. The
// peer, impl=filter, is a plain Filter read by the same goroutines (a
// Filter allows concurrent readers): on a shared machine its ratio between
// -cpu 1 and -cpu 2 is the parallelism the machine gave the run, the
// ceiling for the Concurrent's ratio measured beside it.
func BenchmarkConcurrent_Contains(b *testing.B) {
	for _, n := range []uint64{1_000_000, 10_000_000} {
		for _, hit := range []bool{true, false} {
			for _, impl := range []string{"concurrent", "filter"} {
				b.Run(fmt.Sprintf("n=%s/hit=%v/impl=%s", human(n), hit, impl), func(b *testing.B) {
					var contains func([]byte) bool
					if impl == "filter" {
						f, _ := fullFilter(b, benchShape{n, 4, 16, false})
						contains = f.Contains
					} else {
						contains = fullConcurrent(b, n).Contains
					}
					keys := cachedKeys(0, n)
					if !hit {
						keys = cachedKeys(1, n)
					}
					var found, done atomic.Uint64
					runtime.GC() // no collection of the fixtures' garbage while timed
					b.ReportAllocs()
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						i := int(worker.Add(1)*7919) % len(keys)
						hits, ops := uint64(0), uint64(0)
						for pb.Next() {
							if contains(keys[i]) {
								hits++
							}
							ops++
							if i++; i == len(keys) {
								i = 0
							}
						}
						found.Add(hits)
						done.Add(ops)
					})
					if hit && found.Load() != done.Load() {
						b.Fatalf("%d of %d present keys found", found.Load(), done.Load())
					}
				})
			}
		}
	}
}

// BenchmarkConcurrent_Mixed: 90 % lookups of present keys, 10 % inserts of
// new keys, in two settings, each beside its peer, lookups=100%: the same
// filter read only, whose ratio between -cpu 1 and -cpu 2 is the
// parallelism the machine gave the run (on a shared machine it varies:
// compare the 90 % ratio with the peer's of the same run).
//
// n=1M/capacity=8M: a filter of 21 MB, beyond the L2 cache, holding 1M
// keys at the start; the goroutines insert only, up to 90 % of the room
// left between them (6.3M keys, more than a run of the default -benchtime
// needs), then also delete their oldest key with each insert, so a longer
// run never fills the filter. (Deletes take two stripe locks, which a
// lookup-and-insert mix should not measure.)
//
// n=500K/capacity=1M/churn: a filter of 2 MB, near the size of the L2
// cache, holding 500K keys; once a goroutine has inserted 50,000 keys it
// also deletes its oldest with each insert, so the load stays put.
func BenchmarkConcurrent_Mixed(b *testing.B) {
	for _, c := range []struct {
		name        string
		n, capacity uint64
		quota       uint64 // own keys a goroutine holds before it deletes (0: 90 % of the room, shared)
	}{
		{"n=1M/capacity=8M", 1_000_000, 8_000_000, 0},
		{"n=500K/capacity=1M/churn", 500_000, 1_000_000, 50_000},
	} {
		for _, lookups := range []int{100, 90} {
			b.Run(fmt.Sprintf("%s/lookups=%d%%", c.name, lookups), func(b *testing.B) {
				keys := cachedKeys(0, c.n)
				f, _ := cuckoo.NewConcurrent(c.capacity, cuckoo.WithSeed(1))
				for _, k := range keys {
					f.Add(k)
				}
				runtime.GC() // no collection of the set-up's garbage while timed
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					w := worker.Add(1)
					i := int(w*7919) % len(keys)
					next, oldest := uint64(0), uint64(0)
					quota := c.quota
					if quota == 0 {
						quota = (c.capacity - c.n) * 9 / 10 / uint64(runtime.GOMAXPROCS(0))
					}
					var buf [16]byte
					for op := 0; pb.Next(); op++ {
						if op%10 >= lookups/10 {
							putKey(&buf, 100+w, next)
							next++
							if err := f.Add(buf[:]); err != nil {
								b.Error(err)
								return
							}
							if next-oldest > quota {
								putKey(&buf, 100+w, oldest)
								oldest++
								f.Delete(buf[:])
							}
							continue
						}
						f.Contains(keys[i])
						if i++; i == len(keys) {
							i = 0
						}
					}
				})
			})
		}
	}
}

// BenchmarkConcurrent_Add: goroutines insert new keys into a filter sized
// for all of them.
func BenchmarkConcurrent_Add(b *testing.B) {
	b.Run("fresh", func(b *testing.B) {
		c, _ := cuckoo.NewConcurrent(uint64(max(b.N, 1000)), cuckoo.WithSeed(1))
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			w := worker.Add(1)
			next := uint64(0)
			var buf [16]byte
			for pb.Next() {
				putKey(&buf, 200+w, next)
				next++
				if err := c.Add(buf[:]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkConcurrent_Serial is one goroutine's lookups and inserts, to
// compare with BenchmarkFilter_Contains/n=1M/f=16/b=4 and
// BenchmarkFilter_Add/n=1M/f=16/b=4: the cost of the atomic accesses, the
// version checks and the locks.
func BenchmarkConcurrent_Serial(b *testing.B) {
	for _, hit := range []bool{true, false} {
		b.Run(fmt.Sprintf("n=1M/op=contains/hit=%v", hit), func(b *testing.B) {
			c := fullConcurrent(b, 1_000_000)
			keys := cachedKeys(0, 1_000_000)
			if !hit {
				keys = cachedKeys(1, 1_000_000)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c.Contains(keys[i])
				if i++; i == len(keys) {
					i = 0
				}
			}
		})
	}
	// As BenchmarkFilter_Add: fill from empty to capacity, again and again.
	b.Run("n=1M/op=add", func(b *testing.B) {
		keys := cachedKeys(0, 1_000_000)
		c, _ := cuckoo.NewConcurrent(1_000_000, cuckoo.WithSeed(1))
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i == len(keys) {
				b.StopTimer()
				c.Reset()
				i = 0
				b.StartTimer()
			}
			if err := c.Add(keys[i]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkConcurrent_Snapshot times MarshalBinary of a full 10M filter
// (21 MB); the pause-ms metric is the time writers waited, the in-memory
// copy of the table.
func BenchmarkConcurrent_Snapshot(b *testing.B) {
	b.Run("n=10M", func(b *testing.B) {
		c := fullConcurrent(b, 10_000_000)
		b.ReportAllocs()
		var pause time.Duration
		for b.Loop() {
			if _, err := c.MarshalBinary(); err != nil {
				b.Fatal(err)
			}
			pause += c.SnapshotPause()
		}
		b.ReportMetric(float64(pause)/1e6/float64(b.N), "pause-ms")
	})
}

// FuzzDecodeConcurrent feeds arbitrary bytes to both decoders of a
// Concurrent (which take a Filter encoding or a Scalable one): neither may
// panic; whatever decodes re-encodes to the same bytes, passes the
// invariant checks and stays usable.
func FuzzDecodeConcurrent(f *testing.F) {
	c, _ := cuckoo.NewConcurrent(30, cuckoo.WithSeed(2), cuckoo.WithFingerprintBits(9))
	for i := uint64(0); i < 30; i++ {
		c.Add(key(0, i))
	}
	f.Add(mustMarshal(f, c))
	f.Add(mustMarshal(f, sampleScalable(f, layout{2, false}, 9)))
	f.Add(hugeFilterHeader(f)) // 32 GiB tables: refused on a 32-bit platform
	f.Add(hugeScalableHead(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data, func() decodable { return new(cuckoo.Concurrent) }, cuckoo.ErrCorrupt)
	})
}

// FuzzConcurrentOperations interprets the input as operations, from one
// goroutine, on a small Concurrent filter, fixed or growing, and checks
// them against a model after each one (fuzzOps).
func FuzzConcurrentOperations(f *testing.F) {
	f.Add(uint8(1), uint8(5), []byte{0, 1, 2, 3, 4, 5, 6, 7, 0x80, 0x81, 0xc0, 0xc1})
	f.Fuzz(func(t *testing.T, shape, bits uint8, ops []byte) {
		b := []int{2, 4, 8}[int(shape)%3]
		growing := shape&4 != 0
		opts := []cuckoo.Option{cuckoo.WithBucketSize(b), cuckoo.WithFingerprintBits(4 + int(bits)%29), cuckoo.WithSeed(uint64(bits))}
		capacity := uint64(20)
		if growing {
			capacity = 2
			opts = append(opts, cuckoo.WithGrowth(1.25+float64(shape%8)))
		}
		c, err := cuckoo.NewConcurrent(capacity, opts...)
		if err != nil {
			t.Fatal(err)
		}
		fuzzOps(t, c, ops, growing)
	})
}

// TestConcurrentPlacesAsFilter: one goroutine adding keys to a Concurrent
// puts each fingerprint where a Filter of the same seed and shape puts it
// (the emptier of its two buckets), so while no insert has to move
// fingerprints the two encode to the same bytes.
func TestConcurrentPlacesAsFilter(t *testing.T) {
	for _, bits := range []int{8, 16, 20} {
		const n = 100_000
		opts := []cuckoo.Option{cuckoo.WithFingerprintBits(bits), cuckoo.WithSeed(9)}
		f, err := cuckoo.New(n, opts...)
		if err != nil {
			t.Fatal(err)
		}
		c, err := cuckoo.NewConcurrent(n, opts...)
		if err != nil {
			t.Fatal(err)
		}
		for i := uint64(0); i < n*3/10; i++ {
			if err := f.Add(key(3, i)); err != nil {
				t.Fatal(err)
			}
			if err := c.Add(key(3, i)); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(mustMarshal(t, f), mustMarshal(t, c)) {
			t.Errorf("f=%d: the Concurrent's table differs from the Filter's", bits)
		}
	}
}

// TestConcurrentReportsItsTargets: a cuckoo.Concurrent answers InitialCapacity
// and TargetFalsePositiveRate as the filter it stands for does: a fixed
// one as its Plan, a growing one as a Scalable of the same options; the
// zero cuckoo.Concurrent answers 0.
func TestConcurrentReportsItsTargets(t *testing.T) {
	for _, opts := range [][]cuckoo.Option{nil, {cuckoo.WithFalsePositiveRate(1e-3)}, {cuckoo.WithFingerprintBits(12), cuckoo.WithBucketSize(2)}} {
		c, err := cuckoo.NewConcurrent(100_000, opts...)
		if err != nil {
			t.Fatal(err)
		}
		p, err := cuckoo.NewPlan(100_000, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if c.InitialCapacity() != c.Capacity() || c.TargetFalsePositiveRate() != p.FalsePositiveRate {
			t.Errorf("fixed %v: initial %d, target %g; want %d and the plan's %g", opts, c.InitialCapacity(), c.TargetFalsePositiveRate(), c.Capacity(), p.FalsePositiveRate)
		}
		grow := append(opts[:len(opts):len(opts)], cuckoo.WithGrowth(2))
		g, err := cuckoo.NewConcurrent(1000, grow...)
		if err != nil {
			t.Fatal(err)
		}
		s, err := cuckoo.NewScalable(1000, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if g.InitialCapacity() != s.InitialCapacity() || g.TargetFalsePositiveRate() != s.TargetFalsePositiveRate() {
			t.Errorf("growing %v: initial %d, target %g; the Scalable's %d and %g", opts, g.InitialCapacity(), g.TargetFalsePositiveRate(), s.InitialCapacity(), s.TargetFalsePositiveRate())
		}
	}
	var zero cuckoo.Concurrent
	if zero.InitialCapacity() != 0 || zero.TargetFalsePositiveRate() != 0 {
		t.Error("the zero cuckoo.Concurrent reports targets")
	}
}
