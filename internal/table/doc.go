// Package table is the engine of the module's cuckoo filters: the packed
// bucket table (table.go), its word-at-a-time (SWAR) reads and writes
// (swar.go), semi-sorted buckets (semisort.go), a table with the copies
// counted beside it (Multiset, multiset.go) and its inserts (insert.go),
// the one breadth-first search for room with its budget rule over the Kind
// interface every kind of table implements (search.go), the random walk's
// generator (walk.go), the duplicate counters (counters.go), the batches'
// pipeline (batch.go), and the memory helpers a table needs: cache-line
// padding, prefetching and huge-page advice.
//
// The other kinds of table live in the packages below: the tables of a
// growing filter's chain (internal/table/chain), the table any number of
// goroutines share (internal/table/concurrent) and the Window's table of
// stamped slots (internal/table/stamped). The filters of the root package
// own the tables: a Filter one Multiset, a Scalable a chain, a Concurrent
// concurrent tables, a Window a stamped one. Addressing (where a hash's
// buckets and fingerprint are) is internal/addr's.
//
// A Table is not safe for concurrent use; its owner says who may call it.
// The names are exported for the root package only (internal/lint keeps
// every other package out).
package table
