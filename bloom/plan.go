package bloom

import "fmt"

// Plan describes a filter that a constructor would build, holding a given
// number of keys, without allocating it: what a sizing calculator needs.
// [NewPlan], [NewClassicPlan], [NewCountingPlan] and [NewScalablePlan]
// compute it with the sizing their constructors use, so its sizes are
// exactly those of the filter the constructor builds with the same
// arguments, and its rate is the model's expectation for that filter (see
// the package documentation).
type Plan struct {
	// Keys is the number of distinct keys the figures are for: the
	// capacity, or for a Scalable the keys it has grown to hold.
	Keys uint64
	// Capacity is what Capacity reports on the filter holding Keys keys
	// (for a Scalable, the sum of its layers' capacities).
	Capacity uint64
	// HashCount is what HashCount reports: k, the bits (or counters) each
	// key sets; 0 for a Scalable, whose layers differ.
	HashCount int
	// NumTables is 1, or the number of layers (tables) a Scalable needs for
	// Keys keys: what its NumTables reports.
	NumTables int
	// SizeInBytes is what SizeInBytes reports on the filter holding Keys keys.
	SizeInBytes uint64
	// BitsPerItem is SizeInBytes·8 / Keys.
	BitsPerItem float64
	// FalsePositiveRate is the expected false-positive rate with Keys
	// distinct keys: at most the target rate.
	FalsePositiveRate float64
}

// NewPlan describes the blocked Bloom filter [New] builds for capacity keys
// (at the target rate of [WithFalsePositiveRate]), holding capacity keys. It takes the options New
// takes and returns the errors New returns, without allocating the table:
// O(k²) arithmetic for a rate not planned before.
func NewPlan(capacity uint64, opts ...Option) (Plan, error) {
	return tablePlan(capacity, opts, layoutBlocked, 0)
}

// NewClassicPlan describes the classic Bloom filter [NewClassic] builds for
// capacity keys, holding capacity keys, without allocating it. It takes
// NewClassic's options and returns its errors.
func NewClassicPlan(capacity uint64, opts ...Option) (Plan, error) {
	return tablePlan(capacity, opts, layoutClassic, 64)
}

// NewCountingPlan describes the counting Bloom filter [NewCounting] builds
// for capacity keys, holding capacity keys, without allocating it. It
// takes NewCounting's options and returns its errors.
func NewCountingPlan(capacity uint64, opts ...Option) (Plan, error) {
	// A counter is nonzero exactly when a classic filter's bit would be
	// set: the classic sizing and model, over counters.
	return tablePlan(capacity, opts, layoutClassic, countersPer)
}

// tablePlan is the plan of one table of the layout holding its capacity:
// blocked, or classic with cellsPerWord bits or counters per word.
func tablePlan(capacity uint64, opts []Option, l layout, cellsPerWord int) (Plan, error) {
	c, err := resolve(capacity, false, opts)
	if err != nil {
		return Plan{}, err
	}
	fpr := c.fpr
	var k int
	var words, cells uint64
	var ok bool
	if l == layoutBlocked {
		k, words, ok = blockedShape(capacity, fpr)
		cells = cellsOf(layoutBlocked, words)
	} else {
		k, words, ok = classicSizing(capacity, fpr, cellsPerWord)
		cells = words * uint64(cellsPerWord)
	}
	if !ok {
		return Plan{}, tooLarge(capacity, fpr)
	}
	return Plan{
		Keys: capacity, Capacity: capacity, HashCount: k, NumTables: 1,
		SizeInBytes: words * 8, BitsPerItem: float64(words*64) / float64(capacity),
		FalsePositiveRate: rateWithKeys(l, k, cells, float64(capacity)),
	}, nil
}

// NewScalablePlan describes the scalable Bloom filter [NewScalable] builds
// with the first layer's capacity (and options), once it holds
// keys keys (its Len; at high rates a few percent of the new keys offered
// to a Scalable are false positives, which it does not insert): the layers
// it needs, their memory, and
// the expected rate, the sum of the layers' rates. Each layer is planned to
// hold what it holds on average before the next is added: its capacity c
// plus the headroom of 2√c keys it is sized for (see [Scalable]); the
// newest holds what remains. Near the point where the plan adds a layer, a
// filter may have one layer more or fewer. It takes NewScalable's options
// ([WithFalsePositiveRate], [WithGrowth], [WithTightening]) and returns its errors, and errors for
// keys of 0 or above [MaxCapacity]; it allocates nothing.
func NewScalablePlan(capacity, keys uint64, opts ...Option) (Plan, error) {
	c, err := resolve(capacity, true, opts)
	if err != nil {
		return Plan{}, err
	}
	if keys == 0 || keys > MaxCapacity {
		return Plan{}, fmt.Errorf("%w: keys %d outside [1, %d]", ErrInvalidParameter, keys, uint64(MaxCapacity))
	}
	s := &Scalable{capacity: capacity, fpr: c.fpr, growth: c.growth, tightening: c.tightening}
	p := Plan{Keys: keys}
	left := keys
	for i, lc := 0, capacity; left > 0; i, lc = i+1, s.nextCapacity(lc) {
		l, k, words, ok := s.layerShape(i, lc)
		if !ok || i == maxLayers {
			return Plan{}, tooLarge(lc, s.layerRate(i))
		}
		n := min(left, headroom(lc))
		left -= n
		p.NumTables++
		p.Capacity += lc
		p.SizeInBytes += words * 8
		p.FalsePositiveRate += rateWithKeys(l, k, cellsOf(l, words), float64(n))
	}
	p.BitsPerItem = float64(p.SizeInBytes*8) / float64(keys)
	return p, nil
}
