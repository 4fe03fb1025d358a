package server

// The Bloom filter commands, RedisBloom's BF.* group. A key holds a
// bloom.Scalable, which adds layers as items arrive with its rate staying
// at most the one asked for, or with NONSCALING a bloom.Filter (blocked),
// which refuses new items once it holds its capacity, as RedisBloom's
// does.

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/dedupkit/cuckoo/bloom"
)

// Defaults of a Bloom filter created by BF.ADD, BF.MADD or BF.INSERT on a
// missing key: RedisBloom's bf-error-rate, bf-initial-size and
// bf-expansion-factor.
const (
	bfDefaultErrorRate = 0.01
	bfDefaultCapacity  = 100
	bfDefaultExpansion = 2
)

var bfCommands = []*command{
	{name: "bf.reserve", arity: -1, flags: flagWrite | flagDenyOOM | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Creates a new Bloom filter", exec: handle(parseBFReserve)},
	{name: "bf.add", arity: -1, flags: flagWrite | flagDenyOOM | flagFast | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Adds an item to a Bloom filter", exec: handle(parseBFAdd)},
	{name: "bf.madd", arity: -1, flags: flagWrite | flagDenyOOM | flagFast | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Adds one or more items to a Bloom filter", exec: handle(parseBFAdd)},
	{name: "bf.insert", arity: -1, flags: flagWrite | flagDenyOOM | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Adds one or more items to a Bloom filter, creating it if needed", exec: handle(parseBFInsert)},
	{name: "bf.exists", arity: -1, flags: flagReadonly | flagFast | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Checks whether an item may exist in a Bloom filter", exec: handle(parseBFExists)},
	{name: "bf.mexists", arity: -1, flags: flagReadonly | flagFast | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Checks whether items may exist in a Bloom filter", exec: handle(parseBFExists)},
	{name: "bf.info", arity: -1, flags: flagReadonly | flagFast | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Returns information about a Bloom filter", exec: handle(parseBFInfo)},
	{name: "bf.card", arity: -1, flags: flagReadonly | flagFast | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Returns the number of items added to a Bloom filter", exec: handle(parseBFCard)},
	{name: "bf.scandump", arity: -1, flags: flagReadonly | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Begins or continues a dump of a Bloom filter", exec: handle(parseScanDump(kindBF))},
	{name: "bf.loadchunk", arity: -1, flags: flagWrite | flagDenyOOM | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Restores a Bloom filter from a dump", exec: handle(parseLoadChunk(kindBF))},
}

// bfParams are the parameters of a new Bloom filter.
type bfParams struct {
	errorRate  float64
	capacity   uint64
	expansion  uint64 // 0 with nonScaling
	nonScaling bool
	seed       uint64
	seeded     bool
}

func defaultBFParams() bfParams {
	return bfParams{errorRate: bfDefaultErrorRate, capacity: bfDefaultCapacity, expansion: bfDefaultExpansion}
}

// estimatedBytes is the memory of the first layer, with room for the
// blocked layout and a scalable filter's tighter first rate.
func (p *bfParams) estimatedBytes() float64 {
	rate := p.errorRate
	if !p.nonScaling {
		rate *= 1 - bloom.DefaultTightening
	}
	return float64(p.capacity) * -math.Log(rate) / (math.Ln2 * math.Ln2) / 8 * 1.5
}

func (p *bfParams) newObject(c *call) (*object, error) {
	s := c.s
	if !p.seeded {
		p.seed, p.seeded = rand.Uint64(), true
	}
	size := p.estimatedBytes()
	// Recovery recreates what was accepted, whatever the limits are now.
	if !c.replay && size > float64(s.cfg.MaxFilterBytes) {
		return nil, errNoMemoryFilter
	}
	if !c.replay && s.overMemory(int64(size)) {
		return nil, errOOM
	}
	v := &bfValue{expansion: p.expansion}
	var err error
	if p.nonScaling {
		v.f, err = bloom.New(p.capacity, p.errorRate, bloom.WithSeed(p.seed))
	} else {
		g := growth(p.expansion, bloom.MinGrowth, bloom.MaxGrowth)
		v.s, err = bloom.NewScalable(p.capacity, p.errorRate, bloom.WithGrowth(g), bloom.WithSeed(p.seed))
	}
	if err != nil {
		return nil, errBFCreate
	}
	return &object{kind: kindBF, bf: v}, nil
}

// reserveArgs returns the BF.RESERVE command that creates this filter, as
// the log records a creation.
func (p *bfParams) reserveArgs(key []byte) [][]byte {
	args := [][]byte{[]byte("BF.RESERVE"), key,
		strconv.AppendFloat(nil, p.errorRate, 'g', -1, 64), strconv.AppendUint(nil, p.capacity, 10)}
	if p.nonScaling {
		args = append(args, []byte("NONSCALING"))
	} else {
		args = append(args, []byte("EXPANSION"), strconv.AppendUint(nil, p.expansion, 10))
	}
	return append(args, []byte("SEED"), strconv.AppendUint(nil, p.seed, 10))
}

// BF.RESERVE key error_rate capacity [EXPANSION e] [NONSCALING] [SEED s]

type bfReserve struct {
	key []byte
	p   bfParams
}

func parseBFReserve(args [][]byte) (bfReserve, error) {
	if len(args) < 4 || len(args) > 9 {
		return bfReserve{}, errArity
	}
	r := bfReserve{key: args[1], p: defaultBFParams()}
	rate, ok := parseFloat(args[2])
	if !ok {
		return r, errBFBadErrorRate
	}
	if rate <= 0 || rate >= 1 {
		return r, errBFErrorRateRange
	}
	if rate < bloom.MinFalsePositiveRate {
		return r, errBFErrorRateMin
	}
	capacity, ok := parseInt(args[3])
	if !ok {
		return r, errBFBadCapacity
	}
	if capacity <= 0 {
		return r, errBFCapacityRange
	}
	r.p.errorRate, r.p.capacity = rate, uint64(capacity)
	expansionGiven := false
	for i := 4; i < len(args); i++ {
		switch {
		case is(args[i], "NONSCALING"):
			r.p.nonScaling = true
		case is(args[i], "EXPANSION"):
			if i+1 == len(args) {
				return r, errBFNoExpansion
			}
			i++
			n, ok := parseInt(args[i])
			if !ok || n < 1 {
				return r, errBFBadExpansion
			}
			r.p.expansion, expansionGiven = uint64(n), true
		case is(args[i], "SEED"):
			if i+1 == len(args) {
				return r, errArity
			}
			i++
			n, ok := parseUint(args[i])
			if !ok {
				return r, errCFParseSeed
			}
			r.p.seed, r.p.seeded = n, true
		default:
			return r, errUnknownArgument
		}
	}
	if r.p.nonScaling {
		if expansionGiven {
			return r, errBFNonScalingExpand
		}
		r.p.expansion = 0
	}
	return r, nil
}

func (r bfReserve) run(c *call) { reserve(c, r.key, kindBF, &r.p) }

// bfLockOrCreate is cfLockOrCreate for Bloom filters, created with p.
func bfLockOrCreate(c *call, key []byte, create bool, p bfParams) (*object, uint64, [][]byte, error) {
	o, epoch, err := c.s.ks.writeLock(key, kindBF)
	if err != nil || o != nil || !create {
		if o == nil && err == nil {
			err = errNotFound
		}
		return o, epoch, nil, err
	}
	q := p // only the creation path copies the parameters to the heap
	return createLocked(c, key, &q)
}

// bfAddItems adds items to o's filter and writes one reply per item: 1
// added, 0 already present (or a false positive), or the error of a full
// NONSCALING filter. It reports whether any item was added.
func bfAddItems(c *call, o *object, items [][]byte) bool {
	changed := false
	for _, item := range items {
		added, err := o.bf.addIfAbsent(item)
		switch {
		case err != nil:
			c.fail(err)
		case added:
			changed = true
			c.w.Int(1)
		default:
			c.w.Int(0)
		}
	}
	return changed
}

// BF.ADD key item, BF.MADD key item...

type bfAdd struct{ keyItems }

func parseBFAdd(args [][]byte) (bfAdd, error) {
	r, err := parseKeyItems(args, "BF.MADD")
	return bfAdd{r}, err
}

func (r bfAdd) run(c *call) {
	o, epoch, reserve, err := bfLockOrCreate(c, r.key, true, defaultBFParams())
	if err != nil {
		c.fail(err)
		return
	}
	defer c.s.ks.unlockWrite(o)
	if reserve != nil {
		c.log(epoch, reserve)
	}
	if r.multi {
		c.w.Array(len(r.items))
	}
	if bfAddItems(c, o, r.items) {
		c.log(epoch, c.args)
	}
}

// BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE]
// [NONSCALING] ITEMS item...: options recognised by their first letters,
// as RedisBloom does.

type bfInsert struct {
	key      []byte
	p        bfParams
	noCreate bool
	items    [][]byte
}

func parseBFInsert(args [][]byte) (bfInsert, error) {
	if len(args) < 4 {
		return bfInsert{}, errArity
	}
	r := bfInsert{key: args[1], p: defaultBFParams()}
	capacity, expansion := int64(r.p.capacity), int64(r.p.expansion)
	i := 2
	for i < len(args) && r.items == nil {
		arg := args[i]
		switch lowerFirst(arg) {
		case 'i':
			i++
			if i == len(args) {
				return r, errArity
			}
			r.items = args[i:]
		case 'e':
			i++
			if i == len(args) {
				return r, errArity
			}
			if len(arg) > 1 && lowerFirst(arg[1:]) == 'r' {
				f, ok := parseFloat(args[i])
				if !ok {
					return r, errBFInsertErrorRate
				}
				r.p.errorRate = f
			} else {
				n, ok := parseInt(args[i])
				if !ok {
					return r, errBFInsertExpansion
				}
				expansion = n
			}
			i++
		case 'c':
			i++
			if i == len(args) {
				return r, errArity
			}
			n, ok := parseInt(args[i])
			if !ok {
				return r, errBFInsertCapacity
			}
			capacity = n
			i++
		case 'n':
			if len(arg) > 2 && lowerFirst(arg[2:]) == 'c' {
				r.noCreate = true
			} else {
				r.p.nonScaling = true
			}
			i++
		default:
			return r, errUnknownArgument
		}
	}
	if r.items == nil {
		return r, errArity
	}
	if r.p.errorRate <= 0 || r.p.errorRate >= 1 || capacity < 1 || expansion < 1 {
		return r, errBFBadArgument
	}
	if r.p.errorRate < bloom.MinFalsePositiveRate {
		return r, errBFErrorRateMin
	}
	r.p.capacity, r.p.expansion = uint64(capacity), uint64(expansion)
	if r.p.nonScaling {
		r.p.expansion = 0
	}
	return r, nil
}

func (r bfInsert) run(c *call) {
	o, epoch, reserve, err := bfLockOrCreate(c, r.key, !r.noCreate, r.p)
	if err != nil {
		c.fail(err)
		return
	}
	defer c.s.ks.unlockWrite(o)
	if reserve != nil {
		c.log(epoch, reserve)
	}
	c.w.Array(len(r.items))
	if bfAddItems(c, o, r.items) {
		c.log(epoch, c.args)
	}
}

// BF.EXISTS key item, BF.MEXISTS key item...: 0 for a missing key or one
// of another type, as RedisBloom answers.

type bfExists struct{ keyItems }

func parseBFExists(args [][]byte) (bfExists, error) {
	r, err := parseKeyItems(args, "BF.MEXISTS")
	return bfExists{r}, err
}

func (r bfExists) run(c *call) {
	o, _ := c.s.ks.readLock(r.key, kindBF)
	if r.multi {
		c.w.Array(len(r.items))
	}
	for _, item := range r.items {
		var n int64
		if o != nil && o.bf.contains(item) {
			n = 1
		}
		c.w.Int(n)
	}
	if o != nil {
		o.mu.RUnlock()
	}
}

// BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION]

type bfInfo struct {
	key   []byte
	field string // "" for all
}

var bfInfoFields = []struct{ arg, name string }{
	{"CAPACITY", "Capacity"},
	{"SIZE", "Size"},
	{"FILTERS", "Number of filters"},
	{"ITEMS", "Number of items inserted"},
	{"EXPANSION", "Expansion rate"},
}

func parseBFInfo(args [][]byte) (bfInfo, error) {
	if len(args) != 2 && len(args) != 3 {
		return bfInfo{}, errArity
	}
	r := bfInfo{key: args[1]}
	if len(args) == 3 {
		for _, f := range bfInfoFields {
			if is(args[2], f.arg) {
				r.field = f.arg
			}
		}
		if r.field == "" {
			return r, errBFInfoField
		}
	}
	return r, nil
}

func (r bfInfo) run(c *call) {
	o := c.readExisting(r.key, kindBF)
	if o == nil {
		return
	}
	v := o.bf
	vals := map[string]int64{
		"CAPACITY":  int64(v.capacity()),
		"SIZE":      int64(v.sizeInBytes()),
		"FILTERS":   int64(v.layers()),
		"ITEMS":     int64(v.len()),
		"EXPANSION": int64(v.expansion),
	}
	o.mu.RUnlock()
	value := func(arg string) {
		if arg == "EXPANSION" && v.f != nil {
			c.w.Null()
			return
		}
		c.w.Int(vals[arg])
	}
	if r.field != "" {
		c.w.Array(1)
		value(r.field)
		return
	}
	c.w.Array(2 * len(bfInfoFields))
	for _, f := range bfInfoFields {
		c.w.Simple(f.name)
		value(f.arg)
	}
}

// BF.CARD key: 0 for a missing key.

type bfCard struct{ key []byte }

func parseBFCard(args [][]byte) (bfCard, error) {
	if len(args) != 2 {
		return bfCard{}, errArity
	}
	return bfCard{args[1]}, nil
}

func (r bfCard) run(c *call) {
	o, err := c.s.ks.readLock(r.key, kindBF)
	if err != nil {
		c.fail(err)
		return
	}
	if o == nil {
		c.w.Int(0)
		return
	}
	n := o.bf.len()
	o.mu.RUnlock()
	c.w.Int(int64(n))
}
