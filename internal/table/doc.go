// Package table is the engine of the module's cuckoo filters: the packed
// bucket table (table.go), its word-at-a-time (SWAR) reads and writes
// (swar.go), semi-sorted buckets (semisort.go), the one breadth-first
// search for room with its budget rule (search.go), the random walk's
// generator (walk.go), the duplicate counters (counters.go), and the
// memory helpers a table needs: cache-line padding, prefetching and
// huge-page advice.
//
// The filters of the root package own their tables: a Filter one Table,
// and the kinds of table that add to it (a Scalable's growing table, a
// Concurrent's table of atomic words and locks, a Window's stamped slots)
// live with their filters and take part in the search for room through
// the Kind interface. Addressing (where a hash's buckets and fingerprint
// are) is internal/addr's.
//
// A Table is not safe for concurrent use; its owner says who may call it.
// The names are exported for the root package only (internal/lint keeps
// every other package out).
package table
