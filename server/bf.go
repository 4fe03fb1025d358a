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

// bfMaxExpansion is RedisBloom's bound on a Bloom filter's EXPANSION,
// which this server keeps.
const bfMaxExpansion = 32768

var bfCommands = []*command{
	{name: "bf.reserve", arity: -1, flags: flagWrite | flagDenyOOM | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Creates a new Bloom filter", exec: handleSettings(parseBFReserve)},
	{name: "bf.add", arity: -1, flags: flagWrite | flagDenyOOM | flagFast | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Adds an item to a Bloom filter", exec: handle(parseBFAdd)},
	{name: "bf.madd", arity: -1, flags: flagWrite | flagDenyOOM | flagFast | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Adds one or more items to a Bloom filter", exec: handle(parseBFAdd)},
	{name: "bf.insert", arity: -1, flags: flagWrite | flagDenyOOM | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Adds one or more items to a Bloom filter, creating it if needed", exec: handleSettings(parseBFInsert)},
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

// defaultBFParams returns the parameters the settings give a Bloom
// filter: bf-error-rate, bf-initial-size and bf-expansion-factor (0:
// NONSCALING).
func defaultBFParams(fs *FilterSettings) bfParams {
	return bfParams{
		errorRate:  fs.BFErrorRate,
		capacity:   uint64(fs.BFInitialSize),
		expansion:  uint64(fs.BFExpansionFactor),
		nonScaling: fs.BFExpansionFactor == 0,
	}
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
		v.f, err = bloom.New(p.capacity, bloom.WithFalsePositiveRate(p.errorRate), bloom.WithSeed(p.seed))
	} else {
		g := growth(p.expansion, bloom.MinGrowth, bloom.MaxGrowth)
		v.s, err = bloom.NewScalable(p.capacity, bloom.WithFalsePositiveRate(p.errorRate), bloom.WithGrowth(g), bloom.WithSeed(p.seed))
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
//
// The checks run in RedisBloom 8's order: the rate, the capacity, then
// EXPANSION (0 means NONSCALING, as bf-expansion-factor 0 does); then this
// server's own: unknown options, SEED.

type bfReserve struct {
	key []byte
	p   bfParams
}

func parseBFReserve(args [][]byte, fs *FilterSettings) (bfReserve, error) {
	if len(args) < 4 || len(args) > 9 {
		return bfReserve{}, errArity
	}
	r := bfReserve{key: args[1], p: defaultBFParams(fs)}
	rate, ok := parseFloat(args[2])
	if !ok {
		return r, errBFBadErrorRate
	}
	if rate <= 0 || rate >= 1 {
		return r, errBFErrorRateRange
	}
	capacity, ok := parseInt(args[3])
	if !ok {
		return r, errBFBadCapacity
	}
	if capacity < 1 || capacity > bloom.MaxCapacity {
		return r, bfCapacityRange(bloom.MaxCapacity)
	}
	r.p.errorRate, r.p.capacity = min(rate, bfErrorRateCap), uint64(capacity)
	var expansion, seed []byte
	unknown := false
	for i := 4; i < len(args); i++ {
		switch {
		case is(args[i], "NONSCALING"):
			r.p.nonScaling = true
		case is(args[i], "EXPANSION"):
			if i+1 == len(args) {
				return r, errBFNoExpansion
			}
			i++
			if expansion == nil {
				expansion = args[i]
			}
		case is(args[i], "SEED") && i+1 < len(args):
			i++
			if seed == nil {
				seed = args[i]
			}
		default:
			unknown = true
		}
	}
	if expansion != nil {
		n, ok := parseInt(expansion)
		if !ok {
			return r, errBFBadExpansion
		}
		if n == 0 {
			r.p.nonScaling = true
		} else if r.p.nonScaling {
			return r, errBFNonScalingExpand
		}
		if n < 0 || n > bfMaxExpansion {
			return r, errBFExpansionRange
		}
		r.p.expansion = uint64(n)
	}
	if unknown {
		return r, errUnknownArgument
	}
	if rate < bloom.MinFalsePositiveRate {
		return r, errBFErrorRateMin
	}
	if seed != nil {
		if r.p.seed, r.p.seeded = parseUint(seed); !r.p.seeded {
			return r, errCFParseSeed
		}
	}
	if r.p.nonScaling {
		r.p.expansion = 0
	}
	return r, nil
}

func (r bfReserve) run(c *call) { reserve(c, r.key, kindBF, &r.p) }

// bfLockOrCreate is cfLockOrCreate for Bloom filters, created with p.
func bfLockOrCreate(c *call, key []byte, create bool, p bfParams) (*object, uint64, error) {
	o, epoch, err := c.s.ks.writeLock(key, kindBF)
	if err != nil || o != nil || !create {
		if o == nil && err == nil {
			err = errNotFound
		}
		return o, epoch, err
	}
	q := p // only the creation path copies the parameters to the heap
	return createLocked(c, key, &q)
}

// bfAddItems adds items to o's filter and writes one reply per item: true
// (1 in RESP2) added, false (0) already present or a false positive. A
// NONSCALING filter holding its capacity refuses a new item with an
// error, which ends the command, as in RedisBloom: the items after it
// are not added, and the multi commands' array holds the replies up to
// the error. It reports whether any item was added.
func bfAddItems(c *call, o *object, items [][]byte, multi bool) bool {
	if o.bf.f != nil && multi {
		return bfAddItemsFixed(c, o, items)
	}
	if multi {
		c.w.Array(len(items))
	}
	changed := false
	for _, item := range items {
		added, err := o.bf.addUnique(item)
		if err != nil {
			c.fail(err)
			break
		}
		changed = changed || added
		c.w.Bool(added)
	}
	return changed
}

// bfAddItemsFixed is bfAddItems for a multi command on a fixed filter,
// the one kind that can refuse an item: the array's length is known once
// the items are tried, so the outcomes wait in a buffer (on the stack for
// up to 64 items).
func bfAddItemsFixed(c *call, o *object, items [][]byte) bool {
	const refused = -1
	var buf [64]int8
	outcomes := buf[:0]
	changed := false
	for _, item := range items {
		added, err := o.bf.addUnique(item)
		if err != nil {
			outcomes = append(outcomes, refused)
			break
		}
		changed = changed || added
		outcomes = append(outcomes, boolInt8(added))
	}
	c.w.Array(len(outcomes))
	for _, v := range outcomes {
		if v == refused {
			c.fail(errBloomFull)
		} else {
			c.w.Bool(v == 1)
		}
	}
	return changed
}

func boolInt8(b bool) int8 {
	if b {
		return 1
	}
	return 0
}

// BF.ADD key item, BF.MADD key item...

type bfAdd struct{ keyItems }

func parseBFAdd(args [][]byte) (bfAdd, error) {
	r, err := parseKeyItems(args, "BF.MADD")
	return bfAdd{r}, err
}

func (r bfAdd) run(c *call) {
	bfAddRun(c, r.key, true, defaultBFParams(c.settings()), r.items, r.multi)
}

// bfAddRun runs BF.ADD, BF.MADD and BF.INSERT: it locks key's filter
// (creating it with p when create says so and it is missing), adds the
// items and logs what changed.
func bfAddRun(c *call, key []byte, create bool, p bfParams, items [][]byte, multi bool) {
	o, epoch, err := bfLockOrCreate(c, key, create, p)
	if err != nil {
		c.fail(err)
		return
	}
	defer c.s.ks.unlockWrite(o)
	if bfAddItems(c, o, items, multi) {
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

func parseBFInsert(args [][]byte, fs *FilterSettings) (bfInsert, error) {
	if len(args) < 4 {
		return bfInsert{}, errArity
	}
	r := bfInsert{key: args[1], p: defaultBFParams(fs)}
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
				if !ok || f <= 0 || f >= 1 {
					return r, errBFInsertErrorRate
				}
				if f < bloom.MinFalsePositiveRate {
					return r, errBFErrorRateMin
				}
				r.p.errorRate = min(f, bfErrorRateCap)
			} else {
				n, ok := parseInt(args[i])
				if !ok || n < 0 || n > bfMaxExpansion {
					return r, errBFInsertExpansion
				}
				r.p.expansion = uint64(n)
			}
			i++
		case 'c':
			i++
			if i == len(args) {
				return r, errArity
			}
			n, ok := parseInt(args[i])
			if !ok || n < 1 || n > bloom.MaxCapacity {
				return r, errBFInsertCapacity
			}
			r.p.capacity = uint64(n)
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
	if r.p.expansion == 0 {
		r.p.nonScaling = true
	}
	if r.p.nonScaling {
		r.p.expansion = 0
	}
	return r, nil
}

func (r bfInsert) run(c *call) { bfAddRun(c, r.key, !r.noCreate, r.p, r.items, true) }

// BF.EXISTS key item, BF.MEXISTS key item...: booleans in RESP3, integers
// in RESP2; false (0) for a missing key or one of another type, as
// RedisBloom answers.

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
		c.w.Bool(o != nil && o.bf.contains(item))
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
		"FILTERS":   int64(v.tables()),
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
		// RESP3: a map of the one field; RESP2: an array of its value.
		if c.w.Protocol() == 3 {
			c.w.Map(1)
			c.w.Simple(bfInfoName(r.field))
		} else {
			c.w.Array(1)
		}
		value(r.field)
		return
	}
	c.w.Map(len(bfInfoFields))
	for _, f := range bfInfoFields {
		c.w.Simple(f.name)
		value(f.arg)
	}
}

// bfInfoName returns the name BF.INFO gives the field of argument arg.
func bfInfoName(arg string) string {
	for _, f := range bfInfoFields {
		if f.arg == arg {
			return f.name
		}
	}
	return arg
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
