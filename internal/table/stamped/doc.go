// Package stamped is the engine's table of the root package's Window: the
// slots hold a 4-bit stamp beside the fingerprint, and what a stamp means
// (live, expired) is the Window's to say, by the stamp of the current
// epoch and the stamp of the entries that expired in it. The table keeps
// its stamps counted, finds room for a new key among empty and expired
// slots (a one-move path, then the engine's search for room, then a random
// walk), and sweeps and ages buckets when the Window's epoch moves on.
//
// The names are exported for the root package only (internal/lint keeps
// every other package out).
package stamped
