package planner

import (
	"flag"
	"os"
	"testing"
)

// TestMain shrinks the Bloom filters the planner fills to measure, under
// -short (which the race detector's CI run uses): the plans stay complete
// and the bounds the tests check do not change; only the rounding of
// small filters shows.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		bloomRef, curveKeys = 1<<14, 1<<12
	}
	os.Exit(m.Run())
}
