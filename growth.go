package cuckoo

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dedupkit/cuckoo/internal/table"
	"github.com/dedupkit/cuckoo/internal/table/chain"
)

// How a growing filter ([Scalable], or [Concurrent] with [WithGrowth]) adds
// tables. Every table has a generation number k: generation 0 is the table
// of the initial capacity, and each new table is the next generation. A
// generation's capacity and fingerprint width are a pure function of k and
// of the options, so a decoder can check every table of a file against
// them, and a filter loaded from a file grows exactly like the one saved.
//
// A Scalable's tables after the first grow in place (chain.Growing): a
// table starts at 1/2^R of its generation's bucket count (R = growReserve,
// a sixteenth, or a little more for fingerprints over 28 bits) and reaches
// it before the next generation starts, so its shape is still the
// generation's; only its bucket count is rounded up to a multiple of
// 2^(R+1), which the halvings need. A Concurrent allocates its tables
// whole, with the same shapes, so that either can load the other's
// encoding.
//
// # The false-positive budget
//
// A key never added is a false positive if any table reports it, so the
// rates of the tables add up (a union bound). The promise is a bound B on
// the whole chain's rate at every size: the p of WithFalsePositiveRate, or,
// when the fingerprint width f is given instead, twice the rate New gives
// f at its target load (or, for f within a few bits of 32, the smallest
// bound the later generations can keep). Generation 0 gets half of it: its width is the
// given f, or the smallest whose rate at the target load is at most B/2.
// The bounds of the tables may add up to budgetShare × B: the rest is a
// margin, because a measured rate varies around its expectation (by ±5σ,
// about ±11 %, over 10 million lookups at 0.0116 %) and the promise is
// about measured rates. Each table's share
// is bounded with the most it can ever hold: a table is never filled beyond
// limitLoad of its slots, so its rate stays below 2·b·limitLoad/(2^f − 1)
// however full it gets; tables fill to about 0.97 of that in practice.
//
// Generation 0 gets the configured width. The rest of the budget, less a
// reserve of 1/32 of it, is spread over the generations that take the
// filter to growthHorizon (1000) times its initial capacity: each one gets
// an equal share of what the earlier ones left, and the smallest width
// whose bound fits in that share. Rounding to whole bits leaves some of
// each share unspent, and it flows on to the later (larger) generations,
// which so get the narrower fingerprints where they matter most for
// memory. Past the horizon the generations go in windows of the horizon's
// length: each window spreads half of what is left evenly over its
// generations, one more bit per window (per growthHorizon-fold growth), so
// the rate stays within its bound past the horizon too. No share leaves
// less than the later generations need at 32 bits each up to the one that
// takes the tables to maxChainKeys keys (a rule that binds only for the
// smallest bounds); a generation whose share even 32 bits cannot meet
// takes 32 bits. newGrowth refuses a bound the schedule cannot keep
// with fingerprints of at most 32 bits until the tables hold maxChainKeys
// in all, and raises one derived from a given width to what it can keep.
//
// Spreading the budget evenly is what minimises the average width over
// the growth: a share of 1/H of the budget costs log2(H) bits more than
// the base width, and any uneven split of the same budget costs more on
// average (the logarithm is concave). With 4-slot buckets and growth 2 the
// generations after the first get 3 or 4 extra bits: a 16-bit filter grown
// 1000-fold has tables of 16, then 20 (seven of them), then 19 (two) bits,
// and its bounds add up to 1.84ε.
const (
	// growthHorizon is the growth, relative to the initial capacity, up to
	// which the false-positive budget is spread evenly.
	growthHorizon = 1000
	// budgetShare is the part of the bound B the tables' bounds may add up
	// to.
	budgetShare = 15.0 / 16
	// DefaultGrowth is the capacity ratio of successive tables of a
	// growing filter.
	DefaultGrowth = 2.0
	// MinGrowth and MaxGrowth bound WithGrowth.
	MinGrowth = 1.25
	MaxGrowth = 16.0
	// maxChainKeys is how many keys in all a growing filter's tables must
	// reach before their fingerprints may need more than 32 bits to keep
	// the bound (2^36: about 6.9·10^10 keys, over 100 GB of tables).
	maxChainKeys = 1 << 36
	// maxGenerations bounds the generation number of a table. A chain
	// reaches the largest table size (2^32 buckets) within about 110
	// generations even at the slowest growth from capacity 1, so this is
	// never reached by adding keys; it bounds the work of checking a file.
	maxGenerations = 1 << 12
)

