//go:build !linux

package hugepages_test

// hugePagesAligned says Words aligns its words (Linux only).
const hugePagesAligned = false
