package bloom

import (
	"fmt"
	"math"

	"github.com/dedupkit/cuckoo/internal/hash"
	"github.com/dedupkit/cuckoo/internal/invariants"
)

// Scalable is a Bloom filter that grows as keys arrive, for when the number
// of keys is not known in advance (Almeida et al., "Scalable Bloom
// Filters", 2007). It is a list of layers, each a [Filter]: keys go into
// the newest layer until it holds its capacity, and then a new layer is
// added, [WithGrowth] times larger than the last (2 by default). Contains
// asks every layer, newest first.
//
// The layers' target rates tighten geometrically: with target p and
// tightening ratio r ([WithTightening], 0.8 by default), layer i is built
// for p·(1−r)·r^i, so the rates of all layers, however many there are, add
// up to less than p. Since a false positive of the whole is a false
// positive of some layer, the false-positive rate stays at or below p at
// every size, and the memory per key grows only logarithmically with the
// number of keys. A layer counts as full when the number of bits it has set
// reaches the number that its capacity of distinct keys plus a headroom of
// 2√capacity is expected to set (it is sized for that many): so a layer
// reliably takes its capacity, is declared full at its target rate, and is
// immune to repeated keys and to keys that were false positives when added. Layers use the blocked layout of [New], except layers whose rate
// is so low that blocking would cost more than a quarter more memory than
// the classic layout of [NewClassic], which they then use.
//
// Add inserts a key only when Contains reports it absent (so a repeated
// key never uses room), and Len counts the keys added.
//
// # Concurrency
//
// Scalable is like a Go map: any number of goroutines may call Contains,
// ContainsString and the read-only methods at once, but Add, AddUnique,
// Reset and the decoders need exclusive access (Add may add a layer).
// [SyncScalable] wraps a Scalable with a read-write mutex for free sharing.
//
// The zero Scalable is ready to use, as a cuckoo.Scalable's is: it is
// empty, and the first Add or AddUnique sets it up as
// NewScalable([DefaultScalableCapacity]) would, with the default rate and
// a random seed. UnmarshalBinary or ReadFrom can decode into it; the
// encoders return an error until it holds a layer.
//
// # Invariants
//
// A constructed Scalable has at least one layer; layer i has the capacity
// c·g^i (rounded up at each step) and the seed of the whole; lastFill is the
// number of bits set in the last layer.
type Scalable struct {
	layers     []*Filter
	lastFill   uint64 // bits set in the last layer
	lastLimit  uint64 // bits at which the last layer is full
	capacity   uint64 // of the first layer
	fpr        float64
	growth     float64
	tightening float64
	seed       uint64
	count      uint64
	stuck      bool // the last layer is full and no new one can be made
}

// NewScalable returns an empty scalable Bloom filter whose first layer
// holds capacity keys and whose false-positive rate stays at or below the
// target rate ([WithFalsePositiveRate], [DefaultFalsePositiveRate] if not
// given) however many keys are added. Options: [WithFalsePositiveRate],
// [WithGrowth], [WithTightening], [WithSeed]. It returns an error wrapping
// [ErrInvalidParameter] for a capacity of 0 or above [MaxCapacity] or a
// parameter out of range.
func NewScalable(capacity uint64, opts ...Option) (*Scalable, error) {
	c, err := resolve(capacity, true, opts)
	if err != nil {
		return nil, err
	}
	s := &Scalable{capacity: capacity, fpr: c.fpr, growth: c.growth, tightening: c.tightening, seed: c.seed}
	first, err := s.newLayer(0, capacity)
	if err != nil {
		return nil, err
	}
	s.layers = []*Filter{first}
	s.setLast()
	if invariants.Enabled {
		s.checkInvariants()
	}
	return s, nil
}

// DefaultScalableCapacity is the capacity of the first layer of a zero
// [Scalable] that is added to without being built by NewScalable, the
// same as a zero cuckoo.Scalable's.
const DefaultScalableCapacity = 1024

// setUp makes the zero Scalable the one NewScalable(DefaultScalableCapacity)
// returns, before a write hashes its key with the seed.
func (s *Scalable) setUp() {
	if len(s.layers) != 0 {
		return
	}
	z, err := NewScalable(DefaultScalableCapacity)
	if err != nil {
		panic("bloom: default Scalable: " + err.Error())
	}
	*s = *z
}

// layerRate returns the target rate of layer i: p·(1−r)·r^i.
func (s *Scalable) layerRate(i int) float64 {
	return s.fpr * (1 - s.tightening) * math.Pow(s.tightening, float64(i))
}