// WithGrowth sets the capacity ratio of successive tables of a growing
// filter: when the newest table of a [Scalable] (or of a [Concurrent] given
// this option) is full, a table factor times its capacity is added. The
// default is 2. A smaller factor wastes less memory in the newest, partly
// filled table but makes more tables to probe and needs wider
// fingerprints to keep the same rate; factor must be in [1.25, 16]. Given
// to NewConcurrent it makes the filter grow instead of returning ErrFull
// (but for a next table this platform cannot make: see [Scalable.Add]).
//
// Choosing it: an absent key is looked for in every table, and a present
// one in about factor/(factor−1) tables on average, so the factor trades
// lookups against memory. Over a growth of 1000×, 2 makes ten tables at
// the least memory, 8 five and 16 four: fewer tables make lookups of
// absent keys cheaper and cost more memory, as the newest table, which
// grows in place at a lower load, holds more of the keys. Keep 2 unless
// lookups of absent keys dominate and memory is cheap (docs/benchmarks.md,
// "Growth", has the trade measured).
func WithGrowth(factor float64) Option {
	return func(c *config) error {
		if !(factor >= MinGrowth && factor <= MaxGrowth) {
			return fmt.Errorf("%w: growth factor %v outside [%v, %v]", ErrInvalidParameter, factor, MinGrowth, MaxGrowth)
		}
		c.growth = factor
		return nil
	}
}

// schedule holds the parameters that decide every generation of a growing
// filter. It is immutable once built.
type schedule struct {
	slots   uint64
	f0      uint64 // fingerprint bits of generation 0
	semi    bool
	initial uint64  // capacity of generation 0
	factor  float64 // capacity ratio of successive generations
	bound   float64 // B: the chain's rate stays at most B
	horizon uint32  // generations after 0 that reach growthHorizon × initial
	last    uint32  // the generation whose tables, with the earlier ones, reach maxChainKeys
}

// growReserve is R, the reserve bits of a table growing in place
// (chain.Growing): it starts at 1/2^R of its generation's size. Each
// reserve bit costs a bit per slot until the table's size tells it, and
// each halving of the first size saves what the empty start costs; at 4
// the two about balance. Frozen: generations' bucket counts are multiples
// of 2^(R+1), and the encoding is checked against them.
const growReserve = 4

// reserveOf is R for a generation of width f.
func (g *schedule) reserveOf(f uint64) uint64 {
	return reserveBits(growReserve, f)
}

// reserveBits is R for a generation of width f in a chain whose tables
// grow in place with up to r reserve bits: r, or fewer where f+R would
// pass the widest slot.
func reserveBits(r, f uint64) uint64 {
	return min(r, MaxFingerprintBits-f)
}

// newGrowth checks the parameters of a growing filter and derives the
// rest: the bound B is the rate WithFalsePositiveRate gave, with a first
// width that meets half of it, or twice the rate of the given width at its
// target load, raised if need be to what the later, wider generations can
// keep (widenBound).
func newGrowth(initial uint64, c config) (schedule, error) {
	if c.segments > 1 {
		return schedule{}, fmt.Errorf("%w: a growing filter takes no segments", ErrInvalidParameter)
	}
	if c.buckets != 0 {
		return schedule{}, fmt.Errorf("%w: a growing filter takes no bucket count", ErrInvalidParameter)
	}
	g := schedule{
		slots:   uint64(c.slots),
		f0:      uint64(c.fpBits),
		semi:    c.semi,
		initial: initial,
		factor:  c.growth,
		bound:   c.fpr,
	}
	if g.factor == 0 {
		g.factor = DefaultGrowth
	}
	if g.bound == 0 {
		g.bound = 2 * expectedFPR(targetLoad(g.slots, g.f0), g.slots, g.f0)
	} else {
		f, ok := fingerprintBitsFor(g.bound/2, g.slots)
		if !ok {
			return schedule{}, fmt.Errorf("%w: false-positive rate %v is below what a growing filter of 32-bit fingerprints reaches", ErrInvalidParameter, g.bound)
		}
		g.f0 = uint64(f)
	}
	if c.fpr == 0 {
		if err := g.widenBound(); err != nil {
			return schedule{}, err
		}
	}
	if err := g.check(); err != nil {
		return schedule{}, err
	}
	return g, nil
}

