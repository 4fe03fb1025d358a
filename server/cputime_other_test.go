//go:build !linux

package server

// threadCPU is the thread's CPU time where the system tells it (Linux);
// 0 here.
func threadCPU() int64 { return 0 }
