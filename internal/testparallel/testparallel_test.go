package testparallel

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

// TestRaise: the default -parallel becomes perCore per core; a -parallel
// given on the command line stays.
func TestRaise(t *testing.T) {
	f := flag.Lookup("test.parallel")
	before := f.Value.String()
	t.Cleanup(func() { flag.Set("test.parallel", before) })
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	Raise(3)
	want := strconv.Itoa(3 * runtime.GOMAXPROCS(0))
	if given {
		want = before
	}
	if got := f.Value.String(); got != want {
		t.Fatalf("-parallel %s after Raise(3), want %s (given on the command line: %v)", got, want, given)
	}
}
