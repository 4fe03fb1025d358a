package server

// The cuckoo filter commands, RedisBloom's CF.* group. A key holds a
// cuckoo.Filter (EXPANSION 0: a fixed capacity, and CF.ADD fails with
// "Filter is full" past it) or a cuckoo.Scalable (EXPANSION e ≥ 1: it grows
// by tables e times larger, e taken between 1.25 and 16, and fails only on
// a 32-bit platform, as a full fixed filter does, once its next table
// would pass the largest slice there).
// Unlike RedisBloom's, these filters never lose a stored item on a failed
// insert, take any number of duplicates, and offer fingerprints of any
// width (FINGERPRINT f, or FPR p to choose it).

import (
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/replay"
)

// RedisBloom's bounds on CF.RESERVE's options, which this server keeps.
const (
	cfMaxIterations = 65535
	cfMaxExpansion  = 32768
)

var cfCommands = []*command{
	{name: "cf.reserve", arity: -1, flags: flagWrite | flagDenyOOM | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Creates a new cuckoo filter", exec: handleSettings(parseCFReserve)},
	{name: "cf.add", arity: -1, flags: flagWrite | flagDenyOOM | flagFast | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Adds an item to a cuckoo filter", exec: handle(parseCFAdd)},
	{name: "cf.addnx", arity: -1, flags: flagWrite | flagDenyOOM | flagFast | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Adds an item to a cuckoo filter if the item does not exist", exec: handle(parseCFAdd)},
	{name: "cf.insert", arity: -1, flags: flagWrite | flagDenyOOM | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Adds one or more items to a cuckoo filter, creating it if needed", exec: handleSettings(parseCFInsert)},
	{name: "cf.insertnx", arity: -1, flags: flagWrite | flagDenyOOM | flagModule, firstKey: 1, lastKey: 1, step: 1,
		summary: "Adds one or more items that do not exist to a cuckoo filter", exec: handleSettings(parseCFInsert)},
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
	// until it is built, and plan the plan version its table was sized
	// by (internal/replay), 0 until any cuckoo filter is built. The log
	// records both (and the fingerprint width built, in place of FPR),
	// so that a replay builds the same table whatever the library would
	// plan today; only a replay may give them. A creation logged without
	// them was planned by version replay.PlanLeast.
	buckets uint64
	plan    int
	window  time.Duration // WINDOW: a window filter (window.go); 0: none
}

// defaultCFParams returns the parameters of a cuckoo filter of capacity
// items that the settings give.
func defaultCFParams(fs *FilterSettings, capacity uint64) cfParams {
	return cfParams{
		capacity:   capacity,
		bucketSize: int(fs.CFBucketSize),
		maxIter:    int(fs.CFMaxIterations),
		expansion:  uint64(fs.CFExpansionFactor),
	}
}

// growth maps EXPANSION to the library's growth factor.
func growth(expansion uint64, lo, hi float64) float64 {
	return min(max(float64(expansion), lo), hi)
}

// options returns the options of the filter p describes but its growth:
// its shape (shapeOptions), kicks and seed.
func (p *cfParams) options() []cuckoo.Option {
	return append(p.shapeOptions(), cuckoo.WithMaxKicks(p.maxIter), cuckoo.WithSeed(p.seed))
}

// sizeOptions returns the options that size the table of p's filter (the
// first one of a growing filter) as it was or is to be built: the logged
// bucket count, or else the logged plan version, or else none (the
// library's current plan). A growing filter's tables have the least
// count, which plan version replay.PlanLeast gives, in every version; so
// NewPlan sizes its first table as NewScalable does, and takes the shapes
// New refuses at this capacity (a growing filter adds a table when one
// fills).
func (p *cfParams) sizeOptions() []cuckoo.Option {
	switch {
	case p.expansion > 0:
		return []cuckoo.Option{replay.PlanVersion[cuckoo.Option](replay.PlanLeast)}
	case p.buckets != 0:
		return []cuckoo.Option{replay.BucketCount[cuckoo.Option](p.buckets)}
	case p.plan != 0:
		return []cuckoo.Option{replay.PlanVersion[cuckoo.Option](p.plan)}
	}
	return nil
}

// checkReplayOnly refuses BUCKETS and PLAN from a client, and a plan
// version this server does not know from the log. A creation logged
// without a plan version gets the one it was planned by.
func (p *cfParams) checkReplayOnly(c *call) error {
	switch {
	case !c.replay && (p.buckets != 0 || p.plan != 0):
		return errUnknownArgument
	case p.plan > replay.CurrentPlan:
		return errCFNewerPlan
	case c.replay && p.plan == 0 && p.buckets == 0 && p.expansion == 0 && p.window == 0:
		p.plan = replay.PlanLeast
	}
	return nil
}

// newObject builds the filter, after checking its size against the
// limits. It draws the seed when none was given.
func (p *cfParams) newObject(c *call) (*object, error) {
	if err := p.checkReplayOnly(c); err != nil {
		return nil, err
	}
	if p.plan == 0 {
		p.plan = replay.CurrentPlan
	}
	if p.window > 0 {
		return p.newWindowObject(c)
	}
	s := c.s
	if !p.seeded {
		p.seed, p.seeded = rand.Uint64(), true
	}
	opts := p.options()
	sized := append(opts[:len(opts):len(opts)], p.sizeOptions()...)
	plan, err := cuckoo.NewPlan(p.capacity, sized...)
	if err != nil {
		if most := cfMostCapacity(p); most > 0 && p.capacity > most {
			return nil, cfCapacityRange(most)
		}
		return nil, errCFCreate
	}
	// Recovery recreates what was accepted, whatever the limits are now.
	if !c.replay && int64(plan.SizeInBytes) > s.cfg.MaxFilterBytes {
		return nil, errNoMemoryFilter
	}
	if !c.replay && s.overMemory(int64(plan.SizeInBytes)) {
		return nil, errOOM
	}
	v := &cfValue{expansion: p.expansion}
	if p.expansion == 0 {
		if v.f, err = cuckoo.New(p.capacity, sized...); err == nil {
			p.buckets, p.fingerprint, p.fpr = v.f.NumBuckets(), v.f.FingerprintBits(), 0
		}
	} else {
		v.s, err = cuckoo.NewScalable(p.capacity, append(opts, cuckoo.WithGrowth(growth(p.expansion, cuckoo.MinGrowth, cuckoo.MaxGrowth)))...)
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
	if p.plan != 0 {
		args = append(args, []byte("PLAN"), strconv.AppendInt(nil, int64(p.plan), 10))
	}
	if p.buckets != 0 {
		args = append(args, []byte("BUCKETS"), strconv.AppendUint(nil, p.buckets, 10))
	}
	args = append(args, p.windowReserveArgs()...)
	return append(args, []byte("SEED"), strconv.AppendUint(nil, p.seed, 10))
}

// shapeOptions returns the options of p's shape: bucket size, and
// fingerprint width or rate.
func (p *cfParams) shapeOptions() []cuckoo.Option {
	opts := []cuckoo.Option{cuckoo.WithBucketSize(p.bucketSize)}
	if p.fpr > 0 {
		opts = append(opts, cuckoo.WithFalsePositiveRate(p.fpr))
	} else if p.fingerprint > 0 {
		opts = append(opts, cuckoo.WithFingerprintBits(p.fingerprint))
	}
	return opts
}

// plannable reports whether a fixed filter of p's capacity and shape can
// be planned.
func (p *cfParams) plannable() bool {
	_, err := cuckoo.NewPlan(p.capacity, p.shapeOptions()...)
	return err == nil
}

// cfMostCapacity returns the largest capacity a cuckoo filter of p's shape
// (bucket size, and fingerprint width or rate) can be planned for: the
// upper bound of the range CF.RESERVE and CF.INSERT name when refusing a
// capacity. The table's bucket count bounds it (2^32, as the library's
// addressing needs), and so, for narrow fingerprints, the sizes at which
// they were measured to fill reliably.
func cfMostCapacity(p *cfParams) uint64 {
	opts := p.shapeOptions()
	lo, hi := uint64(0), uint64(1)<<42 // NewPlan(lo) succeeds or lo == 0; NewPlan(hi) fails
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if _, err := cuckoo.NewPlan(mid, opts...); err == nil {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS n] [EXPANSION e]
// [FPR p] [FINGERPRINT f] [SEED s]
//
// The options RedisBloom knows are checked in its order (MAXITERATIONS,
// BUCKETSIZE, EXPANSION, then the capacity against the bucket size),
// whatever their order in the command, and the first of a repeated option
// counts, as in RedisBloom; then this server's own options.

type cfReserve struct {
	key []byte
	p   cfParams
}

func parseCFReserve(args [][]byte, fs *FilterSettings) (cfReserve, error) {
	if len(args) < 3 || len(args)%2 == 0 {
		return cfReserve{}, errArity
	}
	r := cfReserve{key: args[1], p: defaultCFParams(fs, 0)}
	capacity, ok := parseInt(args[2])
	if !ok {
		return r, errCFBadCapacity
	}
	var maxIter, bucketSize, expansion, fpr, fingerprint, seed, buckets, plan, window []byte
	unknown := false
	first := func(dst *[]byte, v []byte) {
		if *dst == nil {
			*dst = v
		}
	}
	for i := 3; i < len(args); i += 2 {
		opt, val := args[i], args[i+1]
		switch {
		case is(opt, "MAXITERATIONS"):
			first(&maxIter, val)
		case is(opt, "BUCKETSIZE"):
			first(&bucketSize, val)
		case is(opt, "EXPANSION"):
			first(&expansion, val)
		case is(opt, "FPR"):
			first(&fpr, val)
		case is(opt, "FINGERPRINT"):
			first(&fingerprint, val)
		case is(opt, "SEED"):
			first(&seed, val)
		case is(opt, "WINDOW"): // an extension: window.go
			first(&window, val)
		case is(opt, "BUCKETS"): // the log's, see cfParams.buckets
			first(&buckets, val)
		case is(opt, "PLAN"): // the log's, see cfParams.plan
			first(&plan, val)
		default:
			unknown = true
		}
	}
	if maxIter != nil {
		n, err := rangedInt(maxIter, 1, cfMaxIterations, errCFParseMaxIter, errCFMaxIterRange)
		if err != nil {
			return r, err
		}
		r.p.maxIter = int(n)
	}
	if bucketSize != nil {
		n, err := rangedInt(bucketSize, 1, cuckoo.MaxBucketSize, errCFParseBucket, errCFBucketRange)
		if err != nil {
			return r, err
		}
		r.p.bucketSize = int(n)
	}
	if expansion != nil {
		n, err := rangedInt(expansion, 0, cfMaxExpansion, errCFParseExpansion, errCFExpansionRange)
		if err != nil {
			return r, err
		}
		r.p.expansion = uint64(n)
	}
	// This server's options: their errors come after RedisBloom's.
	var optErr error
	if fpr != nil {
		f, ok := parseFloat(fpr)
		switch {
		case !ok:
			optErr = errCFParseFPR
		case f <= 0 || f >= 1:
			optErr = errCFFPRRange
		default:
			r.p.fpr = f
		}
	}
	if fingerprint != nil {
		n, ok := parseInt(fingerprint)
		switch {
		case optErr != nil:
		case !ok:
			optErr = errCFParseFingerprint
		case n < cuckoo.MinFingerprintBits || n > cuckoo.MaxFingerprintBits:
			optErr = errCFFingerprintRange
		case fpr != nil:
			optErr = errCFFPRAndFP
		case r.p.bucketSize == 1 && n < 16:
			optErr = errCFOneSlotBits
		default:
			r.p.fingerprint = int(n)
		}
	}
	if window != nil && optErr == nil {
		optErr = r.p.parseWindowOption(window)
	}
	if err := r.p.checkWindow(args); err != nil {
		return r, err
	}
	if capacity < 2*int64(r.p.bucketSize) {
		most := cfMostCapacity(&r.p)
		if most == 0 { // a rate no fingerprint reaches: the default width's bound
			q := r.p
			q.fpr = 0
			most = cfMostCapacity(&q)
		}
		return r, cfCapacityRange(most)
	}
	if unknown {
		return r, errUnknownArgument
	}
	if optErr != nil {
		return r, optErr
	}
	if seed != nil {
		if r.p.seed, r.p.seeded = parseUint(seed); !r.p.seeded {
			return r, errCFParseSeed
		}
	}
	if buckets != nil {
		n, ok := parseUint(buckets)
		if !ok || n == 0 {
			return r, errUnknownArgument
		}
		r.p.buckets = n
	}
	if plan != nil {
		n, ok := parseUint(plan)
		if !ok || n == 0 || n > math.MaxInt32 {
			return r, errUnknownArgument
		}
		r.p.plan = int(n)
	}
	r.p.capacity = uint64(capacity)
	return r, r.p.check()
}

// check reports why a filter of p's capacity and shape cannot be built:
// a capacity past what the shape allows, or a rate below what 32-bit
// fingerprints reach. A creation from the log (with a bucket count or a
// plan version) is not checked: it was accepted when it ran, and
// newObject refuses both from a client.
func (p *cfParams) check() error {
	if p.buckets != 0 || p.plan != 0 {
		return nil
	}
	if _, err := cuckoo.NewPlan(p.capacity, append(p.shapeOptions(), p.sizeOptions()...)...); err != nil {
		if most := cfMostCapacity(p); most > 0 && p.capacity > most {
			return cfCapacityRange(most)
		}
		if p.fpr > 0 {
			return errCFFPRRange
		}
		return errCFCreate
	}
	return nil
}

func (r cfReserve) run(c *call) { reserve(c, r.key, kindCF, &r.p) }

// cfLockOrCreate returns key's cuckoo filter locked for writing, creating
// a growing one of the given capacity when it is missing and create is
// true (see createLocked: the creation is logged), and failing with
// errNotFound when it is missing and create is false. The parameters are
// made only to create, so that the common case allocates nothing.
func cfLockOrCreate(c *call, key []byte, create bool, capacity uint64) (*object, uint64, error) {
	fs := c.settings()
	o, epoch, err := c.s.ks.writeLock(key, kindCF)
	switch {
	case err != nil:
		return nil, 0, err
	case o == nil && !create:
		return nil, 0, errNotFound
	case o == nil:
		if capacity == 0 {
			capacity = uint64(fs.CFInitialSize)
		}
		p := defaultCFParams(fs, capacity)
		if o, epoch, err = createLocked(c, key, &p); err != nil {
			return nil, 0, err
		}
	}
	// RedisBloom refuses inserts into a filter of cf-max-expansions
	// tables, whatever room they have; with cf-max-expansions 1 a filter
	// it has just created stays, and refuses the insert. A replay adds
	// what was accepted.
	if !c.replay && int64(o.cf.tables()) >= fs.CFMaxExpansions {
		c.s.ks.unlockWrite(o)
		return nil, 0, errCFMaxExpansions
	}
	return o, epoch, nil
}

// cfWriteBegin begins a command that adds to key's cuckoo filter: it
// returns the filter locked for writing (created as cfLockOrCreate does)
// and the epoch to log the command in, or answers the error and returns
// ok false.
func cfWriteBegin(c *call, key []byte, create bool, capacity uint64) (o *object, epoch uint64, ok bool) {
	o, epoch, err := cfLockOrCreate(c, key, create, capacity)
	if err == nil {
		err = windowWrite(c, o, key, epoch)
	}
	if err != nil {
		if o != nil {
			c.s.ks.unlockWrite(o)
		}
		c.fail(err)
		return nil, 0, false
	}
	return o, epoch, true
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
	o, epoch, ok := cfWriteBegin(c, r.key, true, 0)
	if !ok {
		return
	}
	defer c.s.ks.unlockWrite(o)
	added := true
	var err error
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
	}
	c.w.Bool(added)
}

// CF.INSERT key [CAPACITY c] [NOCREATE] ITEMS item..., and CF.INSERTNX.
// Options are recognised by their first letter, as RedisBloom does. An
// item a fixed filter has no room for answers -1 (false in RESP3 from
// CF.INSERT, whose other answers are booleans there too; CF.INSERTNX
// answers integers in both protocols, as RedisBloom does).

type cfInsert struct {
	key      []byte
	capacity uint64 // 0: cf-initial-size
	noCreate bool
	nx       bool
	items    [][]byte
}

func parseCFInsert(args [][]byte, fs *FilterSettings) (cfInsert, error) {
	if len(args) < 4 {
		return cfInsert{}, errArity
	}
	r := cfInsert{key: args[1], nx: len(args[0]) == len("CF.INSERTNX")}
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
			// A replayed CF.INSERT passed this check when it ran, and the
			// filter it made was logged before it, parameters spelled out:
			// its capacity is not used, and the range, which grows with
			// the bucket size then in force, cannot be checked again.
			if p := defaultCFParams(fs, uint64(n)); !fs.replay && (n < 2*fs.CFBucketSize || !p.plannable()) {
				return r, cfInsertCapacityRange(cfMostCapacity(&p))
			}
			if n < 0 {
				return r, errCFBadCapacity
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
	o, epoch, ok := cfWriteBegin(c, r.key, !r.noCreate, r.capacity)
	if !ok {
		return
	}
	defer c.s.ks.unlockWrite(o)
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
		changed = changed || added && err == nil
		switch {
		case !r.nx && err == nil:
			c.w.Bool(true)
		case !r.nx && c.w.Protocol() == 3:
			c.w.Bool(false)
		case err != nil:
			c.w.Int(-1)
		case added:
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
// key, or one of another type, holds nothing: 0, or false in RESP3 (as
// RedisBloom answers). CF.COUNT answers an integer in both protocols.

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
		switch {
		case r.count && o == nil:
			c.w.Int(0)
		case r.count:
			c.w.Int(int64(o.cf.count(item)))
		default:
			c.w.Bool(o != nil && o.cf.contains(item))
		}
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
	if err := windowWrite(c, o, r.key, epoch); err != nil {
		c.fail(err)
		return
	}
	deleted := o.cf.del(r.item)
	if deleted {
		c.log(epoch, c.args)
	}
	c.w.Bool(deleted)
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
		{"Size", v.infoSize()},
		{"Number of buckets", v.buckets()},
		{"Number of filters", uint64(v.tables())},
		{"Number of items inserted", v.len()},
		{"Number of items deleted", v.deletes},
		{"Bucket size", uint64(v.bucketSize())},
		{"Expansion rate", v.expansion},
		{"Max iterations", uint64(v.maxKicks())},
	}
	var window [2]uint64 // an extension: a window filter's (window.go)
	if v.win != nil {
		window = v.win.info()
	}
	o.mu.RUnlock()
	n := len(fields)
	if v.win != nil {
		n += 2
	}
	c.w.Map(n)
	for _, f := range fields {
		c.w.Simple(f.name)
		c.w.Int(int64(f.val))
	}
	if v.win != nil {
		c.w.Simple("Window")
		c.w.Int(int64(window[0]))
		c.w.Simple("Granularity")
		c.w.Int(int64(window[1]))
	}
}
