package guard

import (
	"github.com/dedupkit/cuckoo/redisfilter"
	"github.com/redis/go-redis/v9"
)

// SharedWithClient is Shared(f) with the Redis client given, for the
// tests to run while redisfilter does not show a filter's client.
func SharedWithClient(f *redisfilter.Filter, rdb redis.UniversalClient) Set {
	s := Shared(f).(*sharedSet)
	s.rdb = rdb
	return s
}

// PointerKey is the Redis key of the pointer of the Shared set name.
func PointerKey(name string) string { return pointerKey(name) }

// Generations returns the names of the current, fresh and retired
// generations of a Shared set, as its process last read them.
func Generations(set Set) (cur, next string, retired []string) {
	st := set.(*sharedSet).st.Load()
	if st == nil {
		return "", "", nil
	}
	for _, r := range st.p.Retired {
		retired = append(retired, r.Name)
	}
	return st.p.Cur, st.p.Next, retired
}