// nextCapacity returns the capacity of the layer after one of capacity c.
func (s *Scalable) nextCapacity(c uint64) uint64 {
	return uint64(min(math.Ceil(float64(c)*s.growth), MaxCapacity))
}

// headroom returns the number of keys a layer of capacity c is sized for:
// c + ⌈2√c⌉. A layer counts as full when its fill reaches the expected fill
// of that many keys, and the fill of c keys lies below it by more than five
// standard deviations (about 0.4·√c keys each), so a layer reliably holds
// its capacity, while its rate when it is declared full is still its target.
// The headroom costs 2/√c of the memory: 6 % at 1000 keys, 0.2 % at 10^6.
func headroom(c uint64) uint64 {
	return c + uint64(math.Ceil(2*math.Sqrt(float64(c))))
}

// layerLimit returns the number of bits set at which layer l is full.
func layerLimit(l *Filter) uint64 {
	return uint64(math.Ceil(fillAt(l.layout, int(l.k), l.cells, float64(headroom(l.capacity)))))
}

// newLayer builds layer i with the given capacity.
func (s *Scalable) newLayer(i int, capacity uint64) (*Filter, error) {
	l, k, words, ok := s.layerShape(i, capacity)
	if !ok {
		return nil, tooLarge(capacity, s.layerRate(i))
	}
	return newFilter(l, k, words, capacity, s.layerRate(i), s.seed), nil
}

// layerShape returns the layout, hash count and words of layer i with the
// given capacity: sized for the capacity plus its headroom at the layer's
// rate, blocked unless that costs more than a quarter more memory than
// classic. ok is false when neither fits the size limit.
func (s *Scalable) layerShape(i int, capacity uint64) (l layout, k int, words uint64, ok bool) {
	p := s.layerRate(i)
	kB, wordsB, okB := blockedShape(headroom(capacity), p)
	kC, wordsC, okC := classicSizing(headroom(capacity), p, 64)
	switch {
	case okB && (!okC || wordsB*4 <= wordsC*5):
		return layoutBlocked, kB, wordsB, true
	case okC:
		return layoutClassic, kC, wordsC, true
	}
	return 0, 0, 0, false
}

// setLast recomputes the fill and the limit of the last layer.
func (s *Scalable) setLast() {
	l := s.layers[len(s.layers)-1]
	s.lastFill = l.setBits()
	s.lastLimit = layerLimit(l)
}

// grow appends a new layer and reports whether it could. It cannot when
// the layer would exceed the size limit of a table (1 TiB, 2 GiB on 32-bit
// CPUs) or maxLayers: neither is reachable by adding keys, but a decoded
// filter may ask for a huge next layer.
func (s *Scalable) grow() bool {
	last := s.layers[len(s.layers)-1]
	if len(s.layers) >= maxLayers {
		return false
	}
	next, err := s.newLayer(len(s.layers), s.nextCapacity(last.capacity))
	if err != nil {
		return false
	}
	s.layers = append(s.layers, next)
	s.lastFill, s.lastLimit = 0, layerLimit(next)
	return true
}

// Add inserts key unless Contains reports it present. It allocates nothing,
// except when the newest layer is full and a new one is made (or the zero
// Scalable sets itself up). If that layer would exceed the size limit of a
// table (1 TiB; 2 GiB on 32-bit CPUs), which only a decoded filter with a
// huge last layer and growth factor can ask for, keys go on into the last
// layer and the rate rises above the target instead. It returns nil: a
// Scalable, the zero one too, always takes a key (the error result is
// there so that Bloom and cuckoo filters add keys alike).
func (s *Scalable) Add(key []byte) error {
	s.setUp()
	s.addHash(hash.Sum64(key, s.seed))
	return nil
}

// AddString is [Scalable.Add] for a string key, without copying it.
func (s *Scalable) AddString(key string) error {
	s.setUp()
	s.addHash(hash.Sum64String(key, s.seed))
	return nil
}

// AddUnique inserts key unless Contains reports it present, and reports
// whether it inserted it. It is the same operation as Add, with the answer;
// like Add, it never fails (the error, always nil, is there so that every
// filter's AddUnique has one shape).
func (s *Scalable) AddUnique(key []byte) (added bool, err error) {
	s.setUp()
	return s.addHash(hash.Sum64(key, s.seed)), nil
}

// AddUniqueString is [Scalable.AddUnique] for a string key.
func (s *Scalable) AddUniqueString(key string) (added bool, err error) {
	s.setUp()
	return s.addHash(hash.Sum64String(key, s.seed)), nil
}

