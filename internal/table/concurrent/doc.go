// Package concurrent is the engine's table that any number of goroutines
// may read and write at once: the root package's Concurrent holds one, or,
// growing, a chain of them. Its type's documentation (table.go) says how
// writers share it (lock striping, seqlock moves, lock-free inserts) and
// why a reader racing them still finds every key.
//
// The names are exported for the root package only (internal/lint keeps
// every other package out).
package concurrent
