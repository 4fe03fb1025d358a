//go:build !linux

package server

import "errors"

// The query buffers come from the Go heap here (clientbuf.go).
const systemBuffers = false

var errNoSystemBuffers = errors.New("server: no system buffers on this platform")

func sysAlloc(int) ([]byte, error)          { return nil, errNoSystemBuffers }
func sysResize([]byte, int) ([]byte, error) { return nil, errNoSystemBuffers }
func sysFree([]byte) error                  { return errNoSystemBuffers }
