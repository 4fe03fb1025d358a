package testseed

import "testing"

func TestRandIsReplayable(t *testing.T) {
	old := *seedFlag
	defer func() { *seedFlag = old }()
	*seedFlag = 12345
	if s, ok := Given(); !ok || s != 12345 {
		t.Fatalf("Given() = %d, %v", s, ok)
	}
	if a, b := Rand(t).Uint64(), Rand(t).Uint64(); a != b {
		t.Fatalf("the same -seed gave %x and %x", a, b)
	}
	*seedFlag = 0
	if _, ok := Given(); ok {
		t.Fatal("Given reports a seed without -seed")
	}
	if Seed(t) == 0 {
		t.Fatal("clock seed is 0")
	}
}

func TestFixed(t *testing.T) {
	old := *seedFlag
	defer func() { *seedFlag = old }()
	*seedFlag = 0
	if s := Fixed(t, 7); s != 7 {
		t.Fatalf("Fixed(7) without -seed = %d", s)
	}
	*seedFlag = 12345
	if s := Fixed(t, 7); s != 12345 {
		t.Fatalf("Fixed(7) with -seed 12345 = %d", s)
	}
}
