// Package invariants says whether expensive self-checks are compiled in.
//
// Build with -tags invariants to make [Enabled] true; every data
// structure in this module then verifies its structural invariants after each
// mutation and panics with a description when one is broken. The checks must
// never change what the main code path does: they only read.
package invariants