// checkFirstTable refuses a first table this platform cannot make
// (checkTableBytes): the constructors make it whole at once, with the
// fingerprints of the schedule's bound, which may be wider than the ones
// the capacity's plan has.
func (g *schedule) checkFirstTable() error {
	return checkTableBytes(g.tableWords(g.at(0), false) * 8)
}

// tableWords returns the words (the padding word included) of the one
// slice that holds generation gen's table: allocated whole, or, inPlace
// (the generation's table grows in place: a Scalable's after the first,
// when it has reserve bits), the most it holds at once as it grows
// (chain.MostWords), which is more than its full size.
func (g *schedule) tableWords(gen generation, inPlace bool) uint64 {
	if r := g.reserveOf(gen.fpBits); inPlace && gen.k > 0 && r > 0 {
		return chain.MostWords(gen.numBuckets, g.slots, gen.fpBits, r, g.semi)
	}
	layout := table.Layout(gen.numBuckets, g.slots, gen.fpBits, g.semi)
	return layout.PayloadWords() + 1
}

// Errors of a growing filter that cannot add its next table. The insert
// that needed the table fails as a full Filter's does, with ErrFull, and
// leaves the filter as it was; copies of keys it holds still go in, and
// inserts go on failing until deletes make room.
var (
	errNextTableTooLarge = fmt.Errorf("%w: the growing filter's next table is larger than this platform's largest slice", ErrFull)
	errLastGeneration    = fmt.Errorf("%w: the growing filter has reached its last generation", ErrFull)
)

// nextTable returns the generation after k, whose table a chain adds when
// its newest table, of generation k, is full; or an error wrapping ErrFull
// (errNextTableTooLarge, errLastGeneration) when the chain cannot add it:
// this platform cannot make its table (tableWords; inPlace as there), or k
// is the last generation (unreachable: the tables reach 2^32 buckets long
// before).
func (g *schedule) nextTable(k uint32, inPlace bool) (generation, error) {
	if k+1 >= maxGenerations {
		return generation{}, errLastGeneration
	}
	next := g.at(k + 1)
	if g.tableWords(next, inPlace)*8 > maxTableBytes {
		return generation{}, errNextTableTooLarge
	}
	return next, nil
}

// check validates the parameters (as given by options or read from a file)
// and sets the horizon.
func (g *schedule) check() error {
	if err := g.checkShape(); err != nil {
		return err
	}
	if !g.boundKept() {
		return fmt.Errorf("%w: false-positive bound %v is too small for a growing filter of %d-slot buckets: before its tables hold 2^36 keys they would need fingerprints of more than %d bits (give a larger rate or initial capacity, or use a fixed-size filter)",
			ErrInvalidParameter, g.bound, g.slots, MaxFingerprintBits)
	}
	return nil
}

// checkShape validates the parameters but for whether the bound can be kept,
// and sets the horizon.
func (g *schedule) checkShape() error {
	switch {
	case !validBucketSize(g.slots):
		return fmt.Errorf("%w: bucket size %d", ErrInvalidParameter, g.slots)
	case g.f0 < minFingerprintBits(g.slots) || g.f0 > MaxFingerprintBits:
		return fmt.Errorf("%w: fingerprint bits %d", ErrInvalidParameter, g.f0)
	case g.semi && g.slots != 4:
		return fmt.Errorf("%w: semi-sorting needs 4-slot buckets", ErrInvalidParameter)
	case !(g.factor >= MinGrowth && g.factor <= MaxGrowth):
		return fmt.Errorf("%w: growth factor %v", ErrInvalidParameter, g.factor)
	case !(g.bound > 0 && g.bound < 2):
		// Twice the rate of a given width exceeds 1 for the narrowest
		// fingerprints in 8-slot buckets: a vacuous bound, but a valid one.
		return fmt.Errorf("%w: false-positive bound %v", ErrInvalidParameter, g.bound)
	case g.initial == 0 || g.initial > maxCapacity(g.slots, g.f0):
		return fmt.Errorf("%w: initial capacity %d", ErrInvalidParameter, g.initial)
	}
	// The horizon counts generations of the unclipped capacity sequence.
	total, c := float64(g.initial), g.initial
	g.horizon = 0
	for total < growthHorizon*float64(g.initial) {
		c = nextCapacity(c, g.factor)
		total += float64(c)
		g.horizon++
	}
	// The last generation counts the capacities as generations of at
	// least 9 bits clip them (below 9 bits they clip lower: more keys).
	keys, c := g.initial, g.initial
	g.last = 0
	for keys < maxChainKeys && g.last+1 < maxGenerations {
		c = min(nextCapacity(c, g.factor), maxCapacity(g.slots, MaxFingerprintBits))
		keys += c
		g.last++
	}
	return nil
}

