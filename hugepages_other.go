//go:build !linux

package cuckoo

// useHugePages has no effect outside Linux.
var useHugePages = true

// adviseHugePages does nothing outside Linux.
func adviseHugePages([]uint64) {}
