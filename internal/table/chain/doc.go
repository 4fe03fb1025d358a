// Package chain holds the tables of a growing filter's chain: each Level
// (level.go) is a plain table (table.Multiset) or, the newest only, a
// table growing in place toward its generation's shape (Growing,
// growing.go), with the copies a full table counts beside it; and the
// lookups of the plain tables, one loop over their Probes (probe.go).
//
// The root package's Scalable owns a chain: it decides which table takes a
// key and when to add one (a generation's shape is its growth schedule's),
// and a Concurrent's encoding goes through Levels too. The names are
// exported for the root package only (internal/lint keeps every other
// package out).
package chain
