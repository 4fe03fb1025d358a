package server

// The settings of RedisBloom that Redis 8 keeps in redis.conf and CONFIG
// SET under the names bf-error-rate, …, cf-max-expansions: the parameters
// of the filters the commands create without being given them, and the
// bound on a growing cuckoo filter's tables. The server holds them in an
// atomic pointer, so that CONFIG SET changes them between commands
// without a lock on the commands' path.

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/bloom"
)

// FilterSettings are the parameters of the filters the commands create
// without being given them, under Redis 8's names. BF.ADD, BF.MADD and
// BF.INSERT create a missing key's Bloom filter with bf-error-rate,
// bf-initial-size and bf-expansion-factor; CF.ADD, CF.ADDNX, CF.INSERT and
// CF.INSERTNX create a cuckoo filter of cf-initial-size items; BF.RESERVE
// and CF.RESERVE take the settings for the options they are not given.
// The defaults (DefaultFilterSettings) differ from RedisBloom's for the
// cuckoo filter's shape: 4-slot buckets, 500 iterations and an expansion
// of 2 (RedisBloom: 2, 20 and 1), which fill tables further and keep a
// growing filter's tables few; cf-bucket-size 2, cf-max-iterations 20 and
// cf-expansion-factor 1 give RedisBloom's, where CF.INFO must read the
// same (docs/server.md). The fingerprint width is this server's own: 16
// bits unless CF.RESERVE says otherwise.
type FilterSettings struct {
	// BFErrorRate is bf-error-rate, in (0, 1); a rate above 0.25 is taken
	// as 0.25, as Redis 8 takes it. Default 0.01.
	BFErrorRate float64
	// BFInitialSize is bf-initial-size, in [1, 2^40]. Default 100.
	BFInitialSize int64
	// BFExpansionFactor is bf-expansion-factor, in [0, 32768]: each layer
	// of a growing Bloom filter holds this many times the last (taken
	// between 1.25 and 1024); 0 makes the filters NONSCALING. Default 2.
	BFExpansionFactor int64
	// CFBucketSize is cf-bucket-size, in [1, 255], and at most half of
	// CFInitialSize. Default 4 (RedisBloom: 2).
	CFBucketSize int64
	// CFInitialSize is cf-initial-size, at least twice CFBucketSize.
	// Default 1024.
	CFInitialSize int64
	// CFMaxIterations is cf-max-iterations, in [1, 65535]: the moves one
	// insert may make. Default 500 (RedisBloom: 20).
	CFMaxIterations int64
	// CFExpansionFactor is cf-expansion-factor, in [0, 32768]: each table
	// of a growing cuckoo filter holds this many times the last (taken
	// between 1.25 and 16); 0 makes the filters fixed (EXPANSION 0).
	// Default 2 (RedisBloom: 1).
	CFExpansionFactor int64
	// CFMaxExpansions is cf-max-expansions, in [1, 65536]: a growing
	// cuckoo filter with this many tables refuses CF.ADD, CF.ADDNX,
	// CF.INSERT and CF.INSERTNX ("Maximum expansions reached"). Default 32.
	CFMaxExpansions int64

	// replay marks replaySettings: a replayed CF.INSERT's CAPACITY is not
	// checked against them (see parseCFInsert).
	replay bool
}

// DefaultFilterSettings returns the settings of `cuckoo serve` with no
// flags.
func DefaultFilterSettings() FilterSettings {
	return FilterSettings{
		BFErrorRate:       0.01,
		BFInitialSize:     100,
		BFExpansionFactor: 2,
		CFBucketSize:      cuckoo.DefaultBucketSize,
		CFInitialSize:     1024,
		CFMaxIterations:   cuckoo.DefaultMaxKicks,
		CFExpansionFactor: 2,
		CFMaxExpansions:   32,
	}
}

// bfErrorRateCap is the largest Bloom error rate a filter is made with:
// larger ones are taken as it, as Redis 8 does.
const bfErrorRateCap = 0.25

// A setting is one of FilterSettings' fields, by its Redis 8 name.
type setting struct {
	name     string
	lo, hi   int64 // an integer setting's range, inclusive
	float    bool  // bf-error-rate: a float in (0, 1)
	field    func(s *FilterSettings) *int64
	floatPtr func(s *FilterSettings) *float64
}

