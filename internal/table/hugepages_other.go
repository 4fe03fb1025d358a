//go:build !linux

package table

// UseHugePages has no effect outside Linux.
var UseHugePages = true

// AdviseHugePages does nothing outside Linux.
func AdviseHugePages([]uint64) {}

// HugePageWords is make([]uint64, n) outside Linux.
func HugePageWords(n int) []uint64 { return make([]uint64, n) }
