//go:build !linux

package main

// threadCPU reports that a thread's CPU time is not available here.
func threadCPU() (ns int64, ok bool) { return 0, false }