// Contains reports whether key may be in the filter: false is certain, true
// is wrong with probability at most the target rate. It asks the layers
// newest first and allocates nothing.
func (s *Scalable) Contains(key []byte) bool { return s.containsHash(hash.Sum64(key, s.seed)) }

// ContainsString is [Scalable.Contains] for a string key, without copying
// it.
func (s *Scalable) ContainsString(key string) bool {
	return s.containsHash(hash.Sum64String(key, s.seed))
}

func (s *Scalable) containsHash(h uint64) bool {
	for i := len(s.layers) - 1; i >= 0; i-- {
		if s.layers[i].containsHash(h) {
			return true
		}
	}
	return false
}

func (s *Scalable) addHash(h uint64) bool {
	if s.containsHash(h) {
		return false
	}
	if s.lastFill >= s.lastLimit && !s.stuck {
		// INVARIANT: stuck is set only after grow failed with these layers.
		s.stuck = !s.grow()
	}
	s.lastFill += s.layers[len(s.layers)-1].addHash(h)
	s.count++
	if invariants.Enabled {
		s.checkLast()
	}
	return true
}

// Len returns the number of keys added: the Add calls that inserted.
func (s *Scalable) Len() uint64 { return s.count }

// Capacity returns the number of keys the current layers hold before the
// next layer is added: the sum of their capacities.
func (s *Scalable) Capacity() uint64 {
	var c uint64
	for _, l := range s.layers {
		c += l.capacity
	}
	return c
}

// TargetFalsePositiveRate returns the rate given to [NewScalable]: the
// expected false-positive rate stays at or below it at every size. It is
// kept in the encoding.
func (s *Scalable) TargetFalsePositiveRate() float64 { return s.fpr }

// NumTables returns the number of layers (tables).
func (s *Scalable) NumTables() int { return len(s.layers) }

// Seed returns the hash seed, which all layers share.
func (s *Scalable) Seed() uint64 { return s.seed }

// SizeInBytes returns the total size of the layers' bit arrays.
func (s *Scalable) SizeInBytes() uint64 {
	var n uint64
	for _, l := range s.layers {
		n += l.SizeInBytes()
	}
	return n
}

// FalsePositiveRate returns the expected false-positive rate at the current
// content: the sum of the layers' rates (see [Filter.FalsePositiveRate]),
// an upper bound on the chance that some layer reports an absent key. It
// stays at or below the target rate. O(m/64) over all layers.
func (s *Scalable) FalsePositiveRate() float64 {
	var r float64
	for _, l := range s.layers {
		r += l.FalsePositiveRate()
	}
	return min(r, 1)
}

// EstimatedCount estimates the number of keys inserted from the bits set in
// each layer (see [Filter.EstimatedCount]). Keys that were false positives
// when added were not inserted, so it estimates Len rather than the number
// of distinct keys offered. O(m/64).
func (s *Scalable) EstimatedCount() uint64 {
	var n uint64
	for _, l := range s.layers {
		n += l.EstimatedCount()
	}
	return n
}

// Reset removes every key and every layer but the first, which it clears.
func (s *Scalable) Reset() {
	if len(s.layers) == 0 {
		return
	}
	clear(s.layers[1:])
	s.layers = s.layers[:1]
	s.layers[0].Reset()
	s.count, s.stuck = 0, false
	s.setLast()
}

// Clone returns a deep copy of s.
func (s *Scalable) Clone() *Scalable {
	c := *s
	c.layers = make([]*Filter, len(s.layers))
	for i, l := range s.layers {
		c.layers[i] = l.Clone()
	}
	return &c
}

// checkLast checks the cheap invariant of the last layer after an Add.
func (s *Scalable) checkLast() {
	if s.lastFill > s.layers[len(s.layers)-1].SizeInBytes()*8 {
		panic("bloom: invariant: last layer fill exceeds its size")
	}
}

// checkInvariants checks the structure: O(layers + m/64).
func (s *Scalable) checkInvariants() {
	if len(s.layers) == 0 {
		return
	}
	c := s.capacity
	for i, l := range s.layers {
		l.checkInvariants()
		if l.capacity != c {
			panic(fmt.Sprintf("bloom: invariant: layer %d capacity %d, schedule says %d", i, l.capacity, c))
		}
		if l.seed != s.seed {
			panic(fmt.Sprintf("bloom: invariant: layer %d seed differs", i))
		}
		c = s.nextCapacity(c)
	}
	if got := s.layers[len(s.layers)-1].setBits(); got != s.lastFill {
		panic(fmt.Sprintf("bloom: invariant: last layer has %d bits set, recorded %d", got, s.lastFill))
	}
}