// boundKept reports whether the schedule keeps the bound, with
// fingerprints of at most 32 bits, until the tables hold maxChainKeys: the
// bounds of generations 0 to last add up to no more than the budget. It
// needs checkShape run.
func (g *schedule) boundKept() bool {
	it := g.generations()
	for it.cur.k < g.last {
		it.next()
	}
	return it.spent <= it.budget
}

// widenBound raises a bound derived from a given width, when that width
// leaves the later generations too little room to widen within 32 bits, to
// the smallest bound they can keep on a grid of 1 % steps. (Whole-bit
// widths make keeping the bound not monotone in it: a scan, not a
// bisection.)
func (g *schedule) widenBound() error {
	if err := g.checkShape(); err != nil {
		return err
	}
	for base, k := g.bound, 0; !g.boundKept(); k++ {
		g.bound = base * math.Pow(1.01, float64(k+1))
		if g.bound >= 1 {
			return fmt.Errorf("%w: a growing filter of %d-slot buckets cannot start at %d-bit fingerprints", ErrInvalidParameter, g.slots, g.f0)
		}
	}
	return nil
}

// nextCapacity is the capacity of the generation after one of capacity c:
// ⌈c·factor⌉, at least c+1. A single rounded product is the same on every
// platform, which keeps files portable.
func nextCapacity(c uint64, factor float64) uint64 {
	n := math.Ceil(float64(c) * factor)
	if n >= 1<<62 {
		return 1 << 62
	}
	return max(uint64(n), c+1)
}

// maxCapacity is the largest capacity a table of the shape can be planned
// for: 2^32 buckets at the target load, less room for what bucketsFor and
// shape add (the small-table margin, under 10^-5 of a table this large,
// and rounding up to a multiple of 2^(R+1) buckets).
func maxCapacity(slots, fpBits uint64) uint64 {
	return uint64(float64(maxBuckets-64) * float64(slots) * targetLoad(slots, fpBits) * (1 - 1e-5))
}

// limitLoad is the fraction of its slots a table of a growing filter may
// fill: a little above the load it is sized for, which is about where
// inserts start to fail, so the limit rarely binds; it exists so that each
// table's share of the false-positive budget is a bound, not an estimate.
func limitLoad(slots, fpBits uint64) float64 {
	return min(1, float64(targetLoad(slots, fpBits)+0.05))
}

// rateBound is the most a table of the shape, never fuller than
// limitLoad, adds to the false-positive rate: 2·b·load/(2^f − 1), the
// union bound over the 2b slots a key is compared with. It uses only
// correctly rounded arithmetic, so it is the same on every platform.
func rateBound(slots, fpBits uint64) float64 {
	return float64(float64(2*slots)*limitLoad(slots, fpBits)) / float64(uint64(1)<<fpBits-1)
}

// generation describes the table of one generation.
type generation struct {
	k          uint32
	capacity   uint64
	fpBits     uint64
	numBuckets uint64
	limit      uint64  // most slots the table may fill
	bound      float64 // the most it adds to the false-positive rate
}

// generations walks the generations of a growth from 0: call next to step.
type generations struct {
	g      *schedule
	cur    generation
	spent  float64 // Σ bound over generations 0..cur.k
	budget float64
	window float64 // past the horizon: the share of each generation of the current window
}

func (g *schedule) generations() *generations {
	it := &generations{g: g, budget: float64(budgetShare) * g.bound}
	it.cur = g.shape(0, g.initial, g.f0)
	it.spent = it.cur.bound
	return it
}

// shape completes the generation of capacity c and width f.
func (g *schedule) shape(k uint32, c, f uint64) generation {
	c = min(c, maxCapacity(g.slots, f))
	m, _ := bucketsFor(c, g.slots, f) // c <= maxCapacity: always fits (TestMaxCapacityFits)
	if r := g.reserveOf(f); r > 0 {
		// A multiple of 2^(R+1): the growing table's halvings stay even.
		// maxBuckets is one too, so m stays within it.
		unit := uint64(2) << r
		m = (m + unit - 1) / unit * unit
	}
	return generation{
		k:          k,
		capacity:   c,
		fpBits:     f,
		numBuckets: m,
		limit:      uint64(limitLoad(g.slots, f) * float64(m*g.slots)),
		bound:      rateBound(g.slots, f),
	}
}

