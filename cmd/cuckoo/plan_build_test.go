package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestPlanCapacityBuildsThePlannedFilter: each option of plan, built with
// the capacity and flags plan gives for it (--json, as the "Build it" line
// gives the recommended one's) from as many keys as were planned, takes the
// memory plan says, within 10 % (a growing filter may have a layer more or
// fewer near a growth; the rest differ by rounding). A growing filter is
// planned from a sixteenth of the keys, as for a count not known in
// advance, so its capacity is that sixteenth: built from all of them, its
// memory was 27 % to 55 % off.
func TestPlanCapacityBuildsThePlannedFilter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const items = 20_000
	var keys strings.Builder
	for i := range items {
		fmt.Fprintf(&keys, "key-%d\n", i)
	}
	e.write("keys.txt", keys.String())
	r := e.run("", "plan", "--items", fmt.Sprint(items), "--fpr", "0.01", "--json")
	r.want(t, exitOK, "plan")
	var plan struct {
		Options []struct {
			Name     string `json:"name"`
			Bytes    uint64 `json:"bytes"`
			Capacity uint64 `json:"capacity"`
			Flags    string `json:"flags"`
		} `json:"options"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, r.stdout)
	}
	for i, o := range plan.Options {
		args := append([]string{"build", "-q", "-o", fmt.Sprintf("f%d", i), "--capacity", fmt.Sprint(o.Capacity)}, strings.Fields(o.Flags)...)
		e.run("", append(args, "keys.txt")...).want(t, exitOK, "build "+o.Name)
		info := e.run("", "info", "--json", fmt.Sprintf("f%d", i))
		info.want(t, exitOK, "info")
		var got struct {
			Memory uint64 `json:"memory_bytes"`
		}
		if err := json.Unmarshal([]byte(info.stdout), &got); err != nil {
			t.Fatalf("info --json: %v", err)
		}
		if d := math.Abs(float64(got.Memory)/float64(o.Bytes) - 1); d > 0.10 {
			t.Errorf("%s: plan says %d bytes; build --capacity %d %s makes %d", o.Name, o.Bytes, o.Capacity, o.Flags, got.Memory)
		}
	}
}
