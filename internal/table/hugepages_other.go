//go:build !linux

package table

// UseHugePages has no effect outside Linux.
var UseHugePages = true

// AdviseHugePages does nothing outside Linux.
func AdviseHugePages([]uint64) {}
