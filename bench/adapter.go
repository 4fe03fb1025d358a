package main

import (
	"fmt"
	"sort"
)

// filter is what the harness drives. Every method takes a whole chunk of
// keys and runs the per-key loop inside the adapter, against the library's
// concrete type: the harness pays one interface call per chunk (about a
// million keys), not per key, so no library carries harness overhead in
// its figures.
//
// Each adapter hashes inside its timed loops when its library wants a
// pre-hashed uint64 (xorfilter, holiman): users of those libraries pay for
// hashing too. Rows that deliberately skip hashing say so in their name and
// implement preparer.
type filter interface {
	// add inserts keys and returns how many inserts the library reported
	// as failed.
	add(keys [][]byte) (failed int)
	// seal ends the insert phase; static filters are built here (timed as
	// part of the inserts). Dynamic filters do nothing.
	seal() error
	// contains returns how many keys the filter reports present.
	contains(keys [][]byte) (found int)
	// remove deletes keys and returns how many deletes the library reported
	// as failed. Called only when the spec's deletes is true.
	remove(keys [][]byte) (failed int)
	// reportedBytes is the size the library itself reports for the filter,
	// or -1 when it reports none. Called outside timing.
	reportedBytes() int64
}

// preparer is implemented by rows that measure a pre-hashed API: prepare is
// called, untimed, before each timed call on the same chunk, and computes
// what a caller holding its own hashes would already have.
type preparer interface{ prepare(keys [][]byte) }

// kind groups rows in tables and charts.
type kind int

const (
	kindCuckoo kind = iota // dynamic, with deletes
	kindBloom              // dynamic, no deletes
	kindStatic             // built once from all keys
)

func (k kind) String() string {
	return [...]string{"cuckoo", "bloom", "static"}[k]
}

// spec is one row of the comparison: a library in one configuration.
type spec struct {
	name    string  // row label, unique
	module  string  // Go module path of the library ("" for this module)
	kind    kind    // grouping
	ours    bool    // this project's code
	target  float64 // configured false-positive rate, 0 when fixed by design
	deletes bool    // the library can delete keys
	variant bool    // another API over the same structure as another row (left off the memory chart)
	// heavy rows are run only at the sizes listed in the mode's heavyMax
	// (their cost per operation or memory makes larger runs pointless).
	maxN uint64 // 0: any size
	// bytesAt estimates the memory the filter needs at capacity n, so the
	// harness can skip a row that would not fit; nil: small enough.
	bytesAt func(n uint64) uint64
	// make builds an empty filter with capacity n; seed varies per
	// repetition for libraries that take one.
	make  func(n, seed uint64) (filter, error)
	order int // registration order, for stable tables
}

var registry []spec

// register adds s to the comparison. Adapters call it from init.
func register(s spec) {
	for _, r := range registry {
		if r.name == s.name {
			panic(fmt.Sprintf("bench: row %q registered twice", s.name))
		}
	}
	s.order = len(registry)
	registry = append(registry, s)
}

// rows returns the registered specs in table order: our rows first within
// each kind, then peers, each group in registration order.
func rows() []spec {
	out := append([]spec(nil), registry...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		if a.ours != b.ours {
			return a.ours
		}
		return a.order < b.order
	})
	return out
}

// targetName formats a configured rate for row labels: 0.01 → "1%".
func targetName(p float64) string {
	return fmt.Sprintf("%g%%", p*100)
}
