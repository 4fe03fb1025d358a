package planner

import (
	"flag"
	"os"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testlong"
)

// TestMain shrinks the growing cuckoo filter the planner fills to measure,
// unless CUCKOO_LONG=1 (and always under -short, which the race
// detector's CI run uses): the plans stay complete and the bounds the
// tests check do not change.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() || !testlong.Enabled() {
		scalableRef = 1 << 14
	}
	os.Exit(m.Run())
}
