//go:build !linux

package hugepages

// Enabled has no effect outside Linux.
var Enabled = true

// Advise does nothing outside Linux.
func Advise([]uint64) {}

// Words is make([]uint64, n) outside Linux.
func Words(n int) []uint64 { return make([]uint64, n) }