// next advances to the next generation and returns it.
func (it *generations) next() generation {
	g := it.g
	k := it.cur.k + 1
	remaining := it.budget - it.spent
	var share float64
	switch {
	case k <= g.horizon:
		share = (remaining - it.budget/32) / float64(g.horizon-k+1)
	default:
		if (k-g.horizon-1)%g.horizon == 0 {
			// A window starts: half of what is left, spread over it.
			it.window = remaining / 2 / float64(g.horizon)
		}
		share = it.window
	}
	if k < g.last {
		// Leave enough for 32-bit tables up to the last generation.
		share = min(share, remaining-float64(g.last-k)*rateBound(g.slots, MaxFingerprintBits))
	}
	f := g.f0
	for f < MaxFingerprintBits && rateBound(g.slots, f) > share {
		f++
	}
	it.cur = g.shape(k, nextCapacity(it.cur.capacity, g.factor), f)
	it.spent += it.cur.bound
	return it.cur
}

// at returns generation k.
func (g *schedule) at(k uint32) generation {
	it := g.generations()
	for it.cur.k < k {
		it.next()
	}
	return it.cur
}

// chainState is a growing filter's chain as its encoding holds it: the
// schedule, the seed and kicks every table shares, and the tables, oldest
// first. A Scalable is one (with the probe of its lookups); a Concurrent
// with WithGrowth makes one of its tables to encode them, and takes its
// tables from a decoded one.
//
// Invariants:
//   - levels is oldest first; levels[k].Gen == levels[0].Gen+k, and each
//     table has the shape of its generation (schedule.at), or, the newest
//     only, is growing toward it (chain.Level.Grow).
//   - only the newest table receives fingerprints no table holds; an older
//     table gains only copies of fingerprints it holds (so a key matched by
//     no table never becomes matched by an older one).
//   - a table never holds more than its generation's limit of occupied
//     slots.
//   - overflow counters (copies a full table had no slot for) exist only
//     for (pair, fp) that have a slot copy in their table; extra is their
//     sum.
//   - with more than one table, the oldest holds at least one item.
type chainState struct {
	levels   []*chain.Level
	g        schedule
	seed     uint64
	maxKicks int
	extra    uint64 // Σ chain.Level.NOver
}

// dropEmpty releases the oldest tables while they hold nothing (a window
// of keys deleted in the order they were added empties them one by one),
// and reports whether it released any. The newest table always stays.
func (st *chainState) dropEmpty() bool {
	n := 0
	for n < len(st.levels)-1 && st.levels[n].Items() == 0 && st.levels[n].NOver == 0 {
		n++
	}
	if n == 0 {
		return false
	}
	st.levels = slices.Delete(st.levels, 0, n)
	return true
}

// validate checks the chain's invariants; each plain table's own are
// checked by its Multiset, a growing table's by its decoder.
func (st *chainState) validate() error {
	if len(st.levels) == 0 {
		return errors.New("no table")
	}
	var extra uint64
	for i, lv := range st.levels {
		if i > 0 && lv.Gen != st.levels[i-1].Gen+1 {
			return fmt.Errorf("table %d is generation %d after %d", i, lv.Gen, st.levels[i-1].Gen)
		}
		if lv.Occupied() > lv.Limit {
			return fmt.Errorf("table %d holds %d slots, more than its limit %d", i, lv.Occupied(), lv.Limit)
		}
		if lv.Grow != nil && i != len(st.levels)-1 {
			return fmt.Errorf("table %d grows but is not the newest", i)
		}
		if err := lv.CheckOver(); err != nil {
			return fmt.Errorf("table %d: %w", i, err)
		}
		if extra+lv.NOver < extra {
			return errors.New("overflow counters overflow")
		}
		extra += lv.NOver
	}
	if extra != st.extra {
		return fmt.Errorf("overflow copies %d, recorded %d", extra, st.extra)
	}
	if first := st.levels[0]; len(st.levels) > 1 && first.Items() == 0 && first.NOver == 0 {
		return errors.New("the oldest of several tables is empty")
	}
	return nil
}
