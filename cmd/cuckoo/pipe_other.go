//go:build unix && !linux

package main

// setPipeSize does nothing: only Linux lets a reader size a pipe.
func setPipeSize(fd, n int) {}
