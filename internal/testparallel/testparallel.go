// Package testparallel lets a test package whose tests wait far more than
// they compute (on the processes and servers they start, on the clocks of
// windows and timeouts) run more of its parallel tests at once than go
// test's default, GOMAXPROCS, which leaves the cores idle while they wait.
// Only tests import it.
package testparallel

import (
	"flag"
	"runtime"
	"strconv"
)

// Raise sets -parallel to perCore tests per core (GOMAXPROCS), unless the
// command line gave -parallel. Call it from TestMain, after flag.Parse and
// before m.Run.
func Raise(perCore int) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(perCore*runtime.GOMAXPROCS(0)))
	}
}
