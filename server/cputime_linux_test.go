package server

import "syscall"

// threadCPU returns the CPU time the calling thread has used, in
// nanoseconds; the caller has locked its goroutine to the thread. On a
// machine busy with other jobs it counts only this thread's work, where
// the wall clock counts the others' turns too.
func threadCPU() int64 {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if syscall.Getrusage(rusageThread, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
