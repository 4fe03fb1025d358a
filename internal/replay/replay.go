// Package replay is the server's way into how package cuckoo sizes a
// filter, for recreating a filter its log describes exactly as it was
// built, whatever cuckoo.New would plan today. Users of the module have
// no use for it: a filter they keep is saved with its encoding, which
// holds its geometry.
//
// A plan version names the rules New sized a fixed filter's table by.
// The server's log records the version (and the bucket count) with each
// cuckoo filter it creates, as a store records its format version, and a
// replay hands the recorded values back through the options this package
// returns. Package cuckoo registers them when it is initialised, so any
// package that imports cuckoo can call them.
package replay

// Plan versions. Frozen: a log holds them. A retired version stays listed,
// and its number is never reused.
const (
	// PlanLeast: a fixed filter's table has the least even bucket count
	// that holds its capacity at the target load, and no other sizing
	// rule applies (the size limits of narrow fingerprints came with
	// PlanSpread). Logs written before the plan version was recorded,
	// and whose creations record no bucket count, were planned so.
	PlanLeast = 1
	// PlanSpread: the least count, raised by a few buckets when need be
	// so that the offsets of the alternate buckets spread; shapes that
	// fill unreliably at the capacity are refused. A growing filter's
	// tables keep the least count in both versions.
	PlanSpread = 2
	// CurrentPlan is the version cuckoo.New plans with.
	CurrentPlan = PlanSpread
)

// hooks holds the functions package cuckoo registered, as a hookSet of
// its Option type.
var hooks any

type hookSet[O any] struct {
	bucketCount func(m uint64) O
	planVersion func(v int) O
}

// Register records package cuckoo's option constructors; cuckoo calls it
// once, from an init function. O is cuckoo.Option.
func Register[O any](bucketCount func(m uint64) O, planVersion func(v int) O) {
	hooks = hookSet[O]{bucketCount, planVersion}
}

// BucketCount returns the cuckoo.Option (O) that makes cuckoo.New and
// cuckoo.NewPlan give the table exactly m buckets, applying none of the
// other sizing rules. m must be even, in [2, 2^32], at least the least
// count of the capacity and shape, and with segments a multiple of 64 per
// segment; otherwise New returns an error wrapping
// cuckoo.ErrInvalidParameter. Growing filters and windows refuse it.
func BucketCount[O any](m uint64) O { return hooks.(hookSet[O]).bucketCount(m) }

// PlanVersion returns the cuckoo.Option (O) that makes cuckoo.New and
// cuckoo.NewPlan size a fixed filter by the rules of plan version v, from
// PlanLeast to CurrentPlan (another v is an error wrapping
// cuckoo.ErrInvalidParameter). BucketCount, given too, takes precedence,
// whatever the order of the options.
func PlanVersion[O any](v int) O { return hooks.(hookSet[O]).planVersion(v) }
