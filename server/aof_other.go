//go:build !linux

package server

import "os"

// writeLog writes b to the log file f (aof_linux.go says why Linux does
// it otherwise).
func writeLog(f *os.File, b []byte) (int, error) { return f.Write(b) }
