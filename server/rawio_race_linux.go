//go:build race

package server

import "syscall"

// rawRead and rawWrite for the race detector: rawio_linux.go says why.

func rawRead(fd int, p []byte) (int, syscall.Errno) {
	n, err := syscall.Read(fd, p)
	return max(n, 0), errnoOf(err)
}

func rawWrite(fd int, p []byte) (int, syscall.Errno) {
	n, err := syscall.Write(fd, p)
	return max(n, 0), errnoOf(err)
}

func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	return err.(syscall.Errno)
}
