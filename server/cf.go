package server

// The cuckoo filter commands, RedisBloom's CF.* group. A key holds a
// cuckoo.Filter (EXPANSION 0: a fixed capacity, and CF.ADD fails with
// "Filter is full" past it) or a cuckoo.Scalable (EXPANSION e ≥ 1: it grows
// by tables e times larger, e taken between 1.25 and 16, and never fails).
// Unlike RedisBloom's, these filters never lose a stored item on a failed
// insert, take any number of duplicates, and offer fingerprints of any
// width (FINGERPRINT f, or FPR p to choose it).

import (
	"math/rand/v2"
	"strconv"

	"github.com/dedupkit/cuckoo"
)

// Defaults of a cuckoo filter created by CF.RESERVE without options, and by
// CF.ADD or CF.INSERT on a missing key.
const (
	cfDefaultCapacity  = 1024 // as RedisBloom's cf-initial-size
	cfDefaultExpansion = 2
	cfMaxIterations    = 65535 // RedisBloom's bound on MAXITERATIONS
	cfMaxBucketSize    = 255   // RedisBloom's bound on BUCKETSIZE
	cfMaxExpansion     = 32768 // RedisBloom's bound on EXPANSION
)

var cfCommands = []*command{
	{name: "cf.reserve", arity: -1, flags: flagWrite | flagDenyOOM | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Creates a new cuckoo filter", exec: handle(parseCFReserve)},
	{name: "cf.add", arity: -1, flags: flagWrite | flagDenyOOM | flagFast | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Adds an item to a cuckoo filter", exec: handle(parseCFAdd)},
	{name: "cf.addnx", arity: -1, flags: flagWrite | flagDenyOOM | flagFast | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Adds an item to a cuckoo filter if the item does not exist", exec: handle(parseCFAdd)},
	{name: "cf.insert", arity: -1, flags: flagWrite | flagDenyOOM | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Adds one or more items to a cuckoo filter, creating it if needed", exec: handle(parseCFInsert)},
	{name: "cf.insertnx", arity: -1, flags: flagWrite | flagDenyOOM | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Adds one or more items that do not exist to a cuckoo filter", exec: handle(parseCFInsert)},
	{name: "cf.exists", arity: -1, flags: flagReadonly | flagFast | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Checks whether an item may exist in a cuckoo filter", exec: handle(parseCFExists)},
	{name: "cf.mexists", arity: -1, flags: flagReadonly | flagFast | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Checks whether items may exist in a cuckoo filter", exec: handle(parseCFExists)},
	{name: "cf.count", arity: -1, flags: flagReadonly | flagFast | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Returns how many copies of an item may be in a cuckoo filter", exec: handle(parseCFExists)},
	{name: "cf.del", arity: -1, flags: flagWrite | flagFast | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Deletes an item from a cuckoo filter", exec: handle(parseCFDel)},
	{name: "cf.info", arity: -1, flags: flagReadonly | flagFast | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Returns information about a cuckoo filter", exec: handle(parseCFInfo)},
	{name: "cf.scandump", arity: -1, flags: flagReadonly | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Begins or continues a dump of a cuckoo filter", exec: handle(parseScanDump(kindCF))},
	{name: "cf.loadchunk", arity: -1, flags: flagWrite | flagDenyOOM | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Restores a cuckoo filter from a dump", exec: handle(parseLoadChunk(kindCF))},
}

// cfParams are the parameters of a new cuckoo filter.
type cfParams struct {
	capacity    uint64
	bucketSize  int
	maxIter     int
	expansion   uint64
	fpr         float64 // 0: fingerprint is used
	fingerprint int     // 0: the library's default, or fpr
	seed        uint64
	seeded      bool
	// buckets is the bucket count of a fixed filter (EXPANSION 0), 0
	// until it is built. The log records it (and the fingerprint width
	// built, in place of FPR), so that a replay builds the same table
	// whatever the library would plan today; only a replay may give it.
	buckets uint64
}

func defaultCFParams(capacity uint64) cfParams {
	return cfParams{
		capacity:   capacity,
		bucketSize: cuckoo.DefaultBucketSize,
		maxIter:    cuckoo.DefaultMaxKicks,
		expansion:  cfDefaultExpansion,
	}
}

// growth maps EXPANSION to the library's growth factor.
func growth(expansion uint64, lo, hi float64) float64 {
	return min(max(float64(expansion), lo), hi)
}

func (p *cfParams) options() []cuckoo.Option {
	opts := []cuckoo.Option{
		cuckoo.WithBucketSize(p.bucketSize),
		cuckoo.WithMaxKicks(p.maxIter),
		cuckoo.WithSeed(p.seed),
	}
	if p.fpr > 0 {
		opts = append(opts, cuckoo.WithFalsePositiveRate(p.fpr))
	} else if p.fingerprint > 0 {
		opts = append(opts, cuckoo.WithFingerprintBits(p.fingerprint))
	}
	if p.expansion > 0 {
		opts = append(opts, cuckoo.WithGrowth(growth(p.expansion, cuckoo.MinGrowth, cuckoo.MaxGrowth)))
	}
	return opts
}

// newObject builds the filter, after checking its size against the
// limits. It draws the seed when none was given.
func (p *cfParams) newObject(c *call) (*object, error) {
	s := c.s
	if !p.seeded {
		p.seed, p.seeded = rand.Uint64(), true
	}
	if p.buckets != 0 && !c.replay {
		return nil, errUnknownArgument
	}
	opts := p.options()
	planOpts := opts[:len(opts):len(opts)]
	if p.expansion > 0 {
		planOpts = opts[: len(opts)-1 : len(opts)-1] // NewPlan sizes the first table
	}
	switch {
	case p.expansion > 0:
		// A growing filter plans its first table at about the least
		// count, and takes shapes New refuses at this capacity (it adds a
		// table when one fills).
		planOpts = append(planOpts, cuckoo.WithBucketCount(leastCFBuckets(p.capacity, planOpts)))
	case c.replay && p.buckets == 0:
		// A record written before the log held bucket counts: the count
		// the library planned then, the least one.
		p.buckets = leastCFBuckets(p.capacity, planOpts)
		fallthrough
	case p.buckets != 0:
		opts = append(opts, cuckoo.WithBucketCount(p.buckets))
		planOpts = opts
	}
	plan, err := cuckoo.NewPlan(p.capacity, planOpts...)
	if err != nil {
		return nil, errCFCreate
	}
	// Recovery recreates what was accepted, whatever the limits are now.
	if !c.replay && int64(plan.TableBytes) > s.cfg.MaxFilterBytes {
		return nil, errNoMemoryFilter
	}
	if !c.replay && s.overMemory(int64(plan.TableBytes)) {
		return nil, errOOM
	}
	v := &cfValue{expansion: p.expansion}
	if p.expansion == 0 {
		if v.f, err = cuckoo.New(p.capacity, opts...); err == nil {
			p.buckets, p.fingerprint, p.fpr = v.f.NumBuckets(), v.f.FingerprintBits(), 0
		}
	} else {
		v.s, err = cuckoo.NewScalable(p.capacity, opts...)
	}
	if err != nil {
		return nil, errCFCreate
	}
	return &object{kind: kindCF, cf: v}, nil
}

// reserveArgs returns the CF.RESERVE command that creates this filter,
// every parameter spelled out, as the log records a creation.
func (p *cfParams) reserveArgs(key []byte) [][]byte {
	args := [][]byte{[]byte("CF.RESERVE"), key, strconv.AppendUint(nil, p.capacity, 10),
		[]byte("BUCKETSIZE"), strconv.AppendInt(nil, int64(p.bucketSize), 10),
		[]byte("MAXITERATIONS"), strconv.AppendInt(nil, int64(p.maxIter), 10),
		[]byte("EXPANSION"), strconv.AppendUint(nil, p.expansion, 10)}
	if p.fpr > 0 {
		args = append(args, []byte("FPR"), strconv.AppendFloat(nil, p.fpr, 'g', -1, 64))
	} else if p.fingerprint > 0 {
		args = append(args, []byte("FINGERPRINT"), strconv.AppendInt(nil, int64(p.fingerprint), 10))
	}
	if p.buckets != 0 {
		args = append(args, []byte("BUCKETS"), strconv.AppendUint(nil, p.buckets, 10))
	}
	return append(args, []byte("SEED"), strconv.AppendUint(nil, p.seed, 10))
}

// leastCFBuckets is the least bucket count of a fixed filter of capacity
// keys and options opts (cuckoo.Plan.LeastBuckets), or 0 when opts are
// invalid. A plan given a bucket count applies none of New's other sizing
// rules, so it reports the count even for a shape New now refuses at
// this capacity.
func leastCFBuckets(capacity uint64, opts []cuckoo.Option) uint64 {
	p, err := cuckoo.NewPlan(capacity, append(opts[:len(opts):len(opts)], cuckoo.WithBucketCount(1<<32))...)
	if err != nil {
		return 0
	}
	return p.LeastBuckets
}

// CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS n] [EXPANSION e]
// [FPR p] [FINGERPRINT f] [SEED s]

type cfReserve struct {
	key []byte
	p   cfParams
}

func parseCFReserve(args [][]byte) (cfReserve, error) {
	if len(args) < 3 || len(args)%2 == 0 {
		return cfReserve{}, errArity
	}
	r := cfReserve{key: args[1]}
	capacity, ok := parseInt(args[2])
	if !ok {
		return r, errCFBadCapacity
	}
	r.p = defaultCFParams(0)
	fpGiven := false
	for i := 3; i < len(args); i += 2 {
		opt, val := args[i], args[i+1]
		switch {
		case is(opt, "MAXITERATIONS"):
			n, ok := parseInt(val)
			if !ok {
				return r, errCFParseMaxIter
			}
			if n <= 0 || n > cfMaxIterations {
				return r, errCFMaxIterRange
			}
			r.p.maxIter = int(n)
		case is(opt, "BUCKETSIZE"):
			n, ok := parseInt(val)
			if !ok {
				return r, errCFParseBucket
			}
			if n <= 0 || n > cfMaxBucketSize {
				return r, errCFBucketRange
			}
			if n != 2 && n != 4 && n != 8 {
				return r, errCFBucketSupported
			}
			r.p.bucketSize = int(n)
		case is(opt, "EXPANSION"):
			n, ok := parseInt(val)
			if !ok {
				return r, errCFParseExpansion
			}
			if n < 0 || n > cfMaxExpansion {
				return r, errCFExpansionRange
			}
			r.p.expansion = uint64(n)
		case is(opt, "FPR"):
			f, ok := parseFloat(val)
			if !ok {
				return r, errCFParseFPR
			}
			if f <= 0 || f >= 1 {
				return r, errCFFPRRange
			}
			r.p.fpr = f
		case is(opt, "FINGERPRINT"):
			n, ok := parseInt(val)
			if !ok {
				return r, errCFParseFingerprint
			}
			if n < cuckoo.MinFingerprintBits || n > cuckoo.MaxFingerprintBits {
				return r, errCFFingerprintRange
			}
			r.p.fingerprint, fpGiven = int(n), true
		case is(opt, "SEED"):
			n, ok := parseUint(val)
			if !ok {
				return r, errCFParseSeed
			}
			r.p.seed, r.p.seeded = n, true
		case is(opt, "BUCKETS"): // the log's, see cfParams.buckets
			n, ok := parseUint(val)
			if !ok || n == 0 {
				return r, errUnknownArgument
			}
			r.p.buckets = n
		default:
			return r, errUnknownArgument
		}
	}
	if fpGiven && r.p.fpr > 0 {
		return r, errCFFPRAndFP
	}
	if capacity < 2*int64(r.p.bucketSize) {
		return r, errCFCapacityMin
	}
	r.p.capacity = uint64(capacity)
	if r.p.fpr > 0 {
		if _, err := cuckoo.NewPlan(r.p.capacity, cuckoo.WithBucketSize(r.p.bucketSize), cuckoo.WithFalsePositiveRate(r.p.fpr)); err != nil {
			return r, errCFFPRRange
		}
	}
	return r, nil
}

func (r cfReserve) run(c *call) { reserve(c, r.key, kindCF, &r.p) }

// cfLockOrCreate returns key's cuckoo filter locked for writing, creating
// a growing one of the given capacity when it is missing and create is
// true (see createLocked), and failing with errNotFound when it is missing
// and create is false. The parameters are made only to create, so that
// the common case allocates nothing.
func cfLockOrCreate(c *call, key []byte, create bool, capacity uint64) (*object, uint64, [][]byte, error) {
	o, epoch, err := c.s.ks.writeLock(key, kindCF)
	if err != nil || o != nil || !create {
		if o == nil && err == nil {
			err = errNotFound
		}
		return o, epoch, nil, err
	}
	p := defaultCFParams(capacity)
	return createLocked(c, key, &p)
}

// CF.ADD key item, CF.ADDNX key item

type cfAdd struct {
	key, item []byte
	nx        bool
}

func parseCFAdd(args [][]byte) (cfAdd, error) {
	if len(args) != 3 {
		return cfAdd{}, errArity
	}
	return cfAdd{key: args[1], item: args[2], nx: len(args[0]) == len("CF.ADDNX")}, nil
}

func (r cfAdd) run(c *call) {
	o, epoch, reserve, err := cfLockOrCreate(c, r.key, true, cfDefaultCapacity)
	if err != nil {
		c.fail(err)
		return
	}
	defer c.s.ks.unlockWrite(o)
	if reserve != nil {
		c.log(epoch, reserve)
	}
	added := true
	if r.nx {
		added, err = o.cf.addUnique(r.item)
	} else {
		err = o.cf.add(r.item)
	}
	if err != nil {
		c.fail(err)
		return
	}
	if added {
		c.log(epoch, c.args)
		c.w.Int(1)
		return
	}
	c.w.Int(0)
}

// CF.INSERT key [CAPACITY c] [NOCREATE] ITEMS item..., and CF.INSERTNX.
// Options are recognised by their first letter, as RedisBloom does.

type cfInsert struct {
	key      []byte
	capacity uint64
	noCreate bool
	nx       bool
	items    [][]byte
}

func parseCFInsert(args [][]byte) (cfInsert, error) {
	if len(args) < 4 {
		return cfInsert{}, errArity
	}
	r := cfInsert{key: args[1], capacity: cfDefaultCapacity, nx: len(args[0]) == len("CF.INSERTNX")}
	i := 2
	for i < len(args) && r.items == nil {
		switch lowerFirst(args[i]) {
		case 'c':
			i++
			if i == len(args) {
				return r, errArity
			}
			n, ok := parseInt(args[i])
			if !ok {
				return r, errCFBadCapacity
			}
			if n < 2*cuckoo.DefaultBucketSize {
				return r, errCFCapacityMin
			}
			r.capacity = uint64(n)
			i++
		case 'i':
			i++
			if i == len(args) {
				return r, errArity
			}
			r.items = args[i:]
		case 'n':
			r.noCreate = true
			i++
		default:
			return r, errUnknownArgument
		}
	}
	if r.items == nil {
		return r, errArity
	}
	return r, nil
}

func (r cfInsert) run(c *call) {
	o, epoch, reserve, err := cfLockOrCreate(c, r.key, !r.noCreate, r.capacity)
	if err != nil {
		c.fail(err)
		return
	}
	defer c.s.ks.unlockWrite(o)
	if reserve != nil {
		c.log(epoch, reserve)
	}
	changed := false
	c.w.Array(len(r.items))
	for _, item := range r.items {
		added := true
		var err error
		if r.nx {
			added, err = o.cf.addUnique(item)
		} else {
			err = o.cf.add(item)
		}
		switch {
		case err != nil:
			c.w.Int(-1)
		case added:
			changed = true
			c.w.Int(1)
		default:
			c.w.Int(0)
		}
	}
	if changed {
		c.log(epoch, c.args)
	}
}

// CF.EXISTS key item, CF.MEXISTS key item..., CF.COUNT key item. A missing
// key, or one of another type, holds nothing: 0 (as RedisBloom answers).

type cfExists struct {
	keyItems
	count bool
}

func parseCFExists(args [][]byte) (cfExists, error) {
	r, err := parseKeyItems(args, "CF.MEXISTS")
	return cfExists{r, is(args[0], "CF.COUNT")}, err
}

func (r cfExists) run(c *call) {
	o, _ := c.s.ks.readLock(r.key, kindCF)
	if r.multi {
		c.w.Array(len(r.items))
	}
	for _, item := range r.items {
		var n int64
		switch {
		case o == nil:
		case r.count:
			n = int64(o.cf.count(item))
		case o.cf.contains(item):
			n = 1
		}
		c.w.Int(n)
	}
	if o != nil {
		o.mu.RUnlock()
	}
}

// CF.DEL key item

type cfDel struct{ key, item []byte }

func parseCFDel(args [][]byte) (cfDel, error) {
	if len(args) != 3 {
		return cfDel{}, errArity
	}
	return cfDel{args[1], args[2]}, nil
}

func (r cfDel) run(c *call) {
	o, epoch, err := c.s.ks.writeLock(r.key, kindCF)
	if err != nil || o == nil {
		c.fail(errCFDelNotFound)
		return
	}
	defer c.s.ks.unlockWrite(o)
	if o.cf.del(r.item) {
		c.log(epoch, c.args)
		c.w.Int(1)
		return
	}
	c.w.Int(0)
}

// CF.INFO key

type cfInfo struct{ key []byte }

func parseCFInfo(args [][]byte) (cfInfo, error) {
	if len(args) != 2 {
		return cfInfo{}, errArity
	}
	return cfInfo{args[1]}, nil
}

func (r cfInfo) run(c *call) {
	o := c.readExisting(r.key, kindCF)
	if o == nil {
		return
	}
	v := o.cf
	fields := [...]struct {
		name string
		val  uint64
	}{
		{"Size", v.sizeInBytes()},
		{"Number of buckets", v.buckets()},
		{"Number of filters", uint64(v.tables())},
		{"Number of items inserted", v.len()},
		{"Number of items deleted", v.deletes},
		{"Bucket size", uint64(v.bucketSize())},
		{"Expansion rate", v.expansion},
		{"Max iterations", uint64(v.maxKicks())},
	}
	o.mu.RUnlock()
	c.w.Array(2 * len(fields))
	for _, f := range fields {
		c.w.Simple(f.name)
		c.w.Int(int64(f.val))
	}
}
