package cuckoo

import (
	"fmt"

	"github.com/dedupkit/cuckoo/internal/replay"
)

// The server recreates the filters its log describes with the bucket
// count and plan version it recorded; internal/replay hands it these two
// options, which no user needs (a saved filter's encoding holds its
// geometry).
func init() { replay.Register(withBucketCount, withPlanVersion) }

// withBucketCount makes New and NewPlan build a table of exactly m
// buckets (replay.BucketCount says what m must be).
func withBucketCount(m uint64) Option {
	return func(c *config) error {
		if m < 2 || m > maxBuckets || m%2 != 0 {
			return fmt.Errorf("%w: bucket count %d: need an even count in [2, 2^32]", ErrInvalidParameter, m)
		}
		c.buckets = m
		return nil
	}
}

// withPlanVersion makes New and NewPlan size a fixed filter by the rules
// of plan version v (replay.PlanVersion).
func withPlanVersion(v int) Option {
	return func(c *config) error {
		if v < replay.PlanLeast || v > replay.CurrentPlan {
			return fmt.Errorf("%w: plan version %d outside [%d, %d]", ErrInvalidParameter, v, replay.PlanLeast, replay.CurrentPlan)
		}
		c.planVersion = v
		return nil
	}
}