// settings lists the settings in Redis 8's order.
var settings = []setting{
	{name: "bf-error-rate", float: true, floatPtr: func(s *FilterSettings) *float64 { return &s.BFErrorRate }},
	{name: "bf-initial-size", lo: 1, hi: bloom.MaxCapacity, field: func(s *FilterSettings) *int64 { return &s.BFInitialSize }},
	{name: "bf-expansion-factor", lo: 0, hi: bfMaxExpansion, field: func(s *FilterSettings) *int64 { return &s.BFExpansionFactor }},
	{name: "cf-bucket-size", lo: 1, hi: cuckoo.MaxBucketSize, field: func(s *FilterSettings) *int64 { return &s.CFBucketSize }},
	{name: "cf-initial-size", lo: 2, hi: math.MaxInt64, field: func(s *FilterSettings) *int64 { return &s.CFInitialSize }},
	{name: "cf-max-iterations", lo: 1, hi: cfMaxIterations, field: func(s *FilterSettings) *int64 { return &s.CFMaxIterations }},
	{name: "cf-expansion-factor", lo: 0, hi: cfMaxExpansion, field: func(s *FilterSettings) *int64 { return &s.CFExpansionFactor }},
	{name: "cf-max-expansions", lo: 1, hi: 65536, field: func(s *FilterSettings) *int64 { return &s.CFMaxExpansions }},
}

// FilterSettingNames returns the names of the settings, as CONFIG GET and
// the flags of `cuckoo serve` know them.
func FilterSettingNames() []string {
	names := make([]string, len(settings))
	for i, st := range settings {
		names[i] = st.name
	}
	return names
}

func lookupSetting(name string) *setting {
	for i := range settings {
		if strings.EqualFold(settings[i].name, name) {
			return &settings[i]
		}
	}
	return nil
}

// Get returns the value of the setting named name (case-insensitive) as
// CONFIG GET prints it, and false when name is not one of the settings.
func (s *FilterSettings) Get(name string) (string, bool) {
	st := lookupSetting(name)
	if st == nil {
		return "", false
	}
	if st.float {
		return strconv.FormatFloat(*st.floatPtr(s), 'g', -1, 64), true
	}
	return strconv.FormatInt(*st.field(s), 10), true
}

// Set sets the setting named name (case-insensitive) from its text, as
// CONFIG SET and the flags of `cuckoo serve` do. It returns an error, and
// leaves s as it was, for an unknown name or a value out of range; the
// error's text is Redis 8's for the same value.
func (s *FilterSettings) Set(name, value string) error {
	st := lookupSetting(name)
	if st == nil {
		return fmt.Errorf("unknown setting %q", name)
	}
	if st.float {
		f, err := strconv.ParseFloat(value, 64)
		if err != nil || math.IsNaN(f) {
			return fmt.Errorf("Invalid value for `%s`", st.name)
		}
		if !(f > 0 && f < 1) {
			return fmt.Errorf("Value for `%s` must be in the range (%f, %f)", st.name, 0.0, 1.0)
		}
		*st.floatPtr(s) = min(f, bfErrorRateCap)
		return nil
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return fmt.Errorf("Invalid value for `%s`", st.name)
	}
	lo, hi := st.lo, st.hi
	switch st.name {
	case "cf-bucket-size":
		hi = min(hi, s.CFInitialSize/2)
	case "cf-initial-size":
		lo = 2 * s.CFBucketSize
	}
	if n < lo || n > hi {
		return fmt.Errorf("Value for `%s` must be in the range [%d, %d]", st.name, lo, hi)
	}
	*st.field(s) = n
	return nil
}

// normalized returns s checked as Set checks each value, with a Bloom
// error rate above 0.25 taken as 0.25, or the error of the first value
// Set would refuse.
func (s FilterSettings) normalized() (FilterSettings, error) {
	out := s
	// Set checks the bucket size against the initial size and the
	// reverse: start from a pair that admits any of each.
	out.CFBucketSize, out.CFInitialSize = 1, math.MaxInt64
	for _, st := range settings {
		v, _ := s.Get(st.name)
		if err := out.Set(st.name, v); err != nil {
			return s, fmt.Errorf("server: %w", err)
		}
	}
	return out, nil
}
